// cmd/metrics.h: controller-runtime-compatible names, labels and values in the text format.
#include "cmd/metrics.h"

#include <gtest/gtest.h>

#include "informer/factory.h"
#include "informer/work_queue.h"
#include "tests/unit/informer/fake_api.h"

namespace kstack::cmd {
namespace {

using namespace std::chrono_literals;

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(OperatorMetrics, ReconcileResultsAreCountedByControllerAndResult) {
  OperatorMetrics m(nullptr, OperatorMetricsOptions{});
  m.observe_reconcile("success", 20ms);
  m.observe_reconcile("success", 30ms);
  m.observe_reconcile("error", 5ms);
  const auto text = m.scrape();
  EXPECT_TRUE(has_line(
      text, R"(controller_runtime_reconcile_total{controller="stack",result="success"} 2)"))
      << text;
  EXPECT_TRUE(
      has_line(text, R"(controller_runtime_reconcile_total{controller="stack",result="error"} 1)"));
  // Results not seen yet are exported as 0 from the start.
  EXPECT_TRUE(has_line(
      text, R"(controller_runtime_reconcile_total{controller="stack",result="requeue_after"} 0)"));
  EXPECT_TRUE(has_line(text, R"(controller_runtime_reconcile_errors_total{controller="stack"} 1)"));
  EXPECT_TRUE(
      has_line(text, R"(controller_runtime_reconcile_time_seconds_count{controller="stack"} 3)"));
  EXPECT_TRUE(has_line(
      text,
      R"(controller_runtime_reconcile_time_seconds_bucket{controller="stack",le="0.025"} 2)"));
  EXPECT_NE(text.find("# TYPE controller_runtime_reconcile_time_seconds histogram"),
            std::string::npos);
}

TEST(OperatorMetrics, TheWorkQueueReportsDepthAddsRetriesAndDurations) {
  OperatorMetrics m(nullptr, OperatorMetricsOptions{});
  auto q = m.queue_metrics();
  q->on_add();
  q->on_add();
  q->on_retry();
  q->on_depth(3);
  q->on_get(2ms);
  q->on_done(50ms);
  const auto text = m.scrape();
  EXPECT_TRUE(has_line(text, R"(workqueue_depth{name="stack"} 3)")) << text;
  EXPECT_TRUE(has_line(text, R"(workqueue_adds_total{name="stack"} 2)"));
  EXPECT_TRUE(has_line(text, R"(workqueue_retries_total{name="stack"} 1)"));
  EXPECT_TRUE(has_line(text, R"(workqueue_queue_duration_seconds_count{name="stack"} 1)"));
  EXPECT_TRUE(has_line(text, R"(workqueue_work_duration_seconds_bucket{name="stack",le="0.1"} 1)"));
}

TEST(OperatorMetrics, AdmissionLeaderBuildAndProcessMetricsAreExported) {
  OperatorMetricsOptions o;
  o.version = "1.2.3";
  o.commit = "abc";
  OperatorMetrics m(nullptr, o);
  m.observe_admission("/validate", 200, 3ms);
  m.observe_admission("/mutate", 200, 3ms);
  m.observe_admission("/validate", 400, 1ms);
  m.observe_admission("/unexpected", 404, 1ms);  // bounded label set: counted as "other"
  m.set_leader(true);
  const auto text = m.scrape();
  EXPECT_TRUE(
      has_line(text, R"(kstack_admission_requests_total{code="200",endpoint="/validate"} 1)"))
      << text;
  EXPECT_TRUE(
      has_line(text, R"(kstack_admission_requests_total{code="400",endpoint="/validate"} 1)"));
  EXPECT_TRUE(has_line(text, R"(kstack_admission_requests_total{code="404",endpoint="other"} 1)"));
  EXPECT_TRUE(has_line(text, R"(kstack_admission_duration_seconds_count{endpoint="/validate"} 2)"));
  EXPECT_TRUE(has_line(text, R"(leader_election_master_status{name="kstack-operator"} 1)"));
  EXPECT_TRUE(has_line(text, R"(kstack_build_info{commit="abc",version="1.2.3"} 1)"));
  EXPECT_NE(text.find("\nprocess_resident_memory_bytes "), std::string::npos);
  EXPECT_NE(text.find("\nprocess_start_time_seconds "), std::string::npos);
  m.set_leader(false);
  EXPECT_TRUE(has_line(m.scrape(), R"(leader_election_master_status{name="kstack-operator"} 0)"));
}

TEST(OperatorMetrics, TheAdmissionServerLimitsAreExportedOnlyWhileAServerIsSet) {
  OperatorMetrics m(nullptr, {});
  EXPECT_EQ(m.scrape().find("kstack_admission_connections_refused_total"), std::string::npos);
  AdmissionServerCounters counters{7, 3, 4096};
  m.set_admission_server([&counters] { return counters; });
  auto text = m.scrape();
  EXPECT_TRUE(has_line(text, "kstack_admission_connections_refused_total 7")) << text;
  EXPECT_TRUE(has_line(text, "kstack_admission_body_budget_refusals_total 3")) << text;
  EXPECT_TRUE(has_line(text, "kstack_admission_inflight_body_bytes 4096")) << text;
  EXPECT_NE(text.find("# TYPE kstack_admission_connections_refused_total counter"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE kstack_admission_inflight_body_bytes gauge"), std::string::npos);
  counters.inflight_body_bytes = 0;  // read at scrape time, not when set
  EXPECT_TRUE(has_line(m.scrape(), "kstack_admission_inflight_body_bytes 0"));
  m.set_admission_server(nullptr);
  EXPECT_EQ(m.scrape().find("kstack_admission_inflight_body_bytes"), std::string::npos);
}

TEST(OperatorMetrics, InformersRunningInTheProcessAreCountedByResource) {
  OperatorMetrics m(nullptr, OperatorMetricsOptions{});
  auto [client, api] = informer::testing::FakeApi::client();
  const std::string line = R"(kstack_informers{group="",resource="configmaps"} )";
  informer::InformerFactory factory(client);
  factory.informer({kube::resources::kConfigMaps, "a", {}, {}});
  factory.informer({kube::resources::kConfigMaps, "b", {}, {}});
  factory.informer({kube::resources::kConfigMaps, "a", {}, {}});  // shared with the first
  factory.start();
  EXPECT_TRUE(has_line(m.scrape(), line + "2")) << m.scrape();
  factory.stop();
  EXPECT_EQ(m.scrape().find(line), std::string::npos) << m.scrape();
}

}  // namespace
}  // namespace kstack::cmd
