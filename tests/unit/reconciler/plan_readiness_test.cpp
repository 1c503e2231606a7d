// Readiness gating (docs/reconciler.md "Member states", docs/api.md "Probes"): a member with a
// setup package is ready only when set up in its current container AND its pod is Ready; a
// configured member whose pod is not Ready is `creating` without being set up again, keeps its
// notifications until it is Ready, and is announced to the others only once it is.
#include <algorithm>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "tests/unit/reconciler/plan_fixture.h"

namespace kstack::reconciler::testing {
namespace {
using State = executor::SetupRunner::ConfigureStatus::State;
using executor::SetupStepKind;

const std::string kPod = "db-server-0";

FakeSetup configured() {
  FakeSetup s;
  s.configure = State::kDone;
  return s;
}

bool sent_to(const Plan& p, const std::string& pod) {
  return std::any_of(p.sends.begin(), p.sends.end(),
                     [&](const Notification& n) { return n.target.pod == pod; });
}

TEST(PlanReadiness, SetupStartsWhileThePodIsNotReadyYet) {
  World w{1, 0, true};
  w.set_pod_ready(kPod, false);
  FakeSetup starting;  // configure.status: not started
  const auto p = pass(w, starting);
  EXPECT_EQ(starting.kinds_for(kPod).back(), SetupStepKind::kStartConfigure);
  EXPECT_EQ(member_state(p, kPod), catalog::kMemberCreating);
}

TEST(PlanReadiness, AConfiguredMemberWhosePodIsNotReadyIsCreatingAndTheStackIsNotReady) {
  World w{1, 0, true};
  w.set_pod_ready(kPod, false);
  auto done = configured();
  const auto p = pass(w, done);
  EXPECT_EQ(member_state(p, kPod), catalog::kMemberCreating);
  EXPECT_EQ(w.member(p, kPod)->state_detail.last_configured_container, w.container_of(kPod));
  ASSERT_NE(find_event(p, "Configured"), nullptr);
  EXPECT_NE(find_event(p, "Configured")->note.find("waiting for the pod to be Ready"),
            std::string::npos);
  EXPECT_EQ(condition(p, "Ready")->status, "False");
  EXPECT_EQ(condition(p, "Ready")->reason, "MembersNotReady");
  EXPECT_EQ(p.status.state, catalog::kStackCreating);
  EXPECT_EQ(p.status.ready_members, 0);
  EXPECT_EQ(p.result.kind, informer::WorkResult::Kind::kRequeueAfter);
}

TEST(PlanReadiness, ThePodTurningReadyMakesTheMemberReadyWithoutSettingItUpAgain) {
  World w{1, 0, true};
  w.set_pod_ready(kPod, false);
  auto done = configured();
  w.settle(done);
  ASSERT_EQ(member_state(pass(w), kPod), catalog::kMemberCreating);
  w.set_pod_ready(kPod, true);
  FakeSetup after;
  const auto p = pass(w, after);
  EXPECT_TRUE(after.ran.empty());
  EXPECT_EQ(member_state(p, kPod), catalog::kMemberReady);
  EXPECT_EQ(condition(p, "Ready")->status, "True");
  EXPECT_EQ(find_event(p, "Configured"), nullptr);
}

TEST(PlanReadiness, AReadyMemberWhosePodTurnsUnreadyIsCreatingAndNotSetUpAgain) {
  World w{2, 0, true};
  w.settle();
  w.set_pod_ready(kPod, false);
  FakeSetup after = configured();
  const auto p = pass(w, after);
  EXPECT_TRUE(after.ran.empty()) << "no setup step for a member set up in this container";
  EXPECT_EQ(member_state(p, kPod), catalog::kMemberCreating);
  EXPECT_EQ(member_state(p, "db-server-1"), catalog::kMemberReady);
  ASSERT_NE(find_event(p, "NotReady"), nullptr);
  EXPECT_EQ(find_event(p, "NotReady")->type, "Warning");
  EXPECT_EQ(condition(p, "Ready")->status, "False");
  EXPECT_EQ(condition(p, "Ready")->reason, "MembersNotReady");
  EXPECT_EQ(condition(p, "Progressing")->reason, "Recovering");
  EXPECT_EQ(p.status.state, catalog::kStackUpdating);
  EXPECT_TRUE(p.status.member_state_rollup.members_down);
  EXPECT_EQ(p.status.member_summary, "1/2");
  // Ready again: back to ready, still without setup, and no second NotReady.
  w.accept(p);
  w.set_pod_ready(kPod, true);
  FakeSetup again = configured();
  const auto back = pass(w, again);
  EXPECT_TRUE(again.ran.empty());
  EXPECT_EQ(member_state(back, kPod), catalog::kMemberReady);
  EXPECT_EQ(condition(back, "Ready")->status, "True");
  EXPECT_EQ(find_event(back, "NotReady"), nullptr);
}

TEST(PlanReadiness, AnUnreadyConfiguredMemberIsSetUpAgainWhenItsContainerRestarts) {
  World w{1, 0, true};
  w.settle();
  w.set_pod_ready(kPod, false);
  w.accept(pass(w));
  w.restart_container(kPod, "sim://second");
  FakeSetup after;
  const auto p = pass(w, after);
  EXPECT_EQ(after.kinds_for(kPod).back(), SetupStepKind::kStartConfigure);
  EXPECT_EQ(w.member(p, kPod)->state_detail.configuring_container, "sim://second");
}

TEST(PlanReadiness, MembersWithoutAPackageFollowTheirPodAsBefore) {
  World w{1, 0, false};
  w.settle();
  w.set_pod_ready(kPod, false);
  EXPECT_EQ(member_state(pass(w), kPod), catalog::kMemberCreating);
  w.set_pod_ready(kPod, true);
  EXPECT_EQ(member_state(pass(w), kPod), catalog::kMemberReady);
}

TEST(PlanReadiness, ANewcomerIsAnnouncedOnlyOnceItsPodIsReady) {
  World w{2, 0, true};
  auto done = configured();
  w.settle(done);
  w.set_members("server", 3);
  w.converge();
  w.set_pod_ready("db-server-2", false);
  w.settle(done);
  auto p = pass(w, done);
  EXPECT_EQ(member_state(p, "db-server-2"), catalog::kMemberCreating);
  EXPECT_FALSE(w.member(p, "db-server-2")->state_detail.last_configured_container.empty());
  EXPECT_TRUE(pending_cmds(p, kPod).empty()) << "not announced while its pod is not Ready";
  EXPECT_FALSE(w.member(p, "db-server-2")->state_detail.last_setup_generation.has_value());
  w.set_pod_ready("db-server-2", true);
  FakeSetup after = configured();
  p = pass(w, after);
  EXPECT_TRUE(after.kinds_for("db-server-2").empty()) << "not set up again";
  ASSERT_EQ(pending_cmds(p, kPod).size(), 1u);
  EXPECT_EQ(pending_cmds(p, kPod)[0].at(0), "--addnodes");
  EXPECT_TRUE(pending_cmds(p, kPod)[0].at(4).starts_with("db-server-2."))
      << pending_cmds(p, kPod)[0].at(4);
  EXPECT_TRUE(sent_to(p, kPod));
}

TEST(PlanReadiness, AConfiguredMemberKeepsItsQueuedNotificationsUntilItsPodIsReady) {
  World w{2, 0, true};
  auto done = configured();
  w.settle(done);
  w.set_members("server", 3);
  w.converge();
  FakeSetup starting;
  w.accept(pass(w, starting));
  auto p = pass(w, done);  // db-server-2 set up: announced to 0 and 1
  ASSERT_EQ(pending_cmds(p, kPod).size(), 1u);
  w.accept(p);
  w.set_pod_ready(kPod, false);
  p = pass(w, done);
  EXPECT_EQ(member_state(p, kPod), catalog::kMemberCreating);
  EXPECT_EQ(pending_cmds(p, kPod).size(), 1u) << "kept";
  EXPECT_FALSE(sent_to(p, kPod));
  EXPECT_TRUE(sent_to(p, "db-server-1")) << "the ready member is not held up";
  w.accept(p);
  w.set_pod_ready(kPod, true);
  p = pass(w, done);
  EXPECT_TRUE(sent_to(p, kPod));
}

TEST(PlanReadiness, AConfiguredMemberWhosePodIsNotReadyStillGetsDelnodesQueued) {
  World w{3, 0, true};
  auto done = configured();
  w.settle(done);
  w.set_pod_ready(kPod, false);
  w.accept(pass(w, done));
  w.set_members("server", 2);
  const auto p = pass(w, done);
  ASSERT_EQ(pending_cmds(p, kPod).size(), 1u);
  EXPECT_EQ(pending_cmds(p, kPod)[0].at(0), "--delnodes");
  EXPECT_FALSE(sent_to(p, kPod)) << "delivered once its pod is Ready";
  ASSERT_EQ(pending_cmds(p, "db-server-1").size(), 1u);
  EXPECT_TRUE(sent_to(p, "db-server-1"));
}

}  // namespace
}  // namespace kstack::reconciler::testing
