// plan() table tests of issue 13: members on lost nodes (memberRecovery), spec.stopped, and the
// roles' PodDisruptionBudgets (docs/api.md "Lost nodes", "Stop and resume", "Disruption
// budgets").
#include <algorithm>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/parse.h"
#include "kube/resource.h"
#include "reconciler/status.h"
#include "tests/unit/reconciler/plan_fixture.h"

namespace kstack::reconciler::testing {
namespace {

namespace json = boost::json;
using Op = Write::Op;
using State = executor::SetupRunner::ConfigureStatus::State;

// kNow is 2026-11-25T00:00:00Z.
constexpr std::string_view kLostLongAgo = "2026-11-24T23:58:00Z";  // 120 s before kNow
constexpr std::string_view kLostJustNow = "2026-11-24T23:59:50Z";  // 10 s before kNow
const std::string kLostNode = "node-b";

FakeSetup configured() {
  FakeSetup s;
  s.configure = State::kDone;
  return s;
}

json::value node(const std::string& name, std::string_view ready, std::string_view since) {
  return json::object{
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       json::object{{"name", name}, {"labels", json::object{{"kubernetes.io/hostname", name}}}}},
      {"status", json::object{{"conditions", json::array{json::object{
                                                 {"type", "Ready"},
                                                 {"status", ready},
                                                 {"lastTransitionTime", since},
                                             }}}}}};
}

// A volume only `node_name` reaches (local), or one any node reaches.
json::value volume(const std::string& name, const std::string& node_name) {
  json::object spec{{"capacity", json::object{{"storage", "1Gi"}}}};
  if (!node_name.empty()) {
    spec["nodeAffinity"] = json::object{
        {"required",
         json::object{{"nodeSelectorTerms",
                       json::array{json::object{
                           {"matchExpressions",
                            json::array{json::object{{"key", "kubernetes.io/hostname"},
                                                     {"operator", "In"},
                                                     {"values", json::array{node_name}}}}}}}}}}};
  }
  return json::object{{"apiVersion", "v1"},
                      {"kind", "PersistentVolume"},
                      {"metadata", json::object{{"name", name}}},
                      {"spec", std::move(spec)}};
}

std::string volume_of(const World& w, const std::string& pvc) {
  return std::string(w.pvcs.at(pvc).at("spec").at("volumeName").as_string());
}

// A settled Stack of three members with a package; member 2 runs on `node-b`, the others on
// `node-a`; every claim's volume is local to its member's node when `local`.
struct Lost {
  explicit Lost(bool local, std::string_view lost_since = kLostLongAgo) : w(3, 0, true) {
    auto setup = configured();
    w.settle(setup);
    for (int i = 0; i < 3; ++i) {
      const auto n = i == 2 ? kLostNode : std::string("node-a");
      w.pods.at(pod_of("server", i)).at("spec").as_object()["nodeName"] = n;
      const auto v = volume_of(w, pvc_of("server", i));
      w.volumes[v] = volume(v, local ? n : std::string());
    }
    w.nodes["node-a"] = node("node-a", "True", "2026-11-01T00:00:00Z");
    w.nodes[kLostNode] = node(kLostNode, "Unknown", lost_since);
    w.set_pod_ready(pod_of("server", 2), false);
  }
  void policy(std::string_view policy, std::string_view local_storage) {
    catalog::KStackConfig c;
    c.metadata.name = "kstack-config";
    c.spec.member_recovery.policy = std::string(policy);
    c.spec.member_recovery.local_storage = std::string(local_storage);
    w.config = c;
  }
  World w;
};

const std::string kPod2 = pod_of("server", 2);
const std::string kPvc2 = pvc_of("server", 2);

std::string fqdn_of(const Plan& p, const std::string& pod) {
  (void)p;
  return pod + ".db.apps.svc.cluster.local";
}

bool has_delnodes_for(const Plan& p, const std::string& on, const std::string& pod) {
  for (const auto& cmd : pending_cmds(p, on)) {
    if (cmd.size() >= 5 && cmd[0] == "--delnodes" && cmd[4] == fqdn_of(p, pod)) return true;
  }
  return false;
}

TEST(PlanRecovery, APodOnANodeLostLongerThanTheGraceIsForceDeletedWhenItsClaimCanMove) {
  Lost l(/*local=*/false);
  auto setup = configured();
  const auto p = pass(l.w, setup);
  const auto* del = find_write(p, Op::kDelete, kPod2);
  ASSERT_NE(del, nullptr);
  EXPECT_TRUE(del->force);
  EXPECT_EQ(find_write(p, Op::kDelete, kPvc2), nullptr);  // the claim moves with the pod
  ASSERT_NE(find_event(p, "MemberRescheduled"), nullptr);
  EXPECT_NE(find_event(p, "MemberRescheduled")->note.find(kLostNode), std::string::npos);
  const auto* m = l.w.member(p, kPod2);
  EXPECT_NE(m->state_detail.recovery.find("force-deleted"), std::string::npos);
  EXPECT_FALSE(m->state_detail.replacing);
  EXPECT_EQ(m->state, catalog::kMemberCreatePending);  // its pod is going
  // The members on the live node are not touched.
  EXPECT_EQ(find_write(p, Op::kDelete, pod_of("server", 0)), nullptr);
}

TEST(PlanRecovery, WithinTheGracePeriodNothingIsDeletedAndThePassPolls) {
  Lost l(/*local=*/false, kLostJustNow);
  auto setup = configured();
  const auto p = pass(l.w, setup);
  EXPECT_TRUE(write_names(p, Op::kDelete).empty());
  EXPECT_EQ(p.result.kind, informer::WorkResult::Kind::kRequeueAfter);
}

TEST(PlanRecovery, AnAlreadyTerminatingPodOnALostNodeIsStillForceDeleted) {
  Lost l(/*local=*/false);
  l.w.pods.at(kPod2).at("metadata").as_object()["deletionTimestamp"] = "2026-11-24T23:58:30Z";
  auto setup = configured();
  const auto p = pass(l.w, setup);
  ASSERT_NE(find_write(p, Op::kDelete, kPod2), nullptr);
  EXPECT_TRUE(find_write(p, Op::kDelete, kPod2)->force);
}

TEST(PlanRecovery, PolicyOffLeavesThePodAndSaysWhy) {
  Lost l(/*local=*/false);
  l.policy("Off", "Keep");
  auto setup = configured();
  const auto p = pass(l.w, setup);
  EXPECT_TRUE(write_names(p, Op::kDelete).empty());
  EXPECT_NE(l.w.member(p, kPod2)->state_detail.recovery.find("policy is Off"), std::string::npos);
  const auto* degraded = condition(p, kConditionDegraded);
  ASSERT_NE(degraded, nullptr);
  EXPECT_EQ(degraded->reason, kReasonNodeLost);
}

TEST(PlanRecovery, ALocalClaimWithKeepWaitsForTheNodeWithAConditionAndOneEvent) {
  Lost l(/*local=*/true);
  auto setup = configured();
  auto p = pass(l.w, setup);
  EXPECT_TRUE(write_names(p, Op::kDelete).empty());
  const auto* m = l.w.member(p, kPod2);
  EXPECT_NE(m->state_detail.recovery.find("waiting for node " + kLostNode), std::string::npos);
  EXPECT_NE(m->state_detail.recovery.find("localStorage: Keep"), std::string::npos);
  const auto* degraded = condition(p, kConditionDegraded);
  ASSERT_NE(degraded, nullptr);
  EXPECT_EQ(degraded->status, "True");
  EXPECT_EQ(degraded->reason, kReasonNodeLost);
  EXPECT_NE(degraded->message.find(kPod2), std::string::npos);
  ASSERT_NE(find_event(p, "MemberWaitingForNode"), nullptr);
  l.w.accept(p);
  p = pass(l.w, setup);
  EXPECT_EQ(find_event(p, "MemberWaitingForNode"), nullptr);  // once, not every pass
  // The node comes back: the member carries on with its claim, the note goes.
  l.w.nodes[kLostNode] = node(kLostNode, "True", kNow);
  l.w.set_pod_ready(kPod2, true);
  p = pass(l.w, setup);
  EXPECT_EQ(l.w.member(p, kPod2)->state_detail.recovery, "");
  EXPECT_EQ(condition(p, kConditionDegraded)->status, "False");
}

// The status says since when, not for how long: a pass while the node stays lost writes nothing.
TEST(PlanRecovery, AMemberWaitingForItsNodeDoesNotRewriteTheStatusEveryPass) {
  for (const auto* policy : {"Off", "Reschedule"}) {
    Lost l(/*local=*/true);
    l.policy(policy, "Keep");
    auto setup = configured();
    auto p = l.w.settle(setup);
    ASSERT_FALSE(p.write_status);
    const auto before = catalog::to_json(p.status);
    l.w.now = "2026-11-25T00:00:30Z";  // 30 s later, the node still lost
    p = pass(l.w, setup);
    EXPECT_FALSE(p.write_status) << policy << ":\n"
                                 << json::serialize(before) << "\n"
                                 << json::serialize(catalog::to_json(p.status));
  }
}

TEST(PlanRecovery, ALocalClaimWithRecreateGoesWithThePodAndTheOthersGetDelnodes) {
  Lost l(/*local=*/true);
  l.policy("Reschedule", "Recreate");
  auto setup = configured();
  const auto p = pass(l.w, setup);
  ASSERT_NE(find_write(p, Op::kDelete, kPvc2), nullptr);
  ASSERT_NE(find_write(p, Op::kDelete, kPod2), nullptr);
  EXPECT_TRUE(find_write(p, Op::kDelete, kPod2)->force);
  // The claim first: deleted after the pod, the StatefulSet could make the pod again on the
  // old claim before it is gone.
  const auto names = write_names(p, Op::kDelete);
  EXPECT_LT(std::find(names.begin(), names.end(), kPvc2) - names.begin(),
            std::find(names.begin(), names.end(), kPod2) - names.begin());
  const auto* m = l.w.member(p, kPod2);
  EXPECT_TRUE(m->state_detail.replacing);
  EXPECT_FALSE(m->state_detail.last_setup_generation.has_value());
  EXPECT_TRUE(has_delnodes_for(p, pod_of("server", 0), kPod2));
  EXPECT_TRUE(has_delnodes_for(p, pod_of("server", 1), kPod2));
  EXPECT_NE(find_event(p, "ClaimRecreated"), nullptr);
  EXPECT_NE(find_event(p, "MemberRescheduled"), nullptr);
}

TEST(PlanRecovery, TheReplacementIsSetUpOnlyAfterTheDelnodesAndAnnouncedAfter) {
  Lost l(/*local=*/true);
  l.policy("Reschedule", "Recreate");
  auto setup = configured();
  auto p = pass(l.w, setup);
  l.w.accept(p);
  // The StatefulSet made claim and pod again on a live node; a new container runs.
  l.w.pods.erase(kPod2);
  l.w.pvcs.erase(kPvc2);
  l.w.converge();
  l.w.nodes.erase(kLostNode);
  setup.ran.clear();
  p = pass(l.w, setup);
  l.w.accept(p);
  // Held: the --delnodes for the member it replaces has not gone out.
  EXPECT_TRUE(setup.kinds_for(kPod2).empty());
  EXPECT_EQ(member_state(p, kPod2), catalog::kMemberCreating);
  ASSERT_FALSE(p.sends.empty());
  for (const auto& send : p.sends) {
    EXPECT_EQ(send.arguments.at(0), "--delnodes");
    l.w.notify[notify_id({"apps", send.target.pod, l.w.container_of(send.target.pod)},
                         send.arguments)]
        .state = NotifyOutcome::State::kSucceeded;
  }
  p = pass(l.w, setup);  // delivered and consumed
  l.w.accept(p);
  l.w.notify.clear();
  p = l.w.settle(setup);
  EXPECT_FALSE(setup.kinds_for(kPod2).empty());  // set up now
  EXPECT_EQ(member_state(p, kPod2), catalog::kMemberReady);
  const auto* m = l.w.member(p, kPod2);
  EXPECT_FALSE(m->state_detail.replacing);
  EXPECT_EQ(m->state_detail.recovery, "");
  bool addnodes = false;
  for (const auto& cmd : pending_cmds(p, pod_of("server", 0))) {
    if (cmd.at(0) == "--addnodes" && cmd.at(4) == fqdn_of(p, kPod2)) addnodes = true;
  }
  EXPECT_TRUE(addnodes);
}

TEST(PlanRecovery, APendingPodWhoseClaimIsBeingDeletedIsDeletedSoBothAreMadeAgain) {
  World w(3, 0, true);
  auto setup = configured();
  w.settle(setup);
  auto& pod = w.pods.at(kPod2).as_object();
  pod["spec"].as_object().erase("nodeName");
  w.pvcs.at(kPvc2).at("metadata").as_object()["deletionTimestamp"] = kNow;
  const auto p = pass(w, setup);
  const auto* del = find_write(p, Op::kDelete, kPod2);
  ASSERT_NE(del, nullptr);
  EXPECT_FALSE(del->force);
  // A pending pod whose claim is fine is left to the scheduler.
  World ok(3, 0, true);
  ok.settle(setup);
  ok.pods.at(kPod2).at("spec").as_object().erase("nodeName");
  EXPECT_EQ(find_write(pass(ok, setup), Op::kDelete, kPod2), nullptr);
}

// ---- spec.stopped ----

void set_stopped(World& w, bool stopped) {
  w.stack.at("spec").as_object()["stopped"] = stopped;
  auto& md = w.stack.at("metadata").as_object();
  md["generation"] = md["generation"].as_int64() + 1;
}

TEST(PlanStop, StoppingScalesEveryRoleToZeroAndKeepsMembersClaimsAndServices) {
  World w(3, 0, true);
  auto setup = configured();
  w.settle(setup);
  set_stopped(w, true);
  auto p = pass(w, setup);
  EXPECT_EQ(replicas_in(p, set_of("server")), 0);
  EXPECT_TRUE(write_names(p, Op::kDelete).empty());  // no claim, Service or pod deleted
  EXPECT_EQ(p.status.roles.at(0).members.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(pending_cmds(p, pod_of("server", i)).empty());
  EXPECT_EQ(condition(p, kConditionProgressing)->reason, kReasonStopping);
  EXPECT_EQ(condition(p, kConditionReady)->status, "False");
  EXPECT_EQ(p.status.state, catalog::kStackUpdating);
  w.accept(p);
  w.set_replicas(set_of("server"), 0);
  w.pods.clear();
  p = pass(w, setup);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(member_state(p, pod_of("server", i)), "stopped");
  EXPECT_EQ(p.status.state, catalog::kStackStopped);
  EXPECT_EQ(condition(p, kConditionReady)->reason, kReasonStopped);
  EXPECT_EQ(condition(p, kConditionProgressing)->status, "False");
  EXPECT_EQ(condition(p, kConditionProgressing)->reason, kReasonStopped);
  EXPECT_EQ(p.result.kind, informer::WorkResult::Kind::kSuccess);
  EXPECT_EQ(w.pvcs.size(), 3u);
  EXPECT_TRUE(write_names(p, Op::kDelete).empty());
}

TEST(PlanStop, ResumingBringsEveryMemberBackOnItsClaimAndSetsItUpAgain) {
  World w(3, 0, true);
  auto setup = configured();
  w.settle(setup);
  const auto ids_before = w.member(w.settle(setup), pod_of("server", 0))->node_id;
  set_stopped(w, true);
  w.accept(pass(w, setup));
  w.set_replicas(set_of("server"), 0);
  w.pods.clear();
  w.accept(pass(w, setup));
  set_stopped(w, false);
  auto p = pass(w, setup);
  EXPECT_EQ(replicas_in(p, set_of("server")), 3);
  w.accept(p);
  w.converge();  // the StatefulSet makes the pods again, on the same claims
  setup.ran.clear();
  p = w.settle(setup);
  EXPECT_EQ(p.status.state, catalog::kStackReady);
  EXPECT_EQ(w.member(p, pod_of("server", 0))->node_id, ids_before);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(setup.kinds_for(pod_of("server", i)).empty());
  EXPECT_TRUE(write_names(p, Op::kDelete).empty());
}

// ---- PodDisruptionBudgets ----

const kube::ResourceType kPdbType{"policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget",
                                  true};

void set_min_available(World& w, json::value v) {
  for (auto& r : w.app.at("spec").at("roles").as_array()) {
    if (r.at("id").as_string() == "server") r.as_object()["minAvailable"] = std::move(v);
  }
}

const Write* budget_write(const Plan& p) {
  for (const auto& wr : p.writes) {
    if (wr.type == &kPdbType) return &wr;
  }
  return nullptr;
}

TEST(PlanPdb, ARoleThatDeclaresMinAvailableGetsABudgetSelectingItsMembers) {
  World fresh(3);
  fresh.pdb_type = &kPdbType;
  set_min_available(fresh, "51%");
  const auto first = pass(fresh);
  const auto* budget = budget_write(first);
  ASSERT_NE(budget, nullptr);
  EXPECT_EQ(budget->op, Op::kApply);
  EXPECT_EQ(budget->object.at("apiVersion").as_string(), "policy/v1");
  EXPECT_EQ(budget->object.at("spec").at("minAvailable").as_string(), "51%");
  EXPECT_EQ(budget->object.at("spec").at("selector"),
            fresh.sets.at(set_of("server")).at("spec").at("selector"));
  EXPECT_EQ(budget->object.at("metadata").at("ownerReferences").at(0).at("uid").as_string(),
            kStackUid);
}

TEST(PlanPdb, ABudgetOfARoleThatNoLongerDeclaresOneIsDeleted) {
  World w(3);
  w.pdb_type = &kPdbType;
  json::value live = json::object{
      {"apiVersion", "policy/v1"},
      {"kind", "PodDisruptionBudget"},
      {"metadata",
       json::object{{"name", set_of("server")},
                    {"namespace", "apps"},
                    {"uid", "pdb-uid"},
                    {"labels", json::object{{"kstack.io/stack", "db"}}},
                    {"ownerReferences",
                     json::array{json::object{{"uid", kStackUid}, {"controller", true}}}}}}};
  w.pdbs[set_of("server")] = live;
  const auto p = pass(w);
  ASSERT_NE(budget_write(p), nullptr);
  EXPECT_EQ(budget_write(p)->op, Op::kDelete);
}

TEST(PlanPdb, WithoutBudgetsServedTheStackSaysSo) {
  World w(3);
  set_min_available(w, 2);
  const auto p = pass(w);
  const auto* degraded = condition(p, kConditionDegraded);
  ASSERT_NE(degraded, nullptr);
  EXPECT_EQ(degraded->reason, kReasonNoDisruptionBudget);
}

}  // namespace
}  // namespace kstack::reconciler::testing
