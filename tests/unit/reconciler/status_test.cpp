// The pure parts of Stack status: member state from the pod, conditions, ordinals.
#include "reconciler/status.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace kstack::reconciler {
namespace {
namespace json = boost::json;

json::value pod(std::string_view phase, std::string_view ready, std::string_view scheduled,
                std::string_view node = "sim-0") {
  json::object status{{"phase", phase}};
  json::array conds;
  if (!scheduled.empty()) {
    json::object c{{"type", "PodScheduled"}, {"status", scheduled}};
    if (scheduled == "False") c["message"] = "0/1 nodes are available: 1 Insufficient cpu.";
    conds.push_back(c);
  }
  if (!ready.empty()) conds.push_back(json::object{{"type", "Ready"}, {"status", ready}});
  status["conditions"] = conds;
  status["containerStatuses"] = json::array{
      json::object{{"name", "app"},
                   {"containerID", "sim://abc"},
                   {"restartCount", 2},
                   {"state", {{phase == "Running" ? "running" : "waiting", json::object{}}}}}};
  json::object spec;
  if (!node.empty()) spec["nodeName"] = node;
  return json::object{{"metadata", {{"name", "s-r-0"}}}, {"spec", spec}, {"status", status}};
}

TEST(MemberState, NoPodIsCreatePending) {
  const auto view = view_pod(nullptr);
  EXPECT_FALSE(view.exists);
  EXPECT_EQ(view.container_state, "absent");
  EXPECT_EQ(member_state(view), catalog::kMemberCreatePending);
}

TEST(MemberState, UnschedulablePodIsCreatePendingWithTheSchedulerMessage) {
  const auto p = pod("Pending", "", "False", "");
  const auto view = view_pod(&p);
  EXPECT_TRUE(view.unschedulable);
  EXPECT_EQ(view.scheduling_message, "0/1 nodes are available: 1 Insufficient cpu.");
  EXPECT_EQ(member_state(view), catalog::kMemberCreatePending);
}

TEST(MemberState, ScheduledButNotReadyIsCreating) {
  const auto p = pod("Pending", "False", "True");
  const auto view = view_pod(&p);
  EXPECT_TRUE(view.scheduled);
  EXPECT_EQ(view.container_state, "waiting");
  EXPECT_EQ(member_state(view), catalog::kMemberCreating);
  const auto running_unready = pod("Running", "False", "True");
  EXPECT_EQ(member_state(view_pod(&running_unready)), catalog::kMemberCreating);
}

TEST(MemberState, RunningAndReadyIsReady) {
  const auto p = pod("Running", "True", "True");
  const auto view = view_pod(&p);
  EXPECT_TRUE(view.running_ready);
  EXPECT_EQ(view.container_id, "sim://abc");
  EXPECT_EQ(view.restart_count, 2);
  EXPECT_EQ(view.container_state, "running");
  EXPECT_EQ(member_state(view), catalog::kMemberReady);
}

TEST(MemberState, ATerminatingPodIsNotReady) {
  auto p = pod("Running", "True", "True");
  p.as_object()["metadata"].as_object()["deletionTimestamp"] = "2026-11-22T00:00:00Z";
  const auto view = view_pod(&p);
  EXPECT_TRUE(view.deleting);
  EXPECT_FALSE(view.running_ready);
  EXPECT_EQ(member_state(view), catalog::kMemberCreating);
}

TEST(Ordinal, TakesTheNumberAfterTheLastDash) {
  EXPECT_EQ(ordinal_of("s-worker-12"), 12);
  EXPECT_EQ(ordinal_of("my-stack-a-b-0"), 0);
  EXPECT_EQ(ordinal_of("s-worker-"), std::nullopt);
  EXPECT_EQ(ordinal_of("s-worker-x1"), std::nullopt);
  EXPECT_EQ(ordinal_of("noordinal"), std::nullopt);
}

TEST(Conditions, TransitionTimeMovesOnlyWhenTheStatusChanges) {
  std::vector<catalog::Condition> conds;
  set_condition(conds, kConditionReady, "False", kReasonMembersNotReady, "0 of 3", 1,
                "2026-01-01T00:00:00Z");
  ASSERT_EQ(conds.size(), 1u);
  EXPECT_EQ(conds[0].last_transition_time, "2026-01-01T00:00:00Z");
  set_condition(conds, kConditionReady, "False", kReasonMembersNotReady, "2 of 3", 2,
                "2026-01-01T00:01:00Z");
  EXPECT_EQ(conds[0].last_transition_time, "2026-01-01T00:00:00Z");
  EXPECT_EQ(conds[0].message, "2 of 3");
  EXPECT_EQ(conds[0].observed_generation, 2);
  set_condition(conds, kConditionReady, "True", kReasonAllMembersReady, "3 of 3", 2,
                "2026-01-01T00:02:00Z");
  EXPECT_EQ(conds[0].last_transition_time, "2026-01-01T00:02:00Z");
  EXPECT_EQ(conds[0].reason, kReasonAllMembersReady);
  set_condition(conds, kConditionDegraded, "False", kReasonAsExpected, "", 2,
                "2026-01-01T00:03:00Z");
  ASSERT_EQ(conds.size(), 2u);
  ASSERT_NE(find_condition(conds, kConditionDegraded), nullptr);
  EXPECT_EQ(find_condition(conds, kConditionProgressing), nullptr);
}

TEST(Status, SameStatusSeesEveryField) {
  catalog::StackStatus a;
  a.state = "ready";
  catalog::MemberStatus member;
  member.pod = member.service = "s-r-0";
  member.node_id = 1;
  member.state = "ready";
  catalog::RoleStatus role;
  role.id = "r";
  role.stateful_set = "s-r";
  role.members.push_back(member);
  a.roles.push_back(role);
  auto b = a;
  EXPECT_TRUE(same_status(a, b));
  b.roles[0].members[0].state_detail.last_known_container_state = "running";
  EXPECT_FALSE(same_status(a, b));
  b = a;
  b.member_state_rollup.members_down = true;
  EXPECT_FALSE(same_status(a, b));
}

TEST(Time, Rfc3339IsUtcSeconds) {
  const auto now = rfc3339_now();
  ASSERT_EQ(now.size(), 20u) << now;
  EXPECT_EQ(now[4], '-');
  EXPECT_EQ(now[10], 'T');
  EXPECT_EQ(now.back(), 'Z');
}

}  // namespace
}  // namespace kstack::reconciler
