// Informers against a real kube-apiserver: convergence under concurrent churn, recovery from
// an apiserver killed mid-stream, re-list after compaction, resync without API requests,
// malformed LIST answers survived, and write answers ordered against the watch.
#include "informer/informer.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/kube/client_fixture.h"
#include "tests/testenv/rewriting_proxy.h"
#include "tests/testenv/tcp_proxy.h"

namespace kstack::informer {
// For GoogleTest's messages (found by argument-dependent lookup, so not in the anonymous
// namespace).
inline void PrintTo(WriteAnswer answer, std::ostream* out) { *out << to_string(answer); }

namespace {

using kube::testing::admin;
using kube::testing::config_map;
using kube::testing::make_namespace;
using kube::testing::str_at;
namespace json = boost::json;
using namespace std::chrono_literals;

// What the handlers saw: the final state per key (resourceVersion, or absent when deleted)
// and how often each key was added.
class Recorder {
 public:
  EventHandler handler() {
    EventHandler h;
    h.on_add = [this](const ObjectPtr& o) { record(o, true); };
    h.on_update = [this](const ObjectPtr&, const ObjectPtr& o) { record(o, false); };
    h.on_delete = [this](const ObjectPtr& o, bool unknown) {
      std::lock_guard lock(mu_);
      state_.erase(object_key(*o));
      ++deletes_;
      if (unknown) ++deletes_unknown_;
      cv_.notify_all();
    };
    h.on_resync = [this](const ObjectPtr& o) {
      std::lock_guard lock(mu_);
      ++resyncs_[object_key(*o)];
      cv_.notify_all();
    };
    return h;
  }

  // Waits until the handlers' view equals `expected` (key -> resourceVersion).
  bool wait_equal(const std::map<std::string, std::string>& expected,
                  std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return state_ == expected; });
  }
  bool wait_resyncs(std::size_t keys, int rounds, std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      if (resyncs_.size() < keys) return false;
      for (const auto& [k, n] : resyncs_) {
        if (n < rounds) return false;
      }
      return true;
    });
  }
  std::map<std::string, std::string> state() {
    std::lock_guard lock(mu_);
    return state_;
  }
  std::map<std::string, int> adds() {
    std::lock_guard lock(mu_);
    return adds_;
  }
  // Waits until the handlers saw `key` at `rv` ("" = deleted). The store changes before the
  // handlers are called, so the store holds it then too.
  bool wait_key(const std::string& key, const std::string& rv, std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      const auto it = state_.find(key);
      return it == state_.end() ? rv.empty() : it->second == rv;
    });
  }
  int deletes_unknown() {
    std::lock_guard lock(mu_);
    return deletes_unknown_;
  }

 private:
  void record(const ObjectPtr& o, bool add) {
    std::lock_guard lock(mu_);
    const auto key = object_key(*o);
    state_[key] = std::string(resource_version(*o));
    if (add) ++adds_[key];
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> state_;
  std::map<std::string, int> adds_;
  std::map<std::string, int> resyncs_;
  int deletes_ = 0;
  int deletes_unknown_ = 0;
};

const kube::ResourceType kCoreEvents{"", "v1", "events", "Event", true};
// The controller-manager publishes this ConfigMap into new namespaces whenever it gets to it;
// informers and lists in these tests leave it out so that the views compare exactly.
constexpr const char* kNotRootCa = "metadata.name!=kube-root-ca.crt";

std::map<std::string, std::string> fresh_list(
    kube::Client& c, const std::string& ns,
    const kube::ResourceType& type = kube::resources::kConfigMaps) {
  kube::ListOptions lo;
  lo.field_selector = kNotRootCa;
  auto list = c.list_all(type, ns, lo);
  EXPECT_TRUE(list) << list.error().to_string();
  std::map<std::string, std::string> out;
  if (!list) return out;
  for (const auto& item : list->at("items").as_array()) {
    out[ns + "/" + str_at(item, "/metadata/name")] = str_at(item, "/metadata/resourceVersion");
  }
  return out;
}

std::map<std::string, std::string> store_view(const Store& s) {
  std::map<std::string, std::string> out;
  for (const auto& o : s.list()) out[object_key(*o)] = std::string(resource_version(*o));
  return out;
}

ReflectorOptions config_maps_in(const std::string& ns) {
  ReflectorOptions o;
  o.type = kube::resources::kConfigMaps;
  o.namespace_name = ns;
  o.field_selector = kNotRootCa;
  o.backoff_initial = 100ms;  // keep recovery quick in tests; the sequence is unit-tested
  o.backoff_max = 2s;
  return o;
}

std::uint16_t apiserver_port() {
  const auto& server = testenv::control_plane().server();
  return static_cast<std::uint16_t>(std::stoi(server.substr(server.rfind(':') + 1)));
}

TEST(Informer, CacheConvergesToAFreshListUnderConcurrentChurn) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  Recorder rec;
  Informer inf(admin(), config_maps_in(ns), {.resync_period = 0ms});
  inf.add_handler(rec.handler());
  inf.start();
  ASSERT_TRUE(inf.wait_for_sync(30s));

  constexpr int kObjects = 500;
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto client = admin();
      std::mt19937 rng(static_cast<unsigned>(t) * 7919u + 1);
      for (int i = t; i < kObjects; i += kThreads) {
        const std::string name = "cm-" + std::to_string(i);
        ASSERT_TRUE(client->create(kube::resources::kConfigMaps, ns, config_map(name)));
        const int updates = static_cast<int>(rng() % 3);
        for (int u = 0; u < updates; ++u) {
          ASSERT_TRUE(client->patch(kube::resources::kConfigMaps, ns, name, kube::PatchType::kMerge,
                                    "{\"data\":{\"u\":\"" + std::to_string(u) + "\"}}"));
        }
        if (rng() % 4 == 0) {
          ASSERT_TRUE(client->remove(kube::resources::kConfigMaps, ns, name));
        }
      }
    });
  }
  for (auto& t : threads) t.join();

  const auto expected = fresh_list(*c, ns);
  ASSERT_TRUE(rec.wait_equal(expected, 60s))
      << "handlers saw " << rec.state().size() << " objects, list has " << expected.size();
  EXPECT_EQ(store_view(inf.store()), expected);
  for (const auto& [key, n] : rec.adds()) EXPECT_EQ(n, 1) << key;
}

TEST(Informer, RecoversAfterTheApiserverIsKilledWithoutDuplicateAdds) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(c->create(kube::resources::kConfigMaps, ns, config_map("k" + std::to_string(i))));
  }
  Recorder rec;
  Informer inf(admin(), config_maps_in(ns), {.resync_period = 0ms});
  inf.add_handler(rec.handler());
  inf.start();
  ASSERT_TRUE(inf.wait_for_sync(30s));
  ASSERT_TRUE(rec.wait_equal(fresh_list(*c, ns), 30s));

  auto& cp = testenv::control_plane();
  cp.kill_apiserver();
  auto restarted = cp.start_apiserver();
  ASSERT_TRUE(restarted) << restarted.error();

  // Changes after the restart: 5 updated, 5 deleted, 5 new; 5 untouched.
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(c->patch(kube::resources::kConfigMaps, ns, "k" + std::to_string(i),
                         kube::PatchType::kMerge, R"({"data":{"after":"restart"}})"));
    ASSERT_TRUE(c->remove(kube::resources::kConfigMaps, ns, "k" + std::to_string(i + 5)));
    ASSERT_TRUE(c->create(kube::resources::kConfigMaps, ns, config_map("n" + std::to_string(i))));
  }
  const auto expected = fresh_list(*c, ns);
  ASSERT_TRUE(rec.wait_equal(expected, 90s));
  EXPECT_EQ(store_view(inf.store()), expected);
  const auto adds = rec.adds();
  for (const auto& [key, n] : adds) EXPECT_EQ(n, 1) << "duplicate add of " << key;
  EXPECT_EQ(adds.size(), expected.size() + 5);  // the 5 deleted ones were added once too
  EXPECT_GE(inf.reflector().stats().errors + inf.reflector().stats().relists_after_gone, 1u);
}

json::value core_event(const std::string& ns, const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", name}}},
          {"involvedObject", {{"kind", "ConfigMap"}, {"name", "x"}, {"namespace", ns}}},
          {"reason", "Test"},
          {"message", "informer test"},
          {"type", "Normal"}};
}

TEST(Informer, RelistsAfterCompactionAndEmitsDeletesForObjectsRemovedMeanwhile) {
  // Core events: the apiserver keeps no watch cache for them (--watch-cache-sizes defaults
  // them to 0), so resuming a watch goes to etcd, where the compaction removed the version.
  auto c = admin();
  const auto ns = make_namespace(*c);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(c->create(kCoreEvents, ns, core_event(ns, "e" + std::to_string(i))));
  }
  testenv::TcpProxy proxy(apiserver_port());
  auto cfg = kube::testing::config_for(testenv::kAdminUser);
  cfg.server = proxy.url();
  auto via_proxy = kube::Client::create(cfg);
  ASSERT_TRUE(via_proxy);

  Recorder rec;
  auto options = config_maps_in(ns);
  options.type = kCoreEvents;
  Informer inf(*via_proxy, options, {.resync_period = 0ms});
  inf.add_handler(rec.handler());
  inf.start();
  ASSERT_TRUE(inf.wait_for_sync(30s));
  ASSERT_TRUE(rec.wait_equal(fresh_list(*c, ns, kCoreEvents), 30s));
  const auto lists_before = inf.reflector().stats().lists;

  proxy.cut();  // the informer is disconnected; the direct client is not
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(c->remove(kCoreEvents, ns, "e" + std::to_string(i)));
  ASSERT_TRUE(c->create(kCoreEvents, ns, core_event(ns, "late")));
  ASSERT_TRUE(testenv::control_plane().compact_etcd());
  proxy.restore();

  const auto expected = fresh_list(*c, ns, kCoreEvents);
  ASSERT_EQ(expected.size(), 7u);
  ASSERT_TRUE(rec.wait_equal(expected, 90s));
  EXPECT_EQ(store_view(inf.store()), expected);
  EXPECT_EQ(rec.deletes_unknown(), 4);
  EXPECT_GE(inf.reflector().stats().relists_after_gone, 1u);
  EXPECT_GT(inf.reflector().stats().lists, lists_before);
}

TEST(Informer, ResyncRedeliversEveryCachedObjectWithoutApiRequests) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(c->create(kube::resources::kConfigMaps, ns, config_map("s" + std::to_string(i))));
  }
  auto client = admin();
  Recorder rec;
  Informer inf(client, config_maps_in(ns), {.resync_period = 500ms});
  inf.add_handler(rec.handler());
  inf.start();
  ASSERT_TRUE(inf.wait_for_sync(30s));
  ASSERT_TRUE(rec.wait_equal(fresh_list(*c, ns), 30s));
  // The watch request goes out after the sync: only an object delivered through it shows that
  // it has (counting from the sync alone raced with it on a loaded machine: 2 requests, not 1).
  ASSERT_TRUE(c->create(kube::resources::kConfigMaps, ns, config_map("through-the-watch")));
  const auto expected = fresh_list(*c, ns);
  ASSERT_TRUE(rec.wait_equal(expected, 30s));
  const auto requests_before = client->transport().stats().requests;
  const auto counted_before = client->metrics().total();

  ASSERT_TRUE(rec.wait_resyncs(expected.size(), 3, 30s));
  EXPECT_EQ(client->transport().stats().requests, requests_before);
  EXPECT_EQ(client->metrics().total(), counted_before);
}

// Valid JSON a broken server or proxy might answer a LIST with, none of it a usable List.
const std::vector<std::string> kMalformedLists = {
    R"({"items":5})",
    R"({"kind":"ConfigMapList","metadata":[],"items":[]})",
    R"([])",
    R"("ConfigMapList")",
    R"({"items":[{"metadata":{"name":7}},3],"metadata":{"resourceVersion":{}}})",
    R"({"items":[],"metadata":{"continue":false}})",
};

TEST(Informer, SurvivesMalformedListAnswersAndConvergesOnceTheyStop) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c->create(kube::resources::kConfigMaps, ns, config_map("m" + std::to_string(i))));
  }
  auto& cp = testenv::control_plane();
  testenv::RewritingProxy proxy(apiserver_port(), cp.work_dir() / "pki" / "apiserver.crt",
                                cp.work_dir() / "pki" / "apiserver.key");
  std::mutex mu;
  std::condition_variable cv;
  std::size_t served = 0;
  const std::string lists = "/api/v1/namespaces/" + ns + "/configmaps?";
  proxy.set_rewrite([&](const testenv::RewritingProxy::Request& r, int status,
                        const std::string&) -> std::optional<std::string> {
    if (r.method != "GET" || status != 200 || !r.target.starts_with(lists)) return std::nullopt;
    std::lock_guard lock(mu);
    cv.notify_all();
    return kMalformedLists[served++ % kMalformedLists.size()];
  });
  auto cfg = kube::testing::config_for(testenv::kAdminUser);
  cfg.server = proxy.url();
  auto via_proxy = kube::Client::create(cfg);
  ASSERT_TRUE(via_proxy);
  auto options = config_maps_in(ns);
  options.backoff_initial = 10ms;
  options.backoff_max = 50ms;

  Recorder rec;
  Informer inf(*via_proxy, options, {.resync_period = 0ms});
  inf.add_handler(rec.handler());
  inf.start();
  {
    // Every malformed shape answered twice: the reflector thread survived each and retried.
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 60s, [&] { return served >= 2 * kMalformedLists.size(); }));
  }
  EXPECT_FALSE(inf.has_synced());
  EXPECT_GE(inf.reflector().stats().decode_errors, kMalformedLists.size());

  proxy.set_rewrite({});
  ASSERT_TRUE(inf.wait_for_sync(30s));
  const auto expected = fresh_list(*c, ns);
  ASSERT_EQ(expected.size(), 3u);
  ASSERT_TRUE(rec.wait_equal(expected, 30s));
  EXPECT_EQ(store_view(inf.store()), expected);
}

TEST(Informer, AWriteAnswerNeverRollsBackNorResurrectsWhatTheWatchDelivered) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  Recorder rec;
  Informer inf(admin(), config_maps_in(ns), {.resync_period = 0ms});
  inf.add_handler(rec.handler());
  inf.start();
  ASSERT_TRUE(inf.wait_for_sync(30s));
  const std::string key = ns + "/w";

  // The answer of a create, held back (as a slow worker would) while the object changes.
  auto created = c->create(kube::resources::kConfigMaps, ns, config_map("w"));
  ASSERT_TRUE(created);
  auto updated = c->patch(kube::resources::kConfigMaps, ns, "w", kube::PatchType::kMerge,
                          R"({"data":{"k":"newer"}})");
  ASSERT_TRUE(updated);
  const std::string newer = str_at(*updated, "/metadata/resourceVersion");
  ASSERT_TRUE(rec.wait_key(key, newer, 30s));
  auto stale = informer::pack(*created);
  EXPECT_EQ(inf.store().upsert_write_answer(stale), WriteAnswer::kStale);
  EXPECT_EQ(std::string(resource_version(*inf.store().get(key))), newer);

  ASSERT_TRUE(c->remove(kube::resources::kConfigMaps, ns, "w"));
  ASSERT_TRUE(rec.wait_key(key, "", 30s));
  EXPECT_EQ(inf.store().upsert_write_answer(stale), WriteAnswer::kStale);
  EXPECT_EQ(inf.store().upsert_write_answer(informer::pack(*updated)), WriteAnswer::kStale);
  EXPECT_EQ(inf.store().get(key), nullptr);
}

}  // namespace
}  // namespace kstack::informer
