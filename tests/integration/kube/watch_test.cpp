// Watch against a real kube-apiserver: ordering, resumption from a resourceVersion, expiry
// after etcd compaction, bookmarks and cancellation.
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/kube/client_fixture.h"

namespace kstack::kube {
namespace {

using testing::admin;
using testing::config_map;
using testing::make_namespace;
using testing::str_at;
namespace json = boost::json;

struct Seen {
  WatchEvent::Type type;
  std::string name;
  std::string resource_version;
  bool operator==(const Seen&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Seen& s) {
  return os << to_string(s.type) << " " << s.name << "@" << s.resource_version;
}

// Runs a watch from `rv` and collects non-bookmark events until `count` are seen.
std::vector<Seen> collect(Client& c, const std::string& ns, const std::string& rv,
                          std::size_t count) {
  std::vector<Seen> seen;
  WatchOptions o;
  o.resource_version = rv;
  o.timeout_seconds = 30;
  // The controller-manager publishes kube-root-ca.crt into every new namespace, at a moment
  // of its choosing: leave it out so that only the test's own changes are compared.
  o.field_selector = "metadata.name!=kube-root-ca.crt";
  auto r = c.watch(resources::kConfigMaps, ns, o, [&](WatchEvent&& ev) {
    if (ev.type != WatchEvent::Type::kBookmark) {
      seen.push_back({ev.type, str_at(ev.object, "/metadata/name"),
                      str_at(ev.object, "/metadata/resourceVersion")});
    }
    return seen.size() < count;
  });
  EXPECT_TRUE(r) << r.error().to_string();
  return seen;
}

TEST(Watch, SeesAddedModifiedDeletedInOrder) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  auto start = c->list(resources::kConfigMaps, ns);
  ASSERT_TRUE(start);
  const auto rv0 = str_at(*start, "/metadata/resourceVersion");

  auto created = c->create(resources::kConfigMaps, ns, config_map("w"));
  ASSERT_TRUE(created);
  auto patched =
      c->patch(resources::kConfigMaps, ns, "w", PatchType::kMerge, R"({"data":{"k":"2"}})");
  ASSERT_TRUE(patched);
  auto deleted = c->remove(resources::kConfigMaps, ns, "w");
  ASSERT_TRUE(deleted);

  const auto seen = collect(*c, ns, rv0, 3);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0],
            (Seen{WatchEvent::Type::kAdded, "w", str_at(*created, "/metadata/resourceVersion")}));
  EXPECT_EQ(seen[1], (Seen{WatchEvent::Type::kModified, "w",
                           str_at(*patched, "/metadata/resourceVersion")}));
  EXPECT_EQ(seen[2].type, WatchEvent::Type::kDeleted);
  EXPECT_EQ(seen[2].name, "w");
}

TEST(Watch, ResumesFromAResourceVersionWithoutMissingOrRepeatingEvents) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  auto start = c->list(resources::kConfigMaps, ns);
  ASSERT_TRUE(start);
  const auto rv0 = str_at(*start, "/metadata/resourceVersion");
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(c->create(resources::kConfigMaps, ns, config_map("r" + std::to_string(i))));
  }
  ASSERT_TRUE(
      c->patch(resources::kConfigMaps, ns, "r0", PatchType::kMerge, R"({"data":{"k":"x"}})"));
  ASSERT_TRUE(c->remove(resources::kConfigMaps, ns, "r1"));

  const auto all = collect(*c, ns, rv0, 8);
  ASSERT_EQ(all.size(), 8u);
  // Stop after 3 events, then resume from the last version seen.
  const auto first = collect(*c, ns, rv0, 3);
  ASSERT_EQ(first.size(), 3u);
  const auto rest = collect(*c, ns, first.back().resource_version, 5);
  std::vector<Seen> joined = first;
  joined.insert(joined.end(), rest.begin(), rest.end());
  EXPECT_EQ(joined, all);
}

TEST(Watch, FromACompactedResourceVersionIsTypedGone) {
  // Core events are not in the apiserver's watch cache (--watch-cache-sizes defaults them to
  // 0), so this watch goes to etcd, where the compaction makes the old version unavailable.
  const ResourceType events{"", "v1", "events", "Event", true};
  auto c = admin();
  const auto ns = make_namespace(*c);
  auto event = [&](const std::string& name) {
    return json::value{
        {"apiVersion", "v1"},
        {"kind", "Event"},
        {"metadata", {{"name", name}}},
        {"involvedObject", {{"kind", "ConfigMap"}, {"name", "x"}, {"namespace", ns}}},
        {"reason", "Test"},
        {"message", "compaction test"},
        {"type", "Normal"}};
  };
  auto first = c->create(events, ns, event("old"));
  ASSERT_TRUE(first) << first.error().to_string();
  const auto old_rv = str_at(*first, "/metadata/resourceVersion");
  // Compaction keeps the revision it is made at: write more than once after `old`, so that
  // the watch's first revision (old + 1) is strictly older than the compacted one.
  for (const char* name : {"newer-1", "newer-2", "newer-3"}) {
    ASSERT_TRUE(c->create(events, ns, event(name)));
  }
  auto compacted = testenv::control_plane().compact_etcd();
  ASSERT_TRUE(compacted) << compacted.error();

  WatchOptions o;
  o.resource_version = old_rv;
  o.timeout_seconds = 10;
  int seen = 0;
  auto r = c->watch(events, ns, o, [&](WatchEvent&&) {
    ++seen;
    return true;
  });
  ASSERT_FALSE(r) << "watch from compacted version " << old_rv << " succeeded with " << seen
                  << " events";
  EXPECT_EQ(r.error().kind, ErrorKind::kGone) << r.error().to_string();
  EXPECT_EQ(r.error().http_status, 410);
  EXPECT_EQ(seen, 0);
}

TEST(Watch, CancelFromAnotherThreadEndsAnIdleWatch) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  ASSERT_TRUE(c->create(resources::kConfigMaps, ns, config_map("present")));
  CancelToken cancel;
  std::promise<void> streaming;
  bool signalled = false;
  auto fut = std::async(std::launch::async, [&] {
    WatchOptions o;
    o.resource_version = "0";  // the current state arrives first, then the stream idles
    o.timeout_seconds = 300;
    return c->watch(
        resources::kConfigMaps, ns, o,
        [&](WatchEvent&&) {
          if (!signalled) {
            signalled = true;
            streaming.set_value();
          }
          return true;
        },
        cancel);
  });
  ASSERT_EQ(streaming.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  cancel.cancel();
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  auto r = fut.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kCancelled) << r.error().to_string();
}

TEST(Watch, HandlerReturningFalseStopsTheWatchCleanly) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  ASSERT_TRUE(c->create(resources::kConfigMaps, ns, config_map("a")));
  ASSERT_TRUE(c->create(resources::kConfigMaps, ns, config_map("b")));
  int seen = 0;
  WatchOptions o;
  o.resource_version = "0";  // start with the current state as ADDED events
  auto r = c->watch(resources::kConfigMaps, ns, o, [&](WatchEvent&&) { return ++seen < 1; });
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(seen, 1);
}

TEST(Watch, ServerSideTimeoutEndsTheWatchWithoutError) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  WatchOptions o;
  o.timeout_seconds = 1;
  auto r = c->watch(resources::kConfigMaps, ns, o, [](WatchEvent&&) { return true; });
  EXPECT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(c->metrics().snapshot().at({"WATCH", "200"}), 1u);
}

}  // namespace
}  // namespace kstack::kube
