// Wiring of `kstack operator` (see operator.h). Start-up order: signals blocked, logging, the
// client, the endpoints (so /healthz answers and /readyz says 503 while the rest starts), then
// the webhook and the controller's caches in parallel, then leader election, whose callbacks
// start and stop the controller's workers.
#include "cmd/operator.h"

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cmd/http_endpoints.h"
#include "cmd/logging.h"
#include "cmd/metrics.h"
#include "informer/factory.h"
#include "informer/leader_election.h"
#include "kstack_version.h"
#include "kube/client.h"
#include "reconciler/controller.h"
#include "validator/webhook.h"

namespace kstack::cmd {

// cmd's runtime library (flags, metrics) does not link the validator: its copies must agree.
static_assert(OperatorOptions{}.webhook_max_connections == validator::kMaxConnections);
static_assert(OperatorOptions{}.webhook_max_inflight_body_bytes ==
              validator::kMaxInflightBodyBytes);
static_assert(kMinInflightBodyBytes == validator::kMaxRequestBodyBytes);

namespace {

enum class StopReason { kSignal, kLeaseLost };

// Where the process learns it must stop: a signal (from the signal thread) or the loss of the
// Lease (from the elector's thread).
class StopEvent {
 public:
  void request(StopReason reason) {
    {
      std::lock_guard lock(mu_);
      if (!reason_) reason_ = reason;
    }
    cv_.notify_all();
  }
  StopReason wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return reason_.has_value(); });
    return *reason_;
  }
  bool requested() const {
    std::lock_guard lock(mu_);
    return reason_.has_value();
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<StopReason> reason_;
};

// Signals are blocked in every thread (set before any is created) and taken by one thread with
// sigwait, so no handler ever runs on an arbitrary thread. The first SIGTERM/SIGINT starts the
// graceful shutdown; a second one exits at once.
void start_signal_thread(sigset_t signals, std::shared_ptr<StopEvent> stop) {
  std::thread([signals, stop] {
    int signal = 0;
    sigwait(&signals, &signal);
    spdlog::info("operator: received signal {}; shutting down", signal);
    stop->request(StopReason::kSignal);
    sigwait(&signals, &signal);
    spdlog::warn("operator: second signal {}; exiting now", signal);
    spdlog::default_logger()->flush();
    std::_Exit(1);
  }).detach();
}

// Runs `work` and waits at most `limit` for it. On timeout the work keeps running on a
// detached thread: the caller must end the process without touching what it uses.
bool run_bounded(std::function<void()> work, std::chrono::milliseconds limit) {
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  std::thread([work = std::move(work), done] {
    work();
    done->set_value();
  }).detach();
  return finished.wait_for(limit) == std::future_status::ready;
}

std::optional<std::string> base64url_decode(std::string_view in) {
  std::string out;
  unsigned value = 0;
  int bits = 0;
  for (char c : in) {
    int d = -1;
    if (c >= 'A' && c <= 'Z') d = c - 'A';
    if (c >= 'a' && c <= 'z') d = c - 'a' + 26;
    if (c >= '0' && c <= '9') d = c - '0' + 52;
    if (c == '-' || c == '+') d = 62;
    if (c == '_' || c == '/') d = 63;
    if (c == '=') break;
    if (d < 0) return std::nullopt;
    value = (value << 6) | static_cast<unsigned>(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((value >> bits) & 0xFF));
    }
  }
  return out;
}

// The `sub` claim of a service-account token (a JWT): "system:serviceaccount:<ns>:<name>",
// the username the API server puts in request.userInfo. The token is not verified (the API
// server does that) and never logged.
std::optional<std::string> token_subject(const std::string& token) {
  const auto first = token.find('.');
  const auto second = token.find('.', first == std::string::npos ? first : first + 1);
  if (first == std::string::npos || second == std::string::npos) return std::nullopt;
  auto payload = base64url_decode(std::string_view(token).substr(first + 1, second - first - 1));
  if (!payload) return std::nullopt;
  boost::system::error_code ec;
  const auto claims = boost::json::parse(*payload, ec);
  if (ec || !claims.is_object()) return std::nullopt;
  const auto* sub = claims.get_object().if_contains("sub");
  if (sub == nullptr || !sub->is_string()) return std::nullopt;
  const std::string subject(sub->get_string());
  if (subject.rfind("system:serviceaccount:", 0) != 0) return std::nullopt;
  return subject;
}

std::string operator_username(const OperatorOptions& options, const kube::Config& config) {
  if (!options.operator_username.empty()) return options.operator_username;
  if (config.credentials) {
    if (auto token = config.credentials->bearer_token(); token) {
      if (auto subject = token_subject(*token)) return *subject;
    }
  }
  return {};  // the rules' default
}

// Everything /readyz looks at; written by the main thread, read by the endpoint thread.
struct Readiness {
  const reconciler::Controller* controller = nullptr;
  bool webhook_enabled = true;
  std::atomic<const validator::Webhook*> webhook{nullptr};
  std::atomic<bool> stopping{false};

  EndpointResponse check() const {
    const bool caches = controller != nullptr && controller->synced();
    const auto* w = webhook.load();
    const bool admission = !webhook_enabled || (w != nullptr && w->ready());
    const bool ok = caches && admission && !stopping.load();
    EndpointResponse r;
    r.status = ok ? 200 : 503;
    r.body = fmt::format("[{}]informers {}\n", caches ? '+' : '-', caches ? "ok" : "not synced");
    if (webhook_enabled) {
      r.body +=
          fmt::format("[{}]webhook {}\n", admission ? '+' : '-', admission ? "ok" : "not serving");
    }
    if (stopping.load()) r.body += "[-]shutting down\n";
    r.body += ok ? "readyz check passed\n" : "readyz check failed\n";
    return r;
  }
};

// The probe and metrics servers (one when the ports are equal).
std::vector<std::unique_ptr<HttpEndpoints>> start_endpoints(const OperatorOptions& options,
                                                            const OperatorMetrics& metrics,
                                                            const Readiness& readiness) {
  std::map<std::uint16_t, std::map<std::string, EndpointHandler>> by_port;
  if (options.probe_port != 0) {
    by_port[options.probe_port]["/healthz"] = [] { return EndpointResponse{200, {}, "ok\n"}; };
    by_port[options.probe_port]["/readyz"] = [&readiness] { return readiness.check(); };
  }
  if (options.metrics_port != 0) {
    by_port[options.metrics_port]["/metrics"] = [&metrics] {
      return EndpointResponse{200, std::string(kMetricsContentType), metrics.scrape()};
    };
  }
  std::vector<std::unique_ptr<HttpEndpoints>> servers;
  for (auto& [port, routes] : by_port) {
    HttpEndpointsOptions o;
    o.bind_address = options.bind_address;
    o.port = port;
    std::string paths;
    for (const auto& [path, handler] : routes) paths += (paths.empty() ? "" : ", ") + path;
    o.routes = std::move(routes);
    auto server = start_http_endpoints(std::move(o));
    if (!server) throw std::runtime_error(server.error().to_string());
    spdlog::info("operator: serving {} on http://{}:{}", paths, options.bind_address,
                 (*server)->port());
    servers.push_back(std::move(*server));
  }
  return servers;
}

validator::WebhookOptions webhook_options(const OperatorOptions& options, std::string username,
                                          OperatorMetrics& metrics,
                                          std::shared_ptr<informer::InformerFactory> informers) {
  validator::WebhookOptions w;
  w.informers = std::move(informers);
  w.system_namespace = options.operator_namespace;
  w.operator_username = std::move(username);
  w.watch_namespace = options.watch_namespace;
  w.server.bind_address = options.bind_address;
  w.server.port = options.webhook_port;
  w.server.max_connections = options.webhook_max_connections;
  w.server.max_inflight_body_bytes = options.webhook_max_inflight_body_bytes;
  w.server.on_request = [&metrics](std::string_view endpoint, int status,
                                   std::chrono::nanoseconds duration) {
    metrics.observe_admission(endpoint, status, duration);
  };
  w.extra_sans = options.webhook_url_hosts;
  if (!options.webhook_cert_dir.empty()) {
    w.cert_file = options.webhook_cert_dir + "/tls.crt";
    w.key_file = options.webhook_cert_dir + "/tls.key";
  }
  return w;
}

// For OperatorMetrics::set_admission_server; `webhook` must outlive the reader's registration.
std::function<AdmissionServerCounters()> admission_server_counters(
    const validator::Webhook& webhook) {
  return [&webhook] {
    const validator::ServerStats s = webhook.stats();
    return AdmissionServerCounters{s.refused_connections, s.busy, s.inflight_body_bytes};
  };
}

struct Connection {
  kube::Config config;
  std::shared_ptr<kube::Client> client;
};

kube::Result<Connection> connect(const OperatorOptions& options) {
  kube::LoadOptions load;
  if (!options.kubeconfig.empty()) load.kubeconfig = options.kubeconfig;
  if (!options.context.empty()) load.context = options.context;
  auto config = kube::load_default(load);
  if (!config) return tl::unexpected(config.error());
  config->qps = options.qps;
  config->burst = options.burst;
  config->event_qps = options.event_qps;
  config->event_burst = options.event_burst;
  config->user_agent = fmt::format("kstack/{}", KSTACK_VERSION);
  auto client = kube::Client::create(*config);
  if (!client) return tl::unexpected(client.error());
  return Connection{std::move(*config), std::move(*client)};
}

reconciler::ControllerOptions controller_options(
    const OperatorOptions& options, OperatorMetrics& metrics,
    std::shared_ptr<informer::InformerFactory> informers) {
  reconciler::ControllerOptions co;
  co.informers = std::move(informers);
  co.operator_namespace = options.operator_namespace;
  co.watch_namespace = options.watch_namespace;
  co.workers = options.workers;
  co.resync_period = options.resync_period;
  co.poll_interval = std::chrono::milliseconds(options.poll_interval_ms);
  co.coalesce = std::chrono::milliseconds(options.coalesce_ms);
  co.status_progress_interval = std::chrono::milliseconds(options.status_progress_ms);
  co.start_workers = false;  // leader election (or run_operator) starts them
  co.queue_metrics = metrics.queue_metrics();
  co.on_reconcile = [&metrics](std::string_view result, std::chrono::nanoseconds duration) {
    metrics.observe_reconcile(result, duration);
  };
  return co;
}

informer::LeaderElectionOptions election_options(const OperatorOptions& options) {
  informer::LeaderElectionOptions lo;
  lo.lease_namespace = options.leader_election_namespace.empty()
                           ? options.operator_namespace
                           : options.leader_election_namespace;
  lo.lease_name = options.leader_election_id;
  lo.lease_duration = options.lease_duration;
  lo.renew_deadline = options.renew_deadline;
  lo.retry_period = options.retry_period;
  lo.release_on_cancel = true;
  return lo;
}

// The webhook (when enabled; else null) and the controller's caches, started in parallel:
// start-up takes as long as the slower of the two.
kube::Result<std::unique_ptr<validator::Webhook>> start_components(
    const OperatorOptions& options, const std::shared_ptr<kube::Client>& client,
    const std::string& username, OperatorMetrics& metrics, reconciler::Controller& controller,
    const std::shared_ptr<informer::InformerFactory>& informers) {
  std::promise<kube::Result<void>> controller_started;
  auto controller_result = controller_started.get_future();
  std::thread starter([&] { controller_started.set_value(controller.start()); });
  kube::Result<std::unique_ptr<validator::Webhook>> webhook{nullptr};
  if (options.webhook) {
    webhook =
        validator::start_webhook(client, webhook_options(options, username, metrics, informers));
  }
  starter.join();
  if (!webhook) return webhook;
  if (auto r = controller_result.get(); !r) {
    if (*webhook) (*webhook)->stop();
    return tl::unexpected(r.error());
  }
  return webhook;
}

}  // namespace

int run_operator(const OperatorOptions& options) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  setup_logging(resolve_log_format(options.log_format), options.log_level);
  auto stop = std::make_shared<StopEvent>();
  start_signal_thread(signals, stop);
  const auto started_at = std::chrono::steady_clock::now();
  spdlog::info("operator: kstack {} (commit {}, {} build) starting", KSTACK_VERSION,
               KSTACK_GIT_COMMIT, KSTACK_BUILD_TYPE);

  auto connected = connect(options);
  if (!connected) {
    spdlog::error("operator: {}", connected.error().to_string());
    return 1;
  }
  auto& [config, client] = *connected;
  const std::string username = operator_username(options, config);
  spdlog::info("operator: API server {} ({}); operator identity {}", config.server, config.source,
               username.empty() ? "(default)" : username);

  OperatorMetricsOptions mo;
  mo.lease_name = options.leader_election_id;
  mo.max_concurrent_reconciles = options.workers;
  mo.version = KSTACK_VERSION;
  mo.commit = KSTACK_GIT_COMMIT;
  OperatorMetrics metrics(client, mo);

  // Declared before its users: it goes after them, and stops once they have let go of it.
  auto informers = std::make_shared<informer::InformerFactory>(
      client, informer::InformerFactoryOptions{.resync_period = options.resync_period});
  reconciler::Controller controller(client, controller_options(options, metrics, informers));

  Readiness readiness;
  readiness.controller = &controller;
  readiness.webhook_enabled = options.webhook;
  std::vector<std::unique_ptr<HttpEndpoints>> endpoints;
  try {
    endpoints = start_endpoints(options, metrics, readiness);
  } catch (const std::exception& e) {
    spdlog::error("operator: {}", e.what());
    return 1;
  }

  std::unique_ptr<validator::Webhook> webhook;
  if (auto started = start_components(options, client, username, metrics, controller, informers);
      started) {
    webhook = std::move(*started);
    readiness.webhook = webhook.get();
    if (webhook) metrics.set_admission_server(admission_server_counters(*webhook));
  } else {
    spdlog::error("operator: start-up failed: {}", started.error().to_string());
    controller.stop();
    informers->stop();
    for (auto& e : endpoints) e->stop();
    return 1;
  }
  spdlog::info(
      "operator: ready {:.3f} s after start",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at).count());

  // Leader election: the workers run only while this replica holds the Lease.
  std::atomic<bool> lease_lost{false};
  const auto drain_workers = [&] {
    if (!run_bounded([&controller] { controller.stop_workers(); },
                     options.graceful_shutdown_timeout)) {
      spdlog::error(
          "operator: in-flight reconciles did not finish within {} ms; exiting "
          "without releasing the Lease",
          options.graceful_shutdown_timeout.count());
      spdlog::default_logger()->flush();
      std::_Exit(1);
    }
  };
  kube::CancelToken elector_cancel;
  std::unique_ptr<informer::LeaderElector> elector;
  std::thread elector_thread;
  if (stop->requested()) {
    // A signal during start-up: nothing to lead.
  } else if (options.leader_elect) {
    const auto lo = election_options(options);
    informer::LeaderCallbacks callbacks;
    callbacks.on_started_leading = [&] {
      if (lease_lost) return;  // shutting down after a loss: never work again
      metrics.set_leader(true);
      controller.start_workers();
    };
    callbacks.on_stopped_leading = [&] {
      metrics.set_leader(false);
      if (elector_cancel.cancelled()) {
        spdlog::info("operator: stopping reconciles before releasing the Lease");
        drain_workers();
        return;
      }
      spdlog::error("operator: lost the Lease; stopping reconciles and exiting");
      lease_lost = true;
      drain_workers();
      stop->request(StopReason::kLeaseLost);
    };
    callbacks.on_new_leader = [](const std::string& holder) {
      spdlog::info("operator: the leader is {}", holder);
    };
    elector = std::make_unique<informer::LeaderElector>(client, lo, callbacks);
    spdlog::info("operator: campaigning for Lease {}/{} as {}", lo.lease_namespace, lo.lease_name,
                 elector->identity());
    elector_thread = std::thread([&] { elector->run(elector_cancel); });
  } else {
    metrics.set_leader(true);
    controller.start_workers();
  }

  const StopReason reason = stop->wait();
  readiness.stopping = true;
  if (elector) {
    elector_cancel.cancel();  // on_stopped_leading drains the workers, then the Lease goes
    elector_thread.join();
  } else {
    drain_workers();
  }
  if (webhook) webhook->stop();
  controller.stop();
  informers->stop();
  for (auto& e : endpoints) e->stop();
  metrics.set_admission_server(nullptr);  // the webhook goes before `metrics`
  readiness.webhook = nullptr;
  const auto stats = controller.stats();
  spdlog::info("operator: stopped after {} reconciles ({} failed)", stats.reconciles,
               stats.reconcile_errors);
  return reason == StopReason::kLeaseLost ? 1 : 0;
}

}  // namespace kstack::cmd
