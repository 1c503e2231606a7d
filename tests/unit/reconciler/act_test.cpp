// act(): a plan carried out through fake writers — what a failed write does to the result and
// the status, what goes into the cache, how Events are batched, when notifications are dropped.
#include "reconciler/act.h"

#include <algorithm>
#include <chrono>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/parse.h"
#include "reconciler/status.h"
#include "tests/unit/reconciler/plan_fixture.h"
#include "tests/unit/support/yaml_value.h"

namespace kstack::reconciler::testing {
namespace {
namespace json = boost::json;
using Kind = informer::WorkResult::Kind;

kube::Error error_of(kube::ErrorKind kind, std::string message) {
  kube::Error e;
  e.kind = kind;
  e.message = std::move(message);
  return e;
}

// Records every request; answers with the object sent (plus a resourceVersion), or with the
// error set for its kind of request.
struct FakeWriter : executor::ObjectWriter {
  std::vector<std::string> calls;
  std::optional<kube::Error> apply_error, status_error, finalizer_error, remove_error;
  std::optional<json::value> last_status;

  kube::Result<executor::Change> apply(const kube::ResourceType& type, const json::value& desired,
                                       const informer::PackedValue* live,
                                       json::value* result) override {
    calls.push_back("apply " + std::string(desired.at("metadata").at("name").as_string()));
    if (apply_error) return tl::unexpected(*apply_error);
    if (result != nullptr) {
      *result = desired;
      result->at("metadata").as_object()["resourceVersion"] = "900";
      result->at("metadata").as_object()["namespace"] = "apps";
    }
    (void)type;
    return live == nullptr ? executor::Change::kCreated : executor::Change::kUpdated;
  }
  kube::Result<json::value> force_apply(const kube::ResourceType&, const json::value& d) override {
    calls.push_back("force_apply");
    return d;
  }
  kube::Result<executor::Change> remove(const kube::ResourceType&, std::string_view,
                                        std::string_view name, std::string_view, std::string_view,
                                        std::optional<std::int64_t> grace) override {
    calls.push_back("remove " + std::string(name) +
                    (grace ? " grace=" + std::to_string(*grace) : ""));
    if (remove_error) return tl::unexpected(*remove_error);
    return executor::Change::kDeleted;
  }
  kube::Result<json::value> update_status(const kube::ResourceType&,
                                          const json::value& object) override {
    calls.push_back("status");
    if (status_error) return tl::unexpected(*status_error);
    last_status = object.at("status");
    return object;
  }
  kube::Result<json::value> set_finalizers(const kube::ResourceType&, std::string_view,
                                           std::string_view, std::string_view,
                                           const std::vector<std::string>& f) override {
    calls.push_back(f.empty() ? "finalizers -" : "finalizers +");
    if (finalizer_error) return tl::unexpected(*finalizer_error);
    json::value stored = kstack::testing::yaml(
        "{apiVersion: kstack.io/v1beta1, kind: Stack, metadata: {name: db, namespace: apps, "
        "resourceVersion: '101', finalizers: [kstack.io/cleanup]}}");
    return stored;
  }
};

struct FakeEvents : executor::EventSink {
  std::vector<EventSpec> posted;
  void event(const informer::PackedValue&, std::string_view type, std::string_view reason,
             std::string_view action, std::string_view note) override {
    posted.push_back(
        {std::string(type), std::string(reason), std::string(action), std::string(note)});
  }
  void events(const informer::PackedValue&, std::string_view type, std::string_view reason,
              std::string_view action, const std::vector<std::string>& notes) override {
    std::string joined;
    for (const auto& n : notes) joined += (joined.empty() ? "" : "; ") + n;
    event(*informer::pack(nullptr), type, reason, action, joined);
  }
};

struct FakeNotify : NotifyQueue {
  std::vector<std::string> sent, forgotten;
  void send(const std::string&, const executor::MemberTarget& m,
            const std::vector<std::string>&) override {
    sent.push_back(m.pod);
  }
  void forget(const executor::MemberTarget& m, const std::vector<std::string>&) override {
    forgotten.push_back(m.pod);
  }
};

struct ActTest : ::testing::Test {
  FakeWriter writer;
  FakeEvents events;
  FakeNotify notify;
  informer::Store stacks, sets, services, pvcs, pods;
  TerminatingStacks terminating;
  Actuators actuators{writer,  events,  &notify,     &stacks, {&sets, &services, &pvcs, &pods},
                      nullptr, nullptr, &terminating};

  informer::WorkResult run(const World& w, const Plan& p) {
    return act(w.snapshot(), p, actuators);
  }
};

World new_stack() {
  World w(2);
  w.sets.clear();
  w.services.clear();
  w.pods.clear();
  w.pvcs.clear();
  return w;
}

TEST_F(ActTest, AFailedApplyDegradesTheStackWithApplyFailedAndEndsTerminal) {
  auto w = new_stack();
  writer.apply_error = error_of(kube::ErrorKind::kInvalid, "spec.x: bad");
  const auto result = run(w, pass(w));
  EXPECT_EQ(result.kind, Kind::kTerminalError);
  ASSERT_TRUE(writer.last_status.has_value());
  catalog::FieldErrors ignored;
  const auto status = catalog::decode_stack_status(*writer.last_status, ignored);
  const auto* degraded = find_condition(status.conditions, "Degraded");
  ASSERT_NE(degraded, nullptr);
  EXPECT_EQ(degraded->status, "True");
  EXPECT_EQ(degraded->reason, "ApplyFailed");
  EXPECT_NE(degraded->message.find("apply Service apps/db"), std::string::npos)
      << degraded->message;
  EXPECT_EQ(events.posted.front().reason, "ApplyFailed");
  EXPECT_EQ(events.posted.front().type, "Warning");
}

kube::Error namespace_terminating() {
  kube::Error e = error_of(kube::ErrorKind::kForbidden,
                           "unable to create new content in namespace apps because it is being "
                           "terminated");
  e.causes.push_back(
      {"NamespaceTerminating", "namespace apps is being terminated", "metadata.namespace"});
  return e;
}

// While the namespace controller removes a Stack's objects, each removal is a pass that would
// create the object again: refused, as is any Event there.
TEST_F(ActTest, ANamespaceBeingDeletedEndsThePassAndLaterPassesOfThatStackSendNothing) {
  auto w = new_stack();
  writer.apply_error = namespace_terminating();
  EXPECT_EQ(run(w, pass(w)).kind, Kind::kSuccess);
  ASSERT_EQ(writer.calls.size(), 1u) << "one refused apply, then nothing";
  EXPECT_TRUE(writer.calls.front().starts_with("apply ")) << writer.calls.front();
  EXPECT_TRUE(events.posted.empty()) << events.posted.front().reason;
  EXPECT_TRUE(terminating.contains("apps/db", kStackUid));

  writer.calls.clear();
  EXPECT_EQ(run(w, pass(w)).kind, Kind::kSuccess);
  EXPECT_TRUE(writer.calls.empty()) << writer.calls.front();
  EXPECT_TRUE(events.posted.empty());

  // A Stack made again under that name (another uid: its namespace was made again) is served.
  writer.apply_error.reset();
  auto again = w.snapshot();
  again.stack.metadata.uid = "stack-uid-2";
  act(again, pass(w), actuators);
  EXPECT_GT(writer.calls.size(), 1u);
  EXPECT_FALSE(events.posted.empty());
}

TEST_F(ActTest, AStackInANamespaceBeingDeletedStillLetsGoOfItsFinalizer) {
  World w(1);
  w.settle();
  terminating.add("apps/db", std::string(kStackUid));
  w.mark_deleted();
  w.sets.clear();
  w.pods.clear();
  w.pvcs.clear();
  w.services.clear();
  EXPECT_EQ(run(w, pass(w)).kind, Kind::kSuccess);
  ASSERT_FALSE(writer.calls.empty());
  EXPECT_EQ(writer.calls.back(), "finalizers -");
}

TEST_F(ActTest, AForbiddenApplyForAnyOtherReasonStillDegradesTheStack) {
  auto w = new_stack();
  writer.apply_error = error_of(kube::ErrorKind::kForbidden, "cannot create resource services");
  EXPECT_EQ(run(w, pass(w)).kind, Kind::kTerminalError);
  EXPECT_GT(writer.calls.size(), 1u) << "every write is tried";
  EXPECT_EQ(events.posted.front().reason, "ApplyFailed");
  EXPECT_FALSE(terminating.contains("apps/db", kStackUid));
}

TEST_F(ActTest, AConflictOnApplyIsRetriedWithoutDegradingTheStack) {
  auto w = new_stack();
  writer.apply_error = error_of(kube::ErrorKind::kConflict, "stale");
  EXPECT_EQ(run(w, pass(w)).kind, Kind::kError);
  catalog::FieldErrors ignored;
  const auto status = catalog::decode_stack_status(*writer.last_status, ignored);
  EXPECT_EQ(find_condition(status.conditions, "Degraded")->status, "False");
  for (const auto& e : events.posted) EXPECT_NE(e.reason, "ApplyFailed");
}

TEST_F(ActTest, TheServersAnswersAreKeptInTheCachesAndCreationsAreOneBatchedEvent) {
  auto w = new_stack();
  EXPECT_EQ(run(w, pass(w)).kind, Kind::kRequeueAfter);
  ASSERT_NE(services.get("apps/db-server-1"), nullptr);
  EXPECT_EQ(sets.get("apps/" + set_of("server"))
                ->as_object()
                .at("metadata")
                .as_object()
                .at("resourceVersion"),
            "900");
  ASSERT_NE(stacks.get("apps/db"), nullptr) << "the written status is cached";
  int created = 0;
  for (const auto& e : events.posted) created += e.reason == "Created" ? 1 : 0;
  EXPECT_EQ(created, 1);
}

TEST_F(ActTest, ANewStacksStatefulSetsAreCreatedBeforeItsServices) {
  auto w = new_stack();
  run(w, pass(w));
  std::vector<std::string> applies;
  for (const auto& c : writer.calls) {
    if (c.starts_with("apply ")) applies.push_back(c.substr(6));
  }
  ASSERT_EQ(applies.size(), 4u) << "headless Service, StatefulSet, 2 member Services";
  EXPECT_EQ(applies.front(), set_of("server"));
  EXPECT_EQ(applies.at(1), headless()) << "then the Services in the plan's order";
}

// The status write of a pass that only saw members progress waits for the pacer's interval
// since the Stack's last status write; the pass asks to run again when it is over. A state
// change is written at once, also within the interval.
TEST_F(ActTest, ProgressOnlyStatusWritesArePacedAndStateChangesAreNot) {
  StatusPacer pacer(std::chrono::milliseconds(5000));
  actuators.pacer = &pacer;
  auto w = new_stack();
  w.stack.as_object().erase("status");
  const auto created = pass(w);
  ASSERT_FALSE(created.progress_only);
  run(w, created);
  ASSERT_EQ(std::count(writer.calls.begin(), writer.calls.end(), "status"), 1);
  w.accept(created);

  w.converge();
  w.set_pod_ready(pod_of("server", 0), false);
  w.set_pod_ready(pod_of("server", 1), false);
  const auto progress = pass(w);
  ASSERT_TRUE(progress.progress_only);
  writer.calls.clear();
  auto snap = w.snapshot();
  snap.clock += std::chrono::milliseconds(1200);  // 1.2 s after the first write
  auto held = act(snap, progress, actuators);
  EXPECT_TRUE(writer.calls.empty());
  EXPECT_EQ(held.kind, Kind::kRequeueAfter);
  // The sooner of the plan's own poll (2 s: members still converge) and the pacer's 3.8 s.
  EXPECT_EQ(held.delay, std::chrono::milliseconds(2000));
  auto quiet = progress;  // a plan that would not poll: the pass comes back when the wait ends
  quiet.result = informer::WorkResult::success();
  held = act(snap, quiet, actuators);
  EXPECT_TRUE(writer.calls.empty());
  EXPECT_EQ(held.kind, Kind::kRequeueAfter);
  EXPECT_EQ(held.delay, std::chrono::milliseconds(3800));

  snap.clock += std::chrono::milliseconds(3800);  // the interval is over
  act(snap, progress, actuators);
  EXPECT_EQ(writer.calls, std::vector<std::string>{"status"});
  w.accept(progress);

  w.set_pod_ready(pod_of("server", 0), true);
  w.set_pod_ready(pod_of("server", 1), true);
  const auto ready = pass(w);
  ASSERT_FALSE(ready.progress_only);
  ASSERT_EQ(ready.status.state, "ready");
  writer.calls.clear();
  snap.clock += std::chrono::milliseconds(10);
  auto snap_ready = w.snapshot();
  snap_ready.clock = snap.clock;
  act(snap_ready, ready, actuators);
  EXPECT_EQ(writer.calls, std::vector<std::string>{"status"}) << "a state change is not held";
}

TEST_F(ActTest, AFailedFinalizerWriteEndsThePassBeforeAnyOtherWrite) {
  World w(1);
  w.stack.at("metadata").as_object()["finalizers"] = json::array{};
  writer.finalizer_error = error_of(kube::ErrorKind::kConflict, "stale");
  EXPECT_EQ(run(w, pass(w)).kind, Kind::kError);
  EXPECT_EQ(writer.calls, std::vector<std::string>{"finalizers +"});
}

TEST_F(ActTest, DeliveredNotificationsAreForgottenOnlyOnceTheStatusIsWritten) {
  World w(1);
  Plan p = pass(w);
  p.write_status = true;
  p.delivered.push_back({"server", {"apps", "db-server-0", "c"}, {"--addnodes"}});
  writer.status_error = error_of(kube::ErrorKind::kConflict, "stale");
  EXPECT_EQ(run(w, p).kind, Kind::kError);
  EXPECT_TRUE(notify.forgotten.empty());
  writer.status_error.reset();
  run(w, p);
  EXPECT_EQ(notify.forgotten, std::vector<std::string>{"db-server-0"});
}

TEST_F(ActTest, AnUnchangedStatusIsNotWritten) {
  World w(2);
  w.settle();
  EXPECT_EQ(run(w, pass(w)).kind, Kind::kSuccess);
  EXPECT_TRUE(writer.calls.empty());
  EXPECT_TRUE(events.posted.empty());
}

TEST_F(ActTest, AStatusWriteForAStackThatIsGoneEndsThePass) {
  auto w = new_stack();
  writer.status_error = error_of(kube::ErrorKind::kNotFound, "gone");
  EXPECT_EQ(run(w, pass(w)).kind, Kind::kSuccess);
}

TEST_F(ActTest, CleanupRemovesTheFinalizerOnlyWhenEveryDeleteSucceeded) {
  World w(1);
  w.settle();
  w.mark_deleted();
  w.sets.clear();
  w.pods.clear();
  w.pvcs.clear();
  // Only Services remain: the plan deletes them and waits; with none left it lets go.
  writer.remove_error = error_of(kube::ErrorKind::kForbidden, "no");
  EXPECT_EQ(run(w, pass(w)).kind, Kind::kTerminalError);
  w.services.clear();
  writer.remove_error.reset();
  EXPECT_EQ(run(w, pass(w)).kind, Kind::kSuccess);
  EXPECT_EQ(writer.calls.back(), "finalizers -");
}

TEST_F(ActTest, PlannedSendsReachTheNotifierAndPlannedEventsAreAllPosted) {
  World w(1);
  Plan p = pass(w);
  p.sends.push_back({"server", {"apps", "db-server-0", "c"}, {"--addnodes"}});
  p.events.push_back({"Normal", "Scaling", "Scale", "role server: x leaving"});
  run(w, p);
  EXPECT_EQ(notify.sent, std::vector<std::string>{"db-server-0"});
  EXPECT_EQ(events.posted.back().reason, "Scaling");
}

struct FakeSetupQueue : SetupQueue {
  std::vector<std::string> started;  // "<stack> <pod>"
  std::vector<SetupKey> forgotten;
  void start(const std::string& stack_key, const executor::SetupStep& step) override {
    started.push_back(stack_key + " " + step.target.pod);
  }
  void forget(const std::string&, const std::vector<SetupKey>& keys) override {
    forgotten.insert(forgotten.end(), keys.begin(), keys.end());
  }
};

TEST_F(ActTest, PlannedSetupStepsStartAndConsumedOutcomesAreForgottenOnlyOnceTheStatusIsWritten) {
  FakeSetupQueue setup;
  actuators.setup = &setup;
  auto w = new_stack();
  auto p = pass(w);
  ASSERT_TRUE(p.write_status);
  executor::SetupStep step;
  step.kind = executor::SetupStepKind::kWriteConfig;
  step.target = {"apps", "db-server-1", "c1"};
  p.setup_steps = {step};
  const SetupKey old{"db-server-0", "c0", executor::SetupStepKind::kReadConfigureStatus, 1};
  p.setup_consumed = {old};

  writer.status_error = error_of(kube::ErrorKind::kConflict, "stale");
  run(w, p);
  EXPECT_EQ(setup.started, std::vector<std::string>{"apps/db db-server-1"});
  EXPECT_TRUE(setup.forgotten.empty()) << "the next pass replays the setup with them";

  writer.status_error.reset();
  run(w, p);
  EXPECT_EQ(setup.forgotten, std::vector<SetupKey>{old});
}

}  // namespace
}  // namespace kstack::reconciler::testing
