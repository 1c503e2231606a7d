// `kstack operator`: one process running the informers, the Stack controller (only while it
// holds the leader Lease), the admission webhook with its certificate manager (every replica),
// and the /healthz, /readyz and /metrics endpoints, until SIGTERM/SIGINT.
//
// Shutdown: on SIGTERM/SIGINT readiness turns 503, the workers stop taking keys and in-flight
// reconciles finish (bounded by graceful_shutdown_timeout), the Lease is released so another
// replica takes over at once, then the webhook and the caches stop; exit 0. A second signal
// exits at once. Losing the Lease stops reconciling at once and exits 1 (as controller-runtime):
// the Deployment restarts the replica clean.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kube/config.h"

namespace kstack::cmd {

// validator::kMaxRequestBodyBytes (checked in operator.cpp): the smallest in-flight body budget.
inline constexpr std::size_t kMinInflightBodyBytes = 3u << 20;

struct OperatorOptions {
  // Connection (kubectl's rules: --kubeconfig, KUBECONFIG, ~/.kube/config, in-cluster).
  std::string kubeconfig;
  std::string context;
  double qps = kube::kDefaultQps;
  int burst = kube::kDefaultBurst;
  // Events' own token bucket (kube::Config::event_qps): they never wait behind object writes,
  // nor object writes behind them.
  double event_qps = kube::kDefaultQps;
  int event_burst = kube::kDefaultBurst;

  std::string operator_namespace = "kstack-system";
  std::string watch_namespace;  // "" = all namespaces
  int workers = 4;
  std::chrono::milliseconds resync_period{5 * 60 * 1000};
  int poll_interval_ms = 2000;
  int coalesce_ms = 250;  // pod / StatefulSet-status events wait this long (0: not at all)
  // members' progress alone is written at most this often per Stack (0: at once)
  int status_progress_ms = 5000;

  // Endpoints: probes (/healthz, /readyz) and /metrics; 0 = off; the same port serves all.
  std::string bind_address = "0.0.0.0";  // of every listening port
  std::uint16_t metrics_port = 8080;
  std::uint16_t probe_port = 8081;

  // Admission.
  bool webhook = true;
  std::uint16_t webhook_port = 9443;
  std::string webhook_cert_dir;  // tls.crt + tls.key (cert-manager); "" = self-managed CA
  // The admission server's global limits (validator::ServerOptions; the defaults are
  // validator::kMaxConnections and kMaxInflightBodyBytes, checked in operator.cpp). The body
  // budget must hold the largest request body, kMinInflightBodyBytes.
  std::size_t webhook_max_connections = 512;
  std::size_t webhook_max_inflight_body_bytes = 64u << 20;
  // Hosts the API server calls the webhook by URL instead of through the Service (local runs,
  // the test control plane): added to the self-managed serving certificate's SANs.
  std::vector<std::string> webhook_url_hosts;
  // request.userInfo.username of this operator, the only identity allowed to write Stack
  // status and kstack's labels; "" = the `sub` of the client's service-account token, else
  // system:serviceaccount:kstack-system:kstack.
  std::string operator_username;

  // Leader election (coordination.k8s.io Lease in leader_election_namespace, default the
  // operator's namespace).
  bool leader_elect = true;
  std::string leader_election_id = "kstack-operator";
  std::string leader_election_namespace;
  std::chrono::milliseconds lease_duration{15'000};
  std::chrono::milliseconds renew_deadline{10'000};
  std::chrono::milliseconds retry_period{2'000};

  std::chrono::milliseconds graceful_shutdown_timeout{30'000};
  std::string log_level = "info";
  std::string log_format = "auto";  // json | text | auto (text on a terminal)
};

// Runs until a signal or the loss of the Lease; the process exit code.
int run_operator(const OperatorOptions& options);

}  // namespace kstack::cmd
