// The Stack state and condition table (docs/reconciler.md "Stack state and conditions") as
// plan() table tests, and what a stable Stack costs: nothing.
#include <functional>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/parse.h"
#include "tests/unit/reconciler/plan_fixture.h"

namespace kstack::reconciler::testing {
namespace {
namespace json = boost::json;
using Kind = informer::WorkResult::Kind;
using State = executor::SetupRunner::ConfigureStatus::State;

struct StackCase {
  const char* name;
  std::function<void(World&)> given;  // on a settled 3-member Stack
  std::string_view state;
  std::string_view ready;        // Ready condition status
  std::string_view progressing;  // Progressing reason
  std::string_view degraded;     // Degraded reason
  Kind result;
};

void forget_status(World& w) { w.stack.as_object().erase("status"); }

// Passes the world through one accepted pass first (a state it was in).
void through(World& w, const std::function<void(World&)>& change) {
  change(w);
  w.accept(pass(w));
}

const StackCase kCases[] = {
    {"ANewStackWhosePodsDoNotExistYetIsCreating",
     [](World& w) {
       forget_status(w);
       w.pods.clear();
     },
     catalog::kStackCreating, "False", "Creating", "AsExpected", Kind::kRequeueAfter},
    {"ANewStackWhoseMembersAreAllReadyIsReady", [](World& w) { forget_status(w); },
     catalog::kStackReady, "True", "Stable", "AsExpected", Kind::kSuccess},
    {"AReadyStackLosingAMemberIsUpdatingAndRecovering",
     [](World& w) { w.set_pod_ready("db-server-1", false); }, catalog::kStackUpdating, "False",
     "Recovering", "AsExpected", Kind::kRequeueAfter},
    {"AReadyStackScaledUpIsUpdatingWithReasonScaling", [](World& w) { w.set_members("server", 5); },
     catalog::kStackUpdating, "False", "Scaling", "AsExpected", Kind::kRequeueAfter},
    {"AReadyStackWhoseClaimIsBeingDeletedIsDegradedPVCMissing",
     [](World& w) {
       w.pvcs.at("data-db-server-1").at("metadata").as_object()["deletionTimestamp"] =
           "2026-11-25T00:00:00Z";
     },
     catalog::kStackReady, "True", "Stable", "PVCMissing", Kind::kRequeueAfter},
    {"AStackWhoseAppTypeIsMissingIsInErrorAndBlocked", [](World& w) { w.app_missing = true; },
     catalog::kStackError, "False", "Blocked", "AppTypeMissing", Kind::kSuccess},
    {"AStackWhoseSpecCannotBeRenderedIsInErrorWithInvalidSpec",
     [](World& w) {
       w.stack.at("spec").at("roles").as_array().push_back(
           json::object{{"id", "nosuch"}, {"members", 1}});
     },
     catalog::kStackError, "False", "Blocked", "InvalidSpec", Kind::kTerminalError},
    {"AStackWhoseAppTypeCameBackLeavesErrorForReady",
     [](World& w) {
       through(w, [](World& x) { x.app_missing = true; });
       w.app_missing = false;
     },
     catalog::kStackReady, "True", "Stable", "AsExpected", Kind::kSuccess},
    {"ARecoveringStackWhoseMemberIsReadyAgainIsReady",
     [](World& w) {
       through(w, [](World& x) { x.set_pod_ready("db-server-1", false); });
       w.set_pod_ready("db-server-1", true);
     },
     catalog::kStackReady, "True", "Stable", "AsExpected", Kind::kSuccess},
    {"ACreatingStackStaysCreatingUntilReadyTheFirstTime",
     [](World& w) {
       forget_status(w);
       through(w, [](World& x) { x.set_pod_ready("db-server-2", false); });
     },
     catalog::kStackCreating, "False", "Creating", "AsExpected", Kind::kRequeueAfter},
};

class StackTransition : public ::testing::TestWithParam<StackCase> {};

TEST_P(StackTransition, FromASettledStack) {
  const auto& c = GetParam();
  World w(3);
  w.settle();
  c.given(w);
  const auto p = pass(w);
  EXPECT_EQ(p.status.state, c.state);
  ASSERT_NE(condition(p, "Ready"), nullptr);
  EXPECT_EQ(condition(p, "Ready")->status, c.ready);
  EXPECT_EQ(condition(p, "Progressing")->reason, c.progressing);
  EXPECT_EQ(condition(p, "Degraded")->reason, c.degraded);
  EXPECT_EQ(condition(p, "Degraded")->status, c.degraded == "AsExpected" ? "False" : "True");
  EXPECT_EQ(p.result.kind, c.result);
}

INSTANTIATE_TEST_SUITE_P(Plan, StackTransition, ::testing::ValuesIn(kCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(PlanStack, AStableStackPlansNoWriteNoEventAndNoStatusWrite) {
  World w(3, 2);
  w.settle();
  const auto p = pass(w);
  EXPECT_TRUE(p.writes.empty());
  EXPECT_TRUE(p.events.empty());
  EXPECT_FALSE(p.write_status);
  EXPECT_FALSE(p.add_finalizer);
  EXPECT_EQ(p.result.kind, Kind::kSuccess);
}

TEST(PlanStack, AStackWithoutTheCleanupFinalizerGetsItFirst) {
  World w(1);
  w.stack.at("metadata").as_object()["finalizers"] = json::array{};
  EXPECT_TRUE(pass(w).add_finalizer);
  w.settle();
  EXPECT_FALSE(pass(w).add_finalizer);
}

TEST(PlanStack, AMissingAppTypeDeletesNothingAndWarnsOnlyWhenTheStatusChanges) {
  World w(3);
  w.settle();
  w.app_missing = true;
  const auto first = pass(w);
  EXPECT_TRUE(first.writes.empty());
  ASSERT_NE(find_event(first, "AppTypeMissing"), nullptr);
  EXPECT_EQ(find_event(first, "AppTypeMissing")->type, "Warning");
  EXPECT_TRUE(first.write_status);
  w.accept(first);
  const auto again = pass(w);
  EXPECT_TRUE(again.events.empty());
  EXPECT_FALSE(again.write_status);
}

TEST(PlanStack, AStateChangeIsAnEventNamingBothStatesAndTheSummary) {
  World w(3);
  forget_status(w);
  const auto p = pass(w);
  ASSERT_NE(find_event(p, "StateChanged"), nullptr);
  EXPECT_EQ(find_event(p, "StateChanged")->note, "Stack state none -> ready (3/3)");
}

TEST(PlanStack, AConditionsTransitionTimeMovesOnlyWhenItsStatusChanges) {
  World w(3);
  w.settle();
  // An earlier transition time: a pass that keeps Ready=True must keep it.
  for (auto& c : w.stack.at("status").at("conditions").as_array()) {
    c.as_object()["lastTransitionTime"] = "2026-01-01T00:00:00Z";
  }
  EXPECT_EQ(condition(pass(w), "Ready")->last_transition_time, "2026-01-01T00:00:00Z");
  w.set_pod_ready("db-server-0", false);
  EXPECT_EQ(condition(pass(w), "Ready")->last_transition_time, kNow);
}

TEST(PlanStack, ObservedGenerationFollowsTheStacksGeneration) {
  World w(3);
  w.settle();
  w.set_members("server", 3);  // generation 2, nothing else changes
  const auto p = pass(w);
  EXPECT_EQ(p.status.observed_generation, 2);
  EXPECT_EQ(condition(p, "Ready")->observed_generation, 2);
  EXPECT_TRUE(p.write_status);
}

TEST(PlanStack, TheMemberSummaryCountsReadyOverWantedMembers) {
  World w(3, 2);
  w.settle();
  w.set_pod_ready("db-worker-1", false);
  const auto p = pass(w);
  EXPECT_EQ(p.status.member_summary, "4/5");
  EXPECT_EQ(p.status.ready_members, 4);
  EXPECT_EQ(p.status.desired_members, 5);
}

TEST(PlanStack, ACreatingStackWithAConfigErrorMemberIsDegradedConfigError) {
  World w(2, 0, true);
  FakeSetup failing;
  failing.configure = State::kDone;
  failing.exit_code = 1;
  const auto p = w.settle(failing);
  EXPECT_EQ(p.status.state, catalog::kStackCreating);
  EXPECT_EQ(condition(p, "Degraded")->reason, "ConfigError");
  EXPECT_TRUE(p.status.member_state_rollup.config_errors);
}

// A new Stack's pods starting: after the pass that creates everything (and says `creating`),
// the passes that only see members move create_pending -> creating -> ready are progress only
// (act() may pace their status writes); the one that finds every member ready says `ready` and
// is not.
TEST(PlanStack, MembersStartingIsProgressOnlyUntilTheStackIsReady) {
  World w(3);
  forget_status(w);
  w.sets.clear();
  w.services.clear();
  w.pods.clear();
  w.pvcs.clear();
  const auto created = pass(w);
  EXPECT_FALSE(created.writes.empty());
  EXPECT_EQ(created.status.state, "creating");
  EXPECT_FALSE(created.progress_only);
  w.accept(created);

  w.converge();
  for (int i = 0; i < 3; ++i) w.set_pod_ready(pod_of("server", i), false);
  const auto starting = pass(w);
  EXPECT_TRUE(starting.writes.empty());
  EXPECT_TRUE(starting.events.empty());
  EXPECT_TRUE(starting.write_status);
  EXPECT_EQ(member_state(starting, pod_of("server", 0)), "creating");
  EXPECT_TRUE(starting.progress_only)
      << boost::json::serialize(catalog::to_json(w.decoded().status.value())) << "\n"
      << boost::json::serialize(catalog::to_json(starting.status));
  w.accept(starting);

  w.set_pod_ready(pod_of("server", 0), true);
  const auto one_ready = pass(w);
  EXPECT_EQ(one_ready.status.member_summary, "1/3");
  EXPECT_TRUE(one_ready.progress_only);
  w.accept(one_ready);

  for (int i = 1; i < 3; ++i) w.set_pod_ready(pod_of("server", i), true);
  const auto ready = pass(w);
  EXPECT_EQ(ready.status.state, "ready");
  ASSERT_NE(find_event(ready, "StateChanged"), nullptr);
  EXPECT_TRUE(ready.write_status);
  EXPECT_FALSE(ready.progress_only);
}

TEST(PlanStack, ProgressOnlyChangesLeaveStateConditionsAndRecordsAlone) {
  World w(3);
  w.settle();
  const auto settled = w.decoded().status.value();
  auto changed = settled;
  changed.member_summary = "2/3";
  changed.roles.at(0).members.at(1).state = "creating";
  EXPECT_TRUE(progress_only_change(settled, changed));
  EXPECT_FALSE(progress_only_change(catalog::StackStatus{}, changed)) << "no state yet";

  auto state = changed;
  state.state = "updating";
  EXPECT_FALSE(progress_only_change(settled, state));
  auto failed = changed;
  failed.roles.at(0).members.at(1).state = "config_error";
  EXPECT_FALSE(progress_only_change(settled, failed));
  auto degraded = changed;
  for (auto& c : degraded.conditions) {
    if (c.type == "Degraded") c.message = "something new";
  }
  EXPECT_FALSE(progress_only_change(settled, degraded));
  auto reason = changed;
  for (auto& c : reason.conditions) {
    if (c.type == "Ready") c.reason = "SomethingElse";
  }
  EXPECT_FALSE(progress_only_change(settled, reason));
  auto notify = changed;
  notify.roles.at(0).members.at(0).state_detail.pending_notify_cmds.push_back({{"--addnodes"}});
  EXPECT_FALSE(progress_only_change(settled, notify));
  auto gone = changed;
  gone.roles.at(0).members.pop_back();
  EXPECT_FALSE(progress_only_change(settled, gone));
  auto generation = changed;
  generation.observed_generation += 1;
  EXPECT_FALSE(progress_only_change(settled, generation));
}

}  // namespace
}  // namespace kstack::reconciler::testing
