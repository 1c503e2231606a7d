// The operator's Prometheus metrics (prometheus-cpp core: registry + text format; served by
// cmd/http_endpoints.h at /metrics). Names and labels follow controller-runtime and client-go
// so that existing dashboards and alerts work unchanged:
//
//   controller_runtime_reconcile_total{controller,result}   counter; result = success | error |
//                                                            requeue | requeue_after
//   controller_runtime_reconcile_errors_total{controller}   counter
//   controller_runtime_reconcile_time_seconds{controller}   histogram
//   controller_runtime_max_concurrent_reconciles{controller} gauge
//   workqueue_depth{name}                                   gauge
//   workqueue_adds_total{name}, workqueue_retries_total{name}            counters
//   workqueue_queue_duration_seconds{name}, workqueue_work_duration_seconds{name}  histograms
//   rest_client_requests_total{code,method}                 counter (kube::RequestMetrics, read
//                                                            at scrape time; method is the verb:
//                                                            GET, LIST, WATCH, POST, PUT, ...)
//   leader_election_master_status{name}                     gauge, 1 while this replica leads
//   kstack_admission_requests_total{endpoint,code}          counter (/validate, /mutate, ...)
//   kstack_admission_duration_seconds{endpoint}             histogram
//   kstack_admission_connections_refused_total               counter: connections closed at
//                                                            accept, --webhook-max-connections
//                                                            were open
//   kstack_admission_body_budget_refusals_total              counter: requests answered 503,
//                                                            --webhook-max-inflight-body-bytes
//                                                            was taken
//   kstack_admission_inflight_body_bytes                     gauge: the body budget taken now
//   (these three read from the admission server at scrape time; absent without a webhook)
//   kstack_build_info{version,commit}                       gauge, always 1
//   kstack_informers{group,resource}                        gauge: informers (list+watch loops,
//                                                            each with its own cache) running in
//                                                            the process; 1 per kind when shared
//   process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
//   process_open_fds, process_max_fds, process_start_time_seconds (from /proc at scrape time)
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace kstack::kube {
class Client;
}
namespace kstack::informer {
class WorkQueueMetrics;
}

namespace kstack::cmd {

inline constexpr std::string_view kMetricReconcileTotal = "controller_runtime_reconcile_total";
inline constexpr std::string_view kMetricReconcileErrors =
    "controller_runtime_reconcile_errors_total";
inline constexpr std::string_view kMetricReconcileTime =
    "controller_runtime_reconcile_time_seconds";
inline constexpr std::string_view kMetricMaxConcurrentReconciles =
    "controller_runtime_max_concurrent_reconciles";
inline constexpr std::string_view kMetricRestClientRequests = "rest_client_requests_total";
inline constexpr std::string_view kMetricLeaderStatus = "leader_election_master_status";
inline constexpr std::string_view kMetricAdmissionRequests = "kstack_admission_requests_total";
inline constexpr std::string_view kMetricAdmissionDuration = "kstack_admission_duration_seconds";
inline constexpr std::string_view kMetricAdmissionConnectionsRefused =
    "kstack_admission_connections_refused_total";
inline constexpr std::string_view kMetricAdmissionBodyBudgetRefusals =
    "kstack_admission_body_budget_refusals_total";
inline constexpr std::string_view kMetricAdmissionInflightBodyBytes =
    "kstack_admission_inflight_body_bytes";
inline constexpr std::string_view kMetricBuildInfo = "kstack_build_info";
inline constexpr std::string_view kMetricInformers = "kstack_informers";

// The Prometheus text exposition format, version 0.0.4.
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

struct OperatorMetricsOptions {
  std::string controller = "stack";            // controller_runtime_* `controller` label
  std::string queue = "stack";                 // workqueue_* `name` label
  std::string lease_name = "kstack-operator";  // leader_election_master_status `name` label
  int max_concurrent_reconciles = 1;
  std::string version;  // kstack_build_info labels
  std::string commit;
};

// The admission server's global limits at work (validator::ServerStats, copied so that cmd's
// runtime library does not depend on the validator).
struct AdmissionServerCounters {
  std::uint64_t refused_connections = 0;  // closed at accept: max connections were open
  std::uint64_t busy = 0;                 // answered 503: the in-flight body budget was taken
  std::uint64_t inflight_body_bytes = 0;  // the budget taken now
};

// Thread-safe: the observers are called from workers, the queue and the admission server's
// threads while scrape() runs on the endpoint server's thread.
class OperatorMetrics {
 public:
  // `client`'s request counters are read at every scrape (null: no rest_client metrics).
  OperatorMetrics(std::shared_ptr<kube::Client> client, OperatorMetricsOptions options);
  ~OperatorMetrics();
  OperatorMetrics(const OperatorMetrics&) = delete;
  OperatorMetrics& operator=(const OperatorMetrics&) = delete;

  // For WorkQueueOptions::metrics / ControllerOptions::queue_metrics.
  std::shared_ptr<informer::WorkQueueMetrics> queue_metrics();
  // For ControllerOptions::on_reconcile.
  void observe_reconcile(std::string_view result, std::chrono::nanoseconds duration);
  // For validator::ServerOptions::on_request.
  void observe_admission(std::string_view endpoint, int http_status,
                         std::chrono::nanoseconds duration);
  void set_leader(bool leading);
  // Read at every scrape while set; null (the default, or once the server is gone): the three
  // kstack_admission_* server metrics are left out.
  void set_admission_server(std::function<AdmissionServerCounters()> read);

  // Every metric in the Prometheus text format (kMetricsContentType).
  std::string scrape() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kstack::cmd
