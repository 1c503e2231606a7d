// The kstack-nodesim launcher (see node_simulator.h).
#include "tests/testenv/node_simulator.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <random>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "kube/client.h"
#include "tests/nodesim/testing/pod_network.h"

#ifndef KSTACK_NODESIM_BINARY
#define KSTACK_NODESIM_BINARY "kstack-nodesim"
#endif

namespace kstack::testenv {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr auto kStopGrace = std::chrono::seconds(10);
constexpr int kWatchWindowSeconds = 2;  // how often a crashed simulator is noticed
constexpr auto kControlTimeout = std::chrono::seconds(60);

std::string random_id() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

std::string str_at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  return p != nullptr && p->is_string() ? std::string(p->get_string()) : std::string();
}

// Ready=True and registered by this very process (not a predecessor of the same name).
bool node_ready(const json::value& node, const std::string& instance_id) {
  if (str_at(node, "/metadata/annotations/kstack.io~1nodesim-instance") != instance_id) {
    return false;
  }
  boost::system::error_code ec;
  const auto* conditions = node.find_pointer("/status/conditions", ec);
  if (conditions == nullptr || !conditions->is_array()) return false;
  for (const auto& c : conditions->get_array()) {
    if (str_at(c, "/type") == "Ready") return str_at(c, "/status") == "True";
  }
  return false;
}

}  // namespace

std::string default_exec_protocols() {
  const char* env = std::getenv("KSTACK_NODESIM_EXEC_PROTOCOLS");
  return env != nullptr ? env : "";
}

std::string default_pod_cidr(const std::string& node_name) {
  static std::mutex mu;
  static std::map<std::string, int> subnets;  // by node name: a restarted node keeps its IPs
  std::lock_guard lock(mu);
  const auto it = subnets.emplace(node_name, static_cast<int>(subnets.size()) + 1).first;
  // .0 is the pod network's own address (10.244.0.1 on lo); 254 /24s are plenty for a binary.
  const int n = 1 + (it->second - 1) % 254;
  return e2e::in_pod_network() ? fmt::format("10.244.{}.0/24", n) : fmt::format("127.0.{}.0/24", n);
}

tl::expected<std::unique_ptr<NodeSimulator>, std::string> NodeSimulator::start(
    const ControlPlane& control_plane, NodeSimulatorOptions options) {
  static std::atomic<int> counter{0};
  if (options.node_name.empty()) options.node_name = fmt::format("nodesim-{}", ++counter);
  if (options.binary.empty()) {
    const char* env = std::getenv("KSTACK_NODESIM");
    options.binary = env != nullptr && *env != '\0' ? env : KSTACK_NODESIM_BINARY;
  }
  if (options.state_dir.empty()) {
    options.state_dir = control_plane.work_dir() / ("nodesim-" + options.node_name);
  }
  std::string labels;
  for (const auto& [k, v] : options.labels) labels += (labels.empty() ? "" : ",") + k + "=" + v;
  const std::string instance_id = random_id();
  std::vector<std::string> argv = {
      options.binary.string(),
      "--kubeconfig=" + control_plane.kubeconfig().string(),
      "--node-name=" + options.node_name,
      "--state-dir=" + options.state_dir.string(),
      "--port=0",
      "--control-port=0",
      "--cpu=" + options.cpu,
      "--memory=" + options.memory,
      fmt::format("--pods={}", options.pods),
      fmt::format("--heartbeat-interval={}ms", options.heartbeat_interval.count()),
      "--storage-class=" + options.storage_class,
      "--instance-id=" + instance_id,
      "--log-level=" + options.log_level,
  };
  if (!labels.empty()) argv.push_back("--labels=" + labels);
  if (options.exec_protocols.empty()) options.exec_protocols = default_exec_protocols();
  if (!options.exec_protocols.empty()) {
    argv.push_back("--exec-protocols=" + options.exec_protocols);
  }
  if (options.pod_cidr.empty()) options.pod_cidr = default_pod_cidr(options.node_name);
  argv.push_back("--pod-cidr=" + options.pod_cidr);
  // In the pod network the e2e environment runs the cluster DNS (cluster_dns.h).
  if (e2e::in_pod_network())
    argv.push_back(std::string("--cluster-dns=") + e2e::kClusterDnsAddress);
  for (const auto& [ref, dir] : options.images)
    argv.push_back("--image=" + ref + "=" + dir.string());
  argv.insert(argv.end(), options.extra_args.begin(), options.extra_args.end());

  std::unique_ptr<NodeSimulator> sim(new NodeSimulator(options));
  auto log = control_plane.work_dir() / ("nodesim-" + options.node_name + ".log");
  auto child = spawn("kstack-nodesim " + options.node_name, argv, log);
  if (!child) return tl::unexpected("starting " + options.binary.string() + ": " + child.error());
  sim->process_ = std::move(*child);
  if (auto ready = sim->wait_ready(control_plane, instance_id); !ready) {
    sim->stop();
    return tl::unexpected(ready.error());
  }
  return sim;
}

tl::expected<void, std::string> NodeSimulator::wait_ready(const ControlPlane& control_plane,
                                                          const std::string& instance_id) {
  kube::Config config;
  config.server = control_plane.server();
  config.ca_pem = control_plane.ca_pem();
  config.credentials = kube::static_token(control_plane.admin_token());
  config.qps = 0;
  auto client = kube::Client::create(std::move(config));
  if (!client) return tl::unexpected(client.error().to_string());
  const auto deadline = std::chrono::steady_clock::now() + options_.ready_timeout;
  const std::string selector = "metadata.name=" + options_.node_name;
  std::optional<json::value> ready_node;
  while (!ready_node && std::chrono::steady_clock::now() < deadline) {
    if (!process_.running()) {
      return tl::unexpected(fmt::format(
          "kstack-nodesim {} {} before its node was ready; log {}:\n{}", options_.node_name,
          process_.how_it_ended(), process_.log().string(), tail_file(process_.log())));
    }
    kube::ListOptions list_options;
    list_options.field_selector = selector;
    auto list = (*client)->list(kube::resources::kNodes, "", list_options);
    if (!list) return tl::unexpected("listing nodes: " + list.error().to_string());
    for (const auto& node : list->at("items").as_array()) {
      if (node_ready(node, instance_id)) ready_node = node;
    }
    if (ready_node) break;
    kube::WatchOptions watch_options;
    watch_options.field_selector = selector;
    watch_options.resource_version = str_at(*list, "/metadata/resourceVersion");
    watch_options.timeout_seconds = kWatchWindowSeconds;
    auto watched =
        (*client)->watch(kube::resources::kNodes, "", watch_options, [&](kube::WatchEvent&& event) {
          if (node_ready(event.object, instance_id)) {
            ready_node = std::move(event.object);
            return false;
          }
          return true;
        });
    if (!watched && !watched.error().is(kube::ErrorKind::kGone)) {
      return tl::unexpected("watching nodes: " + watched.error().to_string());
    }
  }
  if (!ready_node) {
    return tl::unexpected(fmt::format("node {} not Ready after {} s; log {}:\n{}",
                                      options_.node_name, options_.ready_timeout.count(),
                                      process_.log().string(), tail_file(process_.log())));
  }
  boost::system::error_code ec;
  const auto* port = ready_node->find_pointer("/status/daemonEndpoints/kubeletEndpoint/Port", ec);
  exec_port_ = port != nullptr && port->is_int64() ? static_cast<int>(port->get_int64()) : 0;
  control_port_ = std::atoi(
      str_at(*ready_node, "/metadata/annotations/kstack.io~1nodesim-control-port").c_str());
  if (exec_port_ == 0 || control_port_ == 0) {
    return tl::unexpected("node " + options_.node_name + " does not advertise its ports");
  }
  return {};
}

NodeSimulator::~NodeSimulator() { stop(); }

void NodeSimulator::stop() {
  if (stopped_) return;
  stopped_ = true;
  process_.stop(kStopGrace);
}

tl::expected<std::string, std::string> NodeSimulator::control(const std::string& method,
                                                              const std::string& path_and_query) {
  kube::TransportOptions options;
  options.scheme = "http";
  options.host = "127.0.0.1";
  options.port = static_cast<std::uint16_t>(control_port_);
  options.request_timeout = kControlTimeout;
  auto transport = kube::make_transport(options);
  if (!transport) return tl::unexpected(transport.error().to_string());
  kube::HttpRequest request;
  request.method = method;
  request.target = path_and_query;
  auto response = (*transport)->send(request);
  if (!response) {
    return tl::unexpected(
        fmt::format("{} {}: {}", method, path_and_query, response.error().to_string()));
  }
  if (response->status < 200 || response->status > 299) {
    return tl::unexpected(fmt::format("{} {}: HTTP {}: {}", method, path_and_query,
                                      response->status, response->body));
  }
  return response->body;
}

tl::expected<std::string, std::string> NodeSimulator::restart_pod(const std::string& ns,
                                                                  const std::string& pod,
                                                                  const std::string& container,
                                                                  int exit_code) {
  std::string path = fmt::format("/pods/{}/{}/restart?exitCode={}", ns, pod, exit_code);
  if (!container.empty()) path += "&container=" + container;
  return control("POST", path);
}

tl::expected<std::string, std::string> NodeSimulator::fail_pod(const std::string& ns,
                                                               const std::string& pod,
                                                               int exit_code) {
  return control("POST", fmt::format("/pods/{}/{}/fail?exitCode={}", ns, pod, exit_code));
}

tl::expected<std::string, std::string> NodeSimulator::describe_pod(const std::string& ns,
                                                                   const std::string& pod) {
  return control("GET", fmt::format("/pods/{}/{}", ns, pod));
}

tl::expected<void, std::string> NodeSimulator::stop_heartbeats() {
  auto r = control("POST", "/heartbeats/stop");
  if (!r) return tl::unexpected(r.error());
  return {};
}

tl::expected<void, std::string> NodeSimulator::resume_heartbeats() {
  auto r = control("POST", "/heartbeats/resume");
  if (!r) return tl::unexpected(r.error());
  return {};
}

}  // namespace kstack::testenv
