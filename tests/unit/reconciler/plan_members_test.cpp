// The member state table (docs/reconciler.md "Member states") as plan() table tests: a settled
// Stack, one change to the world, one pass, the member's new state.
#include <functional>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "tests/unit/reconciler/plan_fixture.h"

namespace kstack::reconciler::testing {
namespace {
namespace json = boost::json;
using executor::SetupOutcome;
using executor::SetupStepKind;
using State = executor::SetupRunner::ConfigureStatus::State;

struct MemberCase {
  const char* name;
  bool package;
  std::function<void(World&, FakeSetup&)> given;
  std::string_view state;
  std::function<void(const World&, const Plan&, const FakeSetup&)> also = nullptr;
};

const std::string kPod = "db-server-0";

void forget_status(World& w) { w.stack.as_object().erase("status"); }

json::object& pod_status(World& w) { return w.pods.at(kPod).at("status").as_object(); }

bool ran(const FakeSetup& s, SetupStepKind kind) {
  for (auto k : s.kinds_for(kPod)) {
    if (k == kind) return true;
  }
  return false;
}

// Settles a config_error: configure exited 1 in the current container.
void make_config_error(World& w) {
  forget_status(w);
  FakeSetup failing;
  failing.configure = State::kDone;
  failing.exit_code = 1;
  w.settle(failing);
}

const MemberCase kCases[] = {
    {"AMemberWithoutAPodIsCreatePendingAndCountsAsDown", false,
     [](World& w, FakeSetup&) { w.remove_pod(kPod); }, catalog::kMemberCreatePending,
     [](const World&, const Plan& p, const FakeSetup&) {
       EXPECT_TRUE(p.status.member_state_rollup.members_down);
       EXPECT_TRUE(p.status.member_state_rollup.membership_changing);
     }},
    {"AnUnschedulablePodIsCreatePendingWithTheSchedulersMessage", false,
     [](World& w, FakeSetup&) {
       w.pods.at(kPod).at("spec").as_object().erase("nodeName");
       for (auto& c : pod_status(w)["conditions"].as_array()) {
         if (c.at("type") == "PodScheduled") {
           c.as_object()["status"] = "False";
           c.as_object()["message"] = "0/4 nodes are available";
         }
       }
     },
     catalog::kMemberCreatePending,
     [](const World& w, const Plan& p, const FakeSetup&) {
       EXPECT_EQ(w.member(p, kPod)->state_detail.scheduling_error_message,
                 "0/4 nodes are available");
       EXPECT_TRUE(p.status.member_state_rollup.members_not_scheduled);
     }},
    {"AScheduledPodThatIsNotReadyIsCreating", false,
     [](World& w, FakeSetup&) { w.set_pod_ready(kPod, false); }, catalog::kMemberCreating,
     [](const World&, const Plan& p, const FakeSetup&) {
       EXPECT_TRUE(p.status.member_state_rollup.members_initializing);
     }},
    {"ARunningReadyPodIsReady", false, [](World&, FakeSetup&) {}, catalog::kMemberReady},
    {"ATerminatingPodIsCreating", false,
     [](World& w, FakeSetup&) {
       w.pods.at(kPod).at("metadata").as_object()["deletionTimestamp"] = "2026-11-25T00:00:00Z";
     },
     catalog::kMemberCreating},
    {"ARestartedPodThatIsNotReadyIsCreatingAndRestarting", false,
     [](World& w, FakeSetup&) {
       w.restart_container(kPod, "sim://second");
       w.set_pod_ready(kPod, false);
     },
     catalog::kMemberCreating,
     [](const World&, const Plan& p, const FakeSetup&) {
       EXPECT_TRUE(p.status.member_state_rollup.members_restarting);
     }},
    {"ANewMembersContainerGetsConfigmetaThePackageCheckAndConfigureStarted", true,
     [](World& w, FakeSetup&) { forget_status(w); }, catalog::kMemberCreating,
     [](const World&, const Plan& p, const FakeSetup& s) {
       EXPECT_EQ(s.kinds_for(kPod),
                 (std::vector<SetupStepKind>{
                     SetupStepKind::kWriteConfig, SetupStepKind::kReadConfigureStatus,
                     SetupStepKind::kCheckPackage, SetupStepKind::kStartConfigure}));
       EXPECT_EQ(p.result.kind, informer::WorkResult::Kind::kRequeueAfter);
     }},
    {"ConfigureThatExitedZeroInThisContainerMakesTheMemberReady", true,
     [](World& w, FakeSetup& s) {
       forget_status(w);
       s.configure = State::kDone;
     },
     catalog::kMemberReady,
     [](const World& w, const Plan& p, const FakeSetup&) {
       ASSERT_NE(find_event(p, "Configured"), nullptr);
       EXPECT_EQ(w.member(p, kPod)->state_detail.last_configured_container, w.container_of(kPod));
     }},
    {"ConfigureThatExitedNonZeroIsAConfigErrorWithItsOutput", true,
     [](World& w, FakeSetup& s) {
       forget_status(w);
       s.configure = State::kDone;
       s.exit_code = 3;
     },
     catalog::kMemberConfigError,
     [](const World& w, const Plan& p, const FakeSetup&) {
       const auto& d = w.member(p, kPod)->state_detail;
       EXPECT_EQ(d.config_error_detail, "startscript --configure exited 3");
       EXPECT_EQ(d.start_script_stderr_message, "boom");
       ASSERT_NE(find_event(p, "ConfigError"), nullptr);
       EXPECT_EQ(find_event(p, "ConfigError")->type, "Warning");
     }},
    {"ConfigureStillRunningKeepsTheMemberCreatingWithoutStartingItAgain", true,
     [](World& w, FakeSetup& s) {
       forget_status(w);
       s.configure = State::kRunning;
     },
     catalog::kMemberCreating,
     [](const World&, const Plan&, const FakeSetup& s) {
       EXPECT_FALSE(ran(s, SetupStepKind::kStartConfigure));
     }},
    {"AnEarlierContainersSuccessfulConfigureIsNotRerunWhenTheSetupDirIsPersisted", true,
     [](World& w, FakeSetup& s) {
       forget_status(w);
       w.app.at("spec").as_object()["defaultPersistDirs"] =
           json::array{"/var/lib/kv", "/opt/kstack/setup"};
       s.configure = State::kDone;
       s.status_container = "sim://earlier";
     },
     catalog::kMemberReady,
     [](const World&, const Plan& p, const FakeSetup& s) {
       EXPECT_FALSE(ran(s, SetupStepKind::kStartConfigure));
       EXPECT_NE(find_event(p, "Configured")->note.find("already configured"), std::string::npos);
     }},
    {"AnEarlierContainersSuccessfulConfigureKeptOnlyInTheEmptyDirIsRerun", true,
     [](World& w, FakeSetup& s) {
       forget_status(w);
       s.configure = State::kDone;
       s.status_container = "sim://earlier";
     },
     catalog::kMemberCreating,
     [](const World&, const Plan& p, const FakeSetup& s) {
       EXPECT_TRUE(ran(s, SetupStepKind::kStartConfigure));
       EXPECT_EQ(find_event(p, "Configured"), nullptr);
     }},
    {"AMissingPackageIsInstalledBeforeConfigureStarts", true,
     [](World& w, FakeSetup& s) {
       forget_status(w);
       s.installed = false;
     },
     catalog::kMemberCreating,
     [](const World&, const Plan&, const FakeSetup& s) {
       EXPECT_EQ(s.kinds_for(kPod).at(3), SetupStepKind::kInstallPackage);
       EXPECT_EQ(s.kinds_for(kPod).at(4), SetupStepKind::kStartConfigure);
     }},
    {"AWrongSetupWhileWritingConfigmetaIsAConfigError", true,
     [](World& w, FakeSetup& s) {
       forget_status(w);
       s.per_member[{kPod, SetupStepKind::kWriteConfig}] = SetupOutcome{
           SetupOutcome::Kind::kConfigError, "write /etc/kstack: read-only", {}, false, {}};
     },
     catalog::kMemberConfigError,
     [](const World& w, const Plan& p, const FakeSetup&) {
       EXPECT_EQ(w.member(p, kPod)->state_detail.config_error_detail,
                 "write /etc/kstack: read-only");
       EXPECT_EQ(condition(p, "Degraded")->reason, "ConfigError");
     }},
    {"ATransientExecFailureKeepsTheMemberCreatingAndThePassPolling", true,
     [](World& w, FakeSetup& s) {
       forget_status(w);
       s.per_member[{kPod, SetupStepKind::kReadConfigureStatus}] = SetupOutcome{
           SetupOutcome::Kind::kRetry, "read configure.status: timeout", {}, false, {}};
     },
     catalog::kMemberCreating,
     [](const World&, const Plan& p, const FakeSetup& s) {
       EXPECT_FALSE(ran(s, SetupStepKind::kCheckPackage));
       EXPECT_EQ(p.result.kind, informer::WorkResult::Kind::kRequeueAfter);
     }},
    {"WithoutASetupRunnerAMemberOfARoleWithAPackageIsAConfigError", true,
     [](World& w, FakeSetup&) {
       forget_status(w);
       w.setup_runner = false;
     },
     catalog::kMemberConfigError,
     [](const World& w, const Plan& p, const FakeSetup& s) {
       EXPECT_TRUE(s.ran.empty());
       EXPECT_NE(w.member(p, kPod)->state_detail.config_error_detail.find("no setup runner"),
                 std::string::npos);
     }},
    {"AConfigErrorStaysWhileTheContainerIsTheSame", true,
     [](World& w, FakeSetup& s) {
       make_config_error(w);
       s.configure = State::kDone;
     },
     catalog::kMemberConfigError,
     [](const World&, const Plan&, const FakeSetup& s) { EXPECT_TRUE(s.ran.empty()); }},
    {"AConfigErrorMemberWhoseContainerRestartedIsSetUpAgain", true,
     [](World& w, FakeSetup&) {
       make_config_error(w);
       w.restart_container(kPod, "sim://second");
     },
     catalog::kMemberCreating,
     [](const World& w, const Plan& p, const FakeSetup&) {
       const auto& d = w.member(p, kPod)->state_detail;
       EXPECT_EQ(d.configuring_container, "sim://second");
       EXPECT_EQ(d.config_error_detail, "");
     }},
    {"AReadyMemberWhoseContainerRestartedIsSetUpAgain", true,
     [](World& w, FakeSetup&) { w.restart_container(kPod, "sim://second"); },
     catalog::kMemberCreating,
     [](const World&, const Plan&, const FakeSetup& s) {
       EXPECT_TRUE(ran(s, SetupStepKind::kWriteConfig));
       EXPECT_TRUE(ran(s, SetupStepKind::kStartConfigure));
     }},
    {"AReadyMemberWhoseContainerIsNotRunningIsCreating", true,
     [](World& w, FakeSetup&) {
       auto& cs = pod_status(w)["containerStatuses"].as_array().front().as_object();
       cs["state"] = json::object{{"waiting", json::object{{"reason", "CrashLoopBackOff"}}}};
     },
     catalog::kMemberCreating,
     [](const World&, const Plan& p, const FakeSetup& s) {
       EXPECT_TRUE(s.ran.empty());
       EXPECT_TRUE(p.status.member_state_rollup.members_down);
     }},
    {"AConfiguredMemberGetsItsConfigmetaRewrittenWhenMembershipChangesAndStaysReady", true,
     [](World& w, FakeSetup&) { w.set_members("server", 2); }, catalog::kMemberReady,
     [](const World&, const Plan&, const FakeSetup& s) {
       EXPECT_EQ(s.kinds_for(kPod), std::vector<SetupStepKind>{SetupStepKind::kWriteConfig});
     }},
    {"AConfiguredMemberWhoseConfigmetaRewriteFailsStaysReadyAndThePassPolls", true,
     [](World& w, FakeSetup& s) {
       w.set_members("server", 2);
       s.per_member[{kPod, SetupStepKind::kWriteConfig}] =
           SetupOutcome{SetupOutcome::Kind::kConfigError, "write /etc/kstack: full", {}, false, {}};
     },
     catalog::kMemberReady,
     [](const World& w, const Plan& p, const FakeSetup&) {
       EXPECT_EQ(p.result.kind, informer::WorkResult::Kind::kRequeueAfter);
       EXPECT_NE(w.member(p, kPod)->state_detail.last_config_data_generation,
                 p.status.config_generation);
     }},
};

class MemberTransition : public ::testing::TestWithParam<MemberCase> {};

TEST_P(MemberTransition, FromASettledStack) {
  const auto& c = GetParam();
  World w(1, 0, c.package);
  w.settle();
  ASSERT_EQ(member_state(pass(w), kPod), catalog::kMemberReady) << "the world did not settle";
  FakeSetup setup;
  c.given(w, setup);
  const auto p = pass(w, setup);
  EXPECT_EQ(member_state(p, kPod), c.state);
  if (c.also) c.also(w, p, setup);
}

INSTANTIATE_TEST_SUITE_P(Plan, MemberTransition, ::testing::ValuesIn(kCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace kstack::reconciler::testing
