// --addnodes batching, notification delivery with bounded retries, and the configmeta a setup
// step carries (docs/spec.md §5).
#include <optional>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "tests/unit/reconciler/plan_fixture.h"

namespace kstack::reconciler::testing {
namespace {
using State = executor::SetupRunner::ConfigureStatus::State;
using executor::SetupStepKind;

FakeSetup configured() {
  FakeSetup s;
  s.configure = State::kDone;
  return s;
}

// A settled 3-member Stack scaled to 5 whose new members finished setup this pass: the
// members told about them have one --addnodes each.
struct Grown {
  World w{3, 0, true};
  Plan p;
  Grown() {
    auto done = configured();
    w.settle(done);
    w.set_members("server", 5);
    w.converge();
    FakeSetup starting;
    w.accept(pass(w, starting));
    p = pass(w, done);
  }
  std::vector<std::string> addnodes() const { return pending_cmds(p, "db-server-0").at(0); }
};

TEST(PlanSetup, NewMembersAreAnnouncedInOneAddnodesPerRoleOnceAllFinishedSetup) {
  Grown g;
  const auto cmds = pending_cmds(g.p, "db-server-0");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0].at(0), "--addnodes");
  EXPECT_TRUE(cmds[0].at(4).starts_with("db-server-3.")) << cmds[0].at(4);
  EXPECT_NE(cmds[0].at(4).find(",db-server-4."), std::string::npos);
  EXPECT_EQ(pending_cmds(g.p, "db-server-1"), cmds);
  EXPECT_TRUE(pending_cmds(g.p, "db-server-3").empty()) << "new members are not told of themselves";
  EXPECT_EQ(g.p.sends.size(), 3u);
}

TEST(PlanSetup, NoAddnodesGoesOutWhileAMemberIsStillSettingUp) {
  World w{3, 0, true};
  auto done = configured();
  w.settle(done);
  w.set_members("server", 5);
  w.converge();
  FakeSetup starting;
  const auto p = pass(w, starting);
  EXPECT_TRUE(pending_cmds(p, "db-server-0").empty());
  EXPECT_FALSE(w.member(p, "db-server-3")->state_detail.last_setup_generation.has_value());
}

TEST(PlanSetup, TheFirstMembersAreAnnouncedToNobody) {
  World w{3, 0, true};
  auto done = configured();
  const auto p = pass(w, done);
  EXPECT_TRUE(pending_cmds(p, "db-server-0").empty());
  EXPECT_EQ(w.member(p, "db-server-0")->state_detail.last_setup_generation,
            p.status.config_generation);
}

TEST(PlanSetup, AWorkerRoleWithoutAddnodesInItsEventListIsNotNotified) {
  World w{3, 0, true, {"configure", "delnodes"}};
  auto done = configured();
  w.settle(done);
  w.set_members("server", 4);
  w.converge();
  const auto p = pass(w, done);
  EXPECT_TRUE(pending_cmds(p, "db-server-0").empty());
}

TEST(PlanSetup, TheConfigGenerationMovesOnlyWhenTheMembersInTheSpecChange) {
  World w{3, 0, true};
  auto done = configured();
  const auto settled = w.settle(done);
  const auto generation = settled.status.config_generation;
  w.set_members("server", 3);  // a spec change that keeps the members
  EXPECT_EQ(pass(w, done).status.config_generation, generation);
  w.set_members("server", 4);
  EXPECT_EQ(pass(w, done).status.config_generation, generation + 1);
}

TEST(PlanSetup, TheConfigmetaWrittenIntoAMemberListsEveryMemberInTheSpec) {
  World w{2, 1, true};
  auto done = configured();
  pass(w, done);
  const executor::SetupStep* write = nullptr;
  for (const auto& s : done.ran) {
    if (s.kind == SetupStepKind::kWriteConfig && s.target.pod == "db-server-0") write = &s;
  }
  ASSERT_NE(write, nullptr);
  for (const char* pod : {"db-server-0", "db-server-1", "db-worker-0"}) {
    EXPECT_NE(write->configmeta.find(pod), std::string::npos) << pod;
  }
  EXPECT_NE(write->env.find("KSTACK_POD='db-server-0'"), std::string::npos);
  EXPECT_EQ(write->target.container_id, w.container_of("db-server-0"));
}

// What a pass does with the front --addnodes of db-server-0 given the notifier's outcome.
struct NotifyCase {
  const char* name;
  std::optional<NotifyOutcome> outcome;  // nullopt: never sent
  bool sent;
  bool consumed;
  const char* event;  // "" for none
  bool notifier = true;
};

NotifyOutcome make(NotifyOutcome::State state, int attempts, int retry_in_hours = 0) {
  NotifyOutcome o;
  o.state = state;
  o.attempts = attempts;
  o.error = "startscript exited 1";
  o.retry_at = NotifyOutcome::Clock::time_point(std::chrono::hours(1000 + retry_in_hours));
  return o;
}

const NotifyCase kNotifyCases[] = {
    {"ANotificationNeverSentIsSent", std::nullopt, true, false, ""},
    {"ANotificationInFlightIsWaitedFor", make(NotifyOutcome::State::kInFlight, 0), false, false,
     ""},
    {"ADeliveredNotificationIsConsumedWithAnEvent", make(NotifyOutcome::State::kSucceeded, 1),
     false, true, "Notified"},
    {"AFailedNotificationIsSentAgainOnceItsBackoffIsOver", make(NotifyOutcome::State::kFailed, 1),
     true, false, ""},
    {"AFailedNotificationIsNotSentAgainBeforeItsBackoffIsOver",
     make(NotifyOutcome::State::kFailed, 2, 1), false, false, ""},
    {"ANotificationThatFailedMaxAttemptsTimesIsGivenUpWithAWarning",
     make(NotifyOutcome::State::kFailed, 3), false, true, "NotifyFailed"},
    {"WithoutANotifierCommandsStayQueued", std::nullopt, false, false, "", false},
};

class NotificationOutcome : public ::testing::TestWithParam<NotifyCase> {};

TEST_P(NotificationOutcome, OfTheFrontCommand) {
  const auto& c = GetParam();
  Grown g;
  g.w.accept(g.p);
  const auto args = g.addnodes();
  g.w.notifier = c.notifier;
  if (c.outcome) {
    g.w.notify[notify_id({"apps", "db-server-0", g.w.container_of("db-server-0")}, args)] =
        *c.outcome;
  }
  auto done = configured();
  const auto p = pass(g.w, done);
  bool sent = false;
  for (const auto& n : p.sends) sent |= n.target.pod == "db-server-0" && n.arguments == args;
  EXPECT_EQ(sent, c.sent);
  EXPECT_EQ(pending_cmds(p, "db-server-0").empty(), c.consumed);
  bool delivered = false;
  for (const auto& n : p.delivered) delivered |= n.target.pod == "db-server-0";
  EXPECT_EQ(delivered, c.consumed);
  if (std::string_view(c.event).empty()) {
    EXPECT_EQ(find_event(p, "Notified"), nullptr);
    EXPECT_EQ(find_event(p, "NotifyFailed"), nullptr);
  } else {
    ASSERT_NE(find_event(p, c.event), nullptr);
  }
  // Without a notifier nothing is under way: the queue waits for a process that has one.
  if (!c.consumed && c.notifier) {
    EXPECT_EQ(p.result.kind, informer::WorkResult::Kind::kRequeueAfter);
  }
}

INSTANTIATE_TEST_SUITE_P(Plan, NotificationOutcome, ::testing::ValuesIn(kNotifyCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(PlanSetup, ANotificationGivenUpOnLeavesItsErrorInStatusAndTheStackDegraded) {
  Grown g;
  g.w.accept(g.p);
  const auto args = g.addnodes();
  g.w.notify[notify_id({"apps", "db-server-0", ""}, args)] = make(NotifyOutcome::State::kFailed, 3);
  auto done = configured();
  const auto p = pass(g.w, done);
  const auto& error = g.w.member(p, "db-server-0")->state_detail.last_notify_error;
  EXPECT_NE(error.find("failed 3 times; last: startscript exited 1"), std::string::npos) << error;
  EXPECT_EQ(condition(p, "Degraded")->reason, "NotifyFailed");
  EXPECT_EQ(find_event(p, "NotifyFailed")->type, "Warning");
}

TEST(PlanSetup, AMemberWhoseConfigmetaIsNotCurrentIsNotNotifiedYet) {
  Grown g;
  g.w.accept(g.p);
  auto failing = configured();
  failing.per_member[{"db-server-0", SetupStepKind::kWriteConfig}] = executor::SetupOutcome{
      executor::SetupOutcome::Kind::kRetry, "write /etc/kstack: timeout", {}, false, {}};
  g.w.set_members("server", 6);  // membership moves: configmeta must be rewritten first
  g.w.converge();
  const auto p = pass(g.w, failing);
  for (const auto& n : p.sends) EXPECT_NE(n.target.pod, "db-server-0");
  EXPECT_FALSE(pending_cmds(p, "db-server-0").empty());
}

}  // namespace
}  // namespace kstack::reconciler::testing
