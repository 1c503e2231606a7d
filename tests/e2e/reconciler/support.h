// Shared by the reconciler e2e tests (reconciler_e2e_tests): the binary's environment (kstack's
// CRDs installed before the controller-manager, a simulated node, the operator's own identity
// and RBAC), the testdata fixtures, a Controller running in the test process, and waits and
// checks on Stacks and the objects they own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/json/value.hpp>
#include <gtest/gtest.h>
#include <tl/expected.hpp>

#include "kube/client.h"
#include "reconciler/controller.h"
#include "tests/nodesim/testing/e2e.h"

namespace kstack::testenv::e2e {

// The operator's identity (a static-token test user) and namespace.
inline constexpr const char* kOperatorUser = "kstack-operator";
inline constexpr const char* kOperatorNamespace = "kstack-system";

// A generous bound on any convergence in these tests; the node simulator runs a pod in well
// under a second, so only a stuck reconciler gets near it.
inline constexpr std::chrono::seconds kConvergeTimeout{180};
// How long a drift may take to be repaired before the test fails (docs/spec.md §4 wants 1 s; the
// measured latency is printed, not asserted).
inline constexpr std::chrono::seconds kRepairTimeout{30};

// The whole file; throws std::runtime_error when it cannot be read.
std::string read_file(const std::filesystem::path& path);
// <source>/tests/e2e/reconciler/testdata/<file>.
std::filesystem::path testdata(std::string_view file);
// A testdata YAML file (one document) as JSON, with metadata.namespace set, and metadata.name
// when `name` is not empty. Throws std::runtime_error when it cannot be read.
boost::json::value fixture(std::string_view file, const std::string& ns,
                           const std::string& name = {});
// ring-stack.yaml with the given name and member counts.
boost::json::value ring_stack(const std::string& ns, const std::string& name, int controllers,
                              int workers);
// spec.persistentVolumeClaimRetentionPolicy; an empty value is left out.
void set_retention(boost::json::value& stack, std::string_view when_scaled,
                   std::string_view when_deleted);

// Once per binary: applies deploy/namespace.yaml and deploy/rbac.yaml (the operator's real,
// least-privilege RBAC) and testdata/operator-rbac.yaml, which binds deploy's ClusterRole and
// kstack-system Role `kstack-operator` to kOperatorUser.
tl::expected<void, std::string> install_operator_rbac();
// A client authenticated as kOperatorUser, with its own request counters.
std::shared_ptr<kube::Client> operator_client();

// Options of an in-process Controller for one test: only `ns` is watched, so tests in other
// namespaces (and their leftovers) never disturb its counters.
reconciler::ControllerOptions controller_options(const std::string& ns);

// A Controller in the test process on its own operator_client(); stopped on destruction.
class RunningController {
 public:
  static tl::expected<std::unique_ptr<RunningController>, std::string> start(
      reconciler::ControllerOptions options);
  ~RunningController();
  RunningController(const RunningController&) = delete;
  RunningController& operator=(const RunningController&) = delete;

  reconciler::Controller& controller() { return *controller_; }
  kube::Client& client() { return *client_; }
  void stop();

 private:
  RunningController() = default;
  std::shared_ptr<kube::Client> client_;
  std::unique_ptr<reconciler::Controller> controller_;
};

// Polls an in-process condition every 20 ms until it holds or `timeout` passes. Only for
// state that has no event to watch (the Controller's counters); cluster state is waited for
// with watches (wait_for).
bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout);

// ---- Stacks ----

std::int64_t int_at(const boost::json::value& v, std::string_view pointer);
// The condition object of status.conditions[type], or null.
boost::json::value condition_of(const boost::json::value& object, std::string_view type);
// Settled and ready: status.state "ready", Ready=True, observedGeneration == generation and
// readyMembers == desiredMembers.
bool stack_ready(const boost::json::value& stack);
// Waits with a watch until stack_ready; the error shows the Stack's status and Events.
tl::expected<boost::json::value, std::string> wait_stack_ready(
    kube::Client& client, const std::string& ns, const std::string& name,
    std::chrono::seconds timeout = kConvergeTimeout);
// The Stack's status, finalizers and its recent Events, for failure messages.
std::string describe_stack(kube::Client& client, const std::string& ns, const std::string& name);
// The items of the Events (events.k8s.io/v1) about the object with `uid` with `reason`: the
// reconciler batches a pass's objects into one Event per reason, notes joined with "; ".
struct EventItems {
  std::size_t events = 0;          // how many Events
  std::vector<std::string> items;  // their notes' items, in no particular order
  bool has(std::string_view item) const;
};
EventItems event_items(const Objects& events, std::string_view uid, std::string_view reason);
// Waits (with a watch) until the Events about `uid` with `reason` hold every one of `items`.
tl::expected<EventItems, std::string> wait_for_event_items(
    kube::Client& client, const std::string& ns, std::string_view uid, std::string_view reason,
    const std::vector<std::string>& items, std::chrono::seconds timeout);
// status.roles[id == role].members[] by pod name.
std::map<std::string, boost::json::value> status_members(const boost::json::value& stack,
                                                         std::string_view role);

// ---- owned objects ----

inline std::string stack_selector(std::string_view stack) {
  return "kstack.io/stack=" + std::string(stack);
}
// Objects of `type` in `ns` (by label selector, "" = all), by name; empty on error (with a
// non-fatal failure).
Objects list_objects(kube::Client& client, const kube::ResourceType& type, const std::string& ns,
                     const std::string& selector = {});
std::vector<std::string> names_of(const Objects& objects);
// metadata.ownerReferences entries with controller: true.
std::vector<boost::json::value> controller_references(const boost::json::value& object);
// Exactly one controller ownerReference, and it is to the Stack with this uid.
bool controlled_by(const boost::json::value& object, std::string_view stack_uid);
// Any ownerReference (controller or not) to this uid.
bool referenced_by(const boost::json::value& object, std::string_view uid);
bool deleting(const boost::json::value& object);

// Deletes every Stack in `ns` and waits until they are gone (their finalizer removed by the
// running controller); used by fixtures before they stop their Controller.
tl::expected<void, std::string> delete_stacks(kube::Client& client, const std::string& ns,
                                              std::chrono::seconds timeout);

// Seconds since `start`, for the latencies the tests print.
double seconds_since(std::chrono::steady_clock::time_point start);

// Records, through a watch from the moment of construction, the states each member of a
// Stack passes through (consecutive duplicates folded; "gone" once a member leaves the
// status).
// The seed of a test that picks moments at random (the kill tests): `fixed` unless
// KSTACK_E2E_SEED says otherwise — a number replays that seed, "random" draws one. A fixed
// default keeps CI's verdict the same on the same commit; every seed must pass.
unsigned e2e_seed(unsigned fixed);

class StackStateRecorder {
 public:
  StackStateRecorder(std::shared_ptr<kube::Client> client, std::string ns, std::string name);
  ~StackStateRecorder();
  StackStateRecorder(const StackStateRecorder&) = delete;
  StackStateRecorder& operator=(const StackStateRecorder&) = delete;

  // "<role>/<pod>" -> states in order.
  std::map<std::string, std::vector<std::string>> history() const;
  // Waits until the recorder's own watch has delivered the version `resource_version` of the
  // Stack (another watch or a GET may see it first), at most `timeout`. False on timeout.
  bool saw(const std::string& resource_version, std::chrono::seconds timeout) const;
  std::string describe() const;

 private:
  void run(std::string resource_version);
  void record(const boost::json::value& stack);

  std::shared_ptr<kube::Client> client_;
  std::string ns_;
  std::string name_;
  kube::CancelToken cancel_;
  mutable std::mutex mu_;
  mutable std::condition_variable seen_cv_;
  std::set<std::string> seen_;  // resource versions recorded
  std::map<std::string, std::vector<std::string>> history_;
  std::thread thread_;
};

// A fresh namespace per test holding the ring and tiny AppTypes; start_controller() runs a
// Controller watching it. TearDown deletes the namespace's Stacks while that Controller still
// runs (their kstack.io/cleanup finalizer must go), then stops it.
class ReconcilerTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // ADD_FAILURE when it does not start (check with ASSERT_TRUE(controller_)).
  void start_controller(reconciler::ControllerOptions options);
  // Creates an object as admin; a failure is a test failure.
  boost::json::value create(const kube::ResourceType& type, const boost::json::value& object);
  // Waits until the Stack is ready and its StatefulSets have rolled out (every replica ready
  // on the current revision).
  tl::expected<boost::json::value, std::string> wait_settled(
      const std::string& stack, std::chrono::seconds timeout = kConvergeTimeout);

  std::shared_ptr<kube::Client> client_;
  std::string ns_;
  std::unique_ptr<RunningController> controller_;
};

// Every replica of the StatefulSet ready and on its update revision.
bool rolled_out(const boost::json::value& stateful_set);

// ---- request counters (kube::RequestMetrics, by verb and HTTP code) ----

using RequestCounts = std::map<kube::RequestMetrics::Key, std::uint64_t>;
// GET, LIST and WATCH; every other verb (POST, PUT, PATCH, DELETE, EXEC) writes or acts.
bool is_read(const std::string& verb);
// What `after` counted beyond `before`.
RequestCounts counts_since(const RequestCounts& before, const RequestCounts& after);
// One "  VERB code: n" line each, for test output.
std::string format_counts(const RequestCounts& counts);
std::uint64_t write_count(const RequestCounts& counts);
std::map<std::string, std::uint64_t> writes_by_verb(const RequestCounts& counts);

}  // namespace kstack::testenv::e2e
