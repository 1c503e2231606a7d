// Node registration and heartbeats (see node_agent.h), after the kubelet's
// registerWithAPIServer, nodelease controller and node status updates.
#include "tests/nodesim/node_agent.h"

#include <fstream>

#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/utsname.h>

#include "tests/nodesim/json_util.h"

namespace kstack::nodesim {

namespace json = boost::json;

namespace {

constexpr const char* kLeaseNamespace = "kube-node-lease";

std::string kernel_version() {
  utsname u{};
  if (::uname(&u) != 0) return "unknown";
  return u.release;
}

std::string os_image() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "Linux";
}

json::object condition(const char* type, const char* status, const char* reason,
                       const char* message, const std::string& now, const std::string& since) {
  return {{"type", type},
          {"status", status},
          {"lastHeartbeatTime", now},
          {"lastTransitionTime", since},
          {"reason", reason},
          {"message", message}};
}

}  // namespace

NodeAgent::NodeAgent(Context& ctx, int exec_port, int control_port)
    : ctx_(ctx), exec_port_(exec_port), control_port_(control_port), ready_since_(now_time()) {}

NodeAgent::~NodeAgent() { stop(); }

json::object NodeAgent::node_status(const std::string& ready_since) const {
  const auto& o = ctx_.options;
  const std::string now = now_time();
  json::object resources{{"cpu", o.cpu},
                         {"memory", o.memory},
                         {"pods", std::to_string(o.pods)},
                         {"ephemeral-storage", "100Gi"}};
  return {{"capacity", resources},
          {"allocatable", resources},
          {"conditions",
           json::array{condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                                 "kubelet has sufficient memory available", now, ready_since),
                       condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                                 "kubelet has no disk pressure", now, ready_since),
                       condition("PIDPressure", "False", "KubeletHasSufficientPID",
                                 "kubelet has sufficient PID available", now, ready_since),
                       condition("Ready", "True", "KubeletReady", "kubelet is posting ready status",
                                 now, ready_since)}},
          // kube-apiserver dials the first of --kubelet-preferred-address-types (default Hostname,
          // InternalDNS, InternalIP, ...) that a node has: the Hostname must resolve to the
          // loopback address the endpoint listens on, so it is "localhost", not the node name.
          {"addresses", json::array{json::object{{"type", "InternalIP"}, {"address", "127.0.0.1"}},
                                    json::object{{"type", "Hostname"}, {"address", "localhost"}}}},
          {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", exec_port_}}}}},
          {"nodeInfo",
           {{"machineID", ""},
            {"systemUUID", ""},
            {"bootID", ""},
            {"kernelVersion", kernel_version()},
            {"osImage", os_image()},
            {"containerRuntimeVersion", "sim://0.1.0"},
            {"kubeletVersion", kKubeletVersion},
            {"kubeProxyVersion", kKubeletVersion},
            {"operatingSystem", "linux"},
            {"architecture", "amd64"}}}};
}

kube::Result<void> NodeAgent::register_node() {
  json::object labels;
  for (const auto& [k, v] : ctx_.node.labels) labels[k] = v;
  json::object annotations{{kInstanceAnnotation, ctx_.options.instance_id},
                           {kControlPortAnnotation, std::to_string(control_port_)},
                           {"node.alpha.kubernetes.io/ttl", "0"},
                           {"volumes.kubernetes.io/controller-managed-attach-detach", "true"}};
  json::value node = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", ctx_.node.name}, {"labels", labels}, {"annotations", annotations}}},
      {"spec", json::object{}},
      {"status", node_status(ready_since_)}};
  const auto& nodes = kube::resources::kNodes;
  auto created = ctx_.client->create(nodes, "", node);
  if (created) {
    node_uid_ = str(*created, "/metadata/uid");
  } else if (created.error().is(kube::ErrorKind::kAlreadyExists)) {
    // A node of that name from an earlier run: take it over.
    json::object meta_patch{{"metadata", {{"labels", labels}, {"annotations", annotations}}}};
    auto patched = ctx_.client->patch(nodes, "", ctx_.node.name, kube::PatchType::kMerge,
                                      json::serialize(meta_patch));
    if (!patched) return tl::unexpected(patched.error());
    node_uid_ = str(*patched, "/metadata/uid");
    if (auto r = heartbeat(); !r) return r;
  } else {
    return tl::unexpected(created.error());
  }
  if (auto r = renew_lease(); !r) return r;
  spdlog::info("node {} registered (exec port {}, control port {})", ctx_.node.name, exec_port_,
               control_port_);
  return {};
}

kube::Result<void> NodeAgent::heartbeat() {
  std::string since;
  {
    std::lock_guard lock(mu_);
    since = ready_since_;
  }
  json::object patch{{"status", node_status(since)}};
  auto r = ctx_.client->patch(kube::resources::kNodes, "", ctx_.node.name, kube::PatchType::kMerge,
                              json::serialize(patch), {}, "status");
  if (!r) return tl::unexpected(r.error());
  return {};
}

kube::Result<void> NodeAgent::renew_lease() {
  const std::string now = format_micro_time(std::chrono::system_clock::now());
  json::object spec{{"holderIdentity", ctx_.node.name},
                    {"leaseDurationSeconds", kLeaseDurationSeconds},
                    {"renewTime", now}};
  auto patched =
      ctx_.client->patch(kube::resources::kLeases, kLeaseNamespace, ctx_.node.name,
                         kube::PatchType::kMerge, json::serialize(json::object{{"spec", spec}}));
  if (patched) return {};
  if (!patched.error().is(kube::ErrorKind::kNotFound)) return tl::unexpected(patched.error());
  json::value lease = {{"apiVersion", "coordination.k8s.io/v1"},
                       {"kind", "Lease"},
                       {"metadata",
                        {{"name", ctx_.node.name},
                         {"namespace", kLeaseNamespace},
                         {"ownerReferences", json::array{json::object{{"apiVersion", "v1"},
                                                                      {"kind", "Node"},
                                                                      {"name", ctx_.node.name},
                                                                      {"uid", node_uid_}}}}}},
                       {"spec", spec}};
  auto created = ctx_.client->create(kube::resources::kLeases, kLeaseNamespace, lease);
  if (!created && !created.error().is(kube::ErrorKind::kAlreadyExists)) {
    return tl::unexpected(created.error());
  }
  return {};
}

void NodeAgent::start() {
  thread_ = std::thread([this] { loop(); });
}

void NodeAgent::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void NodeAgent::stop_heartbeats() {
  ctx_.lost.store(true);
  spdlog::info("node {}: heartbeats stopped (node lost)", ctx_.node.name);
}

void NodeAgent::resume_heartbeats(std::function<void()> on_resume) {
  if (!ctx_.lost.exchange(false)) return;
  {
    std::lock_guard lock(mu_);
    ready_since_ = now_time();  // the node becomes Ready again now
    wake_ = true;
  }
  cv_.notify_all();
  spdlog::info("node {}: heartbeats resumed", ctx_.node.name);
  if (on_resume) on_resume();
}

void NodeAgent::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, ctx_.options.heartbeat_interval, [this] { return stopping_ || wake_; });
    if (stopping_) break;
    wake_ = false;
    if (ctx_.lost.load()) continue;
    lock.unlock();
    if (auto r = renew_lease(); !r) spdlog::warn("lease renewal failed: {}", r.error().to_string());
    if (auto r = heartbeat(); !r)
      spdlog::warn("node status update failed: {}", r.error().to_string());
    lock.lock();
  }
}

}  // namespace kstack::nodesim
