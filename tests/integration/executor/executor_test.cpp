// The executor against a real kube-apiserver (with the controller-manager, so the garbage
// collector and the StatefulSet controller run): server-side apply creates the desired objects
// and, once they exist, the defaulted objects the server returns cover the desired ones (no
// write on a second pass); drift is repaired without wiping other managers' fields; deletes
// honour UID preconditions; status and finalizer writes are optimistic; Events are posted,
// deduplicated and truncated, and carry the timestamps core/v1 readers sort by.
#include "executor/executor.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "catalog/parse.h"
#include "catalog/yaml.h"
#include "executor/drift.h"
#include "reconciler/desired_state.h"
#include "tests/integration/kube/client_fixture.h"

#ifndef KSTACK_SOURCE_DIR
#error "tests/integration/CMakeLists.txt defines KSTACK_SOURCE_DIR (the repository root)"
#endif

namespace kstack::executor {

// Readable Change values in failure messages.
void PrintTo(Change change, std::ostream* os) { *os << to_string(change); }

namespace {
namespace json = boost::json;
using namespace std::chrono_literals;
using catalog::resources::kStacks;
using kube::ErrorKind;
using kube::resources::kServices;
using kube::resources::kStatefulSets;
using kube::testing::admin;
using kube::testing::make_namespace;
using kube::testing::str_at;

const char* kApp = R"(
apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: kv}
spec:
  label: {name: Key-value store}
  distroID: example/kv
  version: "1.0"
  configSchemaVersion: 1
  defaultImageRepoTag: example/kv:1.0
  defaultPersistDirs: [/var/lib/kv, /etc/kv]
  capabilities: [SYS_NICE]
  services:
  - id: client
    label: {name: Client}
    endpoint: {port: 2379, urlScheme: http}
  - id: peer
    label: {name: Peer}
    endpoint: {port: 2380}
  roles:
  - id: server
    cardinality: "3+"
  - id: proxy
    cardinality: "1"
    imageRepoTag: example/kv-proxy:1.0
    persistDirs: []
  config:
    roleServices:
    - {roleID: server, serviceIDs: [client, peer]}
)";

// The server role has storage and ports (so member Services); the proxy has neither.
const char* kStack = R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: db}
spec:
  app: kv
  roles:
  - id: server
    members: 3
    resources: {requests: {cpu: "0.5", memory: 1Gi}, limits: {memory: 1024Mi}}
    storage: {size: 2Gi, storageClassName: fast}
    podLabels: {team: data}
    serviceAnnotations: {note: "x"}
    env: [{name: MODE, value: cluster}]
  - id: proxy
)";

std::string output_of(const testenv::CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

// Applies kstack's CRDs once per binary and waits until they are Established.
void install_crds() {
  static bool installed = false;
  if (installed) return;
  auto& cp = testenv::control_plane();
  const std::string dir = std::string(KSTACK_SOURCE_DIR) + "/deploy/crds";
  ASSERT_TRUE(std::filesystem::exists(dir + "/stacks.yaml")) << dir;
  const auto applied = cp.kubectl({"apply", "-k", dir});
  ASSERT_TRUE(applied.ok()) << output_of(applied);
  const auto established =
      cp.kubectl({"wait", "--for=condition=Established", "--timeout=60s", "crd/stacks.kstack.io",
                  "crd/apptypes.kstack.io", "crd/kstackconfigs.kstack.io"});
  ASSERT_TRUE(established.ok()) << output_of(established);
  installed = true;
}

// Writes (anything but GET/LIST/WATCH) the client has sent so far.
std::uint64_t writes(kube::Client& client) {
  std::uint64_t n = 0;
  for (const auto& [key, count] : client.metrics().snapshot()) {
    if (key.first != "GET" && key.first != "LIST" && key.first != "WATCH") n += count;
  }
  return n;
}

// A namespace with a real Stack `db` (so the garbage collector keeps what it owns) and the
// objects desired_state() computes for it.
struct ExecutorTest : ::testing::Test {
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(install_crds());
    ns = make_namespace(*client);
    auto app_json = catalog::parse_yaml(kApp);
    ASSERT_TRUE(app_json) << app_json.error().to_string();
    app_json->as_object()["metadata"].as_object()["namespace"] = ns;
    auto parsed_app = catalog::parse_apptype(*app_json);
    ASSERT_TRUE(parsed_app) << parsed_app.error().to_string();
    app = *parsed_app;

    auto stack_json = catalog::parse_yaml(kStack);
    ASSERT_TRUE(stack_json) << stack_json.error().to_string();
    // A CRD that has just become Established can take a moment to serve its resource.
    kube::Result<json::value> created = tl::unexpected(kube::Error{});
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    do {
      created = client->create(kStacks, ns, *stack_json);
      if (created || !created.error().is(ErrorKind::kNotFound)) break;
      std::this_thread::sleep_for(100ms);
    } while (std::chrono::steady_clock::now() < deadline);
    ASSERT_TRUE(created) << created.error().to_string();
    stack_object = *created;
    auto parsed_stack = catalog::parse_stack(stack_object);
    ASSERT_TRUE(parsed_stack) << parsed_stack.error().to_string();
    stack = *parsed_stack;
    ASSERT_FALSE(stack.metadata.uid.empty());

    auto d = reconciler::desired_state(stack, app, nullptr);
    ASSERT_TRUE(d) << d.error().to_string();
    desired = std::move(*d);
    ASSERT_EQ(desired.roles.size(), 2u);
    ASSERT_EQ(desired.member_services.size(), 3u);
  }

  // Every desired object with its type, headless Service first.
  std::vector<std::pair<const kube::ResourceType*, const json::value*>> objects() const {
    std::vector<std::pair<const kube::ResourceType*, const json::value*>> out;
    out.emplace_back(&kServices, &desired.headless_service);
    for (const auto& role : desired.roles) out.emplace_back(&kStatefulSets, &role.stateful_set);
    for (const auto& svc : desired.member_services) out.emplace_back(&kServices, &svc);
    return out;
  }

  json::value get(const kube::ResourceType& type, const json::value& object) {
    auto got = client->get(type, ns, str_at(object, "/metadata/name"));
    EXPECT_TRUE(got) << got.error().to_string();
    return got ? *got : json::value();
  }

  json::value get_stack() {
    auto got = client->get(kStacks, ns, "db");
    EXPECT_TRUE(got) << got.error().to_string();
    return got ? *got : json::value();
  }

  std::shared_ptr<kube::Client> client = admin();
  Executor executor{client};
  std::string ns;
  catalog::AppType app;
  catalog::Stack stack;
  json::value stack_object;
  reconciler::DesiredState desired;
};

TEST_F(ExecutorTest, ApplyCreatesThenTheServersDefaultedObjectsCoverTheDesiredOnesWithNoWrite) {
  for (const auto& [type, object] : objects()) {
    json::value answer;
    auto r = executor.apply(*type, *object, nullptr, &answer);
    ASSERT_TRUE(r) << str_at(*object, "/metadata/name") << ": " << r.error().to_string();
    EXPECT_EQ(*r, Change::kCreated) << str_at(*object, "/metadata/name");
    EXPECT_EQ(str_at(answer, "/metadata/name"), str_at(*object, "/metadata/name"));
    EXPECT_FALSE(str_at(answer, "/metadata/uid").empty());
  }
  const auto applies = executor.applies();
  EXPECT_EQ(applies, objects().size());

  const auto writes_before = writes(*client);
  for (const auto& [type, object] : objects()) {
    const auto live = get(*type, *object);
    EXPECT_EQ(str_at(live, "/metadata/ownerReferences/0/uid"), stack.metadata.uid);
    EXPECT_TRUE(covers(live, *object))
        << str_at(*object, "/metadata/name") << " differs at " << first_difference(live, *object);
    auto r = executor.apply(*type, *object, informer::pack(live).get());
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(*r, Change::kNone) << str_at(*object, "/metadata/name");
  }
  EXPECT_EQ(writes(*client), writes_before);
  EXPECT_EQ(executor.applies(), applies);
}

TEST_F(ExecutorTest, ApplyRepairsDriftAndKeepsOtherManagersFields) {
  const auto& sts = desired.roles[0].stateful_set;
  ASSERT_EQ(str_at(sts, "/metadata/name"), "db-server");
  ASSERT_TRUE(executor.apply(kStatefulSets, sts, nullptr));

  // Someone else scales it, drops a kstack label and adds a label of their own.
  kube::PatchOptions other;
  other.field_manager = "someone-else";
  auto drifted = client->patch(
      kStatefulSets, ns, "db-server", kube::PatchType::kMerge,
      R"({"metadata":{"labels":{"kstack.io/role":null,"extra":"keep"}},"spec":{"replicas":5}})",
      other);
  ASSERT_TRUE(drifted) << drifted.error().to_string();

  auto live = get(kStatefulSets, sts);
  EXPECT_FALSE(covers(live, sts));
  EXPECT_FALSE(first_difference(live, sts).empty());
  auto r = executor.apply(kStatefulSets, sts, informer::pack(live).get());
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(*r, Change::kUpdated);

  live = get(kStatefulSets, sts);
  EXPECT_EQ(live.at_pointer("/spec/replicas").to_number<std::int64_t>(), 3);
  EXPECT_EQ(str_at(live, "/metadata/labels/kstack.io~1role"), "server");
  EXPECT_EQ(str_at(live, "/metadata/labels/extra"), "keep");
  EXPECT_TRUE(covers(live, sts)) << first_difference(live, sts);
}

TEST_F(ExecutorTest, RemoveHonoursTheUidPreconditionAndTreatsNotFoundAsDone) {
  const auto& svc = desired.member_services[0];
  const auto name = str_at(svc, "/metadata/name");
  json::value created;
  ASSERT_TRUE(executor.apply(kServices, svc, nullptr, &created));
  const auto uid = str_at(created, "/metadata/uid");
  ASSERT_FALSE(uid.empty());

  auto wrong = executor.remove(kServices, ns, name, "00000000-0000-0000-0000-000000000000");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().kind, ErrorKind::kConflict) << wrong.error().to_string();
  EXPECT_EQ(wrong.error().http_status, 409);
  EXPECT_TRUE(client->get(kServices, ns, name)) << "the object must survive a failed precondition";

  auto removed = executor.remove(kServices, ns, name, uid);
  ASSERT_TRUE(removed) << removed.error().to_string();
  EXPECT_EQ(*removed, Change::kDeleted);
  auto gone = client->get(kServices, ns, name);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().kind, ErrorKind::kNotFound);

  auto again = executor.remove(kServices, ns, name, uid);
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(*again, Change::kNone);
  auto without_uid = executor.remove(kServices, ns, name);
  ASSERT_TRUE(without_uid) << without_uid.error().to_string();
  EXPECT_EQ(*without_uid, Change::kNone);
}

TEST_F(ExecutorTest, UpdateStatusWithAStaleResourceVersionConflicts) {
  json::value first = stack_object;
  first.as_object()["status"] = json::object{{"state", "creating"}, {"observedGeneration", 1}};
  auto stored = executor.update_status(kStacks, first);
  ASSERT_TRUE(stored) << stored.error().to_string();
  EXPECT_EQ(str_at(*stored, "/status/state"), "creating");

  json::value stale = stack_object;  // still the creation's resourceVersion
  stale.as_object()["status"] = json::object{{"state", "ready"}};
  auto conflict = executor.update_status(kStacks, stale);
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().kind, ErrorKind::kConflict) << conflict.error().to_string();
  EXPECT_EQ(str_at(get_stack(), "/status/state"), "creating");

  json::value current = *stored;
  current.as_object()["status"].as_object()["state"] = "ready";
  auto ok = executor.update_status(kStacks, current);
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(str_at(get_stack(), "/status/state"), "ready");
}

TEST_F(ExecutorTest, SetFinalizersAddsAndClearsAndConflictsOnAStaleResourceVersion) {
  const std::string rv0 = str_at(stack_object, "/metadata/resourceVersion");
  const std::vector<std::string> cleanup{std::string(catalog::kCleanupFinalizer)};
  auto added = executor.set_finalizers(kStacks, ns, "db", rv0, cleanup);
  ASSERT_TRUE(added) << added.error().to_string();
  EXPECT_EQ(added->at_pointer("/metadata/finalizers"),
            json::value(json::array{"kstack.io/cleanup"}));
  EXPECT_EQ(get_stack().at_pointer("/metadata/finalizers"),
            json::value(json::array{"kstack.io/cleanup"}));

  auto stale = executor.set_finalizers(kStacks, ns, "db", rv0, {});
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().kind, ErrorKind::kConflict) << stale.error().to_string();
  EXPECT_EQ(get_stack().at_pointer("/metadata/finalizers"),
            json::value(json::array{"kstack.io/cleanup"}));

  auto cleared =
      executor.set_finalizers(kStacks, ns, "db", str_at(*added, "/metadata/resourceVersion"), {});
  ASSERT_TRUE(cleared) << cleared.error().to_string();
  boost::system::error_code ec;
  const auto* finalizers = get_stack().find_pointer("/metadata/finalizers", ec);
  EXPECT_TRUE(finalizers == nullptr || finalizers->as_array().empty());
}

// The events.k8s.io/v1 Events in the namespace about `uid` with `reason`.
std::vector<json::value> events_about(kube::Client& client, const std::string& ns,
                                      const std::string& uid, std::string_view reason) {
  std::vector<json::value> out;
  auto list = client.list(kube::resources::kEvents, ns);
  EXPECT_TRUE(list) << list.error().to_string();
  if (!list) return out;
  for (const auto& e : list->at("items").as_array()) {
    if (str_at(e, "/regarding/uid") == uid && str_at(e, "/reason") == reason) out.push_back(e);
  }
  return out;
}

TEST_F(ExecutorTest, EventIsPostedOnceAboutTheRegardingObject) {
  executor.event(*informer::pack(stack_object), "Normal", "Created", "Create",
                 "created StatefulSet db-server");
  executor.event(*informer::pack(stack_object), "Normal", "Created", "Create",
                 "created StatefulSet db-server");
  EXPECT_EQ(executor.events_posted(), 1u);

  const auto events = events_about(*client, ns, stack.metadata.uid, "Created");
  ASSERT_EQ(events.size(), 1u);
  const auto& e = events[0];
  EXPECT_EQ(str_at(e, "/note"), "created StatefulSet db-server");
  EXPECT_EQ(str_at(e, "/type"), "Normal");
  EXPECT_EQ(str_at(e, "/action"), "Create");
  EXPECT_EQ(str_at(e, "/reportingController"), kReportingController);
  EXPECT_FALSE(str_at(e, "/reportingInstance").empty());
  EXPECT_FALSE(str_at(e, "/eventTime").empty());
  EXPECT_EQ(str_at(e, "/regarding/kind"), "Stack");
  EXPECT_EQ(str_at(e, "/regarding/apiVersion"), "kstack.io/v1beta1");
  EXPECT_EQ(str_at(e, "/regarding/name"), "db");
  EXPECT_EQ(str_at(e, "/regarding/namespace"), ns);
  EXPECT_EQ(str_at(e, "/metadata/name").rfind("db.", 0), 0u) << str_at(e, "/metadata/name");

  // Another note is another event.
  executor.event(*informer::pack(stack_object), "Normal", "Created", "Create",
                 "created Service db");
  EXPECT_EQ(executor.events_posted(), 2u);
  EXPECT_EQ(events_about(*client, ns, stack.metadata.uid, "Created").size(), 2u);
}

TEST_F(ExecutorTest, ConcurrentIdenticalEventsArePostedOnce) {
  std::vector<std::thread> workers;
  workers.reserve(8);
  for (int i = 0; i < 8; ++i) {
    workers.emplace_back([&] {
      executor.event(*informer::pack(stack_object), "Normal", "Scaled", "Scale", "3 -> 4");
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(executor.events_posted(), 1u);
  EXPECT_EQ(events_about(*client, ns, stack.metadata.uid, "Scaled").size(), 1u);
}

TEST_F(ExecutorTest, LongEventNoteIsTruncatedOnAUtf8Boundary) {
  // 'a' then 2-byte characters: byte 1024 falls inside one, so the cut backs off to 1023.
  std::string note = "a";
  while (note.size() < 4999) note += "\xc3\xa9";  // é
  note += "a";
  ASSERT_EQ(note.size(), 5000u);
  executor.event(*informer::pack(stack_object), "Warning", "SetupFailed", "Setup", note);
  EXPECT_EQ(executor.events_posted(), 1u);

  const auto events = events_about(*client, ns, stack.metadata.uid, "SetupFailed");
  ASSERT_EQ(events.size(), 1u);
  const auto posted = str_at(events[0], "/note");
  EXPECT_LE(posted.size(), 1024u);
  EXPECT_EQ(posted, note.substr(0, 1023));
  EXPECT_EQ(str_at(events[0], "/type"), "Warning");
}

TEST_F(ExecutorTest, NotesOfOneReasonAreJoinedIntoAsFewEventsAsFit) {
  // 30 notes of 60 bytes: "; "-joined, 16 fit 1024 bytes (16 × 60 + 15 × 2 = 990), so two Events.
  std::vector<std::string> notes;
  for (int i = 0; i < 30; ++i) {
    std::string note = "Service member-" + std::to_string(100 + i) + " created";
    note.resize(60, '.');
    notes.push_back(note);
  }
  ASSERT_EQ(notes[0].size(), 60u);
  executor.events(*informer::pack(stack_object), "Normal", "Created", "Create", notes);
  EXPECT_EQ(executor.events_posted(), 2u);

  const auto events = events_about(*client, ns, stack.metadata.uid, "Created");
  ASSERT_EQ(events.size(), 2u);
  std::vector<std::string> items;
  for (const auto& e : events) {
    const auto note = str_at(e, "/note");
    EXPECT_LE(note.size(), 1024u);
    for (std::size_t from = 0; from <= note.size();) {
      const auto to = std::min(note.find("; ", from), note.size());
      items.push_back(note.substr(from, to - from));
      from = to + 2;
    }
  }
  std::sort(items.begin(), items.end());
  EXPECT_EQ(items, notes) << "every note exactly once, none cut";
}

// Blocks until the wall clock enters a new second (core/v1 timestamps have second precision),
// at most 2 s.
void wait_for_next_second() {
  using clock = std::chrono::system_clock;
  const auto second = std::chrono::floor<std::chrono::seconds>(clock::now());
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (std::chrono::floor<std::chrono::seconds>(clock::now()) == second &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
}

TEST_F(ExecutorTest, EventsReadThroughCoreV1CarryTheTimestampsAndCountOlderClientsSortBy) {
  // kubectl describe (1.20) lists Events by lastTimestamp: three Events posted in three
  // different seconds must come out in the order they were posted.
  const std::vector<std::string> reasons{"Scaled", "Created", "Deleted"};
  for (const auto& reason : reasons) {
    wait_for_next_second();
    executor.event(*informer::pack(stack_object), "Normal", reason, "Update", "note of " + reason);
  }
  ASSERT_EQ(executor.events_posted(), 3u);

  auto list = client->list(kCoreEvents, ns);
  ASSERT_TRUE(list) << list.error().to_string();
  std::vector<json::value> events;
  for (const auto& e : list->at("items").as_array()) {
    if (str_at(e, "/involvedObject/uid") == stack.metadata.uid) events.push_back(e);
  }
  ASSERT_EQ(events.size(), 3u);
  for (const auto& e : events) {
    const auto first = str_at(e, "/firstTimestamp");
    EXPECT_EQ(first.size(), 20u) << "RFC 3339 in seconds, e.g. 2024-05-01T12:00:00Z: " << e;
    EXPECT_EQ(str_at(e, "/lastTimestamp"), first) << e;
    EXPECT_EQ(first.substr(0, 19), str_at(e, "/eventTime").substr(0, 19)) << e;
    ASSERT_TRUE(e.as_object().contains("count")) << e;
    EXPECT_EQ(e.at("count"), json::value(1)) << e;
    EXPECT_EQ(str_at(e, "/message"), "note of " + str_at(e, "/reason"));
    EXPECT_EQ(str_at(e, "/source/component"), kReportingController);
  }
  // kubectl's SortableEvents: lastTimestamp ascending (RFC 3339 strings of one length sort as
  // the times they name).
  std::sort(events.begin(), events.end(), [](const json::value& a, const json::value& b) {
    return str_at(a, "/lastTimestamp") < str_at(b, "/lastTimestamp");
  });
  std::vector<std::string> listed;
  for (const auto& e : events) listed.push_back(str_at(e, "/reason"));
  EXPECT_EQ(listed, reasons);

  // The events.k8s.io/v1 view of the same Events: the deprecated fields are the same values.
  for (const auto& e : events_about(*client, ns, stack.metadata.uid, "Scaled")) {
    EXPECT_EQ(str_at(e, "/deprecatedLastTimestamp"), str_at(events[0], "/lastTimestamp"));
    EXPECT_EQ(e.at("deprecatedCount"), json::value(1));
    EXPECT_EQ(str_at(e, "/reportingController"), kReportingController);
  }
}

}  // namespace
}  // namespace kstack::executor
