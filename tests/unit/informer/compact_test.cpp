#include "informer/compact.h"

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "informer/factory.h"
#include "informer/store.h"
#include "tests/unit/informer/fake_api.h"

namespace kstack::informer {
namespace {
namespace json = boost::json;
using namespace std::chrono_literals;

// A ConfigMap as the API server returns it: long and short strings, nested objects, an array,
// numbers, booleans and null (every kind of value the copy must lay out).
json::value config_map(const std::string& name) {
  return json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
                     R"(","namespace":"bench","uid":"00000000-0000-4000-8000-000000000001",)"
                     R"("resourceVersion":"1234","creationTimestamp":"2026-01-01T00:00:00Z",)"
                     R"("labels":{"app":"bench","app.kubernetes.io/managed-by":"kstack"},)"
                     R"("ownerReferences":[{"apiVersion":"kstack.io/v1alpha1","kind":"Stack",)"
                     R"("name":"s","uid":"u-1","controller":true,"blockOwnerDeletion":true}]},)"
                     R"("data":{"payload":")" +
                     std::string(1000, 'x') +
                     R"(","n":"1"},"extra":{"i":-7,"u":18446744073709551615,"d":1.5,"t":true,)"
                     R"("f":false,"z":null,"a":[1,"two",[3],{}]}})");
}

TEST(Compact, TheCopyIsEqualAndFillsItsBufferExactly) {
  const auto original = config_map("cm-1");
  auto c = compact(original);
  ASSERT_NE(c.resource, nullptr);
  EXPECT_EQ(c.value, original);
  EXPECT_EQ(c.resource->buffer_used(), c.resource->buffer_size());
  EXPECT_EQ(c.resource->outside_bytes(), 0u);  // it all fit
  EXPECT_TRUE(c.value.storage().is_shared());
  // One block: the DOM is smaller than its JSON text plus a malloc per table and string.
  EXPECT_LT(c.resource->buffer_size(), json::serialize(original).size() * 2);
  EXPECT_GT(c.resource->buffer_size(), 1000u);  // the payload is in it
}

TEST(Compact, CopiesOfPartsAllocateOutsideTheBufferAndGiveItAllBack) {
  auto c = compact(config_map("cm-1"));
  const FittedResource* r = c.resource;
  const auto size = r->buffer_size();
  {
    std::vector<json::value> copies;
    for (int i = 0; i < 10'000; ++i) {
      // value's copy constructor allocates from the source's storage: the object's resource.
      copies.push_back(c.value.at("metadata"));
      ASSERT_EQ(copies.back().storage().get(), c.value.storage().get());
    }
    EXPECT_GT(r->outside_bytes(), 10'000u * 100u);
    EXPECT_EQ(r->buffer_size(), size);  // the buffer never grows
    copies.clear();
    EXPECT_EQ(r->outside_bytes(), 0u);
  }
  // A copy changed afterwards: its new allocations are outside too, and freed with it.
  {
    json::value md = c.value.at("metadata");
    md.as_object()["annotations"] = json::object{{"note", std::string(500, 'y')}};
    md.as_object()["labels"].as_object()["app"] = std::string(300, 'z');
    EXPECT_GT(r->outside_bytes(), 800u);
  }
  EXPECT_EQ(r->outside_bytes(), 0u);
}

TEST(Compact, ACopyOutlivesTheCachedObjectAndItsStore) {
  std::optional<json::value> copy;
  const FittedResource* r = nullptr;
  {
    Store store;
    auto c = compact(config_map("cm-1"));
    r = c.resource;
    store.upsert(std::make_shared<const json::value>(std::move(c.value)));
    const auto cached = store.get("bench/cm-1");
    copy.emplace(cached->at("data"));  // copy-constructed: from the cached object's storage
    ASSERT_EQ(copy->storage().get(), cached->storage().get());
    ASSERT_NE(store.erase("bench/cm-1"), nullptr);
  }  // the store and its object are gone; the resource lives while the copy does
  EXPECT_EQ(copy->at("payload").as_string(), std::string(1000, 'x'));
  EXPECT_GT(r->outside_bytes(), 1000u);  // the copy's own strings
  copy->as_object()["more"] = "a string longer than the small-string buffer";
  EXPECT_EQ(json::serialize(copy->at("n")), "\"1\"");
}

TEST(Compact, ConcurrentCopiesOfOneCachedObject) {
  const auto c = std::make_shared<const Compacted>(compact(config_map("cm-1")));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&c] {
      for (int i = 0; i < 2'000; ++i) {
        json::value copy = c->value;
        copy.as_object()["metadata"].as_object()["name"] = std::string(40, 'n');
        ASSERT_EQ(copy.at("data"), c->value.at("data"));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c->resource->outside_bytes(), 0u);
}

TEST(Compact, ScalarsAndEmptyContainers) {
  for (const auto& v : {json::value(nullptr), json::value(42), json::value("short"),
                        json::value(json::object{}), json::value(json::array{})}) {
    auto c = compact(v);
    EXPECT_EQ(c.value, v);
    EXPECT_EQ(c.resource->outside_bytes(), 0u);
  }
}

TEST(Compact, TheInformerCachesCompactedObjectsWithoutManagedFields) {
  auto [client, api] = testing::FakeApi::client();
  auto cm = config_map("cm-1");
  cm.as_object()["metadata"].as_object()["managedFields"] =
      json::array{json::object{{"manager", "kubectl"}, {"operation", "Update"}}};
  api->set_objects({cm}, "10");
  ReflectorOptions ro;
  ro.type = kube::resources::kConfigMaps;
  ro.namespace_name = "bench";
  Informer inf(client, ro, {.resync_period = 0ms});
  inf.start();
  ASSERT_TRUE(inf.wait_for_sync(10s));
  const auto cached = inf.store().get("bench/cm-1");
  ASSERT_NE(cached, nullptr);
  EXPECT_TRUE(cached->storage().is_shared());  // its own FittedResource
  EXPECT_FALSE(cached->at("metadata").as_object().contains("managedFields"));
  EXPECT_EQ(cached->at("data"), config_map("cm-1").at("data"));
  inf.stop();
}

}  // namespace
}  // namespace kstack::informer
