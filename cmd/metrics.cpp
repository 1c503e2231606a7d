#include "cmd/metrics.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <sys/resource.h>
#include <unistd.h>

#include "informer/informer.h"
#include "informer/work_queue.h"
#include "kube/client.h"

namespace kstack::cmd {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

// controller-runtime's reconcile time buckets (pkg/internal/controller/metrics).
const prometheus::Histogram::BucketBoundaries kReconcileBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1,  0.15, 0.2,  0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
    0.7,   0.8,  0.9,   1.0,  1.25, 1.5,  1.75, 2.0,  2.5, 3.0,  3.5, 4.0,  4.5, 5,
    6,     7,    8,     9,    10,   15,   20,   25,   30,  40,   50,  60};
// client-go's workqueue buckets: ExponentialBuckets(10e-9, 10, 10).
const prometheus::Histogram::BucketBoundaries kQueueBuckets = {1e-8, 1e-7, 1e-6, 1e-5, 1e-4,
                                                               1e-3, 1e-2, 1e-1, 1,    10};
const prometheus::Histogram::BucketBoundaries kAdmissionBuckets = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

class QueueMetrics final : public informer::WorkQueueMetrics {
 public:
  QueueMetrics(prometheus::Gauge& depth, prometheus::Counter& adds, prometheus::Counter& retries,
               prometheus::Histogram& queue_duration, prometheus::Histogram& work_duration)
      : depth_(depth),
        adds_(adds),
        retries_(retries),
        queue_duration_(queue_duration),
        work_duration_(work_duration) {}

  void on_add() override { adds_.Increment(); }
  void on_retry() override { retries_.Increment(); }
  void on_depth(std::size_t depth) override { depth_.Set(static_cast<double>(depth)); }
  void on_get(std::chrono::nanoseconds latency) override {
    queue_duration_.Observe(seconds(latency));
  }
  void on_done(std::chrono::nanoseconds duration) override {
    work_duration_.Observe(seconds(duration));
  }

 private:
  prometheus::Gauge& depth_;
  prometheus::Counter& adds_;
  prometheus::Counter& retries_;
  prometheus::Histogram& queue_duration_;
  prometheus::Histogram& work_duration_;
};

MetricFamily family(std::string_view name, std::string help, MetricType type) {
  MetricFamily f;
  f.name = std::string(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

ClientMetric gauge_value(double v) {
  ClientMetric m;
  m.gauge.value = v;
  return m;
}

// /proc/self/stat fields after the command name: utime, stime (ticks), starttime (ticks since
// boot), vsize (bytes), rss (pages).
struct ProcStat {
  double cpu_seconds = 0;
  double start_ticks = 0;
  double virtual_bytes = 0;
  double resident_bytes = 0;
  bool ok = false;
};

ProcStat read_proc_stat() {
  ProcStat out;
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream fields(text.substr(close + 2));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string s; fields >> s;) f.push_back(std::move(s));
  if (f.size() < 22) return out;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  try {
    out.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / ticks;  // fields 14, 15
    out.start_ticks = std::stod(f[19]) / ticks;                       // field 22
    out.virtual_bytes = std::stod(f[20]);                             // field 23
    out.resident_bytes = std::stod(f[21]) * page;                     // field 24
    out.ok = true;
  } catch (const std::exception&) {
  }
  return out;
}

double boot_time_seconds() {
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  }
  return 0;
}

}  // namespace

struct OperatorMetrics::Impl {
  std::shared_ptr<kube::Client> client;
  OperatorMetricsOptions options;
  double start_time = 0;
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();

  prometheus::Family<prometheus::Counter>* reconcile_total = nullptr;
  prometheus::Counter* reconcile_errors = nullptr;
  prometheus::Histogram* reconcile_time = nullptr;
  prometheus::Family<prometheus::Counter>* admission_total = nullptr;
  // By endpoint: the admission server's endpoint labels are a fixed set, made up front so an
  // observation does not build a histogram only to find it exists.
  std::map<std::string, prometheus::Histogram*, std::less<>> admission_duration;
  prometheus::Gauge* leader = nullptr;
  std::shared_ptr<QueueMetrics> queue;
  mutable std::mutex admission_server_mu;  // set_admission_server() vs. scrape()
  std::function<AdmissionServerCounters()> admission_server;

  void collect_admission_server(std::vector<MetricFamily>& out) const {
    std::lock_guard lock(admission_server_mu);
    if (!admission_server) return;
    const AdmissionServerCounters c = admission_server();
    auto counter = [&out](std::string_view name, std::string help, std::uint64_t value) {
      auto f = family(name, std::move(help), MetricType::Counter);
      ClientMetric m;
      m.counter.value = static_cast<double>(value);
      f.metric.push_back(std::move(m));
      out.push_back(std::move(f));
    };
    counter(kMetricAdmissionConnectionsRefused,
            "Connections the admission server closed at accept because the maximum number of "
            "connections were open.",
            c.refused_connections);
    counter(kMetricAdmissionBodyBudgetRefusals,
            "Admission requests answered 503 because the in-flight request body budget was taken.",
            c.busy);
    auto gauge = family(kMetricAdmissionInflightBodyBytes,
                        "Bytes of the in-flight request body budget taken by requests being read "
                        "or served.",
                        MetricType::Gauge);
    gauge.metric.push_back(gauge_value(static_cast<double>(c.inflight_body_bytes)));
    out.push_back(std::move(gauge));
  }

  void collect_rest_client(std::vector<MetricFamily>& out) const {
    if (!client) return;
    auto f = family(kMetricRestClientRequests,
                    "Number of HTTP requests to the API server, by verb and status code.",
                    MetricType::Counter);
    for (const auto& [key, count] : client->metrics().snapshot()) {
      ClientMetric m;
      m.label = {{"code", key.second}, {"method", key.first}};
      m.counter.value = static_cast<double>(count);
      f.metric.push_back(std::move(m));
    }
    out.push_back(std::move(f));
  }

  // Read at scrape time from the process-wide count (informer.h), so an informer started by
  // any component shows, shared or not.
  static void collect_informers(std::vector<MetricFamily>& out) {
    auto f = family(kMetricInformers,
                    "Informers (a list and watch with its own cache) running in this process, by "
                    "resource.",
                    MetricType::Gauge);
    for (const auto& [resource, count] : informer::running_informers()) {
      auto m = gauge_value(static_cast<double>(count));
      m.label = {{"group", resource.group}, {"resource", resource.resource}};
      f.metric.push_back(std::move(m));
    }
    out.push_back(std::move(f));
  }

  void collect_process(std::vector<MetricFamily>& out) const {
    const auto stat = read_proc_stat();
    if (stat.ok) {
      auto cpu = family("process_cpu_seconds_total",
                        "Total user and system CPU time spent in "
                        "seconds.",
                        MetricType::Counter);
      ClientMetric m;
      m.counter.value = stat.cpu_seconds;
      cpu.metric.push_back(m);
      out.push_back(std::move(cpu));
      auto rss = family("process_resident_memory_bytes", "Resident memory size in bytes.",
                        MetricType::Gauge);
      rss.metric.push_back(gauge_value(stat.resident_bytes));
      out.push_back(std::move(rss));
      auto vsz = family("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                        MetricType::Gauge);
      vsz.metric.push_back(gauge_value(stat.virtual_bytes));
      out.push_back(std::move(vsz));
    }
    std::error_code ec;
    std::size_t fds = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      ++fds;
    }
    if (!ec) {
      auto open = family("process_open_fds", "Number of open file descriptors.", MetricType::Gauge);
      open.metric.push_back(gauge_value(static_cast<double>(fds)));
      out.push_back(std::move(open));
    }
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
      auto max =
          family("process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge);
      max.metric.push_back(gauge_value(static_cast<double>(limit.rlim_cur)));
      out.push_back(std::move(max));
    }
    if (start_time > 0) {
      auto start =
          family("process_start_time_seconds",
                 "Start time of the process since unix epoch in seconds.", MetricType::Gauge);
      start.metric.push_back(gauge_value(start_time));
      out.push_back(std::move(start));
    }
  }
};

OperatorMetrics::OperatorMetrics(std::shared_ptr<kube::Client> client,
                                 OperatorMetricsOptions options)
    : impl_(std::make_unique<Impl>()) {
  auto& s = *impl_;
  s.client = std::move(client);
  s.options = std::move(options);
  auto& r = *s.registry;
  const prometheus::Labels controller{{"controller", s.options.controller}};

  s.reconcile_total = &prometheus::BuildCounter()
                           .Name(std::string(kMetricReconcileTotal))
                           .Help("Total number of reconciliations per controller")
                           .Register(r);
  // Every result is exported from the start (as controller-runtime), so rate() sees the first.
  for (const char* result : {"success", "error", "requeue", "requeue_after"}) {
    s.reconcile_total->Add({{"controller", s.options.controller}, {"result", result}});
  }
  s.reconcile_errors = &prometheus::BuildCounter()
                            .Name(std::string(kMetricReconcileErrors))
                            .Help("Total number of reconciliation errors per controller")
                            .Register(r)
                            .Add(controller);
  s.reconcile_time = &prometheus::BuildHistogram()
                          .Name(std::string(kMetricReconcileTime))
                          .Help("Length of time per reconciliation per controller")
                          .Register(r)
                          .Add(controller, kReconcileBuckets);
  prometheus::BuildGauge()
      .Name(std::string(kMetricMaxConcurrentReconciles))
      .Help("Maximum number of concurrent reconciles per controller")
      .Register(r)
      .Add(controller)
      .Set(s.options.max_concurrent_reconciles);

  const prometheus::Labels queue{{"name", s.options.queue}};
  auto& depth = prometheus::BuildGauge()
                    .Name(std::string(informer::kMetricDepth))
                    .Help("Current depth of workqueue")
                    .Register(r)
                    .Add(queue);
  auto& adds = prometheus::BuildCounter()
                   .Name(std::string(informer::kMetricAdds))
                   .Help("Total number of adds handled by workqueue")
                   .Register(r)
                   .Add(queue);
  auto& retries = prometheus::BuildCounter()
                      .Name(std::string(informer::kMetricRetries))
                      .Help("Total number of retries handled by workqueue")
                      .Register(r)
                      .Add(queue);
  auto& queue_duration =
      prometheus::BuildHistogram()
          .Name(std::string(informer::kMetricQueueDuration))
          .Help("How long in seconds an item stays in workqueue before being requested")
          .Register(r)
          .Add(queue, kQueueBuckets);
  auto& work_duration = prometheus::BuildHistogram()
                            .Name(std::string(informer::kMetricWorkDuration))
                            .Help("How long in seconds processing an item from workqueue takes")
                            .Register(r)
                            .Add(queue, kQueueBuckets);
  s.queue = std::make_shared<QueueMetrics>(depth, adds, retries, queue_duration, work_duration);

  s.leader = &prometheus::BuildGauge()
                  .Name(std::string(kMetricLeaderStatus))
                  .Help(
                      "Gauge of if the reporting system is master of the relevant lease, 0 "
                      "indicates backup, 1 indicates master")
                  .Register(r)
                  .Add({{"name", s.options.lease_name}});
  s.admission_total = &prometheus::BuildCounter()
                           .Name(std::string(kMetricAdmissionRequests))
                           .Help("Admission requests answered, by endpoint and HTTP status code")
                           .Register(r);
  auto& admission_duration = prometheus::BuildHistogram()
                                 .Name(std::string(kMetricAdmissionDuration))
                                 .Help("Time to answer an admission request, by endpoint")
                                 .Register(r);
  for (const char* endpoint : {"/validate", "/mutate", "/healthz", "other"}) {
    s.admission_duration[endpoint] =
        &admission_duration.Add({{"endpoint", endpoint}}, kAdmissionBuckets);
  }
  prometheus::BuildGauge()
      .Name(std::string(kMetricBuildInfo))
      .Help("kstack's version and git commit; always 1")
      .Register(r)
      .Add({{"version", s.options.version}, {"commit", s.options.commit}})
      .Set(1);

  const auto stat = read_proc_stat();
  if (stat.ok) s.start_time = boot_time_seconds() + stat.start_ticks;
}

OperatorMetrics::~OperatorMetrics() = default;

std::shared_ptr<informer::WorkQueueMetrics> OperatorMetrics::queue_metrics() {
  return impl_->queue;
}

void OperatorMetrics::observe_reconcile(std::string_view result,
                                        std::chrono::nanoseconds duration) {
  auto& s = *impl_;
  s.reconcile_total->Add({{"controller", s.options.controller}, {"result", std::string(result)}})
      .Increment();
  if (result == "error") s.reconcile_errors->Increment();
  s.reconcile_time->Observe(seconds(duration));
}

void OperatorMetrics::observe_admission(std::string_view endpoint, int http_status,
                                        std::chrono::nanoseconds duration) {
  auto& s = *impl_;
  auto histogram = s.admission_duration.find(endpoint);
  if (histogram == s.admission_duration.end()) histogram = s.admission_duration.find("other");
  s.admission_total->Add({{"endpoint", histogram->first}, {"code", std::to_string(http_status)}})
      .Increment();
  histogram->second->Observe(seconds(duration));
}

void OperatorMetrics::set_leader(bool leading) { impl_->leader->Set(leading ? 1 : 0); }

void OperatorMetrics::set_admission_server(std::function<AdmissionServerCounters()> read) {
  std::lock_guard lock(impl_->admission_server_mu);
  impl_->admission_server = std::move(read);
}

std::string OperatorMetrics::scrape() const {
  auto families = impl_->registry->Collect();
  impl_->collect_rest_client(families);
  impl_->collect_admission_server(families);
  Impl::collect_informers(families);
  impl_->collect_process(families);
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace kstack::cmd
