// The etcd app (appdefs/etcd) for real: the example Stack's three members run Debian's etcd 3.4
// from appdefs/etcd/image on three simulated nodes, and every check talks to etcd through
// `kstack-etcdctl` (the image's etcdctl against the member's own client URL) exec'd in a member.
// The tests run in order on one cluster: formation, replication, scale 3 -> 5 -> 3, the
// StatefulSet deleted (drift), a hung member restarted by its liveness probe.
#include <chrono>
#include <future>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "kube/resource.h"
#include "tests/e2e/apps/app_fixture.h"
#include "tests/e2e/apps/etcd_members.h"

namespace kstack::testenv::e2e::apps {
namespace {

namespace json = boost::json;
using kube::resources::kPods;
using kube::resources::kStatefulSets;

const std::string kRole = "member";

std::set<std::string> uids(const Objects& objects) {
  std::set<std::string> out;
  for (const auto& [name, o] : objects) out.insert(str_at(o, "/metadata/uid"));
  return out;
}

class EtcdApp : public EtcdAppTest {
 protected:
  static void SetUpTestSuite() {
    const auto start = std::chrono::steady_clock::now();
    start_app("etcd");
    if (ns().empty()) return;  // start_app failed early: SetUp reports it
    auto ready = wait_ready();
    if (ready) {
      std::cout << "[ etcd ] 3 members Ready after " << seconds_since(start) << " s\n";
    } else {
      std::cout << "[ etcd ] not Ready: " << ready.error() << "\n";
    }
  }
  static void TearDownTestSuite() { stop_app(); }

  static void expect_healthy(const std::vector<std::string>& pods) {
    for (const auto& pod : pods) {
      auto health = run(pod, etcdctl({"endpoint", "health"}));
      EXPECT_TRUE(health.ok) << health.diagnosis;
    }
  }

  // The value of `key` in the member's own copy (a serializable read is served locally).
  static void expect_value(const std::string& pod, const std::string& key,
                           const std::string& value) {
    auto got = run_until(
        pod, etcdctl({"get", key, "--print-value-only", "--consistency=s"}),
        [&](const std::string& out) { return out == value + "\n"; }, std::chrono::seconds(30));
    EXPECT_TRUE(got) << key << " through " << pod << ": " << got.error();
  }

  // The member's log of the `etcdctl member add/remove` its startscript ran ("" when none).
  static std::string etcdctl_log(const std::string& pod) {
    auto log = run(pod, {"sh", "-c", "cat /var/lib/etcd/kstack-etcdctl.log 2>/dev/null; true"});
    EXPECT_TRUE(log.ok) << log.diagnosis;
    return log.out;
  }

  static void put(const std::string& pod, const std::string& key, const std::string& value) {
    auto done = run(pod, etcdctl({"put", key, value}));
    ASSERT_TRUE(done.ok) << done.diagnosis;
    ASSERT_EQ(done.out, "OK\n");
  }
};

TEST_F(EtcdApp, ThreeMembersFormOneHealthyClusterWhoseHealthIsTheReadinessProbe) {
  const auto pods = ready_members();
  ASSERT_EQ(pods.size(), 3u) << describe();
  // Ready means the role's readiness probe passed: `etcdctl endpoint health` on the member.
  for (const auto& [name, pod] :
       list_objects(client(), kPods, ns(), stack_selector(stack_name()))) {
    std::string probe;
    for (const auto& c : pod.at_pointer("/spec/containers").as_array()) {
      boost::system::error_code ec;
      const auto* command = c.find_pointer("/readinessProbe/exec/command", ec);
      if (str_at(c, "/name") == "app" && command != nullptr) probe = json::serialize(*command);
    }
    EXPECT_EQ(probe, R"(["/usr/local/bin/kstack-etcd-check","ready"])") << name;
  }
  expect_healthy(pods);
  for (const auto& pod : pods) expect_membership(pod, pods);
}

TEST_F(EtcdApp, AKeyWrittenThroughMemberZeroIsReadThroughTheOthers) {
  const auto pods = ready_members();
  ASSERT_EQ(pods.size(), 3u);
  ASSERT_NO_FATAL_FAILURE(put(pods[0], "/kstack/greeting", "hello from member 0"));
  expect_value(pods[1], "/kstack/greeting", "hello from member 0");
  expect_value(pods[2], "/kstack/greeting", "hello from member 0");
  auto missing = run(pods[2], etcdctl({"get", "/kstack/absent", "--print-value-only"}));
  ASSERT_TRUE(missing.ok) << missing.diagnosis;
  EXPECT_EQ(missing.out, "") << "a key nobody wrote";
}

TEST_F(EtcdApp, ScalingToFiveAndBackToThreeKeepsTheClusterHealthy) {
  auto pods = ready_members();
  ASSERT_EQ(pods.size(), 3u);
  ASSERT_NO_FATAL_FAILURE(put(pods[0], "/kstack/before-scaling", "3"));

  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(scale(0, 5));
  pods = ready_members();
  ASSERT_EQ(pods.size(), 5u) << describe();
  std::cout << "[ etcd ] 3 -> 5 Ready after " << seconds_since(start) << " s\n";
  for (const auto& pod : pods) expect_membership(pod, pods);
  expect_healthy(pods);
  expect_value(pods[4], "/kstack/before-scaling", "3");
  // Each newcomer added itself before it started; --addnodes found nothing left to add.
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const auto log = etcdctl_log(pods[i]);
    const bool added_itself = log.find(" member add " + pods[i] + " ") != std::string::npos;
    EXPECT_EQ(added_itself, i >= 3) << pods[i] << ":\n" << log;
    if (i < 3) {
      EXPECT_EQ(log.find("member add"), std::string::npos) << pods[i] << ":\n" << log;
    }
  }
  std::map<std::string, std::string> leaving_ids;  // name -> etcd member id
  for (const auto& m : expect_membership(pods[0], pods)) {
    if (m.name == pods[3] || m.name == pods[4]) leaving_ids[m.name] = m.id;
  }
  ASSERT_NO_FATAL_FAILURE(put(pods[3], "/kstack/at-five", "5"));

  start = std::chrono::steady_clock::now();
  ASSERT_TRUE(scale(0, 3));
  pods = ready_members();
  ASSERT_EQ(pods.size(), 3u) << describe();
  std::cout << "[ etcd ] 5 -> 3 Ready after " << seconds_since(start) << " s\n";
  for (const auto& pod : pods) expect_membership(pod, pods);
  expect_healthy(pods);
  for (const auto& pod : pods) expect_value(pod, "/kstack/at-five", "5");
  // The remaining members removed the leaving ones (--delnodes) by their ids.
  std::string logs;
  for (const auto& pod : pods) logs += etcdctl_log(pod);
  for (const auto& [name, id] : leaving_ids) {
    EXPECT_NE(logs.find(" member remove " + id), std::string::npos) << name << " " << id << ":\n"
                                                                    << logs;
  }
}

TEST_F(EtcdApp, DeletingTheStatefulSetKeepsEveryKey) {
  const auto pods = ready_members();
  ASSERT_EQ(pods.size(), 3u);
  const auto ids_before = expect_membership(pods[0], pods);
  for (std::size_t i = 0; i < pods.size(); ++i) {
    ASSERT_NO_FATAL_FAILURE(put(pods[i], fmt::format("/kstack/drift/{}", i), pods[i]));
  }
  const std::string set_name = stack_name() + "-" + kRole;
  auto old_set = client().get(kStatefulSets, ns(), set_name);
  ASSERT_TRUE(old_set) << old_set.error().to_string();
  const auto old_pods = uids(list_objects(client(), kPods, ns(), stack_selector(stack_name())));

  const auto start = std::chrono::steady_clock::now();
  kube::DeleteOptions background;
  background.propagation_policy = "Background";
  ASSERT_TRUE(client().remove(kStatefulSets, ns(), set_name, background));
  auto recreated = wait_for_object(
      client(), kStatefulSets, ns(), set_name,
      [&](const json::value& s) {
        return str_at(s, "/metadata/uid") != str_at(*old_set, "/metadata/uid");
      },
      kAppTimeout);
  ASSERT_TRUE(recreated) << recreated.error();
  auto replaced = wait_for(
      client(), kPods, ns(), stack_selector(stack_name()),
      [&](const Objects& now) {
        if (now.size() != pods.size()) return false;
        for (const auto& [name, pod] : now) {
          if (old_pods.count(str_at(pod, "/metadata/uid")) != 0 || !running_and_ready(pod)) {
            return false;
          }
        }
        return true;
      },
      kAppTimeout);
  ASSERT_TRUE(replaced) << replaced.error() << "\n" << describe();
  ASSERT_EQ(ready_members(), pods);
  std::cout << "[ etcd ] StatefulSet deleted: Ready again after " << seconds_since(start) << " s\n";

  // The same cluster (the members restarted from their data, not a new one) with every key.
  auto ids_after = expect_membership(pods[0], pods);
  auto by_name = [](std::vector<EtcdMember> list) {
    std::map<std::string, std::string> ids;
    for (const auto& m : list) ids[m.name] = m.id;
    return ids;
  };
  EXPECT_EQ(by_name(ids_after), by_name(ids_before));
  for (const auto& pod : pods) {
    expect_value(pod, "/kstack/greeting", "hello from member 0");
    for (std::size_t i = 0; i < pods.size(); ++i) {
      expect_value(pod, fmt::format("/kstack/drift/{}", i), pods[i]);
    }
  }
}

TEST_F(EtcdApp, AStoppedMemberIsRestartedByItsLivenessProbeAndRejoinsWithItsData) {
  const auto pods = ready_members();
  ASSERT_EQ(pods.size(), 3u);
  const std::string& victim = pods[1];
  const auto ids_before = expect_membership(pods[0], pods);
  auto pod_before = client().get(kPods, ns(), victim);
  ASSERT_TRUE(pod_before) << pod_before.error().to_string();
  const auto restarts_before = int_at(*pod_before, "/status/containerStatuses/0/restartCount");
  ASSERT_NO_FATAL_FAILURE(put(pods[0], "/kstack/before-stop", "kept"));
  expect_value(victim, "/kstack/before-stop", "kept");

  // Watch the Stack from before the stop: its Ready condition must go False, then True.
  auto unready = std::async(std::launch::async, [] {
    return wait_for_object(
        client(), catalog::resources::kStacks, ns(), stack_name(),
        [](const json::value& s) { return condition(s, "Ready") == "False"; }, kAppTimeout);
  });
  const auto start = std::chrono::steady_clock::now();
  auto stopped =
      run(victim, {"sh", "-c",
                   "n=0; for d in /proc/[0-9]*; do "
                   "if [ \"$(cat \"$d/comm\" 2>/dev/null)\" = etcd ]; then "
                   "kill -STOP \"${d#/proc/}\" && n=$((n+1)); fi; done; [ \"$n\" = 1 ]"});
  ASSERT_TRUE(stopped.ok) << "kill -STOP etcd: " << stopped.diagnosis;

  auto pod_unready = wait_for_object(
      client(), kPods, ns(), victim,
      [](const json::value& p) { return condition(p, "Ready") == "False"; }, kAppTimeout);
  ASSERT_TRUE(pod_unready) << pod_unready.error();
  auto stack_unready = unready.get();
  ASSERT_TRUE(stack_unready) << "the Stack stayed Ready: " << stack_unready.error();
  std::cout << "[ etcd ] stopped member unready, Stack Ready=False after " << seconds_since(start)
            << " s\n";

  auto restarted = wait_for_object(
      client(), kPods, ns(), victim,
      [&](const json::value& p) {
        return int_at(p, "/status/containerStatuses/0/restartCount") > restarts_before;
      },
      kAppTimeout);
  ASSERT_TRUE(restarted) << "liveness did not restart " << victim << ": " << restarted.error()
                         << "\n"
                         << describe();
  ASSERT_EQ(ready_members(), pods);
  std::cout << "[ etcd ] stopped member restarted, Stack Ready again after " << seconds_since(start)
            << " s\n";

  // Rejoined as the same member (its data, not a new member) and serves the keys itself.
  auto ids_after = expect_membership(victim, pods);
  auto id_of = [&](const std::vector<EtcdMember>& list) {
    for (const auto& m : list) {
      if (m.name == victim) return m.id;
    }
    return std::string();
  };
  EXPECT_EQ(id_of(ids_after), id_of(ids_before));
  expect_value(victim, "/kstack/before-stop", "kept");
  expect_value(victim, "/kstack/greeting", "hello from member 0");
  ASSERT_NO_FATAL_FAILURE(put(victim, "/kstack/after-restart", "written through the restarted"));
  expect_value(pods[2], "/kstack/after-restart", "written through the restarted");
}

}  // namespace
}  // namespace kstack::testenv::e2e::apps
