// e2e environment and helpers (see e2e.h).
#include "tests/nodesim/testing/e2e.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include "kube/exec.h"
#include "tests/nodesim/testing/cluster_dns.h"
#include "tests/nodesim/testing/pod_network.h"
#include "tests/testenv/environment.h"

namespace kstack::testenv::e2e {

namespace json = boost::json;

namespace {

std::unique_ptr<ControlPlane>& instance() {
  static std::unique_ptr<ControlPlane> cp;
  return cp;
}

std::unique_ptr<ClusterDns>& cluster_dns() {
  static std::unique_ptr<ClusterDns> dns;
  return dns;
}

std::vector<std::unique_ptr<NodeSimulator>>& simulators() {
  static std::vector<std::unique_ptr<NodeSimulator>> sims;
  return sims;
}

std::string& start_error() {
  static std::string error;
  return error;
}

std::string summary(const Objects& objects) {
  std::string out;
  for (const auto& [name, o] : objects) {
    boost::system::error_code ec;
    const auto* status = o.find_pointer("/status", ec);
    out += fmt::format("  {}: {}\n", name, status != nullptr ? json::serialize(*status) : "{}");
  }
  if (out.size() > 6000) out = out.substr(0, 6000) + "...";
  return out.empty() ? "  (none)\n" : out;
}

}  // namespace

EnvironmentOptions& environment_options() {
  static EnvironmentOptions options;
  return options;
}

tl::expected<void, std::string> install_crds(const ControlPlane& cp,
                                             const std::filesystem::path& dir) {
  auto applied = cp.kubectl({"apply", "-k", dir.string(), "-o", "name"});
  if (!applied.ok()) {
    return tl::unexpected(fmt::format("kubectl apply -k {}: {}", dir.string(), applied.err));
  }
  // "customresourcedefinition.apiextensions.k8s.io/stacks.kstack.io" -> "stacks.kstack.io"
  std::vector<std::string> names;
  std::istringstream lines(applied.out);
  for (std::string line; std::getline(lines, line);) {
    if (auto slash = line.find('/'); slash != std::string::npos) {
      names.push_back(line.substr(slash + 1));
    }
  }
  if (names.empty()) return tl::unexpected("no CRDs in " + dir.string());
  std::vector<std::string> wait = {"wait", "--for=condition=Established", "--timeout=60s"};
  for (const auto& name : names) wait.push_back("crd/" + name);
  if (auto established = cp.kubectl(wait); !established.ok()) {
    return tl::unexpected(
        fmt::format("CRDs of {} not Established: {}", dir.string(), established.err));
  }
  // Established comes a moment before discovery lists the kind; the garbage collector reads
  // discovery.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string missing;
  while (std::chrono::steady_clock::now() < deadline) {
    auto listed = cp.kubectl({"api-resources", "-o", "name"});
    missing.clear();
    for (const auto& name : names) {
      if (("\n" + listed.out).find("\n" + name + "\n") == std::string::npos) missing += " " + name;
    }
    if (listed.ok() && missing.empty()) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return tl::unexpected("discovery does not list" + missing);
}

void Environment::SetUp() {
  // As testenv::Environment::default_options() (without linking its main()), plus the flags.
  const auto& extra = environment_options();
  ControlPlane::Options options;
  options.controller_manager = true;
  options.users = {TestUser{kAlice, {}, {}}, TestUser{kBob, {kTestersGroup}, {}}};
  options.users.insert(options.users.end(), extra.users.begin(), extra.users.end());
  options.controller_manager_extra_args = controller_manager_args();
  options.apiserver_extra_args = extra.apiserver_extra_args;
  if (!extra.crd_dirs.empty()) {
    options.before_controller_manager =
        [dirs = extra.crd_dirs](ControlPlane& cp) -> tl::expected<void, std::string> {
      for (const auto& dir : dirs) {
        if (auto ok = install_crds(cp, dir); !ok) return ok;
      }
      return {};
    };
  }
  auto started = ControlPlane::start(options);
  if (!started) {
    start_error() = started.error();
    ADD_FAILURE() << "kstack test control plane did not start:\n" << started.error();
    return;
  }
  instance() = std::move(*started);
  std::cerr << "kstack e2e: control plane at " << instance()->server() << " (work dir "
            << instance()->work_dir().string() << ")\n";
  if (in_pod_network()) {
    auto dns = ClusterDns::start(admin(), instance()->work_dir());
    if (!dns) {
      ADD_FAILURE() << "cluster DNS did not start: " << dns.error();
      return;
    }
    cluster_dns() = std::move(*dns);
  }
  auto app_images = appdef_images();
  if (!app_images) {
    ADD_FAILURE() << "appdefs images: " << app_images.error();
    return;
  }
  for (int i = 0; i < extra.node_simulators; ++i) {
    NodeSimulatorOptions node = extra.node;
    node.images.insert(app_images->begin(), app_images->end());  // the binary's own win
    node.node_name = fmt::format("{}-{}", node.node_name.empty() ? "e2e" : node.node_name, i);
    auto sim = NodeSimulator::start(*instance(), node);
    if (!sim) {
      ADD_FAILURE() << "node simulator " << node.node_name << " did not start:\n" << sim.error();
      return;
    }
    simulators().push_back(std::move(*sim));
  }
}

void Environment::TearDown() {
  simulators().clear();
  cluster_dns().reset();
  instance().reset();
}

NodeSimulator& node_simulator(std::size_t index) {
  if (index >= simulators().size()) {
    throw std::logic_error(
        fmt::format("no node simulator {} (EnvironmentOptions::node_simulators)", index));
  }
  return *simulators()[index];
}

ControlPlane& control_plane() {
  if (!instance()) {
    throw std::logic_error("the e2e control plane is not running: " +
                           (start_error().empty() ? std::string("not started") : start_error()));
  }
  return *instance();
}

std::shared_ptr<kube::Client> admin() {
  auto& cp = control_plane();
  kube::Config c;
  c.server = cp.server();
  c.ca_pem = cp.ca_pem();
  c.credentials = kube::static_token(cp.admin_token());
  c.source = "e2e control plane";
  c.qps = 0;
  auto client = kube::Client::create(std::move(c));
  if (!client) throw std::runtime_error(client.error().to_string());
  return *client;
}

std::string make_namespace(kube::Client& client, std::string_view prefix) {
  std::random_device rd;
  std::string name = fmt::format("{}-{:06x}", prefix, rd() & 0xFFFFFF);
  json::value ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
  auto r = client.create(kube::resources::kNamespaces, "", ns);
  if (!r) ADD_FAILURE() << "create namespace " << name << ": " << r.error().to_string();
  // Pods are refused until the controller-manager gave the namespace's default
  // ServiceAccount its token (1.20).
  auto token = wait_for_object(
      client, kube::resources::kServiceAccounts, name, "default",
      [](const json::value& sa) {
        boost::system::error_code ec;
        const auto* secrets = sa.find_pointer("/secrets", ec);
        return secrets != nullptr && secrets->is_array() && !secrets->get_array().empty();
      },
      std::chrono::seconds(60));
  if (!token) ADD_FAILURE() << "namespace " << name << ": " << token.error();
  // The ServiceAccount admission plugin finds the token through the API server's own cache of
  // Secrets, which may not have the new Secret yet when the ServiceAccount lists it: a pod made
  // then is refused ("No API token found for service account \"default\", retry after the
  // token is automatically created"). A dry-run pod passes the same admission without being
  // stored; once it does, pods in the namespace can be made.
  const json::value probe = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "admission-probe"}}},
      {"spec", {{"containers", json::array{{{"name", "c"}, {"image", "probe"}}}}}}};
  kube::WriteOptions dry;
  dry.dry_run = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    auto admitted = client.create(kube::resources::kPods, name, probe, dry);
    if (admitted) return name;
    last = admitted.error().to_string();
    if (last.find("No API token found") == std::string::npos) return name;  // not this race
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "namespace " << name << ": pods still refused after 60 s: " << last;
  return name;
}

std::string str_at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  return p != nullptr && p->is_string() ? std::string(p->get_string()) : std::string();
}

std::string condition(const json::value& object, std::string_view type) {
  boost::system::error_code ec;
  const auto* conditions = object.find_pointer("/status/conditions", ec);
  if (conditions == nullptr || !conditions->is_array()) return {};
  for (const auto& c : conditions->get_array()) {
    if (str_at(c, "/type") == type) return str_at(c, "/status");
  }
  return {};
}

bool running_and_ready(const json::value& pod) {
  return str_at(pod, "/status/phase") == "Running" && condition(pod, "Ready") == "True";
}

namespace {

tl::expected<Objects, std::string> watch_until(kube::Client& client, const kube::ResourceType& type,
                                               const std::string& ns,
                                               const std::string& label_selector,
                                               const std::string& field_selector,
                                               const std::function<bool(const Objects&)>& done,
                                               std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Objects objects;
  std::string last_error;
  while (std::chrono::steady_clock::now() < deadline) {
    kube::ListOptions list_options;
    list_options.label_selector = label_selector;
    list_options.field_selector = field_selector;
    auto list = client.list(type, ns, list_options);
    if (!list) {
      last_error = list.error().to_string();
      if (!list.error().retryable()) break;
      continue;
    }
    objects.clear();
    for (const auto& item : list->at("items").as_array()) {
      objects[str_at(item, "/metadata/name")] = item;
    }
    if (done(objects)) return objects;
    auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline -
                                                                 std::chrono::steady_clock::now());
    if (left.count() < 1) break;
    kube::WatchOptions watch_options;
    watch_options.label_selector = label_selector;
    watch_options.field_selector = field_selector;
    watch_options.resource_version = str_at(*list, "/metadata/resourceVersion");
    watch_options.timeout_seconds = static_cast<int>(left.count());
    bool satisfied = false;
    auto watched = client.watch(type, ns, watch_options, [&](kube::WatchEvent&& event) {
      if (event.type == kube::WatchEvent::Type::kBookmark) return true;
      auto name = str_at(event.object, "/metadata/name");
      if (event.type == kube::WatchEvent::Type::kDeleted) {
        objects.erase(name);
      } else {
        objects[name] = std::move(event.object);
      }
      satisfied = done(objects);
      return !satisfied;
    });
    if (satisfied) return objects;
    if (!watched) last_error = watched.error().to_string();
  }
  return tl::unexpected(fmt::format(
      "timed out after {} s waiting for {} in {}{}; last state:\n{}", timeout.count(), type.plural,
      ns, last_error.empty() ? "" : " (" + last_error + ")", summary(objects)));
}

}  // namespace

tl::expected<Objects, std::string> wait_for(kube::Client& client, const kube::ResourceType& type,
                                            const std::string& ns,
                                            const std::string& label_selector,
                                            const std::function<bool(const Objects&)>& done,
                                            std::chrono::seconds timeout) {
  return watch_until(client, type, ns, label_selector, {}, done, timeout);
}

tl::expected<json::value, std::string> wait_for_object(
    kube::Client& client, const kube::ResourceType& type, const std::string& ns,
    const std::string& name, const std::function<bool(const json::value&)>& done,
    std::chrono::seconds timeout) {
  auto objects = watch_until(
      client, type, ns, {}, "metadata.name=" + name,
      [&](const Objects& o) {
        auto it = o.find(name);
        return it != o.end() && done(it->second);
      },
      timeout);
  if (!objects) return tl::unexpected(objects.error());
  return objects->at(name);
}

tl::expected<void, std::string> wait_for_absent(kube::Client& client,
                                                const kube::ResourceType& type,
                                                const std::string& ns, const std::string& name,
                                                std::chrono::seconds timeout) {
  auto objects = watch_until(
      client, type, ns, {}, "metadata.name=" + name,
      [&](const Objects& o) { return o.count(name) == 0; }, timeout);
  if (!objects) return tl::unexpected(objects.error());
  return {};
}

std::filesystem::path websocket_kubectl() {
  if (const char* env = std::getenv("KSTACK_WS_KUBECTL"); env != nullptr && *env != '\0') {
    return env;
  }
  for (const char* version : {"1.33", "1.32", "1.31", "1.30"}) {
    std::filesystem::path p = std::string("/usr/lib/google-cloud-sdk/bin/kubectl.") + version;
    if (std::filesystem::exists(p)) return p;
  }
  return "kubectl";
}

CommandResult kubectl_exec(const ControlPlane& cp, const std::string& ns, const std::string& pod,
                           const std::string& container, const std::vector<std::string>& argv,
                           const std::optional<std::string>& input) {
  std::vector<std::string> cmd = {websocket_kubectl().string(),
                                  "--kubeconfig=" + cp.kubeconfig().string(), "-n", ns, "exec"};
  if (input) cmd.push_back("-i");
  cmd.insert(cmd.end(), {pod, "-c", container, "--"});
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  // client-go's WebSocket executor (tools/remotecommand/websocket.go, readDemuxLoop) starts
  // reading before it has created its streams and drops frames for streams it does not know
  // yet ("Unknown stream id N, discarding message"). A command that ends within microseconds,
  // as a simulated one can, then loses its output and status on a loaded machine and kubectl
  // exits 1 — or, when only the first stdout frames were dropped and the status came through,
  // exits 0 with the output missing (DriftTest read "" for a file holding "kept" so in a CI run).
  // Only that client-side loss is tried again, whatever the exit code, at most twice: the
  // frames a run lost make its answer unusable. Any other answer, success or failure, is final.
  // A command tried again may have run once already: the callers' commands are reads or
  // idempotent writes (Exec.BackgroundProcessesOutliveTheExecAsInAContainer counts at least one
  // background process for that reason).
  constexpr std::string_view kClientLostFrames = "Unknown stream id";
  for (int attempt = 1;; ++attempt) {
    auto r = run_command(cmd, {{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "true"}},
                         input.value_or(std::string()), std::chrono::seconds(120));
    if (!r) return CommandResult{-1, {}, r.error()};
    if (r->err.find(kClientLostFrames) == std::string::npos || attempt == 3) return *r;
  }
}

std::string expected_exec_protocol() {
  const std::string served = default_exec_protocols();
  std::vector<std::string> names;
  std::istringstream list(served);
  for (std::string name; std::getline(list, name, ',');) {
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    names.push_back(name);
  }
  for (auto offered : {kube::exec_detail::kProtocolV5, kube::exec_detail::kProtocolV4,
                       kube::exec_detail::kProtocolV1}) {
    if (served.empty() || std::find(names.begin(), names.end(), offered) != names.end()) {
      return std::string(offered);
    }
  }
  return {};
}

}  // namespace kstack::testenv::e2e
