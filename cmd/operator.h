// `kstack operator`: runs the Stack controller until SIGTERM/SIGINT. (Issue 7 adds the
// admission server, leader election, health and metrics endpoints to the same process.)
#pragma once

#include <string>

namespace kstack::cmd {

struct OperatorOptions {
  std::string kubeconfig;
  std::string context;
  std::string operator_namespace = "kstack-system";
  std::string watch_namespace;
  int workers = 4;
  int resync_period_seconds = 300;
  int poll_interval_ms = 2000;
  std::string log_level = "info";
};

int run_operator(const OperatorOptions& options);

}  // namespace kstack::cmd
