#include "cmd/operator.h"

#include <csignal>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kube/client.h"
#include "kube/config.h"
#include "reconciler/controller.h"

namespace kstack::cmd {

int run_operator(const OperatorOptions& options) {
  spdlog::set_level(spdlog::level::from_str(options.log_level));
  // Signals are taken synchronously by this thread (sigwait), so no handler runs in an
  // arbitrary thread; every other thread inherits the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  kube::LoadOptions load;
  load.kubeconfig = options.kubeconfig;
  load.context = options.context;
  auto config = kube::load_default(load);
  if (!config) {
    fmt::print(stderr, "kstack operator: {}\n", config.error().to_string());
    return 1;
  }
  auto client = kube::Client::create(*config);
  if (!client) {
    fmt::print(stderr, "kstack operator: {}\n", client.error().to_string());
    return 1;
  }
  reconciler::ControllerOptions co;
  co.operator_namespace = options.operator_namespace;
  co.watch_namespace = options.watch_namespace;
  co.workers = options.workers;
  co.resync_period = std::chrono::seconds(options.resync_period_seconds);
  co.poll_interval = std::chrono::milliseconds(options.poll_interval_ms);
  reconciler::Controller controller(*client, co);
  spdlog::info("kstack operator: connecting to {} ({})", config->server, config->source);
  if (auto started = controller.start(); !started) {
    fmt::print(stderr, "kstack operator: {}\n", started.error().to_string());
    return 1;
  }
  int signal = 0;
  sigwait(&signals, &signal);
  spdlog::info("kstack operator: signal {}: finishing in-flight work", signal);
  controller.stop();
  const auto stats = controller.stats();
  spdlog::info("kstack operator: stopped after {} reconciles ({} failed)", stats.reconciles,
               stats.reconcile_errors);
  return 0;
}

}  // namespace kstack::cmd
