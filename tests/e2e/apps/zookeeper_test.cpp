// ZooKeeper for real (issue 11): the example Stack of appdefs/zookeeper (three servers, each
// with a volume) on three simulated nodes running appdefs/zookeeper/image, i.e. Debian's
// zookeeper 3.8.0 on OpenJDK 17, started by the image's entrypoint with the configuration
// kstack's setup package wrote. Every check talks to the servers from inside the members: the
// four-letter words through the image's check script (`srvr` for the serving mode) and znodes
// and the committed membership (`config`) through the image's ZooKeeper client, by the
// members' FQDNs (cluster DNS). The ensemble forms with one leader and serves (a znode created
// through server 0 is read through the others), then grows to five servers by dynamic
// reconfiguration and shrinks back to three. The tests run in order on one Stack.
#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "tests/e2e/apps/app_fixture.h"

namespace kstack::testenv::e2e::apps {
namespace {

using namespace std::chrono_literals;

constexpr int kServerRole = 0;  // spec.roles[0] of appdefs/zookeeper/stack.yaml
constexpr int kClientPort = 2181;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

// "Mode: leader" -> "leader"; "" when the server does not serve.
std::string mode_of(const std::string& srvr) {
  for (const auto& line : lines_of(srvr)) {
    if (line.rfind("Mode: ", 0) == 0) return line.substr(6);
  }
  return "";
}

// The server.N=... lines of `config` / `conf` output, keyed by N: "fqdn type", e.g.
// "zookeeper-server-0.zookeeper.ns.svc.cluster.local participant".
std::map<long, std::string> membership_of(const std::string& out) {
  std::map<long, std::string> servers;
  for (const auto& line : lines_of(out)) {
    if (line.rfind("server.", 0) != 0) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const auto id = std::stol(line.substr(7, eq - 7));
    const auto host_end = line.find(':', eq);
    const auto type_start = line.rfind(':', line.find(';'));
    if (host_end == std::string::npos || type_start == std::string::npos) continue;
    servers[id] = line.substr(eq + 1, host_end - eq - 1) + " " +
                  line.substr(type_start + 1, line.find(';') - type_start - 1);
  }
  return servers;
}

class ZooKeeperTest : public AppTest {
 protected:
  static void SetUpTestSuite() {
    started_ = std::chrono::steady_clock::now();
    start_app("zookeeper");
  }
  static void TearDownTestSuite() {
    stop_app();
    fmt::print("zookeeper e2e: suite wall time {} s\n", seconds_since(started_));
  }

  static long seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t)
        .count();
  }
  // ZooKeeper's command-line client in `pod`, connected to that pod's own server.
  static std::vector<std::string> cli(const std::string& pod, std::vector<std::string> args) {
    std::vector<std::string> argv = {"kstack-zkcli", "-server",
                                     fmt::format("{}:{}", fqdn(pod), kClientPort)};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  static std::vector<std::string> word(const std::string& w) {
    return {"kstack-zookeeper-check", "word", w};
  }
  // The serving mode of every pod, once each reports one (leader/follower/observer).
  static std::map<std::string, std::string> modes(const std::vector<std::string>& pods) {
    std::map<std::string, std::string> out;
    for (const auto& pod : pods) {
      auto srvr = run_until(pod, word("srvr"),
                            [](const std::string& s) { return !mode_of(s).empty(); });
      EXPECT_TRUE(srvr) << pod << " never served: " << srvr.error();
      out[pod] = srvr ? mode_of(*srvr) : "";
    }
    return out;
  }
  // What the committed membership must be: every pod as a participant with its node id.
  static std::map<long, std::string> expected_membership(const boost::json::value& stack) {
    std::map<long, std::string> expected;
    for (const auto& [pod, member] : status_members(stack, "server")) {
      expected[int_at(member, "/nodeID")] = fqdn(pod) + " participant";
    }
    return expected;
  }
  // Waits until `pod`'s client reads the committed configuration `expected` (`config`).
  static void expect_membership(const std::string& pod, const std::map<long, std::string>& expected) {
    auto config = run_until(pod, cli(pod, {"config"}), [&](const std::string& out) {
      return membership_of(out) == expected;
    });
    ASSERT_TRUE(config) << "membership never became " << fmt::format("{}", expected) << ": "
                        << config.error() << "\n"
                        << describe();
  }
  // One leader, the others followers.
  static void expect_one_leader(const std::vector<std::string>& pods) {
    auto m = modes(pods);
    const auto leaders = std::count_if(m.begin(), m.end(),
                                       [](const auto& kv) { return kv.second == "leader"; });
    const auto followers = std::count_if(m.begin(), m.end(),
                                         [](const auto& kv) { return kv.second == "follower"; });
    EXPECT_EQ(leaders, 1) << fmt::format("{}", m);
    EXPECT_EQ(followers, static_cast<long>(pods.size()) - 1) << fmt::format("{}", m);
  }
  // Creates `path` = `value` through `writer`'s server and waits until every reader's server
  // returns it.
  static void expect_served(const std::string& writer, const std::vector<std::string>& readers,
                            const std::string& path, const std::string& value) {
    auto created = run(writer, cli(writer, {"create", path, value}));
    ASSERT_TRUE(created.ok) << created.diagnosis;
    for (const auto& reader : readers) {
      auto got = run_until(reader, cli(reader, {"get", path}), [&](const std::string& out) {
        auto lines = lines_of(out);
        return std::find(lines.begin(), lines.end(), value) != lines.end();
      });
      EXPECT_TRUE(got) << reader << " never read " << path << "=" << value << ": " << got.error();
    }
  }

  static inline std::chrono::steady_clock::time_point started_;
  // Set once the ensemble formed: the scaling tests build on it and fail at once without it.
  static inline bool formed_ = false;
};

TEST_F(ZooKeeperTest, TheEnsembleFormsWithOneLeaderAndServesThroughEveryServer) {
  auto stack = wait_ready();
  ASSERT_TRUE(stack) << stack.error();
  fmt::print("zookeeper e2e: 3 servers Ready {} s after the suite started\n",
             seconds_since(started_));
  const auto pods = members(*stack, "server");
  ASSERT_EQ(pods.size(), 3u);
  expect_one_leader(pods);
  expect_membership(pods[0], expected_membership(*stack));
  expect_served(pods[0], {pods[1], pods[2]}, "/kstack-e2e", "written-through-server-0");
  formed_ = !HasFailure();
}

TEST_F(ZooKeeperTest, ScalingToFiveAddsTheNewServersAsParticipants) {
  ASSERT_TRUE(formed_) << "the ensemble did not form";
  const auto began = std::chrono::steady_clock::now();
  auto scaled = scale(kServerRole, 5);
  ASSERT_TRUE(scaled) << scaled.error();
  auto stack = wait_ready();
  ASSERT_TRUE(stack) << stack.error();
  const auto pods = members(*stack, "server");
  ASSERT_EQ(pods.size(), 5u);
  // --addnodes reaches the first server once the joiners are ready; it runs reconfig -add.
  expect_membership(pods[0], expected_membership(*stack));
  expect_membership(pods[4], expected_membership(*stack));
  fmt::print("zookeeper e2e: 5 participants {} s after the scale-up\n", seconds_since(began));
  expect_one_leader(pods);
  // The joiners have the data written before they came, and serve writes.
  expect_served(pods[4], {pods[0], pods[3]}, "/kstack-e2e-5", "written-through-server-4");
  auto old = run_until(pods[3], cli(pods[3], {"get", "/kstack-e2e"}), [](const std::string& out) {
    auto lines = lines_of(out);
    return std::find(lines.begin(), lines.end(), "written-through-server-0") != lines.end();
  });
  EXPECT_TRUE(old) << old.error();
}

TEST_F(ZooKeeperTest, ScalingBackToThreeRemovesTheServersFromTheEnsemble) {
  ASSERT_TRUE(formed_) << "the ensemble did not form";
  const auto began = std::chrono::steady_clock::now();
  auto scaled = scale(kServerRole, 3);
  ASSERT_TRUE(scaled) << scaled.error();
  auto stack = wait_ready();
  ASSERT_TRUE(stack) << stack.error();
  const auto pods = members(*stack, "server");
  ASSERT_EQ(pods.size(), 3u);
  // --delnodes ran reconfig -remove before the pods went away.
  for (const auto& pod : pods) expect_membership(pod, expected_membership(*stack));
  fmt::print("zookeeper e2e: back to 3 participants {} s after the scale-down\n",
             seconds_since(began));
  expect_one_leader(pods);
  expect_served(pods[2], {pods[0], pods[1]}, "/kstack-e2e-3", "written-through-server-2");
}

}  // namespace
}  // namespace kstack::testenv::e2e::apps
