// Scale up and down (docs/reconciler.md "Member states"): new members and node IDs, replicas,
// delete_pending holds while --delnodes is owed, deleting members and their claims.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "tests/unit/reconciler/plan_fixture.h"

namespace kstack::reconciler::testing {
namespace {
namespace json = boost::json;
using Op = Write::Op;
using State = executor::SetupRunner::ConfigureStatus::State;

FakeSetup configured() {
  FakeSetup s;
  s.configure = State::kDone;
  return s;
}

// A settled Stack of `servers` members whose role handles configure/addnodes/delnodes.
World with_package(int servers) {
  World w(servers, 0, true);
  auto setup = configured();
  w.settle(setup);
  return w;
}

NotifyOutcome outcome(NotifyOutcome::State state, int attempts = 1) {
  NotifyOutcome o;
  o.state = state;
  o.attempts = attempts;
  return o;
}

std::string id_for(const World& w, const std::string& pod, const std::vector<std::string>& args) {
  return notify_id({"apps", pod, w.container_of(pod)}, args);
}

TEST(PlanScale, ScalingUpAddsCreatePendingMembersWithTheNextNodeIDs) {
  World w(3);
  w.settle();
  w.set_members("server", 5);
  const auto p = pass(w);
  EXPECT_EQ(member_state(p, "db-server-3"), catalog::kMemberCreatePending);
  EXPECT_EQ(member_state(p, "db-server-4"), catalog::kMemberCreatePending);
  EXPECT_EQ(w.member(p, "db-server-3")->node_id, 4);
  EXPECT_EQ(w.member(p, "db-server-4")->node_id, 5);
  EXPECT_EQ(p.status.last_node_id, 5);
}

TEST(PlanScale, ScalingUpRaisesReplicasAsAScaleAndCreatesTheNewMembersServices) {
  World w(3);
  w.settle();
  w.set_members("server", 5);
  const auto p = pass(w);
  EXPECT_EQ(replicas_in(p, set_of("server")), 5);
  EXPECT_EQ(find_write(p, Op::kApply, set_of("server"))->event.reason, "Scaled");
  EXPECT_EQ(find_write(p, Op::kApply, set_of("server"))->event.note,
            "StatefulSet db-server replicas 3 -> 5");
  ASSERT_NE(find_write(p, Op::kApply, "db-server-4"), nullptr);
  EXPECT_EQ(find_write(p, Op::kApply, "db-server-4")->event.reason, "Created");
}

TEST(PlanScale, NodeIDsOnlyGrowSoAMemberScaledBackUpBeforeItWasGoneIsANewMember) {
  World w(3);
  w.settle();
  w.set_members("server", 1);
  w.accept(pass(w));
  w.set_members("server", 3);
  const auto p = pass(w);
  EXPECT_EQ(w.member(p, "db-server-1")->node_id, 4);
  EXPECT_EQ(w.member(p, "db-server-2")->node_id, 5);
}

TEST(PlanScale, ScalingDownWithoutDelnodesLowersReplicasAndDeletesTheMembersServices) {
  World w(3);
  w.settle();
  w.set_members("server", 1);
  const auto p = pass(w);
  EXPECT_EQ(replicas_in(p, set_of("server")), 1);
  EXPECT_EQ(member_state(p, "db-server-1"), catalog::kMemberDeleting);
  EXPECT_EQ(member_state(p, "db-server-2"), catalog::kMemberDeleting);
  EXPECT_EQ(write_names(p, Op::kDelete), (std::vector<std::string>{"db-server-1", "db-server-2"}));
  EXPECT_EQ(p.status.state, catalog::kStackUpdating);
}

TEST(PlanScale, AClaimOfARemovedMemberWaitsForItsPodThenIsDeleted) {
  World w(3);
  w.settle();
  w.set_members("server", 2);
  auto p = pass(w);
  EXPECT_EQ(find_write(p, Op::kDelete, pvc_of("server", 2)), nullptr);
  EXPECT_EQ(p.result.kind, informer::WorkResult::Kind::kRequeueAfter);
  w.accept(p);
  w.remove_pod("db-server-2");
  p = pass(w);
  ASSERT_NE(find_write(p, Op::kDelete, pvc_of("server", 2)), nullptr);
  EXPECT_EQ(member_state(p, "db-server-2"), "(absent)");
}

TEST(PlanScale, WithWhenScaledRetainAClaimOfARemovedMemberIsReleasedAndMarked) {
  World w(3);
  w.set_retention("Retain", "Delete");
  w.settle();
  w.set_members("server", 2);
  w.accept(pass(w));
  w.remove_pod("db-server-2");
  const auto p = pass(w);
  EXPECT_EQ(find_write(p, Op::kDelete, pvc_of("server", 2)), nullptr);
  const auto* kept = find_write(p, Op::kRetain, pvc_of("server", 2));
  ASSERT_NE(kept, nullptr);
  const auto& md = kept->object.at("metadata").as_object();
  EXPECT_FALSE(md.contains("ownerReferences"));
  EXPECT_EQ(md.at("annotations").at("kstack.io/retained"), "whenScaled");
  EXPECT_EQ(kept->event.action, "Scale");
}

TEST(PlanScale, ScalingDownMembersOthersWereToldAboutHoldsThemDeletePendingWithDelnodesQueued) {
  auto w = with_package(3);
  w.set_members("server", 1);
  auto setup = configured();
  const auto p = pass(w, setup);
  EXPECT_EQ(member_state(p, "db-server-1"), catalog::kMemberDeletePending);
  EXPECT_EQ(member_state(p, "db-server-2"), catalog::kMemberDeletePending);
  EXPECT_NE(replicas_in(p, set_of("server")), 1);  // held at 3: no write, or 3
  EXPECT_TRUE(write_names(p, Op::kDelete).empty()) << "their Services stay while pending";
  const auto cmds = pending_cmds(p, "db-server-0");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0].at(0), "--delnodes");
  EXPECT_EQ(cmds[0].at(2), "server");
  EXPECT_TRUE(cmds[0].at(4).starts_with("db-server-1.")) << cmds[0].at(4);
  EXPECT_NE(cmds[0].at(4).find(",db-server-2."), std::string::npos);
  ASSERT_NE(find_event(p, "Scaling"), nullptr);
  ASSERT_EQ(p.sends.size(), 1u);
  EXPECT_EQ(p.sends[0].target.pod, "db-server-0");
}

TEST(PlanScale, ADeletePendingHoldLastsWhileTheDelnodesIsInFlight) {
  auto w = with_package(3);
  w.set_members("server", 1);
  auto setup = configured();
  auto p = pass(w, setup);
  w.accept(p);
  w.notify[id_for(w, "db-server-0", p.sends.at(0).arguments)] =
      outcome(NotifyOutcome::State::kInFlight);
  p = pass(w, setup);
  EXPECT_EQ(member_state(p, "db-server-1"), catalog::kMemberDeletePending);
  EXPECT_NE(replicas_in(p, set_of("server")), 1);
  EXPECT_TRUE(p.sends.empty());
  EXPECT_FALSE(p.write_status);
}

TEST(PlanScale, ADeliveredDelnodesReleasesTheHoldOnTheNextPassAndReplicasGoDown) {
  auto w = with_package(3);
  w.set_members("server", 1);
  auto setup = configured();
  auto p = pass(w, setup);
  w.accept(p);
  const auto args = p.sends.at(0).arguments;
  w.notify[id_for(w, "db-server-0", args)] = outcome(NotifyOutcome::State::kSucceeded);
  p = pass(w, setup);
  EXPECT_TRUE(pending_cmds(p, "db-server-0").empty());
  ASSERT_EQ(p.delivered.size(), 1u);
  EXPECT_EQ(p.delivered[0].arguments, args);
  w.accept(p);
  w.notify.clear();
  p = pass(w, setup);
  EXPECT_EQ(member_state(p, "db-server-1"), catalog::kMemberDeleting);
  EXPECT_EQ(replicas_in(p, set_of("server")), 1);
  EXPECT_EQ(find_write(p, Op::kApply, set_of("server"))->event.reason, "Scaled");
}

TEST(PlanScale, ADelnodesGivenUpOnAlsoReleasesTheHold) {
  auto w = with_package(3);
  w.set_members("server", 1);
  auto setup = configured();
  auto p = pass(w, setup);
  w.accept(p);
  auto failed = outcome(NotifyOutcome::State::kFailed, 3);
  failed.error = "startscript exited 1";
  w.notify[id_for(w, "db-server-0", p.sends.at(0).arguments)] = failed;
  w.accept(pass(w, setup));
  w.notify.clear();
  p = pass(w, setup);
  EXPECT_EQ(member_state(p, "db-server-2"), catalog::kMemberDeleting);
  EXPECT_EQ(replicas_in(p, set_of("server")), 1);
}

TEST(PlanScale, AMemberLeavingBeforeItWasAnnouncedNeedsNoDelnodes) {
  auto w = with_package(3);
  w.set_members("server", 4);
  w.converge();
  FakeSetup starting;  // configure not started yet: db-server-3 is creating, never announced
  w.accept(pass(w, starting));
  w.set_members("server", 3);
  const auto p = pass(w, starting);
  EXPECT_EQ(member_state(p, "db-server-3"), catalog::kMemberDeleting);
  EXPECT_TRUE(pending_cmds(p, "db-server-0").empty());
  EXPECT_EQ(replicas_in(p, set_of("server")), 3);
}

TEST(PlanScale, ARoleRemovedFromTheSpecLosesItsStatefulSetAndIsReportedUntilItsPodsGo) {
  World w(2, 2);
  w.settle();
  w.stack.at("spec").at("roles").as_array().pop_back();
  w.stack.at("metadata").as_object()["generation"] = 2;
  auto p = pass(w);
  ASSERT_NE(find_write(p, Op::kDelete, set_of("worker")), nullptr);
  EXPECT_EQ(member_state(p, "db-worker-0"), catalog::kMemberDeleting);
  EXPECT_TRUE(p.status.member_state_rollup.membership_changing);
  w.accept(p);
  w.remove_pod("db-worker-0");
  w.remove_pod("db-worker-1");
  w.sets.erase(set_of("worker"));
  p = pass(w);
  EXPECT_EQ(member_state(p, "db-worker-0"), "(absent)");
  EXPECT_EQ(p.status.roles.size(), 1u);
}

TEST(PlanScale, AStaleCacheShowingOldReplicasGetsThemAppliedAgainAndTheStackIsNotReady) {
  World w(3);
  w.settle();
  w.set_members("server", 4);
  w.accept(pass(w));  // the scale was written; the watch has not delivered it yet
  const auto p = pass(w);
  EXPECT_EQ(replicas_in(p, set_of("server")), 4);
  EXPECT_NE(p.status.state, catalog::kStackReady);
  EXPECT_TRUE(p.status.member_state_rollup.membership_changing);
}

}  // namespace
}  // namespace kstack::reconciler::testing
