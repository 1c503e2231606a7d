#include "informer/store.h"

#include <algorithm>
#include <thread>

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace kstack::informer {
// For GoogleTest's messages (found by argument-dependent lookup, so not in the anonymous
// namespace).
inline void PrintTo(WriteAnswer answer, std::ostream* out) { *out << to_string(answer); }

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
  return informer::pack(json::object{{"metadata", std::move(md)}});
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

// The indexes point at the store's entries: they must follow every way an entry changes
// (replaced in place, erased, the whole map replaced by a list) and give each object's key.
TEST(Store, KeyedIndexLookupGivesKeysAndFollowsUpsertEraseAndReplace) {
  Store s;
  s.add_index("stack", indexes::by_label("kstack.io/stack"));
  const auto keyed = [&s](std::string_view value) {
    std::vector<std::string> out;
    for (const auto& [key, object] : s.by_index_keyed("stack", value)) {
      EXPECT_EQ(key, object_key(*object));
      out.push_back(key + "@" + std::string(resource_version(*object)));
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  s.upsert(obj("ns", "a", "1", {{"kstack.io/stack", "s1"}}));
  s.upsert(obj("other", "a", "1", {{"kstack.io/stack", "s1"}}));
  EXPECT_EQ(keyed("s1"), (std::vector<std::string>{"ns/a@1", "other/a@1"}));

  s.upsert(obj("ns", "a", "2", {{"kstack.io/stack", "s1"}}));  // same entry, new object
  EXPECT_EQ(keyed("s1"), (std::vector<std::string>{"ns/a@2", "other/a@1"}));

  s.erase("other/a");
  EXPECT_EQ(keyed("s1"), (std::vector<std::string>{"ns/a@2"}));

  s.replace({obj("ns", "a", "3", {{"kstack.io/stack", "s2"}}),
             obj("ns", "b", "3", {{"kstack.io/stack", "s1"}})});
  EXPECT_EQ(keyed("s1"), (std::vector<std::string>{"ns/b@3"}));
  EXPECT_EQ(keyed("s2"), (std::vector<std::string>{"ns/a@3"}));
  // Entries replaced after the list are indexed under the list's map too.
  s.upsert(obj("ns", "b", "4", {{"kstack.io/stack", "s2"}}));
  EXPECT_TRUE(keyed("s1").empty());
  EXPECT_EQ(keyed("s2"), (std::vector<std::string>{"ns/a@3", "ns/b@4"}));
  EXPECT_TRUE(s.by_index_keyed("no-such-index", "s2").empty());
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

// Write answers against the watch. A worker's create/update answer reaches the store at some
// point after the server wrote it; meanwhile the watch may deliver that version, a newer one
// or the deletion. Each test below is one interleaving, replayed in order.

TEST(StoreWriteAnswer, NewerThanTheWatchIsCachedUntilTheWatchCatchesUp) {
  Store s;
  s.replace({obj("ns", "a", "5")}, "5");
  EXPECT_EQ(s.upsert_write_answer(obj("ns", "a", "7")), WriteAnswer::kApplied);
  EXPECT_EQ(resource_version(*s.get("ns/a")), "7");
  s.upsert(obj("ns", "a", "7"));  // the watch delivers the same write
  EXPECT_EQ(resource_version(*s.get("ns/a")), "7");
}

TEST(StoreWriteAnswer, OfACreateIsCachedBeforeTheWatchDeliversIt) {
  Store s;
  s.replace({}, "5");
  EXPECT_EQ(s.upsert_write_answer(obj("ns", "new", "6")), WriteAnswer::kApplied);
  EXPECT_NE(s.get("ns/new"), nullptr);
}

TEST(StoreWriteAnswer, DoesNotRollBackANewerVersionTheWatchDelivered) {
  Store s;
  s.add_index("stack", indexes::by_label("kstack.io/stack"));
  s.replace({obj("ns", "a", "5", {{"kstack.io/stack", "s1"}})}, "5");
  const auto answer = obj("ns", "a", "7", {{"kstack.io/stack", "s1"}});  // held by a worker
  s.upsert(obj("ns", "a", "8", {{"kstack.io/stack", "s2"}}));            // the watch moves on
  EXPECT_EQ(s.upsert_write_answer(answer), WriteAnswer::kStale);
  EXPECT_EQ(resource_version(*s.get("ns/a")), "8");
  EXPECT_TRUE(s.by_index("stack", "s1").empty());
  EXPECT_EQ(names(s.by_index("stack", "s2")), std::vector<std::string>{"a"});
}

TEST(StoreWriteAnswer, DoesNotResurrectAnObjectTheWatchDeleted) {
  Store s;
  s.add_index(std::string(indexes::kNamespace), indexes::by_namespace());
  s.replace({obj("ns", "a", "5")}, "5");
  const auto answer = obj("ns", "a", "7");
  s.upsert(obj("ns", "a", "7"));
  s.erase("ns/a", "9");  // the watch's DELETED, at the deletion's revision
  EXPECT_EQ(s.upsert_write_answer(answer), WriteAnswer::kStale);
  EXPECT_EQ(s.get("ns/a"), nullptr);
  EXPECT_TRUE(s.by_index(indexes::kNamespace, "ns").empty());
}

TEST(StoreWriteAnswer, OfACreateDoesNotResurrectAnObjectAddedAndDeletedMeanwhile) {
  Store s;
  s.replace({}, "3");
  const auto answer = obj("ns", "a", "7");  // the create's answer, not yet applied
  s.upsert(obj("ns", "a", "7"));            // watch: ADDED
  s.erase("ns/a", "8");                     // watch: DELETED
  EXPECT_EQ(s.upsert_write_answer(answer), WriteAnswer::kStale);
  EXPECT_EQ(s.get("ns/a"), nullptr);
  EXPECT_EQ(s.size(), 0u);
}

TEST(StoreWriteAnswer, OlderThanABookmarkIsStaleEvenForAnObjectNeverSeen) {
  // Everything up to the bookmark was delivered: had the object lived at 15 and still
  // existed, the watch would have added it.
  Store s;
  s.replace({}, "3");
  s.observe_resource_version("20");
  EXPECT_EQ(s.upsert_write_answer(obj("ns", "b", "15")), WriteAnswer::kStale);
  EXPECT_EQ(s.get("ns/b"), nullptr);
}

TEST(StoreWriteAnswer, AppliedIsNotRolledBackByTheWatchCatchingUpWithOlderEvents) {
  Store s;
  s.replace({obj("ns", "a", "5")}, "5");
  ASSERT_EQ(s.upsert_write_answer(obj("ns", "a", "9")), WriteAnswer::kApplied);
  const auto previous = s.upsert(obj("ns", "a", "7"));  // another write, before ours
  ASSERT_NE(previous, nullptr);
  EXPECT_EQ(resource_version(*previous), "9");
  EXPECT_EQ(resource_version(*s.get("ns/a")), "9");
  s.upsert(obj("ns", "a", "10"));
  EXPECT_EQ(resource_version(*s.get("ns/a")), "10");
}

TEST(StoreWriteAnswer, AppliedSurvivesARelistOlderThanIt) {
  Store s;
  s.replace({obj("ns", "a", "5")}, "5");
  ASSERT_EQ(s.upsert_write_answer(obj("ns", "a", "9")), WriteAnswer::kApplied);
  ASSERT_EQ(s.upsert_write_answer(obj("ns", "created", "9")), WriteAnswer::kApplied);
  s.upsert(obj("ns", "listed-gone", "6"));
  const auto deltas = s.replace({obj("ns", "a", "7")}, "8");
  EXPECT_EQ(resource_version(*s.get("ns/a")), "9");
  EXPECT_NE(s.get("ns/created"), nullptr);
  ASSERT_EQ(deltas.size(), 1u);  // only what the list really removed
  EXPECT_EQ(deltas[0].type, ReplaceDelta::Type::kDeleted);
  EXPECT_EQ(object_name(*deltas[0].old_object), "listed-gone");
}

TEST(StoreWriteAnswer, AppliedForARecreatedObjectSurvivesTheOlderDeletion) {
  Store s;
  s.replace({obj("ns", "a", "5")}, "5");
  // Deleted at 6 and created again at 8; the create's answer arrives before the watch's DELETE.
  ASSERT_EQ(s.upsert_write_answer(obj("ns", "a", "8")), WriteAnswer::kApplied);
  EXPECT_EQ(s.erase("ns/a", "6"), nullptr);
  const auto cached = s.get("ns/a");
  ASSERT_NE(cached, nullptr);
  EXPECT_EQ(resource_version(*cached), "8");
  s.erase("ns/a", "9");
  EXPECT_EQ(s.get("ns/a"), nullptr);
}

TEST(StoreWriteAnswer, AnOlderAnswerDoesNotReplaceANewerOne) {
  Store s;
  s.replace({obj("ns", "a", "5")}, "5");
  EXPECT_EQ(s.upsert_write_answer(obj("ns", "a", "9")), WriteAnswer::kApplied);
  EXPECT_EQ(s.upsert_write_answer(obj("ns", "a", "7")), WriteAnswer::kStale);
  EXPECT_EQ(resource_version(*s.get("ns/a")), "9");
}

TEST(StoreWriteAnswer, WithoutANumericResourceVersionIsLeftToTheWatch) {
  Store s;
  s.replace({obj("ns", "a", "5")}, "5");
  for (const char* rv : {"", "abc", "-7", "+7", "7a", " 7", "99999999999999999999999"}) {
    EXPECT_EQ(s.upsert_write_answer(obj("ns", "a", rv)), WriteAnswer::kUnordered) << rv;
    EXPECT_EQ(resource_version(*s.get("ns/a")), "5") << rv;
  }
}

TEST(ResourceVersionNumber, OnlyPlainDecimalNumbers) {
  EXPECT_EQ(resource_version_number("0"), 0u);
  EXPECT_EQ(resource_version_number("12345"), 12345u);
  EXPECT_EQ(resource_version_number("18446744073709551615"), 18446744073709551615u);
  EXPECT_EQ(resource_version_number(""), std::nullopt);
  EXPECT_EQ(resource_version_number("-1"), std::nullopt);
  EXPECT_EQ(resource_version_number("1.5"), std::nullopt);
  EXPECT_EQ(resource_version_number("18446744073709551616"), std::nullopt);
}

TEST(StoreWriteAnswer, ConcurrentWithTheWatchTheCachedVersionNeverGoesBack) {
  // Whatever the interleaving, the watch's last word stands: its final DELETE leaves nothing,
  // and no reader ever sees a version older than one it saw before.
  Store s;
  s.replace({}, "0");
  constexpr int kVersions = 3000;
  std::thread watch([&] {
    for (int v = 1; v <= kVersions; ++v) {
      if (v % 10 == 0) {
        s.erase("ns/a", std::to_string(v));
      } else {
        s.upsert(obj("ns", "a", std::to_string(v)));
      }
    }
  });
  std::uint64_t highest = 0;
  std::string rollback;  // the first one seen; asserted after the join
  for (int v = 1; v <= kVersions; v += 3) {
    s.upsert_write_answer(obj("ns", "a", std::to_string(v)));
    if (const auto o = s.get("ns/a")) {
      const auto seen = resource_version_number(resource_version(*o)).value_or(0);
      if (seen < highest && rollback.empty()) {
        rollback = std::to_string(seen) + " after " + std::to_string(highest);
      }
      highest = std::max(highest, seen);
    }
  }
  watch.join();
  EXPECT_EQ(rollback, "");
  EXPECT_EQ(s.get("ns/a"), nullptr);
}

}  // namespace
}  // namespace kstack::informer
