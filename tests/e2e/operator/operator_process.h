// Helpers of the `kstack operator` e2e tests (operator_e2e_tests): the deploy/ service
// account's credentials as a kubeconfig, the operator as a child process on free loopback
// ports, and small clients for its endpoints (plain HTTP /healthz, /readyz, /metrics; the
// admission webhook over TLS).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>
#include <tl/expected.hpp>

#include "kube/client.h"
#include "tests/testenv/process.h"

namespace kstack::testenv::e2e {

inline constexpr const char* kServiceAccount = "kstack";  // deploy/rbac.yaml
inline constexpr const char* kServiceAccountUser = "system:serviceaccount:kstack-system:kstack";
inline constexpr const char* kLeaseName = "kstack-operator";

// Applies deploy/namespace.yaml and deploy/rbac.yaml (once per binary), waits for the token
// Secret the controller-manager creates for ServiceAccount kstack, and writes a kubeconfig
// with it (server: `server`, default the control plane's). Cached per server.
tl::expected<std::filesystem::path, std::string> service_account_kubeconfig(
    const std::string& server = {});
// The service account's token (from Secret kstack-token-*).
tl::expected<std::string, std::string> service_account_token();
// A client with the service account's token.
std::shared_ptr<kube::Client> service_account_client();

// free_port(): tests/testenv/process.h.

struct HttpAnswer {
  int status = 0;
  std::string body;
};
// GET http://127.0.0.1:<port><path>; nullopt when nothing listens or the answer is malformed.
std::optional<HttpAnswer> http_get(std::uint16_t port, const std::string& path);
// The same at another IPv4 address (e.g. a pod's loopback IP, tests/e2e/deploy).
std::optional<HttpAnswer> http_get(const std::string& ip, std::uint16_t port,
                                   const std::string& path);

// Sum of the samples of `name` in a Prometheus text exposition whose labels contain every
// `label="value"` of `labels`; nullopt when no sample matches.
std::optional<double> metric_sum(std::string_view exposition, std::string_view name,
                                 const std::vector<std::string>& labels = {});

// VmRSS / VmHWM of a process, in KiB (0 when unreadable).
long process_status_kib(int pid, std::string_view field);

struct OperatorFlags {
  std::string kubeconfig;  // default: service_account_kubeconfig()
  bool webhook = true;
  std::uint16_t webhook_port = 0;  // 0: a free one
  std::string lease_duration = "4s";
  std::string renew_deadline = "3s";
  std::string retry_period = "500ms";
  std::vector<std::string> extra;
};

// `flags` with the lease timings of `kstack operator`'s defaults (client-go's 15 s / 10 s / 2 s),
// for tests that need one leader for minutes and do not test the election itself. The fast
// timings above give each lease request (lease duration - renew deadline) / 4 = 250 ms; a
// loaded machine's API server can be slower than that for the whole 3 s renew deadline, and the
// operator then steps down and exits (UpgradeAdmission failed so in a CI run).
OperatorFlags with_default_lease(OperatorFlags flags);

// `kstack operator` as a child process, its ports chosen free on 127.0.0.1, log in the control
// plane's work directory. Killed when destroyed.
class OperatorProcess {
 public:
  static tl::expected<OperatorProcess, std::string> start(const OperatorFlags& flags,
                                                          const std::string& name = "operator");
  OperatorProcess() = default;
  OperatorProcess(OperatorProcess&&) = default;
  OperatorProcess& operator=(OperatorProcess&&) = default;

  ChildProcess& process() { return process_; }
  int pid() const { return process_.pid(); }
  std::uint16_t webhook_port() const { return webhook_port_; }
  std::uint16_t metrics_port() const { return metrics_port_; }
  std::uint16_t probe_port() const { return probe_port_; }
  std::chrono::steady_clock::time_point started_at() const { return started_at_; }
  const std::filesystem::path& log() const { return process_.log(); }

  // Polls /readyz until it answers 200 (or the process dies); the time since start.
  tl::expected<std::chrono::milliseconds, std::string> wait_ready(std::chrono::seconds timeout);
  std::string metrics();  // "" when unreachable
  // leader_election_master_status of this replica: 1, 0, or -1 when unknown.
  int leader_status();
  // The last lines of the log, for failure messages.
  std::string log_tail(int lines = 40) const;

 private:
  ChildProcess process_;
  std::uint16_t webhook_port_ = 0;
  std::uint16_t metrics_port_ = 0;
  std::uint16_t probe_port_ = 0;
  std::chrono::steady_clock::time_point started_at_{};
};

// Creates (or replaces) kstack's two webhook configurations, calling https://127.0.0.1:<port>
// by URL, with an empty caBundle for the operator to fill in; deletes them with port 0.
tl::expected<void, std::string> register_webhook(std::uint16_t port);
// Until the operator has written the caBundle into both configurations.
tl::expected<void, std::string> wait_ca_bundle(std::chrono::seconds timeout);
// The CA bundle (PEM) of the webhook's serving certificate, from Secret kstack-webhook-tls.
tl::expected<std::string, std::string> webhook_ca_pem();

// POSTs an AdmissionReview to https://127.0.0.1:<port><path> (curl, trusting `ca_pem`); the
// parsed answer.
tl::expected<boost::json::value, std::string> post_admission_review(
    std::uint16_t port, const std::string& path, const std::string& ca_pem,
    const boost::json::value& review);

// The Lease kstack-system/kstack-operator as admin (null when absent).
boost::json::value lease();

}  // namespace kstack::testenv::e2e
