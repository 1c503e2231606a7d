// Shared by the data-level e2e tests of the shipped apps (tests/e2e/apps/<app>_test.cpp, issue
// 11): each binary runs one app of appdefs/ for real on three simulated nodes. The app's setup
// package is built by appdefs/build-packages.sh and applied into kstack-system (the `system`
// catalog), an in-process Controller under the operator's identity (the deploy/ RBAC) watches
// one namespace, and the example Stack appdefs/<app>/stack.yaml is created there. The members
// run the app's image, appdefs/<app>/image (the simulated nodes run it from its Dockerfile: see
// docs/nodesim.md), so the checks talk to the real daemons through exec into the members.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/json/value.hpp>
#include <gtest/gtest.h>
#include <tl/expected.hpp>

#include "kube/client.h"
#include "kube/exec.h"
#include "tests/e2e/reconciler/support.h"

namespace kstack::testenv::e2e::apps {

// How long an app may take to form its cluster or to settle after a change (daemons elect,
// replicate and pass their probes; a stuck reconciler or app is what reaches it).
inline constexpr std::chrono::seconds kAppTimeout{240};

// appdefs/<app>/stack.yaml as JSON in `ns` (name as in the file).
boost::json::value example_stack(const std::string& app, const std::string& ns);

// The outcome of a command run in a member: its exit code and output, or why exec failed.
struct MemberRun {
  bool ok = false;        // exec worked and the command exited 0
  std::string out;        // stdout
  std::string diagnosis;  // "<pod>: <argv>: exit N: <stderr>" or the exec error; "" when ok
};

class AppTest : public ::testing::Test {
 protected:
  // For SetUpTestSuite: installs `app`'s package (build-packages.sh <out> <app> + kubectl apply
  // -k), starts the Controller on a fresh namespace and creates the example Stack, modified by
  // `edit` first when given. What failed (exceptions included) fails every test in SetUp.
  static void start_app(const std::string& app,
                        const std::function<void(boost::json::value&)>& edit = nullptr);
  // For TearDownTestSuite: deletes the Stacks (their finalizer needs the Controller), stops it
  // and deletes the namespace.
  static void stop_app();

  void SetUp() override { ASSERT_EQ(setup_error_, "") << "suite setup failed"; }

  static kube::Client& client() { return *client_; }
  static const std::string& ns() { return ns_; }
  static const std::string& stack_name() { return stack_; }

  // Waits (watch) until the Stack is ready and settled (support.h's stack_ready).
  static tl::expected<boost::json::value, std::string> wait_ready(
      std::chrono::seconds timeout = kAppTimeout);
  // JSON-patches spec.roles[role_index].members.
  static tl::expected<void, std::string> scale(int role_index, int members);
  // The member pods of `role` in the Stack's status, by ordinal.
  static std::vector<std::string> members(const boost::json::value& stack, const std::string& role);
  // <pod>.<stack>.<ns>.svc.cluster.local
  static std::string fqdn(const std::string& pod);

  // Runs argv in the member's container (exec; never through a shell unless argv says so).
  static MemberRun run(const std::string& pod, const std::vector<std::string>& argv,
                       const std::string& stdin_data = {});
  // Runs argv in the member until `accept(stdout)` holds for a successful run, every 250 ms,
  // for at most `timeout` (the apps have no event to watch: replication, elections). Returns
  // the accepted output, or the last diagnosis.
  static tl::expected<std::string, std::string> run_until(
      const std::string& pod, const std::vector<std::string>& argv,
      const std::function<bool(const std::string&)>& accept,
      std::chrono::seconds timeout = kAppTimeout);

  // The Stack's status and Events plus each member pod's phase, readiness and restarts, for
  // failure messages.
  static std::string describe();

 private:
  static inline std::string setup_error_;
  static inline std::shared_ptr<kube::Client> client_;
  static inline std::unique_ptr<RunningController> controller_;
  static inline std::string ns_;
  static inline std::string stack_;
};

}  // namespace kstack::testenv::e2e::apps
