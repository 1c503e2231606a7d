// Node loss as on a real cluster: a simulated node whose heartbeats (Lease and NodeReady)
// stop is marked NotReady by the real node-lifecycle controller, which also sets its pods'
// Ready condition to False; when the heartbeats resume, both are Ready again. A pod force
// deleted meanwhile keeps running on the partitioned node until it is back, and then goes
// with its released volume; claims are provisioned on live nodes only.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "kube/exec.h"
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
  auto cut_off = kube::exec(*client, ns, "member", {"true"});
  EXPECT_FALSE(cut_off) << "exec reached a pod of a lost node";

  ASSERT_TRUE((*sim)->resume_heartbeats());
  auto ready_again = wait_for_object(
      *client, kube::resources::kNodes, "", "lost-node",
      [](const json::value& n) { return condition(n, "Ready") == "True"; }, 60s);
  ASSERT_TRUE(ready_again) << ready_again.error();
  auto pod_ready =
      wait_for_object(*client, kube::resources::kPods, ns, "member", running_and_ready, 60s);
  ASSERT_TRUE(pod_ready) << pod_ready.error();
  auto reached = kube::exec(*client, ns, "member", {"true"});
  ASSERT_TRUE(reached) << reached.error().to_string();
  EXPECT_EQ(reached->exit_code, 0);
}

// The pod's sandboxes on the node, from its control endpoint: {"uid", "containers": {...}}.
tl::expected<json::value, std::string> sandboxes(NodeSimulator& sim, const std::string& ns,
                                                 const std::string& pod) {
  auto described = sim.describe_pod(ns, pod);
  if (!described) return tl::unexpected(described.error());
  return json::parse(*described);
}

// A live process (bubblewrap) whose command line names the container's directory.
bool sandbox_process_running(const std::string& container_root) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ifstream stat(entry.path() / "stat");
    std::string pid, comm, state;
    stat >> pid >> comm >> state;
    if (state != "Z" && cmdline.find(container_root + "/etc") != std::string::npos) return true;
  }
  return false;
}

TEST(NodeLoss, APodForceDeletedWhileItsNodeIsLostRunsUntilTheNodeIsBackThenGoesWithItsVolume) {
  NodeSimulatorOptions options;
  options.node_name = "partitioned-node";
  options.labels = {{"kstack.io/test", "partition"}};
  auto sim = NodeSimulator::start(control_plane(), options);
  ASSERT_TRUE(sim) << sim.error();
  auto client = admin();
  const std::string ns = make_namespace(*client, "partition");
  json::value claim = json::parse(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim",
      "metadata":{"name":"data","annotations":{
        "volume.kubernetes.io/selected-node":"partitioned-node"}},
      "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})");
  ASSERT_TRUE(client->create(kube::resources::kPersistentVolumeClaims, ns, claim));
  json::value pod = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"member"},
      "spec":{"nodeSelector":{"kstack.io/test":"partition"},
              "volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data"}}],
              "containers":[{"name":"app","image":"busybox","command":["sleep","3600"],
                             "volumeMounts":[{"name":"data","mountPath":"/data"}]}]}})");
  ASSERT_TRUE(client->create(kube::resources::kPods, ns, pod));
  auto running =
      wait_for_object(*client, kube::resources::kPods, ns, "member", running_and_ready, 120s);
  ASSERT_TRUE(running) << running.error();
  ASSERT_EQ(str_at(*running, "/spec/nodeName"), "partitioned-node");
  const std::string uid = str_at(*running, "/metadata/uid");
  auto bound = client->get(kube::resources::kPersistentVolumeClaims, ns, "data");
  ASSERT_TRUE(bound) << bound.error().to_string();
  const std::string volume = str_at(*bound, "/spec/volumeName");
  auto pv = client->get(kube::resources::kPersistentVolumes, "", volume);
  ASSERT_TRUE(pv) << pv.error().to_string();
  const std::filesystem::path dir = str_at(*pv, "/spec/local/path");
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  auto before = sandboxes(**sim, ns, "member");
  ASSERT_TRUE(before) << before.error();
  const std::string root = str_at(*before, "/containers/app/root");
  ASSERT_TRUE(sandbox_process_running(root)) << root;

  // Lost: what a controller does for a lost member (force delete, claim deleted).
  ASSERT_TRUE((*sim)->stop_heartbeats());
  auto not_ready = wait_for_object(
      *client, kube::resources::kNodes, "", "partitioned-node",
      [](const json::value& n) { return condition(n, "Ready") == "Unknown"; }, 90s);
  ASSERT_TRUE(not_ready) << not_ready.error();
  ASSERT_TRUE(client->remove(kube::resources::kPersistentVolumeClaims, ns, "data"));
  kube::DeleteOptions force;
  force.grace_period_seconds = 0;
  force.precondition_uid = uid;
  ASSERT_TRUE(client->remove(kube::resources::kPods, ns, "member", force));
  // With the pod gone, the claim's protection goes and the volume is released - and not
  // reclaimed by the lost node.
  auto released = wait_for_object(
      *client, kube::resources::kPersistentVolumes, "", volume,
      [](const json::value& v) { return str_at(v, "/status/phase") == "Released"; }, 60s);
  ASSERT_TRUE(released) << released.error();
  auto gone = wait_for_absent(*client, kube::resources::kPods, ns, "member", 10s);
  ASSERT_TRUE(gone) << gone.error();

  // The partitioned kubelet never heard of it: the containers run on, the data stays.
  auto kept = sandboxes(**sim, ns, "member");
  ASSERT_TRUE(kept) << "the sandbox went while the node was lost: " << kept.error();
  EXPECT_EQ(str_at(*kept, "/uid"), uid);
  EXPECT_TRUE(sandbox_process_running(root));
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_TRUE(client->get(kube::resources::kPersistentVolumes, "", volume))
      << "the lost node reclaimed a volume";

  // Back: the sandbox is killed, then the released volume goes with its directory.
  ASSERT_TRUE((*sim)->resume_heartbeats());
  auto reclaimed = wait_for_absent(*client, kube::resources::kPersistentVolumes, "", volume, 60s);
  ASSERT_TRUE(reclaimed) << reclaimed.error();
  auto after = sandboxes(**sim, ns, "member");
  EXPECT_FALSE(after) << "still there: " << json::serialize(*after);
  EXPECT_FALSE(sandbox_process_running(root));
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(NodeLoss, ClaimsAreProvisionedOnLiveNodesOnly) {
  // Two nodes; the one a claim would go to (fewest volumes, then name) is lost first.
  std::vector<std::unique_ptr<NodeSimulator>> sims;
  for (const char* name : {"place-a", "place-b"}) {
    NodeSimulatorOptions options;
    options.node_name = name;
    auto sim = NodeSimulator::start(control_plane(), options);
    ASSERT_TRUE(sim) << sim.error();
    sims.push_back(std::move(*sim));
  }
  auto client = admin();
  ASSERT_TRUE(sims[0]->stop_heartbeats());
  auto not_ready = wait_for_object(
      *client, kube::resources::kNodes, "", "place-a",
      [](const json::value& n) { return condition(n, "Ready") == "Unknown"; }, 90s);
  ASSERT_TRUE(not_ready) << not_ready.error();
  const std::string ns = make_namespace(*client, "placement");
  for (const char* name : {"one", "two"}) {
    json::value claim = json::parse(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim",
        "metadata":{"name":")" + std::string(name) +
                                    R"("},
        "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})");
    ASSERT_TRUE(client->create(kube::resources::kPersistentVolumeClaims, ns, claim));
  }
  auto bound = wait_for(
      *client, kube::resources::kPersistentVolumeClaims, ns, "",
      [](const Objects& o) {
        return o.size() == 2 && std::all_of(o.begin(), o.end(), [](const auto& c) {
                 return str_at(c.second, "/status/phase") == "Bound";
               });
      },
      60s);
  ASSERT_TRUE(bound) << bound.error();
  for (const auto& [name, claim] : *bound) {
    auto pv =
        client->get(kube::resources::kPersistentVolumes, "", str_at(claim, "/spec/volumeName"));
    ASSERT_TRUE(pv) << pv.error().to_string();
    EXPECT_EQ(str_at(*pv, "/metadata/annotations/kstack.io~1nodesim-node"), "place-b") << name;
  }
  ASSERT_TRUE(sims[0]->resume_heartbeats());
}

}  // namespace
}  // namespace kstack::testenv::e2e
