// The simulator's scheduler against the live Node, as `kubectl drain` needs it: a cordoned
// node (spec.unschedulable) takes only pods that tolerate node.kubernetes.io/unschedulable, a
// pod waiting there is bound once the node is uncordoned, and a pod whose claim is being
// deleted is not bound until its claim is back.
//
// "Not bound" is asserted without waiting for time to pass: a marker pod created after the
// pod under test, that the node would take, is bound first. The scheduler has one worker and
// takes pods in the order they arrive, so by then it has looked at the pod under test. An
// earlier marker proves that the scheduler's caches hold the change under test: it selects a
// label set by the same Node update as the cordon, or uses a claim made after the deletion.
#include <string>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "tests/integration/nodesim/one_node_suite.h"
#include "tests/nodesim/testing/e2e.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using kube::resources::kNodes;
using kube::resources::kPersistentVolumeClaims;
using kube::resources::kPods;

inline constexpr char kNode[] = "sched-node";
constexpr auto kTimeout = 120s;
constexpr const char* kTolerateCordon =
    R"([{"key":"node.kubernetes.io/unschedulable","operator":"Exists","effect":"NoSchedule"}])";

// A pod for kNode (and `step`, a label of the node, when given), idle (unregistered image).
json::value pod(const std::string& name, const std::string& step = {},
                const std::string& tolerations = "[]", const std::string& claim = {}) {
  json::object selector{{"kubernetes.io/hostname", kNode}};
  if (!step.empty()) selector["kstack.io/sched-step"] = step;
  json::object spec{
      {"nodeSelector", selector},
      {"tolerations", json::parse(tolerations)},
      {"containers", json::array{json::object{{"name", "app"}, {"image", "busybox"}}}}};
  if (!claim.empty()) {
    spec["volumes"] = json::array{json::object{
        {"name", "data"}, {"persistentVolumeClaim", json::object{{"claimName", claim}}}}};
  }
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", json::object{{"name", name}}},
                      {"spec", std::move(spec)}};
}

bool bound(const json::value& p) { return !str_at(p, "/spec/nodeName").empty(); }

class Scheduling : public OneNodeSuite<kNode> {
 protected:
  void SetUp() override {
    ASSERT_NE(simulator(), nullptr);
    client_ = admin();
    ns_ = make_namespace(*client_, "sched");
  }
  void TearDown() override {
    (void)patch_node(
        R"({"spec":{"unschedulable":null},"metadata":{"labels":{"kstack.io/sched-step":null}}})");
    (void)client_->remove(kube::resources::kNamespaces, "", ns_);
  }

  kube::Result<json::value> patch_node(const std::string& merge_patch) {
    return client_->patch(kNodes, "", kNode, kube::PatchType::kMerge, merge_patch);
  }
  void create(const json::value& object, const kube::ResourceType& type = kPods) {
    auto r = client_->create(type, ns_, object);
    ASSERT_TRUE(r) << r.error().to_string();
  }
  tl::expected<json::value, std::string> wait_bound(const std::string& name) {
    return wait_for_object(*client_, kPods, ns_, name, bound, kTimeout);
  }
  std::string node_of(const std::string& name) {
    auto p = client_->get(kPods, ns_, name);
    return p ? str_at(*p, "/spec/nodeName") : "<" + p.error().to_string() + ">";
  }

  std::shared_ptr<kube::Client> client_;
  std::string ns_;
};

TEST_F(Scheduling, ACordonedNodeTakesOnlyPodsThatTolerateItAndTheRestOnceUncordoned) {
  ASSERT_TRUE(patch_node(
      R"({"spec":{"unschedulable":true},"metadata":{"labels":{"kstack.io/sched-step":"cordoned"}}})"));
  // The scheduler sees the cordon: this pod can only go to the node as updated.
  create(pod("marker-1", "cordoned", kTolerateCordon));
  auto marker = wait_bound("marker-1");
  ASSERT_TRUE(marker) << marker.error();
  EXPECT_EQ(str_at(*marker, "/spec/nodeName"), kNode);

  create(pod("plain"));
  create(pod("marker-2", "cordoned", kTolerateCordon));
  ASSERT_TRUE(wait_bound("marker-2"));
  EXPECT_EQ(node_of("plain"), "") << "bound to a cordoned node";

  // Uncordoned: the waiting pod goes (the Node update brings it back to the scheduler).
  ASSERT_TRUE(patch_node(
      R"({"spec":{"unschedulable":null},"metadata":{"labels":{"kstack.io/sched-step":"open"}}})"));
  auto plain = wait_bound("plain");
  ASSERT_TRUE(plain) << plain.error();
  EXPECT_EQ(str_at(*plain, "/spec/nodeName"), kNode);
}

TEST_F(Scheduling, APodWhoseClaimIsBeingDeletedWaitsForItsNextClaim) {
  // A claim held by a finalizer of the test stays Terminating; the pod using it must wait.
  json::value claim = json::parse(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim",
      "metadata":{"name":"data","finalizers":["kstack.io/test-hold"]},
      "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})");
  create(claim, kPersistentVolumeClaims);
  auto claim_bound = wait_for_object(
      *client_, kPersistentVolumeClaims, ns_, "data",
      [](const json::value& c) { return str_at(c, "/status/phase") == "Bound"; }, kTimeout);
  ASSERT_TRUE(claim_bound) << claim_bound.error();
  ASSERT_TRUE(client_->remove(kPersistentVolumeClaims, ns_, "data"));
  auto terminating = wait_for_object(
      *client_, kPersistentVolumeClaims, ns_, "data",
      [](const json::value& c) { return !str_at(c, "/metadata/deletionTimestamp").empty(); },
      kTimeout);
  ASSERT_TRUE(terminating) << terminating.error();

  // The scheduler's claim cache has the deletion once it has a claim made after it: a marker
  // pod using that one is bound.
  json::value fence = claim;
  fence.at("metadata").as_object() = json::object{{"name", "fence"}};
  create(fence, kPersistentVolumeClaims);
  create(pod("marker-1", "", "[]", "fence"));
  ASSERT_TRUE(wait_bound("marker-1"));

  create(pod("user", "", "[]", "data"));
  create(pod("marker-2"));
  ASSERT_TRUE(wait_bound("marker-2"));
  EXPECT_EQ(node_of("user"), "") << "bound with a terminating claim";

  // The claim goes, a new one of the same name comes: the pod is bound with it.
  ASSERT_TRUE(client_->patch(kPersistentVolumeClaims, ns_, "data", kube::PatchType::kMerge,
                             R"({"metadata":{"finalizers":null}})"));
  ASSERT_TRUE(wait_for_absent(*client_, kPersistentVolumeClaims, ns_, "data", kTimeout));
  json::value next = claim;
  next.at("metadata").as_object().erase("finalizers");
  create(next, kPersistentVolumeClaims);
  auto user = wait_bound("user");
  ASSERT_TRUE(user) << user.error();
  EXPECT_EQ(str_at(*user, "/spec/nodeName"), kNode);
}

}  // namespace
}  // namespace kstack::testenv::e2e
