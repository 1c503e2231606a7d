// The pure parts of Stack status: member state from the pod, conditions, ordinals.
#include "reconciler/status.h"

#include <functional>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/parse.h"

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
  const auto view = view_pod(informer::pack(p).get());
  EXPECT_TRUE(view.unschedulable);
  EXPECT_EQ(view.scheduling_message, "0/1 nodes are available: 1 Insufficient cpu.");
  EXPECT_EQ(member_state(view), catalog::kMemberCreatePending);
}

TEST(MemberState, ScheduledButNotReadyIsCreating) {
  const auto p = pod("Pending", "False", "True");
  const auto view = view_pod(informer::pack(p).get());
  EXPECT_TRUE(view.scheduled);
  EXPECT_EQ(view.container_state, "waiting");
  EXPECT_EQ(member_state(view), catalog::kMemberCreating);
  const auto running_unready = pod("Running", "False", "True");
  EXPECT_EQ(member_state(view_pod(informer::pack(running_unready).get())),
            catalog::kMemberCreating);
}

TEST(MemberState, RunningAndReadyIsReady) {
  const auto p = pod("Running", "True", "True");
  const auto view = view_pod(informer::pack(p).get());
  EXPECT_TRUE(view.running_ready);
  EXPECT_EQ(view.container_id, "sim://abc");
  EXPECT_EQ(view.restart_count, 2);
  EXPECT_EQ(view.container_state, "running");
  EXPECT_EQ(member_state(view), catalog::kMemberReady);
}

TEST(MemberState, ATerminatingPodIsNotReady) {
  auto p = pod("Running", "True", "True");
  p.as_object()["metadata"].as_object()["deletionTimestamp"] = "2026-11-22T00:00:00Z";
  const auto view = view_pod(informer::pack(p).get());
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

// A status with every field away from its default, so that resetting any one is a change.
catalog::StackStatus full_status() {
  catalog::StackStatus s;
  s.observed_generation = 3;
  s.state = "ready";
  s.conditions.push_back(
      {"Ready", "True", "AllMembersReady", "all ready", "2026-01-01T00:00:00Z", 3});
  s.cluster_service = "s";
  s.last_node_id = 2;
  s.config_generation = 1;
  s.ready_members = 1;
  s.desired_members = 1;
  s.member_summary = "1/1";
  s.updated_members = 1;
  s.update_summary = "1/1";
  s.member_state_rollup.members_waiting = true;
  catalog::MemberStatus m;
  m.pod = "s-r-0";
  m.service = "s-r-0";
  m.pvc = "data-s-r-0";
  m.node_id = 1;
  m.state = "ready";
  m.template_revision = "rev";
  m.app = "app";
  auto& d = m.state_detail;
  d.config_error_detail = "x";
  d.last_config_data_generation = 0;  // present though zero: not the same as absent
  d.last_setup_generation = 2;
  d.configuring_container = "c1";
  d.last_configured_container = "c0";
  d.last_known_container_state = "running";
  d.pending_notify_cmds.push_back({{"--addnodes", "--fqdns", "a"}});
  d.start_script_stdout_message = "out";
  d.start_script_stderr_message = "err";
  d.scheduling_error_message = "sched";
  d.last_notify_error = "notify";
  d.last_configured_revision = "rev0";
  d.last_configured_app = "app0";
  d.last_configured_package = "pkg";
  d.preupgrade_revision = "rev1";
  d.preupgrade_container = "c2";
  d.preupgrade_succeeded = true;
  d.upgrade_error = "upgrade";
  d.preupgrade_stdout = "pout";
  d.preupgrade_stderr = "perr";
  d.moved_at = "2026-01-01T00:01:00Z";
  d.recovery = "recovering";
  d.replacing = true;
  catalog::RoleStatus r;
  r.id = "r";
  r.stateful_set = "s-r";
  r.members.push_back(m);
  r.update_revision = "rev1";
  r.updated_members = 1;
  r.partition = 1;
  s.roles.push_back(r);
  return s;
}

// same_status compares field by field; the operator used to compare the serialised forms, and
// the reconciler no longer round-trips the old status through JSON. Both rest on to_json being
// lossless: every field matters to both comparisons alike, and decoding gives back the value.
TEST(Status, SameStatusAgreesWithTheSerialisedFormForEveryField) {
  using S = catalog::StackStatus;
  auto member = [](S& s) -> catalog::MemberStatus& { return s.roles[0].members[0]; };
  auto detail = [&](S& s) -> catalog::MemberStateDetail& { return member(s).state_detail; };
  const std::vector<std::function<void(S&)>> resets{
      [](S& s) { s.observed_generation = 0; },
      [](S& s) { s.state.clear(); },
      [](S& s) { s.conditions.clear(); },
      [](S& s) { s.conditions[0].type.clear(); },
      [](S& s) { s.conditions[0].status.clear(); },
      [](S& s) { s.conditions[0].reason.clear(); },
      [](S& s) { s.conditions[0].message.clear(); },
      [](S& s) { s.conditions[0].last_transition_time.clear(); },
      [](S& s) { s.conditions[0].observed_generation = 0; },
      [](S& s) { s.cluster_service.clear(); },
      [](S& s) { s.last_node_id = 0; },
      [](S& s) { s.config_generation = 0; },
      [](S& s) { s.ready_members = 0; },
      [](S& s) { s.desired_members = 0; },
      [](S& s) { s.member_summary.clear(); },
      [](S& s) { s.updated_members = 0; },
      [](S& s) { s.update_summary.clear(); },
      [](S& s) { s.member_state_rollup.members_waiting = false; },
      [](S& s) { s.roles[0].id.clear(); },
      [](S& s) { s.roles[0].stateful_set.clear(); },
      [](S& s) { s.roles[0].members.clear(); },
      [](S& s) { s.roles[0].update_revision.clear(); },
      [](S& s) { s.roles[0].updated_members = 0; },
      [](S& s) { s.roles[0].partition = 0; },
      [&](S& s) { member(s).pod.clear(); },
      [&](S& s) { member(s).service.clear(); },
      [&](S& s) { member(s).pvc.clear(); },
      [&](S& s) { member(s).node_id = 0; },
      [&](S& s) { member(s).state.clear(); },
      [&](S& s) { member(s).template_revision.clear(); },
      [&](S& s) { member(s).app.clear(); },
      [&](S& s) { detail(s).config_error_detail.clear(); },
      [&](S& s) { detail(s).last_config_data_generation.reset(); },
      [&](S& s) { detail(s).last_setup_generation.reset(); },
      [&](S& s) { detail(s).configuring_container.clear(); },
      [&](S& s) { detail(s).last_configured_container.clear(); },
      [&](S& s) { detail(s).last_known_container_state.clear(); },
      [&](S& s) { detail(s).pending_notify_cmds.clear(); },
      [&](S& s) { detail(s).pending_notify_cmds[0].arguments.pop_back(); },
      [&](S& s) { detail(s).start_script_stdout_message.clear(); },
      [&](S& s) { detail(s).start_script_stderr_message.clear(); },
      [&](S& s) { detail(s).scheduling_error_message.clear(); },
      [&](S& s) { detail(s).last_notify_error.clear(); },
      [&](S& s) { detail(s).last_configured_revision.clear(); },
      [&](S& s) { detail(s).last_configured_app.clear(); },
      [&](S& s) { detail(s).last_configured_package.clear(); },
      [&](S& s) { detail(s).preupgrade_revision.clear(); },
      [&](S& s) { detail(s).preupgrade_container.clear(); },
      [&](S& s) { detail(s).preupgrade_succeeded = false; },
      [&](S& s) { detail(s).upgrade_error.clear(); },
      [&](S& s) { detail(s).preupgrade_stdout.clear(); },
      [&](S& s) { detail(s).preupgrade_stderr.clear(); },
      [&](S& s) { detail(s).moved_at.clear(); },
      [&](S& s) { detail(s).recovery.clear(); },
      [&](S& s) { detail(s).replacing = false; },
  };
  const auto a = full_status();
  catalog::FieldErrors errors;
  EXPECT_EQ(catalog::decode_stack_status(catalog::to_json(a), errors), a);
  EXPECT_TRUE(same_status(a, full_status()));
  for (std::size_t i = 0; i < resets.size(); ++i) {
    auto b = full_status();
    resets[i](b);
    EXPECT_FALSE(same_status(a, b)) << "reset " << i;
    EXPECT_NE(catalog::to_json(a), catalog::to_json(b)) << "reset " << i;
    EXPECT_EQ(catalog::decode_stack_status(catalog::to_json(b), errors), b) << "reset " << i;
  }
  EXPECT_TRUE(errors.empty());
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
