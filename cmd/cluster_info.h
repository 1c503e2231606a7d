// `kstack cluster-info`: connects with the kubeconfig rules of kubectl and reports the API
// server's version and health checks.
#pragma once

#include <optional>
#include <string>

namespace kstack::cmd {

struct ClusterInfoOptions {
  std::optional<std::string> kubeconfig;
  std::optional<std::string> context;
};

// Prints to stdout; returns the process exit code (0 when the server is ready).
int cluster_info(const ClusterInfoOptions& options);

}  // namespace kstack::cmd
