// cmd/operator_flags.h: durations, defaults, environment fallbacks and consistency checks.
#include "cmd/operator_flags.h"

#include <cstdlib>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

namespace kstack::cmd {
namespace {

using namespace std::chrono_literals;

TEST(ParseDuration, AcceptsGoStyleDurationsAndBareSeconds) {
  EXPECT_EQ(parse_duration("500ms"), 500ms);
  EXPECT_EQ(parse_duration("15s"), 15s);
  EXPECT_EQ(parse_duration("5m"), 5min);
  EXPECT_EQ(parse_duration("1h"), 1h);
  EXPECT_EQ(parse_duration("1m30s"), 90s);
  EXPECT_EQ(parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(parse_duration("60"), 60s);
  for (const char* bad : {"", "s", "5x", "-1s", "5 s", "1e3s", "ms5"}) {
    EXPECT_FALSE(parse_duration(bad)) << bad;
  }
}

struct Parsed {
  OperatorOptions options;
  std::string error;
};

Parsed parse(std::vector<std::string> args) {
  Parsed p;
  CLI::App app;
  add_operator_command(app, p.options);
  args.insert(args.begin(), "operator");
  std::reverse(args.begin(), args.end());  // CLI11 takes them last-first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    p.error = e.what();
  }
  return p;
}

TEST(OperatorFlags, DefaultsFollowTheSpec) {
  const auto p = parse({});
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.options.webhook_port, 9443);
  EXPECT_EQ(p.options.metrics_port, 8080);
  EXPECT_EQ(p.options.probe_port, 8081);
  EXPECT_TRUE(p.options.leader_elect);
  EXPECT_TRUE(p.options.webhook);
  EXPECT_EQ(p.options.leader_election_id, "kstack-operator");
  EXPECT_EQ(p.options.resync_period, 5min);
  EXPECT_EQ(p.options.lease_duration, 15s);
  EXPECT_EQ(p.options.log_format, "auto");
  EXPECT_EQ(p.options.coalesce_ms, 250);
  EXPECT_EQ(p.options.status_progress_ms, 5000);
  EXPECT_EQ(p.options.event_qps, 50.0);
  EXPECT_EQ(p.options.event_burst, 100);
  EXPECT_EQ(p.options.webhook_max_connections, 512u);
  EXPECT_EQ(p.options.webhook_max_inflight_body_bytes, 64u << 20);
}

TEST(OperatorFlags, TheAdmissionServerLimitsComeFromFlagsOrTheEnvironment) {
  const auto p =
      parse({"--webhook-max-connections=64", "--webhook-max-inflight-body-bytes=16777216"});
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.options.webhook_max_connections, 64u);
  EXPECT_EQ(p.options.webhook_max_inflight_body_bytes, 16u << 20);

  ::setenv("KSTACK_WEBHOOK_MAX_CONNECTIONS", "32", 1);
  ::setenv("KSTACK_WEBHOOK_MAX_INFLIGHT_BODY_BYTES", "8388608", 1);
  const auto from_env = parse({});
  const auto flag_wins = parse({"--webhook-max-connections=16"});
  ::unsetenv("KSTACK_WEBHOOK_MAX_CONNECTIONS");
  ::unsetenv("KSTACK_WEBHOOK_MAX_INFLIGHT_BODY_BYTES");
  ASSERT_EQ(from_env.error, "");
  EXPECT_EQ(from_env.options.webhook_max_connections, 32u);
  EXPECT_EQ(from_env.options.webhook_max_inflight_body_bytes, 8u << 20);
  EXPECT_EQ(flag_wins.options.webhook_max_connections, 16u);
}

TEST(OperatorFlags, AdmissionLimitsTooSmallForOneConnectionOrOneBodyAreRefused) {
  for (const char* bad :
       {"--webhook-max-connections=0", "--webhook-max-connections=-1",
        "--webhook-max-connections=many",
        // one byte less than the largest request body (3 MiB)
        "--webhook-max-inflight-body-bytes=3145727", "--webhook-max-inflight-body-bytes=64Mi"}) {
    const auto p = parse({bad});
    EXPECT_NE(p.error, "") << bad;
  }
  EXPECT_EQ(parse({"--webhook-max-inflight-body-bytes=3145728"}).error, "");
}

TEST(OperatorFlags, FlagsOverrideAndBooleansTakeFalse) {
  const auto p =
      parse({"--webhook=false", "--leader-elect=false", "--resync-period=90", "--lease-duration=4s",
             "--renew-deadline=3s", "--retry-period=500ms", "--webhook-url-host=127.0.0.1",
             "--webhook-url-host=::1", "--metrics-port=0", "--coalesce-ms=0",
             "--status-progress-ms=0", "--event-qps=5", "--event-burst=7"});
  ASSERT_EQ(p.error, "");
  EXPECT_FALSE(p.options.webhook);
  EXPECT_FALSE(p.options.leader_elect);
  EXPECT_EQ(p.options.resync_period, 90s);
  EXPECT_EQ(p.options.retry_period, 500ms);
  EXPECT_EQ(p.options.webhook_url_hosts, (std::vector<std::string>{"127.0.0.1", "::1"}));
  EXPECT_EQ(p.options.metrics_port, 0);
  EXPECT_EQ(p.options.coalesce_ms, 0);
  EXPECT_EQ(p.options.status_progress_ms, 0);
  EXPECT_EQ(p.options.event_qps, 5.0);
  EXPECT_EQ(p.options.event_burst, 7);
}

TEST(OperatorFlags, EnvironmentVariablesAreTheFallback) {
  ::setenv("KSTACK_NAMESPACE", "ops", 1);
  ::setenv("KSTACK_LOG_LEVEL", "debug", 1);
  ::setenv("KSTACK_LEADER_ELECT", "false", 1);
  const auto from_env = parse({});
  const auto flag_wins = parse({"--namespace=flag"});
  ::unsetenv("KSTACK_NAMESPACE");
  ::unsetenv("KSTACK_LOG_LEVEL");
  ::unsetenv("KSTACK_LEADER_ELECT");
  ASSERT_EQ(from_env.error, "");
  EXPECT_EQ(from_env.options.operator_namespace, "ops");
  EXPECT_EQ(from_env.options.log_level, "debug");
  EXPECT_FALSE(from_env.options.leader_elect);
  EXPECT_EQ(flag_wins.options.operator_namespace, "flag");
}

TEST(OperatorFlags, InconsistentLeaseTimingsAndBadValuesAreRefused) {
  EXPECT_NE(parse({"--lease-duration=5s", "--renew-deadline=5s"}).error, "");
  EXPECT_NE(parse({"--retry-period=12s"}).error, "");
  EXPECT_NE(parse({"--resync-period=soon"}).error, "");
  EXPECT_NE(parse({"--log-format=xml"}).error, "");
  EXPECT_NE(parse({"--coalesce-ms=-1"}).error, "");
  EXPECT_NE(parse({"--status-progress-ms=-1"}).error, "");
}

}  // namespace
}  // namespace kstack::cmd
