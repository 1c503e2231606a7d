// Issue 6 end to end, failures: a startscript --configure that exits non-zero puts only its own
// member in config_error (exit code, output tails, Degraded ConfigError) and deleting the pod
// sets the member up again; a member whose --addnodes keeps failing is given up on after the
// bounded retries (lastNotifyError, Degraded NotifyFailed, a NotifyFailed Event) without
// holding up this or a later scale-up, and recovers once its script works again.
#include <iostream>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "tests/e2e/stack_setup/fixture.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using catalog::resources::kStacks;
using kube::resources::kPods;

std::string member_state(const json::value& stack, const std::string& pod) {
  auto members = status_members(stack, "worker");
  auto it = members.find(pod);
  return it == members.end() ? "" : str_at(it->second, "/state");
}

std::string detail(const json::value& stack, const std::string& pod, std::string_view field) {
  auto members = status_members(stack, "worker");
  auto it = members.find(pod);
  return it == members.end() ? "" : str_at(it->second, "/stateDetail/" + std::string(field));
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

class Failures : public StackSetupTest {
 protected:
  void SetUp() override {
    StackSetupTest::SetUp();
    if (HasFatalFailure()) return;
    create_logapp("logapp");
  }
};

TEST_F(Failures, AFailingConfigureIsAConfigErrorOfItsMemberOnlyAndDeletingThePodRetriesIt) {
  const std::string bad = "cfg-worker-1";
  create(kStacks,
         logapp_stack(ns_, "cfg", "logapp", 3, {{std::string(kFailConfigurePodEnv), bad}}));
  auto failed = wait_stack("cfg", [&](const json::value& s) {
    return member_state(s, "cfg-worker-0") == "ready" &&
           member_state(s, "cfg-worker-2") == "ready" && member_state(s, bad) == "config_error";
  });
  ASSERT_TRUE(failed) << failed.error();
  const std::string failed_container = detail(*failed, bad, "configuringContainer");
  EXPECT_FALSE(failed_container.empty());
  EXPECT_TRUE(contains(detail(*failed, bad, "configErrorDetail"), "exited 7"))
      << detail(*failed, bad, "configErrorDetail");
  EXPECT_TRUE(contains(detail(*failed, bad, "startScriptStderrMessage"),
                       fmt::format("configure refused on {}: no {}", bad, kConfigureFixedMarker)))
      << detail(*failed, bad, "startScriptStderrMessage");
  EXPECT_TRUE(contains(detail(*failed, bad, "startScriptStdoutMessage"), "configuring " + bad))
      << detail(*failed, bad, "startScriptStdoutMessage");
  EXPECT_EQ(detail(*failed, bad, "lastConfiguredContainer"), "");
  EXPECT_EQ(condition(*failed, "Ready"), "False");
  EXPECT_EQ(condition(*failed, "Degraded"), "True");
  const auto degraded = condition_of(*failed, "Degraded");
  EXPECT_EQ(str_at(degraded, "/reason"), "ConfigError");
  EXPECT_TRUE(contains(str_at(degraded, "/message"), bad)) << str_at(degraded, "/message");
  EXPECT_TRUE(contains(str_at(degraded, "/message"), "exited 7")) << str_at(degraded, "/message");
  EXPECT_EQ(json::value(true), [&] {
    boost::system::error_code ec;
    const auto* p = failed->find_pointer("/status/memberStateRollup/configErrors", ec);
    return p != nullptr ? *p : json::value(nullptr);
  }());
  EXPECT_EQ(int_at(*failed, "/status/readyMembers"), 2);
  const auto config_errors = events("cfg", "ConfigError");
  ASSERT_FALSE(config_errors.empty());
  EXPECT_TRUE(contains(str_at(config_errors[0], "/note"), bad));
  EXPECT_EQ(str_at(config_errors[0], "/type"), "Warning");
  for (const auto& pod : {"cfg-worker-0", "cfg-worker-2"}) {
    EXPECT_EQ(setup_log(pod).size(), 1u) << pod;
  }
  auto log = setup_log(bad);
  ASSERT_EQ(log.size(), 1u) << describe_log(log);

  // Fix the cause (the marker lives on the member's PVC), delete the pod: its successor is set
  // up from scratch and succeeds.
  ASSERT_EQ(exec(bad, {"touch", std::string(kConfigureFixedMarker)}).exit_code, 0);
  const auto start = std::chrono::steady_clock::now();
  auto removed = client_->remove(kPods, ns_, bad);
  ASSERT_TRUE(removed) << removed.error().to_string();
  auto ready = wait_quiet("cfg");
  ASSERT_TRUE(ready) << ready.error();
  std::cout << "[ setup ] config_error member set up again " << seconds_since(start)
            << " s after its pod was deleted\n";
  EXPECT_EQ(member_state(*ready, bad), "ready");
  EXPECT_NE(detail(*ready, bad, "lastConfiguredContainer"), failed_container);
  EXPECT_EQ(detail(*ready, bad, "configErrorDetail"), "");
  EXPECT_EQ(detail(*ready, bad, "startScriptStderrMessage"), "");
  EXPECT_EQ(condition(*ready, "Degraded"), "False");
  log = setup_log(bad);
  ASSERT_EQ(entries_of(log, "--configure").size(), 2u) << describe_log(log);
  EXPECT_EQ(log.size(), 2u) << describe_log(log);
  for (const auto& pod : {"cfg-worker-0", "cfg-worker-2"}) {
    EXPECT_EQ(setup_log(pod).size(), 1u) << pod << ": the others are left alone\n"
                                         << describe_log(setup_log(pod));
  }
}

TEST_F(Failures, AMemberWhoseAddnodesKeepsFailingDoesNotHoldUpLaterScaleUps) {
  create(kStacks, logapp_stack(ns_, "ntf", "logapp", 3));
  auto three = wait_quiet("ntf");
  ASSERT_TRUE(three) << three.error();
  const std::string stuck = "ntf-worker-0";
  ASSERT_EQ(exec(stuck, {"touch", std::string(kFailAddNodesMarker)}).exit_code, 0);

  // 3 -> 4: the stuck member is tried max_attempts (3) times, then given up on.
  auto start = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(scale("ntf", 4));
  auto four = wait_stack("ntf", [&](const json::value& s) {
    return stack_ready(s) && notifications_drained(s) &&
           !detail(s, stuck, "lastNotifyError").empty();
  });
  ASSERT_TRUE(four) << four.error();
  std::cout << "[ setup ] 3 -> 4 with one member's --addnodes failing: settled in "
            << seconds_since(start) << " s\n";
  const std::string fqdn3 = member_fqdn(ns_, "ntf", "ntf-worker-3");
  const std::string error = detail(*four, stuck, "lastNotifyError");
  EXPECT_TRUE(contains(error, "startscript --addnodes --role worker --fqdns " + fqdn3)) << error;
  EXPECT_TRUE(contains(error, "failed 3 times")) << error;
  EXPECT_TRUE(contains(error, "addnodes refused on " + stuck)) << error;
  EXPECT_EQ(member_state(*four, stuck), "ready") << "a failed notification is not a config error";
  EXPECT_EQ(condition(*four, "Degraded"), "True");
  const auto degraded = condition_of(*four, "Degraded");
  EXPECT_EQ(str_at(degraded, "/reason"), "NotifyFailed");
  EXPECT_TRUE(contains(str_at(degraded, "/message"), stuck)) << str_at(degraded, "/message");
  const auto failures = events("ntf", "NotifyFailed");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(str_at(failures[0], "/type"), "Warning");
  EXPECT_TRUE(contains(str_at(failures[0], "/note"), stuck)) << str_at(failures[0], "/note");
  EXPECT_TRUE(contains(str_at(failures[0], "/note"), "--addnodes")) << str_at(failures[0], "/note");
  auto log = setup_log(stuck);
  EXPECT_EQ(entries_of(log, "--addnodes").size(), 3u) << describe_log(log);
  for (const auto& pod : worker_pods("ntf", 1, 3)) {
    const auto adds = entries_of(setup_log(pod), "--addnodes");
    ASSERT_EQ(adds.size(), 1u) << pod;
    EXPECT_EQ(adds[0].fqdns(), std::vector<std::string>{fqdn3}) << pod;
    EXPECT_EQ(detail(*four, pod, "lastNotifyError"), "") << pod;
  }

  // 4 -> 5 while it still fails: completes just the same.
  start = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(scale("ntf", 5));
  const std::string fqdn4 = member_fqdn(ns_, "ntf", "ntf-worker-4");
  auto five = wait_stack("ntf", [&](const json::value& s) {
    return stack_ready(s) && notifications_drained(s) && status_members(s, "worker").size() == 5 &&
           contains(detail(s, stuck, "lastNotifyError"), fqdn4);
  });
  ASSERT_TRUE(five) << five.error();
  std::cout << "[ setup ] 4 -> 5 with the same member still failing: settled in "
            << seconds_since(start) << " s\n";
  EXPECT_EQ(member_state(*five, "ntf-worker-4"), "ready");
  EXPECT_EQ(str_at(condition_of(*five, "Degraded"), "/reason"), "NotifyFailed");
  EXPECT_EQ(entries_of(setup_log(stuck), "--addnodes").size(), 6u)
      << describe_log(setup_log(stuck));
  for (const auto& pod : worker_pods("ntf", 1, 4)) {
    const auto adds = entries_of(setup_log(pod), "--addnodes");
    ASSERT_FALSE(adds.empty()) << pod;
    EXPECT_EQ(adds.back().fqdns(), std::vector<std::string>{fqdn4}) << pod;
  }
  EXPECT_EQ(events("ntf", "NotifyFailed").size(), 2u);

  // Its script works again: the next notification gets through and the Stack is not degraded.
  ASSERT_EQ(exec(stuck, {"rm", std::string(kFailAddNodesMarker)}).exit_code, 0);
  ASSERT_NO_FATAL_FAILURE(scale("ntf", 6));
  auto six = wait_stack("ntf", [&](const json::value& s) {
    return stack_ready(s) && notifications_drained(s) && status_members(s, "worker").size() == 6 &&
           condition(s, "Degraded") == "False";
  });
  ASSERT_TRUE(six) << six.error();
  EXPECT_EQ(detail(*six, stuck, "lastNotifyError"), "");
  const auto adds = entries_of(setup_log(stuck), "--addnodes");
  ASSERT_EQ(adds.size(), 7u) << describe_log(setup_log(stuck));
  EXPECT_EQ(adds.back().fqdns(), std::vector<std::string>{member_fqdn(ns_, "ntf", "ntf-worker-5")});
}

}  // namespace
}  // namespace kstack::testenv::e2e
