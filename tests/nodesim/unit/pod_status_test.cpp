// Pod status computation: Running, Failed and Pending statuses, transition times, and when an
// update is needed.
#include "tests/nodesim/pod_status.h"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace kstack::nodesim {
namespace {

namespace json = boost::json;

json::value pod_with_status(std::string_view status) {
  return json::parse(
      std::string(R"({"metadata":{"name":"p","namespace":"ns","uid":"u1"},)"
                  R"("spec":{"containers":[{"name":"app","image":"busybox"}]},"status":)") +
      std::string(status) + "}");
}

PodState running_state() {
  PodState s;
  s.uid = "u1";
  s.pod_ip = "127.0.0.9";
  s.host_ip = "127.0.0.1";
  s.start_time = "2024-01-01T00:00:00Z";
  ContainerState c;
  c.name = "app";
  c.image = "busybox";
  c.id = "sim://abc";
  c.started_at = "2024-01-01T00:00:01Z";
  s.containers.push_back(c);
  return s;
}

std::string condition_of(const json::object& status, std::string_view type,
                         std::string_view field) {
  for (const auto& c : status.at("conditions").as_array()) {
    if (c.at("type").as_string() == type) {
      const auto* f = c.as_object().if_contains(field);
      return f != nullptr && f->is_string() ? std::string(f->get_string()) : std::string();
    }
  }
  return "<absent>";
}

TEST(PodStatus, RunningPodIsReadyWithContainerIdsAndIps) {
  auto pod = pod_with_status("{}");
  auto s = running_status(pod, running_state(), "2024-01-01T00:00:02Z");
  EXPECT_EQ(s.at("phase"), "Running");
  EXPECT_EQ(s.at("podIP"), "127.0.0.9");
  EXPECT_EQ(s.at("hostIP"), "127.0.0.1");
  EXPECT_EQ(s.at("podIPs").at(0).at("ip"), "127.0.0.9");
  for (const char* type : {"Initialized", "Ready", "ContainersReady", "PodScheduled"}) {
    EXPECT_EQ(condition_of(s, type, "status"), "True") << type;
  }
  const auto& c = s.at("containerStatuses").at(0);
  EXPECT_EQ(c.at("containerID"), "sim://abc");
  EXPECT_EQ(c.at("ready"), true);
  EXPECT_EQ(c.at("started"), true);
  EXPECT_EQ(c.at("restartCount"), 0);
  EXPECT_EQ(c.at("state").at("running").at("startedAt"), "2024-01-01T00:00:01Z");
}

TEST(PodStatus, UnchangedConditionsKeepTheirTransitionTimeAndOthersAreKept) {
  auto pod = pod_with_status(R"({"conditions":[
      {"type":"Ready","status":"True","lastTransitionTime":"2023-05-05T00:00:00Z"},
      {"type":"ContainersReady","status":"False","lastTransitionTime":"2023-05-05T00:00:00Z"},
      {"type":"example.com/gate","status":"True"}]})");
  auto s = running_status(pod, running_state(), "2024-01-01T00:00:02Z");
  EXPECT_EQ(condition_of(s, "Ready", "lastTransitionTime"), "2023-05-05T00:00:00Z");
  EXPECT_EQ(condition_of(s, "ContainersReady", "lastTransitionTime"), "2024-01-01T00:00:02Z");
  EXPECT_EQ(condition_of(s, "example.com/gate", "status"), "True");
}

TEST(PodStatus, RestartedContainerReportsCountAndLastState) {
  auto state = running_state();
  state.containers[0].restart_count = 2;
  state.containers[0].last_termination = Termination{137, "Error", "a", "b", "sim://old"};
  auto s = running_status(pod_with_status("{}"), state, "t");
  const auto& c = s.at("containerStatuses").at(0);
  EXPECT_EQ(c.at("restartCount"), 2);
  EXPECT_EQ(c.at("lastState").at("terminated").at("exitCode"), 137);
  EXPECT_EQ(c.at("lastState").at("terminated").at("containerID"), "sim://old");
}

TEST(PodStatus, FailedPodIsNotReadyAndContainersTerminated) {
  auto state = running_state();
  state.failed = true;
  state.containers[0].terminated = Termination{3, "Error", "a", "b", "sim://abc"};
  auto s = running_status(pod_with_status("{}"), state, "t");
  EXPECT_EQ(s.at("phase"), "Failed");
  EXPECT_EQ(condition_of(s, "Ready", "status"), "False");
  const auto& c = s.at("containerStatuses").at(0);
  EXPECT_EQ(c.at("state").at("terminated").at("exitCode"), 3);
  EXPECT_EQ(c.at("ready"), false);
}

TEST(PodStatus, ReadinessGatesHoldReady) {
  auto pod = json::parse(R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"app"}],
      "readinessGates":[{"conditionType":"example.com/ok"}]},"status":{}})");
  auto s = running_status(pod, running_state(), "t");
  EXPECT_EQ(condition_of(s, "ContainersReady", "status"), "True");
  EXPECT_EQ(condition_of(s, "Ready", "status"), "False");
  EXPECT_EQ(condition_of(s, "Ready", "reason"), "ReadinessGatesNotReady");
}

TEST(PodStatus, AFailedReadinessProbeLeavesARunningContainerUnready) {
  auto state = running_state();
  state.containers[0].readiness = false;
  auto s = running_status(pod_with_status("{}"), state, "t");
  EXPECT_EQ(s.at("phase"), "Running");
  EXPECT_EQ(condition_of(s, "Ready", "status"), "False");
  EXPECT_EQ(condition_of(s, "ContainersReady", "status"), "False");
  EXPECT_EQ(s.at("containerStatuses").at(0).at("ready"), false);
  EXPECT_EQ(s.at("containerStatuses").at(0).at("started"), true);
  state.containers[0].readiness = true;
  s = running_status(pod_with_status("{}"), state, "t");
  EXPECT_EQ(condition_of(s, "Ready", "status"), "True");
}

TEST(PodStatus, PendingExplainsWhatItWaitsFor) {
  auto s = pending_status(pod_with_status("{}"), "ContainerCreating",
                          "waiting for PersistentVolumeClaim \"data\" to be bound", "t");
  EXPECT_EQ(s.at("phase"), "Pending");
  EXPECT_EQ(condition_of(s, "Ready", "status"), "False");
  const auto& waiting = s.at("containerStatuses").at(0).at("state").at("waiting");
  EXPECT_EQ(waiting.at("reason"), "ContainerCreating");
  EXPECT_NE(std::string(waiting.at("message").as_string()).find("data"), std::string::npos);
}

TEST(PodStatus, UpdateNeededOnlyWhenSomethingOwnedChanged) {
  auto blank = pod_with_status("{}");
  auto desired = running_status(blank, running_state(), "2024-01-01T00:00:02Z");
  EXPECT_TRUE(status_needs_update(blank, desired));
  // As the API server stores it: with extra fields and explicit nulls.
  json::value stored(desired);
  stored.as_object()["qosClass"] = "BestEffort";
  for (auto& c : stored.at("conditions").as_array()) c.as_object()["lastProbeTime"] = nullptr;
  json::value pod = blank;
  pod.as_object()["status"] = stored;
  auto again = running_status(pod, running_state(), "2024-01-01T00:00:09Z");
  EXPECT_FALSE(status_needs_update(pod, again));
  auto restarted = running_state();
  restarted.containers[0].id = "sim://new";
  EXPECT_TRUE(status_needs_update(pod, running_status(pod, restarted, "t")));
}

TEST(PodStatus, AContainerInBackOffIsWaitingAndNotReadyWithItsLastExit) {
  auto state = running_state();
  auto& c = state.containers[0];
  c.restart_count = 1;
  c.waiting_reason = "CrashLoopBackOff";
  c.waiting_message = "back-off 10s restarting failed container=app pod=p_ns";
  c.last_termination = Termination{3, "Error", "t0", "t1", "sim://abc"};
  auto s = running_status(pod_with_status("{}"), state, "2024-01-01T00:00:02Z");
  EXPECT_EQ(s.at("phase"), "Running");
  EXPECT_EQ(condition_of(s, "Ready", "status"), "False");
  const auto& cs = s.at("containerStatuses").at(0);
  EXPECT_EQ(cs.at("state").at("waiting").at("reason"), "CrashLoopBackOff");
  EXPECT_EQ(cs.at("lastState").at("terminated").at("exitCode"), 3);
  EXPECT_EQ(cs.at("ready"), false);
  EXPECT_EQ(cs.at("started"), false);
  EXPECT_EQ(cs.at("restartCount"), 1);
}

TEST(PodStatus, APodWhoseContainersAllExitedSucceedsOrFailsByTheirExitCodes) {
  auto state = running_state();
  state.containers.push_back(state.containers[0]);
  state.containers[1].name = "sidecar";
  state.containers[0].terminated = Termination{0, "Completed", "t0", "t1", "sim://abc"};
  auto s = running_status(pod_with_status("{}"), state, "2024-01-01T00:00:02Z");
  EXPECT_EQ(s.at("phase"), "Running") << "one container still runs";
  state.containers[1].terminated = Termination{0, "Completed", "t0", "t1", "sim://def"};
  s = running_status(pod_with_status("{}"), state, "2024-01-01T00:00:02Z");
  EXPECT_EQ(s.at("phase"), "Succeeded");
  EXPECT_EQ(condition_of(s, "Ready", "reason"), "PodCompleted");
  EXPECT_EQ(s.at("containerStatuses").at(1).at("state").at("terminated").at("exitCode"), 0);
  state.containers[1].terminated->exit_code = 2;
  s = running_status(pod_with_status("{}"), state, "2024-01-01T00:00:02Z");
  EXPECT_EQ(s.at("phase"), "Failed");
}

}  // namespace
}  // namespace kstack::nodesim
