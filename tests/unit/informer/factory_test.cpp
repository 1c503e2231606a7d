#include "informer/factory.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "tests/unit/informer/fake_api.h"

namespace kstack::informer {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using testing::FakeApi;

constexpr std::chrono::milliseconds kDeadline{10'000};
constexpr const char* kPath = "/api/v1/namespaces/ns/configmaps";

json::value config_map(const std::string& name, const std::string& rv) {
  return json::value{{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata", {{"namespace", "ns"}, {"name", name}, {"resourceVersion", rv}}}};
}

InformerScope config_maps(std::string label_selector = {}) {
  return {kube::resources::kConfigMaps, "ns", std::move(label_selector), {}};
}

// What a handler saw, waited on with a deadline.
struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> events;  // "add ns/a", "update ns/a 5", "delete ns/a"

  EventHandler handler() {
    EventHandler h;
    h.on_add = [this](const ObjectPtr& o) { note("add " + object_key(*o)); };
    h.on_update = [this](const ObjectPtr&, const ObjectPtr& o) {
      note("update " + object_key(*o) + " " + std::string(resource_version(*o)));
    };
    h.on_delete = [this](const ObjectPtr& o, bool) { note("delete " + object_key(*o)); };
    return h;
  }
  void note(std::string event) {
    {
      std::lock_guard lock(mu);
      events.push_back(std::move(event));
    }
    cv.notify_all();
  }
  bool wait_for(const std::string& event) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, kDeadline, [&] {
      return std::find(events.begin(), events.end(), event) != events.end();
    });
  }
  std::vector<std::string> snapshot() {
    std::lock_guard lock(mu);
    return events;
  }
};

class InformerFactoryTest : public ::testing::Test {
 protected:
  InformerFactoryTest() {
    auto [client, api] = FakeApi::client();
    client_ = client;
    api_ = api;
    api_->set_objects({config_map("a", "3"), config_map("b", "4")}, "4");
  }

  std::shared_ptr<kube::Client> client_;
  FakeApi* api_ = nullptr;
};

TEST_F(InformerFactoryTest, TwoConsumersOfOneScopeShareOneInformerOneListAndOneWatch) {
  InformerFactory factory(client_);
  auto& first = factory.informer(config_maps());
  auto& second = factory.informer(config_maps());
  EXPECT_EQ(&first, &second);
  EXPECT_EQ(&first.store(), &second.store());
  Seen a, b;
  auto ra = first.add_handler(a.handler());
  auto rb = second.add_handler(b.handler());
  factory.start();
  factory.start();  // a second consumer starting the factory starts nothing again
  ASSERT_TRUE(factory.wait_for_sync(kDeadline));
  ASSERT_TRUE(api_->wait_open_watches(1, kDeadline));
  EXPECT_EQ(api_->lists(kPath), 1);
  EXPECT_EQ(api_->watches(kPath), 1);
  EXPECT_EQ(factory.informers().size(), 1u);
  EXPECT_EQ(first.store().size(), 2u);
  // Both consumers get each change of the one watch.
  api_->push_event({{"type", "MODIFIED"}, {"object", config_map("a", "5")}});
  EXPECT_TRUE(a.wait_for("update ns/a 5"));
  EXPECT_TRUE(b.wait_for("update ns/a 5"));
}

TEST_F(InformerFactoryTest, ScopesThatDifferInASelectorAreSeparateCaches) {
  InformerFactory factory(client_);
  auto& all = factory.informer(config_maps());
  auto& labelled = factory.informer(config_maps("app=x"));
  auto& elsewhere = factory.informer(InformerScope{kube::resources::kConfigMaps, "other", {}, {}});
  EXPECT_NE(&all, &labelled);
  EXPECT_NE(&all, &elsewhere);
  factory.start();
  ASSERT_TRUE(factory.wait_for_sync(kDeadline));
  EXPECT_EQ(api_->lists(kPath), 2);  // the two scopes of namespace ns
  EXPECT_EQ(api_->lists("/api/v1/namespaces/other/configmaps"), 1);
  EXPECT_EQ(factory.informers().size(), 3u);
}

TEST_F(InformerFactoryTest, AHandlerAddedToARunningInformerFirstGetsEveryCachedObject) {
  InformerFactory factory(client_);
  auto& inf = factory.informer(config_maps());
  factory.start();
  ASSERT_TRUE(factory.wait_for_sync(kDeadline));
  Seen late;
  auto registration = inf.add_handler(late.handler());
  // Replayed before add_handler returned, as client-go does for a late handler.
  auto replayed = late.snapshot();
  std::sort(replayed.begin(), replayed.end());
  EXPECT_EQ(replayed, (std::vector<std::string>{"add ns/a", "add ns/b"}));
  ASSERT_TRUE(api_->wait_open_watches(1, kDeadline));
  api_->push_event({{"type", "ADDED"}, {"object", config_map("c", "6")}});
  EXPECT_TRUE(late.wait_for("add ns/c"));
}

TEST_F(InformerFactoryTest, ARemovedHandlerIsNeverCalledAgainWhileTheOthersStillAre) {
  InformerFactory factory(client_);
  auto& inf = factory.informer(config_maps());
  Seen removed, kept;
  auto r1 = inf.add_handler(removed.handler());  // registered first: called first
  auto r2 = inf.add_handler(kept.handler());
  EXPECT_EQ(inf.handler_count(), 2u);
  factory.start();
  ASSERT_TRUE(factory.wait_for_sync(kDeadline));
  ASSERT_TRUE(removed.wait_for("add ns/b"));
  ASSERT_TRUE(api_->wait_open_watches(1, kDeadline));
  r1.reset();
  EXPECT_FALSE(r1.active());
  EXPECT_EQ(inf.handler_count(), 1u);
  const auto before = removed.snapshot();
  api_->push_event({{"type", "DELETED"}, {"object", config_map("a", "7")}});
  ASSERT_TRUE(kept.wait_for("delete ns/a"));
  EXPECT_EQ(removed.snapshot(), before);
}

TEST_F(InformerFactoryTest, AnInformerRequestedAfterStartIsStartedByTheNextStart) {
  InformerFactory factory(client_);
  factory.informer(config_maps());
  factory.start();
  ASSERT_TRUE(factory.wait_for_sync(kDeadline));
  auto& later = factory.informer(config_maps("app=late"));
  EXPECT_FALSE(later.has_synced());
  factory.start();
  ASSERT_TRUE(factory.wait_for_sync(kDeadline));
  EXPECT_TRUE(later.has_synced());
  EXPECT_EQ(api_->lists(kPath), 2);  // the first informer did not list again
}

TEST_F(InformerFactoryTest, WaitForSyncNamesTheScopeThatCannotList) {
  api_->forbid("/api/v1/namespaces/locked/configmaps");
  InformerFactory factory(client_);
  factory.informer(config_maps());
  factory.informer(InformerScope{kube::resources::kConfigMaps, "locked", "app=x", {}});
  factory.start();
  auto synced = factory.wait_for_sync(300ms);
  ASSERT_FALSE(synced);
  EXPECT_TRUE(synced.error().is(kube::ErrorKind::kTimeout));
  EXPECT_NE(synced.error().message.find("configmaps in namespace locked, labels app=x"),
            std::string::npos)
      << synced.error().message;
}

TEST_F(InformerFactoryTest, RunningInformersCountsEachStartedInformerUntilItStops) {
  const RunningResource config_maps_resource{"", "configmaps"};
  auto running = [&] {
    auto all = running_informers();
    auto it = all.find(config_maps_resource);
    return it == all.end() ? 0 : it->second;
  };
  const int before = running();
  {
    InformerFactory factory(client_);
    factory.informer(config_maps());
    factory.informer(config_maps());
    EXPECT_EQ(running(), before);  // made, not started
    factory.start();
    EXPECT_EQ(running(), before + 1);
    ReflectorOptions ro;
    ro.type = kube::resources::kConfigMaps;
    Informer unshared(client_, ro, InformerOptions{.resync_period = 0ms});
    unshared.start();
    EXPECT_EQ(running(), before + 2);  // a second cache of the same kind shows
    unshared.stop();
    EXPECT_EQ(running(), before + 1);
    factory.stop();
    EXPECT_EQ(running(), before);
    factory.start();  // a stopped factory stays stopped
    EXPECT_EQ(running(), before);
  }
  EXPECT_EQ(running(), before);
}

TEST_F(InformerFactoryTest, TheFactorysResyncPeriodReachesOnlyHandlersThatAskForResyncs) {
  InformerFactory factory(client_, {.resync_period = 20ms});
  auto& inf = factory.informer(config_maps());
  std::atomic<int> resyncs{0};
  std::mutex mu;
  std::condition_variable cv;
  EventHandler wants;
  wants.on_resync = [&](const ObjectPtr&) {
    {
      std::lock_guard lock(mu);
      resyncs.fetch_add(1);
    }
    cv.notify_all();
  };
  Seen plain;  // no on_resync: a resync is not a change, it sees nothing
  auto r1 = inf.add_handler(wants);
  auto r2 = inf.add_handler(plain.handler());
  factory.start();
  ASSERT_TRUE(factory.wait_for_sync(kDeadline));
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, kDeadline, [&] { return resyncs.load() >= 4; }));
  auto seen = plain.snapshot();
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"add ns/a", "add ns/b"}));
}

TEST(InformerScopeTest, DescribeSaysKindNamespaceAndSelectors) {
  EXPECT_EQ(describe({kube::resources::kStatefulSets, "", "app=x", ""}),
            "statefulsets.apps in all namespaces, labels app=x");
  EXPECT_EQ(describe({kube::resources::kConfigMaps, "ns", "", "metadata.name=c"}),
            "configmaps in namespace ns, fields metadata.name=c");
  EXPECT_EQ(describe({kube::resources::kNodes, "", "", ""}), "nodes");
}

}  // namespace
}  // namespace kstack::informer
