// Redis for real (issue 11): the example Stack of appdefs/redis (a primary and two replicas,
// each with a volume) on three simulated nodes running appdefs/redis/image, i.e. Debian's
// redis-server 7.0.15 started by the image's entrypoint with the config kstack's setup package
// wrote. Every check talks to the daemons with redis-cli, exec'ed in the members, by the
// members' FQDNs (cluster DNS): replication of a key to every replica, a scale-up of the
// replicas that ends with all of them online at the primary, and the probes (a replica that
// loses its primary turns the Stack not Ready; a stopped daemon is restarted by its liveness
// probe and re-syncs). The tests run in order on one Stack.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "kube/resource.h"
#include "tests/e2e/apps/app_fixture.h"

namespace kstack::testenv::e2e::apps {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr int kReplicaRole = 1;  // spec.roles[1] of appdefs/redis/stack.yaml

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// The value of `field:` in an INFO reply ("" when absent); INFO lines end in \r\n.
std::string info_field(const std::string& info, const std::string& field) {
  const auto key = field + ":";
  std::size_t at = 0;
  while ((at = info.find(key, at)) != std::string::npos) {
    if (at == 0 || info[at - 1] == '\n') {
      const auto end = info.find_first_of("\r\n", at);
      return info.substr(at + key.size(), end == std::string::npos ? end : end - at - key.size());
    }
    at += key.size();
  }
  return "";
}

// How many slaveN: lines of a primary's INFO replication say state=online.
int online_replicas(const std::string& info) {
  int n = 0;
  for (std::size_t at = 0; (at = info.find(",state=online,", at)) != std::string::npos; ++at) ++n;
  return n;
}

// The ip= of every slaveN: line ("slave0:ip=10.244.1.5,port=6379,state=online,...").
std::set<std::string> replica_ips(const std::string& info) {
  std::set<std::string> ips;
  for (int i = 0;; ++i) {
    const auto line = info_field(info, fmt::format("slave{}", i));
    if (line.rfind("ip=", 0) != 0) return ips;
    ips.insert(line.substr(3, line.find(',') - 3));
  }
}

class RedisTest : public AppTest {
 protected:
  static void SetUpTestSuite() {
    started_ = std::chrono::steady_clock::now();
    start_app("redis");
  }
  static void TearDownTestSuite() { stop_app(); }

  // redis-cli against `pod`'s own daemon, run in `pod`.
  static std::vector<std::string> cli(const std::string& pod, std::vector<std::string> args) {
    std::vector<std::string> argv = {"redis-cli", "-h", fqdn(pod)};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  // SET on the primary, then waits until every replica returns the value.
  static void expect_replicated(const std::string& primary,
                                const std::vector<std::string>& replicas, const std::string& key,
                                const std::string& value) {
    auto set = run(primary, cli(primary, {"set", key, value}));
    ASSERT_TRUE(set.ok) << set.diagnosis;
    ASSERT_EQ(trim(set.out), "OK");
    for (const auto& replica : replicas) {
      auto got = run_until(replica, cli(replica, {"get", key}),
                           [&](const std::string& out) { return trim(out) == value; });
      EXPECT_TRUE(got) << replica << " never returned " << key << "=" << value << ": "
                       << got.error();
    }
  }
  // The Stack's versions from resourceVersion `rv` on (a watch replays what happened since, in
  // order) until `done` holds for one; returns it.
  static tl::expected<json::value, std::string> watch_stack_from(
      std::string rv, const std::function<bool(const json::value&)>& done,
      std::chrono::seconds timeout = kAppTimeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::optional<json::value> found;
    while (!found) {
      const auto left = std::chrono::duration_cast<std::chrono::seconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return tl::unexpected(fmt::format("not within {} s\n{}", timeout.count(), describe()));
      }
      kube::WatchOptions options;
      options.field_selector = "metadata.name=" + stack_name();
      options.resource_version = rv;
      options.timeout_seconds = static_cast<int>(left.count());
      auto watched = client().watch(catalog::resources::kStacks, ns(), options,
                                    [&](kube::WatchEvent&& event) {
                                      auto v = str_at(event.object, "/metadata/resourceVersion");
                                      if (!v.empty()) rv = v;
                                      if (event.type == kube::WatchEvent::Type::kBookmark) {
                                        return true;
                                      }
                                      if (done(event.object)) found = event.object;
                                      return !found;
                                    });
      if (!watched) return tl::unexpected("watch: " + watched.error().to_string());
    }
    return *found;
  }
  static std::string resource_version() {
    auto stack = client().get(catalog::resources::kStacks, ns(), stack_name());
    return stack ? str_at(*stack, "/metadata/resourceVersion") : "";
  }
  static std::int64_t restarts(const std::string& pod) {
    auto p = client().get(kube::resources::kPods, ns(), pod);
    return p ? int_at(*p, "/status/containerStatuses/0/restartCount") : -1;
  }

  // The later tests need the example Stack to have formed once: fail at once if it never did
  // (instead of waiting out their own timeouts).
  static void require_formed() { ASSERT_TRUE(formed_) << "the example Stack never became Ready"; }

  static inline std::chrono::steady_clock::time_point started_;
  static inline bool formed_ = false;
};

TEST_F(RedisTest, AKeyWrittenOnThePrimaryIsReadOnEveryReplica) {
  auto stack = wait_ready();
  ASSERT_TRUE(stack) << stack.error();
  formed_ = true;
  std::printf("redis Stack (1 primary + 2 replicas) Ready %.1f s after it was created\n",
              seconds_since(started_));
  const auto primary = members(*stack, "primary");
  const auto replicas = members(*stack, "replica");
  ASSERT_EQ(primary.size(), 1u);
  ASSERT_EQ(replicas.size(), 2u);

  // The primary is a master with both replicas online, each under its own pod IP.
  auto info = run(primary[0], cli(primary[0], {"info", "replication"}));
  ASSERT_TRUE(info.ok) << info.diagnosis;
  EXPECT_EQ(info_field(info.out, "role"), "master") << info.out;
  EXPECT_EQ(info_field(info.out, "connected_slaves"), "2") << info.out;
  EXPECT_EQ(online_replicas(info.out), 2) << info.out;
  EXPECT_EQ(replica_ips(info.out).size(), 2u) << "two replicas with distinct pod IPs: " << info.out;
  for (const auto& replica : replicas) {
    auto r = run(replica, cli(replica, {"info", "replication"}));
    ASSERT_TRUE(r.ok) << r.diagnosis;
    EXPECT_EQ(info_field(r.out, "role"), "slave") << replica << ": " << r.out;
    EXPECT_EQ(info_field(r.out, "master_host"), fqdn(primary[0])) << replica << ": " << r.out;
    EXPECT_EQ(info_field(r.out, "master_link_status"), "up") << replica << ": " << r.out;
    // Replicas are read-only: a write there is refused.
    auto write = run(replica, cli(replica, {"set", "on-a-replica", "x"}));
    EXPECT_NE(write.out.find("READONLY"), std::string::npos) << replica << ": " << write.out;
  }

  expect_replicated(primary[0], replicas, "kstack:first", "written-on-" + primary[0]);
}

TEST_F(RedisTest, ScalingReplicasFromTwoToFourGivesFourReplicasInSync) {
  ASSERT_NO_FATAL_FAILURE(require_formed());
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(scale(kReplicaRole, 4));
  auto stack = wait_ready();
  ASSERT_TRUE(stack) << stack.error();
  std::printf("scaled to 4 replicas, Ready after %.1f s\n", seconds_since(started));
  const auto primary = members(*stack, "primary");
  const auto replicas = members(*stack, "replica");
  ASSERT_EQ(primary.size(), 1u);
  ASSERT_EQ(replicas.size(), 4u);

  // Every replica is Ready only once synced, so the primary has them all online now.
  auto info = run(primary[0], cli(primary[0], {"info", "replication"}));
  ASSERT_TRUE(info.ok) << info.diagnosis;
  EXPECT_EQ(info_field(info.out, "connected_slaves"), "4") << info.out;
  EXPECT_EQ(online_replicas(info.out), 4) << info.out;

  // The new replicas got the old data by their initial sync, and a new key reaches all four.
  for (const auto& replica : {replicas[2], replicas[3]}) {
    auto got = run(replica, cli(replica, {"get", "kstack:first"}));
    EXPECT_EQ(trim(got.out), "written-on-" + primary[0]) << replica << ": " << got.diagnosis;
  }
  expect_replicated(primary[0], replicas, "kstack:after-scale", "four-replicas");

  // The primary's setup package was told about the new replicas.
  auto conf = run(primary[0], {"cat", "/etc/kstack/redis/redis.conf"});
  ASSERT_TRUE(conf.ok) << conf.diagnosis;
  for (const auto& replica : replicas) {
    EXPECT_NE(conf.out.find(fqdn(replica)), std::string::npos) << conf.out;
  }
}

TEST_F(RedisTest, AReplicaThatLosesItsPrimaryMakesTheStackNotReadyUntilItIsBack) {
  ASSERT_NO_FATAL_FAILURE(require_formed());
  auto stack = wait_ready();
  ASSERT_TRUE(stack) << stack.error();
  const auto primary = members(*stack, "primary");
  const auto replicas = members(*stack, "replica");
  ASSERT_FALSE(replicas.empty());
  const auto replica = replicas.front();
  const auto restarts_before = restarts(replica);
  const auto rv = resource_version();

  // Point the replica at a port nothing serves: the daemon stays alive (liveness passes), its
  // link is down, so its readiness fails.
  auto away = run(replica, cli(replica, {"replicaof", fqdn(replica), "1"}));
  ASSERT_TRUE(away.ok) << away.diagnosis;
  const auto started = std::chrono::steady_clock::now();
  auto not_ready = watch_stack_from(
      rv, [](const json::value& s) { return condition(s, "Ready") == "False"; });
  ASSERT_TRUE(not_ready) << "the Stack stayed Ready: " << not_ready.error();
  std::printf("Stack Ready=False %.1f s after %s lost its primary\n", seconds_since(started),
              replica.c_str());

  auto back = run(replica, cli(replica, {"replicaof", fqdn(primary[0]), "6379"}));
  ASSERT_TRUE(back.ok) << back.diagnosis;
  auto ready = watch_stack_from(str_at(*not_ready, "/metadata/resourceVersion"), stack_ready);
  ASSERT_TRUE(ready) << "the Stack did not become Ready again: " << ready.error();
  std::printf("Stack Ready again %.1f s after the replica lost its primary\n",
              seconds_since(started));
  EXPECT_EQ(restarts(replica), restarts_before) << "readiness alone must not restart it";
  expect_replicated(primary[0], {replica}, "kstack:after-relink", "relinked");
}

TEST_F(RedisTest, AStoppedReplicaIsRestartedByItsLivenessProbeAndResyncs) {
  ASSERT_NO_FATAL_FAILURE(require_formed());
  auto stack = wait_ready();
  ASSERT_TRUE(stack) << stack.error();
  const auto primary = members(*stack, "primary");
  const auto replicas = members(*stack, "replica");
  ASSERT_GE(replicas.size(), 2u);
  const auto replica = replicas[1];
  const auto restarts_before = restarts(replica);
  ASSERT_GE(restarts_before, 0);
  const auto rv = resource_version();

  auto server = run(replica, cli(replica, {"info", "server"}));
  ASSERT_TRUE(server.ok) << server.diagnosis;
  const auto pid = info_field(server.out, "process_id");
  ASSERT_FALSE(pid.empty()) << server.out;
  // The daemon freezes: it accepts connections but never answers.
  auto stopped = run(replica, {"sh", "-c", "kill -STOP \"$1\"", "sh", pid});
  ASSERT_TRUE(stopped.ok) << stopped.diagnosis;
  const auto started = std::chrono::steady_clock::now();

  auto not_ready = watch_stack_from(
      rv, [](const json::value& s) { return condition(s, "Ready") == "False"; });
  ASSERT_TRUE(not_ready) << "the Stack stayed Ready: " << not_ready.error();
  std::printf("Stack Ready=False %.1f s after %s was stopped\n", seconds_since(started),
              replica.c_str());
  // Written while the replica is down: it has to re-sync to get it.
  auto set = run(primary[0], cli(primary[0], {"set", "kstack:while-stopped", "caught-up"}));
  ASSERT_TRUE(set.ok) << set.diagnosis;

  auto ready = watch_stack_from(str_at(*not_ready, "/metadata/resourceVersion"), stack_ready);
  ASSERT_TRUE(ready) << "the Stack did not become Ready again: " << ready.error();
  std::printf("Stack Ready again %.1f s after the replica was stopped\n", seconds_since(started));
  EXPECT_EQ(restarts(replica), restarts_before + 1) << describe();

  auto got = run(replica, cli(replica, {"get", "kstack:while-stopped"}));
  EXPECT_EQ(trim(got.out), "caught-up") << replica << ": " << got.diagnosis;
  auto info = run(replica, cli(replica, {"info", "replication"}));
  EXPECT_EQ(info_field(info.out, "master_link_status"), "up") << info.out;
  auto now = run(replica, cli(replica, {"info", "server"}));
  EXPECT_NE(info_field(now.out, "process_id"), "") << now.diagnosis;
  EXPECT_NE(info_field(now.out, "run_id"), info_field(server.out, "run_id"))
      << "the same daemon still runs";
  expect_replicated(primary[0], replicas, "kstack:after-restart", "all-in-sync");
}

}  // namespace
}  // namespace kstack::testenv::e2e::apps
