// PostgreSQL (appdefs/postgresql) at the data level: the example Stack, a primary and two
// replicas, runs Debian's PostgreSQL 15 from appdefs/postgresql/image on three simulated nodes.
// Rows written on the primary are read on every replica (streaming replication), readiness
// follows each member's role (a replica that stops streaming is not ready), and a third replica
// copies the primary and streams too. The tests share one Stack and run in order.
#include <chrono>
#include <iostream>
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

const std::string kPsql = "/usr/lib/postgresql/15/bin/psql";
const std::string kCheck = "/usr/local/bin/kstack-postgres-check";
const std::string kRow = "written on the primary";

// psql as the superuser through the server's socket in the member's container; one value per
// line, no headers; an SQL error is a non-zero exit.
std::vector<std::string> psql(const std::string& sql) {
  return {kPsql,  "-h", "/tmp/kstack-postgresql", "-U", "postgres", "-d", "postgres", "-XAtq",
          "-v",   "ON_ERROR_STOP=1", "-c", sql};
}

auto equals(std::string expected) {
  return [expected = std::move(expected)](const std::string& out) { return out == expected; };
}

// "<replica> streaming" lines, as the primary's pg_stat_replication lists them.
std::string streaming(const std::vector<std::string>& replicas) {
  std::string out;
  for (const auto& r : replicas) out += r + " streaming\n";
  return out;
}
const std::string kReplicationSql =
    "select application_name || ' ' || state from pg_stat_replication order by 1";

class PostgresqlTest : public AppTest {
 protected:
  static void SetUpTestSuite() {
    created_ = std::chrono::steady_clock::now();
    start_app("postgresql");
  }
  static void TearDownTestSuite() { stop_app(); }

  // The Stack once ready, with its primary and replicas by ordinal.
  struct Members {
    std::string primary;
    std::vector<std::string> replicas;
  };
  static tl::expected<Members, std::string> ready_members() {
    auto ready = wait_ready();
    if (!ready) return tl::unexpected(ready.error());
    Members m;
    auto primaries = members(*ready, "primary");
    if (primaries.size() != 1) return tl::unexpected("not one primary:\n" + describe());
    m.primary = primaries.front();
    m.replicas = members(*ready, "replica");
    return m;
  }

  static inline std::chrono::steady_clock::time_point created_;
};

TEST_F(PostgresqlTest, ARowWrittenOnThePrimaryIsReadOnEveryReplica) {
  auto m = ready_members();
  ASSERT_TRUE(m) << m.error();
  const double to_ready = seconds_since(created_);
  std::cout << "postgresql: primary and 2 replicas ready " << to_ready
            << " s after the Stack was created\n";
  RecordProperty("seconds_to_ready", fmt::format("{:.1f}", to_ready));
  ASSERT_EQ(m->replicas.size(), 2U) << describe();

  auto wrote = run(m->primary, psql("create table kstack_e2e (id int primary key, v text); "
                                    "insert into kstack_e2e values (1, '" + kRow + "')"));
  ASSERT_TRUE(wrote.ok) << wrote.diagnosis;
  for (const auto& replica : m->replicas) {
    auto read = run_until(replica, psql("select v from kstack_e2e where id = 1"),
                          equals(kRow + "\n"), 60s);
    EXPECT_TRUE(read) << read.error();
  }
  // Hot standbys: readable, not writable.
  auto refused = run(m->replicas.front(), psql("insert into kstack_e2e values (2, 'replica')"));
  EXPECT_FALSE(refused.ok) << "a replica accepted a write";
  EXPECT_NE(refused.diagnosis.find("read-only transaction"), std::string::npos)
      << refused.diagnosis;
}

TEST_F(PostgresqlTest, ThePrimaryStreamsToBothReplicas) {
  auto m = ready_members();
  ASSERT_TRUE(m) << m.error();
  auto listed = run_until(m->primary, psql(kReplicationSql), equals(streaming(m->replicas)), 60s);
  EXPECT_TRUE(listed) << listed.error();
}

TEST_F(PostgresqlTest, EachMemberIsReadyInItsRole) {
  auto m = ready_members();
  ASSERT_TRUE(m) << m.error();
  auto primary = run(m->primary, psql("select pg_is_in_recovery()"));
  EXPECT_TRUE(primary.ok && primary.out == "f\n") << primary.diagnosis << primary.out;
  for (const auto& replica : m->replicas) {
    auto state = run(replica, psql("select pg_is_in_recovery(), "
                                   "(select status from pg_stat_wal_receiver)"));
    EXPECT_TRUE(state.ok && state.out == "t|streaming\n") << state.diagnosis << state.out;
  }
  for (const auto& pod : {m->primary, m->replicas.front()}) {
    auto check = run(pod, {kCheck, "ready"});
    EXPECT_TRUE(check.ok) << check.diagnosis;
  }
}

TEST_F(PostgresqlTest, AReplicaThatStopsStreamingIsNotReadyUntilItStreamsAgain) {
  auto m = ready_members();
  ASSERT_TRUE(m) << m.error();
  const auto& replica = m->replicas.back();
  // No primary_conninfo: the standby stays in recovery without a WAL receiver.
  auto stopped = run(replica, psql("alter system set primary_conninfo = ''"));
  ASSERT_TRUE(stopped.ok) << stopped.diagnosis;
  auto reloaded = run(replica, psql("select pg_reload_conf()"));
  ASSERT_TRUE(reloaded.ok) << reloaded.diagnosis;

  auto check = run_until(replica, {"sh", "-c", kCheck + " ready; echo \"exit $?\""},
                         [](const std::string& out) { return out.ends_with("exit 1\n"); }, 30s);
  EXPECT_TRUE(check) << check.error();
  EXPECT_NE(check.value_or("").find("t|none"), std::string::npos) << check.value_or("");
  auto unready = wait_for_object(
      client(), kube::resources::kPods, ns(), replica,
      [](const json::value& pod) { return condition(pod, "Ready") == "False"; }, 60s);
  EXPECT_TRUE(unready) << unready.error() << "\n" << describe();
  auto stack_unready = wait_for_object(
      client(), catalog::resources::kStacks, ns(), stack_name(),
      [](const json::value& stack) { return !stack_ready(stack); }, 60s);
  EXPECT_TRUE(stack_unready) << stack_unready.error();

  auto reset = run(replica, psql("alter system reset primary_conninfo"));
  ASSERT_TRUE(reset.ok) << reset.diagnosis;
  reloaded = run(replica, psql("select pg_reload_conf()"));
  ASSERT_TRUE(reloaded.ok) << reloaded.diagnosis;
  auto again = ready_members();
  ASSERT_TRUE(again) << again.error();
  auto listed = run_until(m->primary, psql(kReplicationSql), equals(streaming(m->replicas)), 60s);
  EXPECT_TRUE(listed) << listed.error();
}

TEST_F(PostgresqlTest, AThirdReplicaCopiesThePrimaryAndStreams) {
  ASSERT_TRUE(scale(1, 3));
  const auto scaled = std::chrono::steady_clock::now();
  auto m = ready_members();
  ASSERT_TRUE(m) << m.error();
  ASSERT_EQ(m->replicas.size(), 3U) << describe();
  std::cout << "postgresql: third replica ready " << seconds_since(scaled)
            << " s after scaling\n";
  const auto& added = m->replicas.back();

  // The row from before it existed (pg_basebackup), and one written now (streaming).
  auto old_row = run_until(added, psql("select v from kstack_e2e where id = 1"),
                           equals(kRow + "\n"), 60s);
  EXPECT_TRUE(old_row) << old_row.error();
  auto wrote = run(m->primary, psql("insert into kstack_e2e values (3, 'after scaling')"));
  ASSERT_TRUE(wrote.ok) << wrote.diagnosis;
  for (const auto& replica : m->replicas) {
    auto read = run_until(replica, psql("select v from kstack_e2e where id = 3"),
                          equals("after scaling\n"), 60s);
    EXPECT_TRUE(read) << read.error();
  }
  auto listed = run_until(m->primary, psql(kReplicationSql), equals(streaming(m->replicas)), 60s);
  EXPECT_TRUE(listed) << listed.error();
}

}  // namespace
}  // namespace kstack::testenv::e2e::apps
