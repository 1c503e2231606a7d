// Setup steps run on the setup executor, not in the pass (docs/reconciler.md): a plan starts the
// step a member needs next, waits while it is in flight, goes on from its outcome on a later
// pass, and says which outcomes it is done with. Outcomes are found by the member's container
// and the config generation, so a restarted container never reads an answer for the old one.
#include <algorithm>

#include <gtest/gtest.h>

#include "tests/unit/reconciler/plan_fixture.h"

namespace kstack::reconciler::testing {
namespace {
using State = executor::SetupRunner::ConfigureStatus::State;
using executor::SetupOutcome;
using executor::SetupStepKind;
using informer::WorkResult;

const std::string kPod = "db-server-0";

std::vector<SetupStepKind> started_for(const Plan& p, const std::string& pod) {
  std::vector<SetupStepKind> kinds;
  for (const auto& s : p.setup_steps) {
    if (s.target.pod == pod) kinds.push_back(s.kind);
  }
  return kinds;
}

const executor::SetupStep* started(const Plan& p, const std::string& pod, SetupStepKind kind) {
  for (const auto& s : p.setup_steps) {
    if (s.target.pod == pod && s.kind == kind) return &s;
  }
  return nullptr;
}

bool consumed(const Plan& p, const SetupKey& key) {
  return std::find(p.setup_consumed.begin(), p.setup_consumed.end(), key) != p.setup_consumed.end();
}

SetupState done(SetupOutcome outcome = {}) { return SetupState{true, std::move(outcome)}; }

SetupOutcome configure_status(State state, const std::string& container, int exit_code = 0) {
  SetupOutcome out;
  out.status.state = state;
  out.status.container_id = container;
  out.status.exit_code = exit_code;
  return out;
}

TEST(PlanSetupAsync, ANewMemberStartsItsFirstStepAndThePassWaits) {
  World w{1, 0, true};
  const auto p = plan(w.snapshot());
  EXPECT_EQ(started_for(p, kPod), std::vector<SetupStepKind>{SetupStepKind::kWriteConfig});
  const auto* s = started(p, kPod, SetupStepKind::kWriteConfig);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->target.container_id, w.container_of(kPod));
  EXPECT_EQ(s->generation, p.status.config_generation);
  EXPECT_EQ(member_state(p, kPod), "creating");
  EXPECT_EQ(p.result.kind, WorkResult::Kind::kRequeueAfter);
}

TEST(PlanSetupAsync, AStepInFlightMeansWaitAndIsNotStartedAgain) {
  World w{1, 0, true};
  const auto first = plan(w.snapshot());
  const auto* s = started(first, kPod, SetupStepKind::kWriteConfig);
  ASSERT_NE(s, nullptr);
  w.setup_outcomes[setup_key(*s)] = SetupState{false, {}};
  const auto p = plan(w.snapshot());
  EXPECT_TRUE(started_for(p, kPod).empty());
  EXPECT_EQ(member_state(p, kPod), "creating");
  EXPECT_EQ(p.result.kind, WorkResult::Kind::kRequeueAfter);
  EXPECT_TRUE(p.setup_consumed.empty()) << "an in-flight step is nobody's to drop";
}

TEST(PlanSetupAsync, AFinishedStepLetsTheNextStartAndIsKeptWhileTheSetupGoesOn) {
  World w{1, 0, true};
  const auto first = plan(w.snapshot());
  const auto write = setup_key(*started(first, kPod, SetupStepKind::kWriteConfig));
  w.setup_outcomes[write] = done();
  const auto p = plan(w.snapshot());
  EXPECT_EQ(started_for(p, kPod), std::vector<SetupStepKind>{SetupStepKind::kReadConfigureStatus});
  EXPECT_FALSE(consumed(p, write)) << "the next pass replays it if this status write fails";
}

TEST(PlanSetupAsync, AConcludedSetupConsumesEveryOutcomeItRead) {
  World w{1, 0, true};
  const auto first = plan(w.snapshot());
  const auto write = setup_key(*started(first, kPod, SetupStepKind::kWriteConfig));
  auto read = write;
  read.kind = SetupStepKind::kReadConfigureStatus;
  w.setup_outcomes[write] = done();
  w.setup_outcomes[read] = done(configure_status(State::kDone, w.container_of(kPod)));
  const auto p = plan(w.snapshot());
  EXPECT_EQ(member_state(p, kPod), "ready");
  EXPECT_TRUE(started_for(p, kPod).empty());
  EXPECT_TRUE(consumed(p, write));
  EXPECT_TRUE(consumed(p, read));
}

TEST(PlanSetupAsync, ARetryableFailureIsConsumedSoALaterPassStartsTheStepAfresh) {
  World w{1, 0, true};
  const auto first = plan(w.snapshot());
  const auto write = setup_key(*started(first, kPod, SetupStepKind::kWriteConfig));
  w.setup_outcomes[write] =
      done(SetupOutcome{SetupOutcome::Kind::kRetry, "exec: connection reset", {}, {}, {}});
  const auto p = plan(w.snapshot());
  EXPECT_TRUE(started_for(p, kPod).empty());
  EXPECT_EQ(member_state(p, kPod), "creating");
  EXPECT_TRUE(consumed(p, write));
  EXPECT_EQ(p.result.kind, WorkResult::Kind::kRequeueAfter);
}

TEST(PlanSetupAsync, ARestartedContainerIgnoresTheOldContainersOutcomeAndDropsIt) {
  World w{1, 0, true};
  FakeSetup ok;
  ok.configure = State::kDone;
  w.settle(ok);
  const auto old_container = w.container_of(kPod);
  // The old container's configure.status, read just before the restart: done, exit 0.
  const SetupKey old_read{kPod, old_container, SetupStepKind::kReadConfigureStatus,
                          w.decoded().status->config_generation};
  w.setup_outcomes[old_read] = done(configure_status(State::kDone, old_container));
  w.restart_container(kPod, "containerd://restarted");
  const auto p = plan(w.snapshot());
  EXPECT_EQ(member_state(p, kPod), "creating") << "set up again in the new container";
  const auto* s = started(p, kPod, SetupStepKind::kWriteConfig);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->target.container_id, "containerd://restarted");
  EXPECT_TRUE(consumed(p, old_read));
}

TEST(PlanSetupAsync, AnOutcomeOfAnOlderConfigGenerationIsNotUsed) {
  World w{1, 0, true};
  const auto first = plan(w.snapshot());
  auto stale = setup_key(*started(first, kPod, SetupStepKind::kWriteConfig));
  stale.generation -= 1;
  w.setup_outcomes[stale] = done();
  const auto p = plan(w.snapshot());
  EXPECT_EQ(started_for(p, kPod), std::vector<SetupStepKind>{SetupStepKind::kWriteConfig});
  EXPECT_TRUE(consumed(p, stale));
}

}  // namespace
}  // namespace kstack::reconciler::testing
