// Node loss as on a real cluster: a simulated node whose heartbeats (Lease and NodeReady)
// stop is marked NotReady by the real node-lifecycle controller, which also sets its pods'
// Ready condition to False; when the heartbeats resume, both are Ready again.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "tests/nodesim/testing/e2e.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

TEST(NodeLoss, StoppedHeartbeatsMakeTheNodeNotReadyAndItsPodsUnready) {
  NodeSimulatorOptions options;
  options.node_name = "lost-node";
  options.labels = {{"kstack.io/test", "node-loss"}};
  auto sim = NodeSimulator::start(control_plane(), options);
  ASSERT_TRUE(sim) << sim.error();
  auto client = admin();
  const std::string ns = make_namespace(*client, "loss");
  json::value pod = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"member"},
      "spec":{"nodeSelector":{"kstack.io/test":"node-loss"},
              "containers":[{"name":"app","image":"busybox"}]}})");
  ASSERT_TRUE(client->create(kube::resources::kPods, ns, pod));
  auto running =
      wait_for_object(*client, kube::resources::kPods, ns, "member", running_and_ready, 120s);
  ASSERT_TRUE(running) << running.error();
  ASSERT_EQ(str_at(*running, "/spec/nodeName"), "lost-node");

  ASSERT_TRUE((*sim)->stop_heartbeats());
  auto not_ready = wait_for_object(
      *client, kube::resources::kNodes, "", "lost-node",
      [](const json::value& n) { return condition(n, "Ready") == "Unknown"; }, 90s);
  ASSERT_TRUE(not_ready) << not_ready.error();
  auto unready_pod = wait_for_object(
      *client, kube::resources::kPods, ns, "member",
      [](const json::value& p) { return condition(p, "Ready") == "False"; }, 60s);
  ASSERT_TRUE(unready_pod) << unready_pod.error();
  EXPECT_EQ(str_at(*unready_pod, "/status/phase"), "Running");  // still running, just unreachable

  ASSERT_TRUE((*sim)->resume_heartbeats());
  auto ready_again = wait_for_object(
      *client, kube::resources::kNodes, "", "lost-node",
      [](const json::value& n) { return condition(n, "Ready") == "True"; }, 60s);
  ASSERT_TRUE(ready_again) << ready_again.error();
  auto pod_ready =
      wait_for_object(*client, kube::resources::kPods, ns, "member", running_and_ready, 60s);
  ASSERT_TRUE(pod_ready) << pod_ready.error();
}

}  // namespace
}  // namespace kstack::testenv::e2e
