// A StatefulSet on two simulated nodes, with the real controller-manager: pods scheduled and
// Running/Ready with Bound claims, and a deleted pod recreated by the StatefulSet controller
// on the node that holds its volume, with the volume's data.
#include <fstream>
#include <iterator>
#include <set>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "tests/nodesim/testing/e2e.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

json::value headless_service(const std::string& name) {
  return json::parse(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":")" + name +
                     R"("},"spec":{"clusterIP":"None","selector":{"app":")" + name +
                     R"("},"ports":[{"port":80}]}})");
}

json::value stateful_set(const std::string& name, int replicas) {
  return json::parse(R"json({
    "apiVersion": "apps/v1", "kind": "StatefulSet",
    "metadata": {"name": ")json" +
                     name + R"json("},
    "spec": {
      "serviceName": ")json" +
                     name + R"json(", "replicas": )json" + std::to_string(replicas) + R"json(,
      "selector": {"matchLabels": {"app": ")json" +
                     name + R"json("}},
      "template": {
        "metadata": {"labels": {"app": ")json" +
                     name + R"json("}},
        "spec": {"containers": [{
          "name": "app", "image": "busybox",
          "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
          "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
      "volumeClaimTemplates": [{
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}})json");
}

class StatefulSetOnSimulatedNodes : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* name : {"sts-a", "sts-b"}) {
      NodeSimulatorOptions options;
      options.node_name = name;
      auto sim = NodeSimulator::start(control_plane(), options);
      ASSERT_TRUE(sim) << sim.error();
      simulators().push_back(std::move(*sim));
    }
  }
  static void TearDownTestSuite() { simulators().clear(); }
  static std::vector<std::unique_ptr<NodeSimulator>>& simulators() {
    static std::vector<std::unique_ptr<NodeSimulator>> sims;
    return sims;
  }
};

TEST_F(StatefulSetOnSimulatedNodes, PodsRunReadyWithBoundClaimsAndARecreatedPodKeepsItsData) {
  auto client = admin();
  const std::string ns = make_namespace(*client, "sts");
  ASSERT_TRUE(client->create(kube::resources::kServices, ns, headless_service("web")));
  ASSERT_TRUE(client->create(kube::resources::kStatefulSets, ns, stateful_set("web", 3)));

  auto pods = wait_for(
      *client, kube::resources::kPods, ns, "app=web",
      [](const Objects& o) {
        return o.size() == 3 && std::all_of(o.begin(), o.end(), [](const auto& p) {
                 return running_and_ready(p.second);
               });
      },
      180s);
  ASSERT_TRUE(pods) << pods.error();
  auto claims = wait_for(
      *client, kube::resources::kPersistentVolumeClaims, ns, "",
      [](const Objects& o) {
        return o.size() == 3 && std::all_of(o.begin(), o.end(), [](const auto& c) {
                 return str_at(c.second, "/status/phase") == "Bound";
               });
      },
      60s);
  ASSERT_TRUE(claims) << claims.error();
  std::set<std::string> nodes;
  for (const auto& [name, pod] : *pods) {
    auto node = str_at(pod, "/spec/nodeName");
    EXPECT_TRUE(node == "sts-a" || node == "sts-b") << name << " on " << node;
    EXPECT_EQ(str_at(pod, "/status/containerStatuses/0/containerID").rfind("sim://", 0), 0u);
    // In the /24 of its node (the launcher gives each simulator its own).
    const auto& cidr = simulators()[node == "sts-a" ? 0 : 1]->pod_cidr();
    EXPECT_EQ(str_at(pod, "/status/podIP").rfind(cidr.substr(0, cidr.rfind('.') + 1), 0), 0u)
        << name << ": " << str_at(pod, "/status/podIP") << " outside " << cidr;
    nodes.insert(node);
  }
  std::cerr << "pods spread over " << nodes.size() << " node(s)\n";

  // Data written through exec and straight into the volume's directory on the host.
  auto& cp = control_plane();
  auto wrote = kubectl_exec(cp, ns, "web-1", "app", {"sh", "-c", "echo kept > /data/proof"});
  ASSERT_EQ(wrote.exit_code, 0) << wrote.err;
  const auto& claim = claims->at("data-web-1");
  auto pv = client->get(kube::resources::kPersistentVolumes, "", str_at(claim, "/spec/volumeName"));
  ASSERT_TRUE(pv) << pv.error().to_string();
  const std::string dir = str_at(*pv, "/spec/local/path");
  ASSERT_FALSE(dir.empty());
  std::ofstream(dir + "/direct") << "from the host\n";

  const auto& old_pod = pods->at("web-1");
  const std::string old_uid = str_at(old_pod, "/metadata/uid");
  ASSERT_TRUE(client->remove(kube::resources::kPods, ns, "web-1"));
  auto recreated = wait_for_object(
      *client, kube::resources::kPods, ns, "web-1",
      [&](const json::value& p) {
        return str_at(p, "/metadata/uid") != old_uid && running_and_ready(p);
      },
      120s);
  ASSERT_TRUE(recreated) << recreated.error();
  EXPECT_EQ(str_at(*recreated, "/spec/nodeName"), str_at(old_pod, "/spec/nodeName"))
      << "the volume's node affinity keeps the pod where its data is";
  auto read = kubectl_exec(cp, ns, "web-1", "app", {"sh", "-c", "cat /data/proof /data/direct"});
  EXPECT_EQ(read.exit_code, 0) << read.err;
  EXPECT_EQ(read.out, "kept\nfrom the host\n");
}

TEST_F(StatefulSetOnSimulatedNodes, ReleasedVolumesAreDeletedWithTheirDirectory) {
  auto client = admin();
  const std::string ns = make_namespace(*client, "reclaim");
  json::value claim = json::parse(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim",
      "metadata":{"name":"scratch"},"spec":{"accessModes":["ReadWriteOnce"],
      "resources":{"requests":{"storage":"2Gi"}}}})");
  ASSERT_TRUE(client->create(kube::resources::kPersistentVolumeClaims, ns, claim));
  auto bound = wait_for_object(
      *client, kube::resources::kPersistentVolumeClaims, ns, "scratch",
      [](const json::value& c) { return str_at(c, "/status/phase") == "Bound"; }, 60s);
  ASSERT_TRUE(bound) << bound.error();
  EXPECT_EQ(str_at(*bound, "/spec/storageClassName"), "standard");  // the default class
  const std::string volume = str_at(*bound, "/spec/volumeName");
  auto pv = client->get(kube::resources::kPersistentVolumes, "", volume);
  ASSERT_TRUE(pv);
  EXPECT_EQ(str_at(*pv, "/spec/capacity/storage"), "2Gi");
  EXPECT_EQ(str_at(*pv, "/spec/persistentVolumeReclaimPolicy"), "Delete");
  const std::string dir = str_at(*pv, "/spec/local/path");
  ASSERT_TRUE(std::filesystem::is_directory(dir));

  ASSERT_TRUE(client->remove(kube::resources::kPersistentVolumeClaims, ns, "scratch"));
  auto gone = wait_for_absent(*client, kube::resources::kPersistentVolumes, "", volume, 60s);
  ASSERT_TRUE(gone) << gone.error();
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace kstack::testenv::e2e
