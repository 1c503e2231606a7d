// Shared by the live-upgrade e2e tests (rollout_kill_e2e_tests): a Stack "roll" of four members
// of AppType roll-v1 or roll-v2 (testdata/rollout-apptype.yaml, each version with its own setup
// package), whose startscript reports every call to the test (rollout_journal.h); the `kstack
// operator` process as operator_kill_test.cpp starts it; and what the tests read from the
// journal (pods by member, unavailable members) and from the Stack (a finished rollout).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "tests/e2e/reconciler/rollout_journal.h"
#include "tests/e2e/reconciler/support.h"
#include "tests/testenv/process.h"

namespace kstack::testenv::e2e {

inline constexpr int kRollMembers = 4;
inline constexpr const char* kRollStack = "roll";
inline constexpr const char* kRollRole = "member";
// Registered on this binary's simulated node (rollout_fixture.cpp): its entrypoint runs, so the
// role's readinessProbe does too.
inline constexpr const char* kRollImage = "kstack-test/probed:1";
// AppType names and their packages' versions, by index 0 and 1.
inline const std::string kRollApps[2] = {"roll-v1", "roll-v2"};
inline const std::string kRollVersions[2] = {"v1", "v2"};
// The operator's Lease: a restarted operator waits it out before it reconciles.
inline constexpr const char* kRollLeaseDuration = "8s";

// <stack>-member-<ordinal>
std::string roll_pod(int ordinal);

// The startscript of package `version`: POSTs "<pod>\t<version>\t<phase>\t<argv...>" to the
// test's ScriptListener on `port` for every call (phase configure, preupgrade-start,
// preupgrade-end or other); --configure makes the member Ready (the role's readinessProbe tests
// /tmp/ready, in the container's own /tmp), --preupgrade takes a second, as a hook that drains
// its daemon would. Both are idempotent.
std::string roll_startscript(std::string_view version, std::uint16_t port);

// The Stack has finished its rollout to `app`: Ready, updatedMembers 4, every member on the
// role's update revision and of `app`.
bool rolled_to(const boost::json::value& stack, const std::string& app);

// Pods by name, replayed from journal entries.
struct PodState {
  std::string uid;
  bool ready = false;
  bool deleting = false;
  std::string revision;
};
using PodStates = std::map<std::string, PodState>;
void replay(PodStates& pods, const JournalEntry& e);
PodStates replay(const std::vector<JournalEntry>& entries);
// Members without a pod, or whose pod is not Ready or is being deleted.
int unavailable(const PodStates& pods);

// A namespace with roll-v1 and roll-v2 (each naming the other in upgradeFrom), the startscript
// listener and journal, and the operator as a child process.
class RolloutTest : public ReconcilerTest {
 protected:
  void SetUp() override;
  // Deletes the Stack while the operator runs, then SIGTERM; on failure prints the operator's
  // logs and the journal.
  void TearDown() override;

  // Creates the Stack on roll-v1, watches its pods, starts the operator and waits until the
  // Stack is Ready and every member's --configure reported.
  void create_stack();
  void start_operator();
  // Until the running operator logged that it leads (its log is another process's file: polled).
  bool wait_leading();
  // The member pods' uids now (from the journal).
  std::map<std::string, std::string> current_uids() const;
  // Merge-patches spec.app.
  void set_app(const std::string& app);
  // Waits until the Stack has finished its rollout to `app` (rolled_to), its StatefulSet agrees
  // (every replica ready on that revision) and the journal, from `begin`, saw every member's
  // pod Ready on that revision; the journal index after that entry. nullopt, with a failure,
  // when one of them does not come.
  std::optional<std::size_t> wait_rolled(const std::string& app, std::size_t begin);
  void print_logs() const;

  Journal journal_;
  std::unique_ptr<ScriptListener> scripts_;
  std::unique_ptr<PodWatch> pods_;
  ChildProcess running_;
  std::vector<std::filesystem::path> logs_;

 private:
  void create_version(int v);
};

}  // namespace kstack::testenv::e2e
