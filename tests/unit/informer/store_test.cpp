#include "informer/store.h"

#include <algorithm>
#include <thread>

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace kstack::informer {
namespace {
namespace json = boost::json;

ObjectPtr obj(std::string_view ns, std::string_view name, std::string_view rv,
              json::object labels = {}, std::string_view owner_uid = {}) {
  json::object md{{"name", name}, {"resourceVersion", rv}};
  if (!ns.empty()) md["namespace"] = ns;
  if (!labels.empty()) md["labels"] = std::move(labels);
  if (!owner_uid.empty()) {
    md["ownerReferences"] =
        json::array{json::object{{"uid", "not-the-controller"}, {"controller", false}},
                    json::object{{"uid", owner_uid}, {"controller", true}}};
  }
  return std::make_shared<const json::value>(json::object{{"metadata", std::move(md)}});
}

std::vector<std::string> names(const std::vector<ObjectPtr>& objects) {
  std::vector<std::string> out;
  for (const auto& o : objects) out.emplace_back(object_name(*o));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ObjectKey, NamespacedAndClusterScoped) {
  EXPECT_EQ(object_key(*obj("ns", "a", "1")), "ns/a");
  EXPECT_EQ(object_key(*obj("", "node-1", "1")), "node-1");
}

TEST(Store, UpsertReturnsPreviousAndGetSeesLatest) {
  Store s;
  EXPECT_EQ(s.upsert(obj("ns", "a", "1")), nullptr);
  auto prev = s.upsert(obj("ns", "a", "2"));
  ASSERT_NE(prev, nullptr);
  EXPECT_EQ(resource_version(*prev), "1");
  EXPECT_EQ(resource_version(*s.get("ns/a")), "2");
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(s.get("ns/missing"), nullptr);
}

TEST(Store, EraseRemovesFromItemsAndIndexes) {
  Store s;
  s.add_index(std::string(indexes::kNamespace), indexes::by_namespace());
  s.upsert(obj("ns", "a", "1"));
  auto removed = s.erase("ns/a");
  ASSERT_NE(removed, nullptr);
  EXPECT_EQ(s.size(), 0u);
  EXPECT_TRUE(s.by_index(indexes::kNamespace, "ns").empty());
  EXPECT_EQ(s.erase("ns/a"), nullptr);
}

TEST(Store, LabelIndexFollowsLabelChanges) {
  Store s;
  s.add_index("stack", indexes::by_label("kstack.io/stack"));
  s.upsert(obj("ns", "a", "1", {{"kstack.io/stack", "s1"}}));
  s.upsert(obj("ns", "b", "1", {{"kstack.io/stack", "s1"}}));
  s.upsert(obj("ns", "c", "1"));
  EXPECT_EQ(names(s.by_index("stack", "s1")), (std::vector<std::string>{"a", "b"}));
  s.upsert(obj("ns", "b", "2", {{"kstack.io/stack", "s2"}}));
  EXPECT_EQ(names(s.by_index("stack", "s1")), (std::vector<std::string>{"a"}));
  EXPECT_EQ(names(s.by_index("stack", "s2")), (std::vector<std::string>{"b"}));
}

TEST(Store, ControllerUidIndexUsesOnlyTheControllerReference) {
  Store s;
  s.add_index(std::string(indexes::kControllerUid), indexes::by_controller_uid());
  s.upsert(obj("ns", "a", "1", {}, "uid-1"));
  EXPECT_EQ(names(s.by_index(indexes::kControllerUid, "uid-1")), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(s.by_index(indexes::kControllerUid, "not-the-controller").empty());
}

TEST(Store, IndexAddedLaterCoversExistingObjects) {
  Store s;
  s.upsert(obj("x", "a", "1"));
  s.add_index(std::string(indexes::kNamespace), indexes::by_namespace());
  EXPECT_EQ(names(s.by_index(indexes::kNamespace, "x")), (std::vector<std::string>{"a"}));
}

TEST(Store, ReplaceEmitsAddUpdateDeleteAndNothingForUnchanged) {
  Store s;
  s.add_index(std::string(indexes::kNamespace), indexes::by_namespace());
  s.upsert(obj("ns", "same", "1"));
  s.upsert(obj("ns", "changed", "1"));
  s.upsert(obj("ns", "gone", "1"));
  const auto same_before = s.get("ns/same");

  auto deltas =
      s.replace({obj("ns", "same", "1"), obj("ns", "changed", "5"), obj("ns", "new", "6")});
  ASSERT_EQ(deltas.size(), 3u);
  std::map<std::string, ReplaceDelta> by_name;
  for (auto& d : deltas) {
    by_name[std::string(object_name(d.object ? *d.object : *d.old_object))] = d;
  }
  EXPECT_EQ(by_name.at("changed").type, ReplaceDelta::Type::kUpdated);
  EXPECT_EQ(resource_version(*by_name.at("changed").old_object), "1");
  EXPECT_EQ(by_name.at("new").type, ReplaceDelta::Type::kAdded);
  EXPECT_EQ(by_name.at("gone").type, ReplaceDelta::Type::kDeleted);
  EXPECT_FALSE(by_name.contains("same"));
  EXPECT_EQ(s.get("ns/same"), same_before);  // the unchanged snapshot is kept
  EXPECT_EQ(names(s.by_index(indexes::kNamespace, "ns")),
            (std::vector<std::string>{"changed", "new", "same"}));
}

TEST(Store, HasSyncedOnlyAfterMarkSynced) {
  Store s;
  EXPECT_FALSE(s.has_synced());
  s.replace({});
  EXPECT_FALSE(s.has_synced());
  s.mark_synced();
  EXPECT_TRUE(s.has_synced());
}

TEST(Store, ReadersSeeConsistentSnapshotsWhileAWriterUpdates) {
  Store s;
  s.add_index(std::string(indexes::kNamespace), indexes::by_namespace());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; i < 2000; ++i) {
      s.upsert(obj("ns", "k" + std::to_string(i % 50), std::to_string(i)));
      if (i % 7 == 0) s.erase("ns/k" + std::to_string((i * 3) % 50));
    }
    stop = true;
  });
  std::size_t reads = 0;
  while (!stop) {
    for (const auto& o : s.by_index(indexes::kNamespace, "ns")) {
      ASSERT_EQ(object_namespace(*o), "ns");
      ++reads;
    }
    ASSERT_LE(s.list().size(), 50u);
  }
  writer.join();
  EXPECT_EQ(s.by_index(indexes::kNamespace, "ns").size(), s.size());
  (void)reads;
}

}  // namespace
}  // namespace kstack::informer
