// Wiring of the simulator's parts and the control API's routes (see simulator.h).
#include "tests/nodesim/simulator.h"

#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "tests/nodesim/control_server.h"
#include "tests/nodesim/exec_server.h"
#include "tests/nodesim/json_util.h"
#include "tests/nodesim/kubelet.h"
#include "tests/nodesim/node_agent.h"
#include "tests/nodesim/provisioner.h"
#include "tests/nodesim/quantity.h"
#include "tests/nodesim/scheduler.h"
#include "tests/nodesim/self_signed.h"

namespace kstack::nodesim {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr auto kSyncTimeout = std::chrono::seconds(60);
constexpr auto kPodResync = std::chrono::seconds(10);  // also how soon a dead sandbox is seen

ControlResponse json_response(int status, const json::value& body) {
  return {status, json::serialize(body)};
}

ControlResponse error_response(int status, const std::string& message) {
  return json_response(status, json::object{{"error", message}});
}

int query_int(const ControlRequest& r, const std::string& key, int fallback) {
  auto it = r.query.find(key);
  if (it == r.query.end() || it->second.empty()) return fallback;
  try {
    return std::stoi(it->second);
  } catch (const std::exception&) {
    return fallback;
  }
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  std::size_t start = 1;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string::npos ? slash : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

}  // namespace

tl::expected<std::unique_ptr<Simulator>, std::string> Simulator::start(Options options) {
  std::unique_ptr<Simulator> sim(new Simulator());
  if (auto r = sim->init(std::move(options)); !r) {
    sim->stop();
    return tl::unexpected(r.error());
  }
  return sim;
}

Simulator::~Simulator() { stop(); }

int Simulator::exec_port() const { return exec_ ? exec_->port() : 0; }
int Simulator::control_port() const { return control_ ? control_->port() : 0; }

tl::expected<void, std::string> Simulator::init(Options options) {
  auto& o = ctx_.options;
  o = std::move(options);
  if (o.node_name.empty()) return tl::unexpected(std::string("--node-name is required"));
  if (o.state_dir.empty()) return tl::unexpected(std::string("--state-dir is required"));
  if (::access(o.bwrap.c_str(), X_OK) != 0) {
    return tl::unexpected(fmt::format(
        "bubblewrap not found at {} (apt-get install --no-install-recommends --no-upgrade "
        "bubblewrap)",
        o.bwrap));
  }
  std::error_code ec;
  o.state_dir = fs::absolute(o.state_dir, ec);
  fs::create_directories(o.state_dir / "pods", ec);
  fs::create_directories(o.state_dir / "volumes", ec);
  if (ec) return tl::unexpected("state dir " + o.state_dir.string() + ": " + ec.message());

  // Images: every Dockerfile is read now, so that a mistake in one stops the simulator with
  // its file and line rather than failing pods later.
  auto images = ImageSet::load(o.images);
  if (!images) return tl::unexpected(images.error());
  ctx_.images = std::move(*images);

  // The node.
  ctx_.node.name = o.node_name;
  ctx_.node.labels = {{"kubernetes.io/hostname", o.node_name}, {"kubernetes.io/os", "linux"},
                      {"kubernetes.io/arch", "amd64"},         {"beta.kubernetes.io/os", "linux"},
                      {"beta.kubernetes.io/arch", "amd64"},    {kNodeLabel, "true"}};
  for (const auto& [k, v] : o.labels) ctx_.node.labels[k] = v;
  auto cpu = parse_quantity_milli(o.cpu);
  auto memory = parse_quantity(o.memory);
  if (!cpu || !memory) return tl::unexpected(std::string("invalid --cpu or --memory quantity"));
  ctx_.node.allocatable = {*cpu, *memory};
  ctx_.node.max_pods = o.pods;

  // The API client (admin or node credentials from the kubeconfig).
  kube::LoadOptions load;
  if (!o.kubeconfig.empty()) load.kubeconfig = o.kubeconfig;
  auto config = kube::load_kubeconfig(load);
  if (!config) return tl::unexpected("kubeconfig: " + config.error().to_string());
  config->qps = 0;  // no client-side rate limit: a simulator must keep up with tests
  config->user_agent = "kstack-nodesim/" + o.node_name;
  auto client = kube::Client::create(std::move(*config));
  if (!client) return tl::unexpected("API client: " + client.error().to_string());
  ctx_.client = *client;

  RuntimeOptions runtime_options;
  runtime_options.state_dir = o.state_dir;
  runtime_options.bwrap = o.bwrap;
  runtime_options.cluster_dns = o.cluster_dns;
  runtime_options.pod_ip_prefix = o.pod_cidr.substr(0, o.pod_cidr.rfind('.') + 1);
  runtime_ = std::make_unique<Runtime>(runtime_options);
  ctx_.runtime = runtime_.get();

  // Endpoints first: the Node advertises their ports.
  auto cert = self_signed_certificate({"IP:127.0.0.1", "DNS:localhost", "DNS:" + o.node_name});
  if (!cert) return tl::unexpected(cert.error());
  ExecServerOptions exec_options{"127.0.0.1", o.port, 2, cert->cert, cert->key};
  exec_options.unreachable = [this] { return ctx_.lost.load(); };
  if (!o.exec_protocols.empty()) {
    auto protocols = parse_protocol_set(o.exec_protocols);
    if (!protocols) return tl::unexpected("--exec-protocols: " + protocols.error());
    exec_options.protocols = std::move(*protocols);
  }
  auto exec = ExecServer::start(*runtime_, std::move(exec_options));
  if (!exec) return tl::unexpected("exec endpoint: " + exec.error());
  exec_ = std::move(*exec);
  auto control = ControlServer::start("127.0.0.1", o.control_port,
                                      [this](const ControlRequest& r) { return handle(r); });
  if (!control) return tl::unexpected("control endpoint: " + control.error());
  control_ = std::move(*control);

  // Caches and roles.
  auto informer_for = [&](const kube::ResourceType& type, std::chrono::milliseconds resync) {
    informer::ReflectorOptions r;
    r.type = type;
    informer::InformerOptions i;
    i.resync_period = resync;
    return std::make_unique<informer::Informer>(ctx_.client, r, i);
  };
  pods_ = informer_for(kube::resources::kPods, kPodResync);
  claims_ = informer_for(kube::resources::kPersistentVolumeClaims, informer::kDefaultResyncPeriod);
  volumes_ = informer_for(kube::resources::kPersistentVolumes, informer::kDefaultResyncPeriod);
  classes_ = informer_for(resources::kStorageClasses, std::chrono::milliseconds(0));
  nodes_ = informer_for(kube::resources::kNodes, std::chrono::milliseconds(0));
  ctx_.pods = pods_.get();
  ctx_.claims = claims_.get();
  ctx_.volumes = volumes_.get();
  ctx_.classes = classes_.get();
  ctx_.nodes = nodes_.get();

  kubelet_ = std::make_unique<Kubelet>(ctx_);
  scheduler_ = std::make_unique<Scheduler>(ctx_);
  provisioner_ = std::make_unique<Provisioner>(ctx_);
  agent_ = std::make_unique<NodeAgent>(ctx_, exec_->port(), control_->port());

  pods_->add_handler(kubelet_->pod_handler());
  pods_->add_handler(scheduler_->pod_handler());
  pods_->add_handler(provisioner_->pod_handler());
  for (auto* inf : {claims_.get(), volumes_.get()}) {
    inf->add_handler(kubelet_->volume_handler());
    inf->add_handler(scheduler_->volume_handler());
  }
  claims_->add_handler(provisioner_->claim_handler());
  volumes_->add_handler(provisioner_->volume_handler());
  nodes_->add_handler(provisioner_->node_handler());

  for (auto* inf : {pods_.get(), claims_.get(), volumes_.get(), classes_.get(), nodes_.get()})
    inf->start();
  for (auto* inf : {pods_.get(), claims_.get(), volumes_.get(), classes_.get(), nodes_.get()}) {
    if (!inf->wait_for_sync(kSyncTimeout)) {
      return tl::unexpected(
          std::string("informer caches did not sync (is the API server reachable?)"));
    }
  }
  if (auto r = provisioner_->ensure_storage_class(); !r) {
    return tl::unexpected("StorageClass: " + r.error().to_string());
  }
  if (auto r = agent_->register_node(); !r) {
    return tl::unexpected("registering the node: " + r.error().to_string());
  }
  provisioner_->start();
  scheduler_->start();
  kubelet_->start();
  agent_->start();
  ready_.store(true);
  spdlog::info("node {} ready: exec https://127.0.0.1:{}, controls http://127.0.0.1:{}",
               ctx_.node.name, exec_->port(), control_->port());
  return {};
}

void Simulator::stop() {
  if (stopped_) return;
  stopped_ = true;
  ready_.store(false);
  if (control_) control_->stop();
  if (exec_) exec_->stop();
  if (agent_) agent_->stop();
  if (kubelet_) kubelet_->stop();
  if (scheduler_) scheduler_->stop();
  if (provisioner_) provisioner_->stop();
  for (auto* inf : {pods_.get(), claims_.get(), volumes_.get(), classes_.get(), nodes_.get()}) {
    if (inf != nullptr) inf->stop();
  }
  if (runtime_) runtime_->kill_all();
}

ControlResponse Simulator::handle(const ControlRequest& r) {
  auto parts = split_path(r.path);
  if (r.path == "/healthz") {
    return json_response(ready_ ? 200 : 503, json::object{{"status", ready_ ? "ok" : "starting"},
                                                          {"node", ctx_.node.name}});
  }
  if (!ready_) return error_response(503, "starting");
  if (r.method == "POST" && r.path == "/heartbeats/stop") {
    agent_->stop_heartbeats();
    return json_response(200, json::object{{"lost", true}});
  }
  if (r.method == "POST" && r.path == "/heartbeats/resume") {
    agent_->resume_heartbeats([this] {
      kubelet_->enqueue_all();
      scheduler_->enqueue_all();
      provisioner_->enqueue_all();
    });
    return json_response(200, json::object{{"lost", false}});
  }
  if (parts.size() >= 3 && parts[0] == "pods") {
    const std::string& ns = parts[1];
    const std::string& name = parts[2];
    tl::expected<json::value, ControlError> result;
    if (parts.size() == 3 && r.method == "GET") {
      result = kubelet_->describe(ns, name);
    } else if (parts.size() == 4 && parts[3] == "restart" && r.method == "POST") {
      auto container = r.query.count("container") != 0 ? r.query.at("container") : std::string();
      result = kubelet_->restart(ns, name, container, query_int(r, "exitCode", 137));
    } else if (parts.size() == 4 && parts[3] == "fail" && r.method == "POST") {
      result = kubelet_->fail(ns, name, query_int(r, "exitCode", 1));
    } else {
      return error_response(404, "no such control: " + r.method + " " + r.path);
    }
    if (!result) return error_response(result.error().http_status, result.error().message);
    return json_response(200, *result);
  }
  return error_response(404, "no such control: " + r.method + " " + r.path);
}

}  // namespace kstack::nodesim
