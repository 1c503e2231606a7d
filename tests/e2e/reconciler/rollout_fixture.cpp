// The live-upgrade e2e fixture (see rollout_fixture.h).
#include "tests/e2e/reconciler/rollout_fixture.h"

#include <algorithm>
#include <iostream>
#include <set>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include "catalog/model.h"
#include "tests/e2e/setup/package_fixture.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using Kind = JournalEntry::Kind;

constexpr std::chrono::milliseconds kStopGrace{15000};

const ConfigureEnvironment kProbedImage([](EnvironmentOptions& options) {
  options.node.images[kRollImage] =
      std::filesystem::path(KSTACK_SOURCE_DIR) / "tests/e2e/stack_setup/testdata/probed-image";
});

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace

std::string roll_pod(int ordinal) {
  return fmt::format("{}-{}-{}", kRollStack, kRollRole, ordinal);
}

std::string roll_startscript(std::string_view version, std::uint16_t port) {
  return fmt::format(R"sh(#!/bin/sh
# The live-upgrade e2e startscript (tests/e2e/reconciler/rollout_fixture.h), package {v}.
. /etc/kstack/env || exit 4
tell() {{
  line="$KSTACK_POD	{v}	$1"
  shift
  for a in "$@"; do line="$line	$a"; done
  curl -fsS -m 5 -o /dev/null --data-binary "$line" http://127.0.0.1:{port}/notify || true
}}
case "$1" in
--configure)
  tell configure "$@"
  touch /tmp/ready ;;
--preupgrade)
  tell preupgrade-start "$@"
  date +%s.%N >>/opt/kstack/preupgrade.log
  sleep 1
  tell preupgrade-end "$@" ;;
*)
  tell other "$@" ;;
esac
exit 0
)sh",
                     fmt::arg("v", version), fmt::arg("port", port));
}

bool rolled_to(const json::value& stack, const std::string& app) {
  const auto revision = str_at(stack, "/status/roles/0/updateRevision");
  if (!stack_ready(stack) || revision.empty() ||
      int_at(stack, "/status/updatedMembers") != kRollMembers) {
    return false;
  }
  const auto members = status_members(stack, kRollRole);
  return members.size() == kRollMembers &&
         std::all_of(members.begin(), members.end(), [&](const auto& m) {
           return str_at(m.second, "/templateRevision") == revision &&
                  str_at(m.second, "/app") == app;
         });
}

void replay(PodStates& pods, const JournalEntry& e) {
  if (e.kind == Kind::kPod) pods[e.pod] = {e.uid, e.ready, e.deleting, e.revision};
  if (e.kind == Kind::kGone && pods.count(e.pod) != 0 && pods[e.pod].uid == e.uid) {
    pods.erase(e.pod);
  }
}

PodStates replay(const std::vector<JournalEntry>& entries) {
  PodStates pods;
  for (const auto& e : entries) replay(pods, e);
  return pods;
}

int unavailable(const PodStates& pods) {
  int n = 0;
  for (int i = 0; i < kRollMembers; ++i) {
    auto it = pods.find(roll_pod(i));
    if (it == pods.end() || !it->second.ready || it->second.deleting) ++n;
  }
  return n;
}

void RolloutTest::SetUp() {
  ReconcilerTest::SetUp();
  if (HasFatalFailure()) return;
  ASSERT_TRUE(install_operator_rbac());
  scripts_ = std::make_unique<ScriptListener>(journal_);
  create_version(0);
  create_version(1);
}

void RolloutTest::TearDown() {
  pods_.reset();
  if (running_.running()) {
    auto deleted = delete_stacks(*client_, ns_, 90s);
    EXPECT_TRUE(deleted) << deleted.error();
    running_.stop(kStopGrace);
    EXPECT_EQ(running_.how_it_ended(), "exited with status 0") << "kstack operator on SIGTERM";
  }
  scripts_.reset();
  if (HasFailure()) {
    print_logs();
    std::cout << "---- journal:\n";
    for (const auto& e : journal_.entries()) std::cout << "  " << e.describe() << "\n";
  }
  ReconcilerTest::TearDown();
}

void RolloutTest::create_version(int v) {
  const auto package = executor::testing::make_package(
      {{"startscript", roll_startscript(kRollVersions[v], scripts_->port())}});
  const auto configmap = kRollApps[v] + "-setup";
  create(kube::resources::kConfigMaps,
         json::value{{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata", {{"name", configmap}, {"namespace", ns_}}},
                     {"binaryData", {{"setup.tgz", base64(package)}}}});
  auto app = fixture("rollout-apptype.yaml", ns_, kRollApps[v]);
  auto& spec = app.at("spec").as_object();
  spec["version"] = v == 0 ? "1.0" : "2.0";
  spec["defaultConfigPackage"] =
      json::object{{"packageURL", fmt::format("configmap://{}/setup.tgz", configmap)},
                   {"sha256", executor::testing::sha256_hex(package)}};
  spec["upgradeFrom"] = json::array{json::value(kRollApps[1 - v])};
  create(catalog::resources::kAppTypes, app);
}

void RolloutTest::create_stack() {
  create(catalog::resources::kStacks, fixture("rollout-stack.yaml", ns_));
  pods_ = std::make_unique<PodWatch>(client_, ns_, stack_selector(kRollStack), journal_);
  ASSERT_NO_FATAL_FAILURE(start_operator());
  auto created = wait_stack_ready(*client_, ns_, kRollStack);
  ASSERT_TRUE(created) << created.error();
  std::cout << fmt::format("[ rollout ] {} members of {} Ready at {:.1f} s\n", kRollMembers,
                           kRollApps[0], journal_.now());
  // The startscript's reports reach the test (the tests' moments depend on them).
  std::set<std::string> configured;
  auto reported = journal_.wait(
      0,
      [&](const JournalEntry& e) {
        if (e.kind == Kind::kScript && e.script.size() > 1 && e.script[1] == "configure") {
          configured.insert(e.pod);
        }
        return configured.size() == kRollMembers;
      },
      10s);
  ASSERT_TRUE(reported) << "startscript reports from " << configured.size() << " members";
}

void RolloutTest::start_operator() {
  auto& cp = control_plane();
  const auto log = cp.work_dir() / fmt::format("kstack-operator-rollout-{}.log", logs_.size());
  // As operator_kill_test.cpp: no webhook, no fixed ports, leader election on (each restart
  // takes over the Lease of a SIGKILLed leader), 1 s Lease requests.
  std::vector<std::string> argv = {KSTACK_BINARY, "operator", "--kubeconfig",
                                   cp.kubeconfig_for(kOperatorUser).string()};
  argv.insert(argv.end(), {"--namespace", kOperatorNamespace, "--workers", "4", "--resync-period",
                           "60", "--poll-interval-ms", "300"});
  argv.insert(argv.end(), {"--no-webhook", "--metrics-port", "0", "--probe-port", "0"});
  argv.insert(argv.end(), {"--lease-duration", kRollLeaseDuration, "--renew-deadline", "4s",
                           "--retry-period", "1s"});
  auto child = spawn("kstack-operator", argv, log);
  ASSERT_TRUE(child) << child.error();
  running_ = std::move(*child);
  logs_.push_back(log);
}

bool RolloutTest::wait_leading() {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_file(logs_.back()).find(" leads ") != std::string::npos) return true;
    if (!running_.running()) return false;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

std::map<std::string, std::string> RolloutTest::current_uids() const {
  auto pods = replay(journal_.entries());
  std::map<std::string, std::string> uids;
  for (int i = 0; i < kRollMembers; ++i) uids[roll_pod(i)] = pods[roll_pod(i)].uid;
  return uids;
}

void RolloutTest::set_app(const std::string& app) {
  auto patched =
      client_->patch(catalog::resources::kStacks, ns_, kRollStack, kube::PatchType::kMerge,
                     json::serialize(json::value{{"spec", {{"app", app}}}}));
  ASSERT_TRUE(patched) << patched.error().to_string();
}

std::optional<std::size_t> RolloutTest::wait_rolled(const std::string& app, std::size_t begin) {
  auto done = wait_for_object(
      *client_, catalog::resources::kStacks, ns_, kRollStack,
      [&](const json::value& s) { return rolled_to(s, app); }, kConvergeTimeout);
  if (!done) {
    ADD_FAILURE() << "no rollout to " << app << ": " << done.error() << "\n"
                  << describe_stack(*client_, ns_, kRollStack);
    return std::nullopt;
  }
  const auto revision = str_at(*done, "/status/roles/0/updateRevision");
  const auto set_name = str_at(*done, "/status/roles/0/statefulSet");
  auto set = wait_for_object(
      *client_, kube::resources::kStatefulSets, ns_, set_name,
      [&](const json::value& s) {
        return rolled_out(s) && str_at(s, "/status/updateRevision") == revision;
      },
      30s);
  EXPECT_TRUE(set) << "StatefulSet " << set_name << " not rolled out to " << revision << ": "
                   << set.error();
  // The pod watch may lag behind the Stack's status: replayed from the rollout's start, in the
  // journal's own order.
  auto before = journal_.entries();
  before.resize(std::min(begin, before.size()));
  auto now = replay(before);
  auto settled = journal_.wait(
      begin,
      [&](const JournalEntry& e) {
        replay(now, e);
        return unavailable(now) == 0 && std::all_of(now.begin(), now.end(), [&](const auto& p) {
                 return p.second.revision == revision;
               });
      },
      10s);
  if (!settled) {
    ADD_FAILURE() << "the pod watch did not see every member Ready on " << revision << " (" << app
                  << ")";
    return std::nullopt;
  }
  return *settled + 1;
}

void RolloutTest::print_logs() const {
  for (std::size_t i = 0; i < logs_.size(); ++i) {
    const bool last = i + 1 == logs_.size();
    std::cout << "---- kstack operator run " << i << " (" << logs_[i].string() << "), last "
              << (last ? 60 : 10) << " lines:\n"
              << tail_file(logs_[i], last ? 60 : 10) << "\n";
  }
}

}  // namespace kstack::testenv::e2e
