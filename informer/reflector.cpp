#include "informer/reflector.h"

#include <random>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <boost/json.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace kstack::informer {
namespace json = boost::json;

Reflector::Reflector(std::shared_ptr<kube::Client> client, ReflectorOptions options, Store& store,
                     EventSink& sink)
    : client_(std::move(client)), options_(std::move(options)), store_(store), sink_(sink) {}

std::string Reflector::last_resource_version() const {
  std::lock_guard lock(mu_);
  return last_rv_;
}

ReflectorStats Reflector::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void Reflector::set_resource_version(std::string rv) {
  std::lock_guard lock(mu_);
  last_rv_ = std::move(rv);
}

ObjectPtr Reflector::ingest(json::value object) const {
  if (auto* o = object.if_object(); o && options_.drop_managed_fields) {
    if (auto* md = o->if_contains("metadata"); md && md->is_object()) {
      md->get_object().erase("managedFields");
    }
  }
  if (options_.transform) options_.transform(object);
  return pack(object);
}

namespace {

// The List's resourceVersion, to watch from. A List without one cannot be resumed from: the
// watch would start "from any version" and could miss or repeat changes, so it is refused.
kube::Result<std::string> list_version(const json::object& list, std::string_view plural) {
  const auto* md = list.if_contains("metadata");
  const auto* rv =
      md && md->is_object() ? md->get_object().if_contains("resourceVersion") : nullptr;
  if (rv == nullptr || !rv->is_string() || rv->get_string().empty()) {
    return kube::make_error(kube::ErrorKind::kDecode,
                            fmt::format("LIST {}: metadata.resourceVersion missing", plural));
  }
  return std::string(rv->get_string());
}

}  // namespace

kube::Result<std::vector<ObjectPtr>> Reflector::fetch(std::string& version) const {
  kube::ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.limit = options_.page_size > 0 ? options_.page_size : kListPageSize;
  // Page by page (as Client::list_all does, without keeping the pages): each page's items are
  // cached, then the page is freed before the next one is read, so a list of N objects never
  // holds N parsed DOMs besides the cache (their freed memory would stay in the heap).
  const std::string what = fmt::format("LIST {}", options_.type.plural);
  const std::string api_version = options_.type.api_version();
  std::vector<ObjectPtr> objects;
  for (bool first = true;; first = false) {
    // The page's DOM in an arena of its own, freed whole once its items are packed: parsed on
    // the heap, its many small blocks would sit between the packed objects made from it and
    // keep their pages resident after it is gone (measured: ~1.4 KB per Service, 2.2 KB per
    // StatefulSet of RSS beyond the packed bytes).
    json::monotonic_resource arena;
    auto page = client_->list(options_.type, options_.namespace_name, lo, &arena);
    if (!page) return tl::unexpected(std::move(page.error()));
    // Checked without throwing, as this thread must survive any answer.
    auto* list = page->if_object();
    if (list == nullptr) {
      return kube::make_error(kube::ErrorKind::kDecode,
                              fmt::format("{}: the answer is not a List object", what));
    }
    auto* items = list->if_contains("items");
    if (items != nullptr && !items->is_array() && !items->is_null()) {
      return kube::make_error(kube::ErrorKind::kDecode,
                              fmt::format("{}: \"items\" is not an array", what));
    }
    const auto* md = list->if_contains("metadata");
    const auto* next = md && md->is_object() ? md->get_object().if_contains("continue") : nullptr;
    if (next != nullptr && !next->is_string() && !next->is_null()) {
      return kube::make_error(kube::ErrorKind::kDecode,
                              fmt::format("{}: \"metadata.continue\" is not a string", what));
    }
    if (first) {
      // Later pages are served from the first page's snapshot: its version is the list's.
      auto rv = list_version(*list, options_.type.plural);
      if (!rv) return tl::unexpected(std::move(rv.error()));
      version = std::move(*rv);
    }
    if (items != nullptr && items->is_array()) {
      objects.reserve(objects.size() + items->get_array().size());
      for (auto& item : items->get_array()) {
        auto* o = item.if_object();
        if (o == nullptr) continue;  // not an object: nothing a cache could key
        // A List's items carry no apiVersion/kind; fill them in so cached objects are complete.
        if (!o->contains("apiVersion")) (*o)["apiVersion"] = api_version;
        if (!o->contains("kind")) (*o)["kind"] = options_.type.kind;
        objects.push_back(ingest(std::move(item)));
      }
    }
    if (next == nullptr || !next->is_string() || next->get_string().empty()) break;
    lo.continue_token = std::string(next->get_string());
  }
  return objects;
}

bool Reflector::list(const kube::CancelToken& cancel) {
  std::string rv;
  auto objects = fetch(rv);
  {
    std::lock_guard lock(mu_);
    ++stats_.lists;
    if (!objects) ++stats_.errors;
    if (!objects && objects.error().is(kube::ErrorKind::kDecode)) ++stats_.decode_errors;
  }
  if (!objects) {
    spdlog::warn("reflector {}: list failed: {}", options_.type.plural,
                 objects.error().to_string());
    return false;
  }
  if (cancel.cancelled()) return false;
  auto deltas = store_.replace(std::move(*objects), rv);
#ifdef __GLIBC__
  // The list's pages were parsed into memory freed since, between the cached blocks: give the
  // whole free pages back (a list is rare: start-up and after 410 Gone).
  malloc_trim(0);
#endif
  set_resource_version(std::move(rv));
  store_.mark_synced();
  for (const auto& d : deltas) {
    switch (d.type) {
      case ReplaceDelta::Type::kAdded:
        sink_.on_add(d.object);
        break;
      case ReplaceDelta::Type::kUpdated:
        sink_.on_update(d.old_object, d.object);
        break;
      case ReplaceDelta::Type::kDeleted:
        sink_.on_delete(d.old_object, true);
        break;
    }
  }
  sink_.on_listed();
  return true;
}

kube::Result<void> Reflector::watch(const kube::CancelToken& cancel) {
  static thread_local std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<std::int64_t> timeout(options_.min_watch_timeout.count(),
                                                      options_.max_watch_timeout.count());
  kube::WatchOptions wo;
  wo.label_selector = options_.label_selector;
  wo.field_selector = options_.field_selector;
  wo.resource_version = last_resource_version();
  wo.allow_bookmarks = true;
  wo.timeout_seconds = static_cast<int>(timeout(rng));
  // Bookmarks arrive about once a minute; silence for well over the watch's own timeout
  // means the connection is dead even if TCP has not noticed.
  wo.idle_timeout = std::chrono::seconds(*wo.timeout_seconds + 60);
  {
    std::lock_guard lock(mu_);
    ++stats_.watches;
  }
  return client_->watch(
      options_.type, options_.namespace_name, wo,
      [&](kube::WatchEvent&& ev) {
        std::string rv(resource_version(ev.object));
        switch (ev.type) {
          case kube::WatchEvent::Type::kBookmark:
            store_.observe_resource_version(rv);
            break;
          case kube::WatchEvent::Type::kAdded:
          case kube::WatchEvent::Type::kModified: {
            auto obj = ingest(std::move(ev.object));
            auto prev = store_.upsert(obj);
            if (prev) {
              sink_.on_update(prev, obj);
            } else {
              sink_.on_add(obj);
            }
            break;
          }
          case kube::WatchEvent::Type::kDeleted: {
            auto obj = ingest(std::move(ev.object));  // handed to handlers, not cached
            store_.erase(object_key(*obj), rv);
            sink_.on_delete(obj, false);
            break;
          }
        }
        if (!rv.empty()) set_resource_version(std::move(rv));
        return !cancel.cancelled();
      },
      cancel);
}

void Reflector::run(const kube::CancelToken& cancel) {
  Backoff backoff(options_.backoff_initial, options_.backoff_max);
  bool need_list = true;
  while (!cancel.cancelled()) {
    if (need_list) {
      if (!list(cancel)) {
        if (!sleep_for(backoff.next(), cancel)) return;
        continue;
      }
      need_list = false;
    }
    auto r = watch(cancel);
    if (cancel.cancelled()) return;
    if (r) continue;  // the server ended the watch (timeout): resume from the last version
    if (r.error().is(kube::ErrorKind::kGone)) {
      // The version is compacted: only a fresh list can tell what changed meanwhile.
      spdlog::info("reflector {}: {}; re-listing", options_.type.plural, r.error().to_string());
      std::lock_guard lock(mu_);
      ++stats_.relists_after_gone;
      need_list = true;
      continue;
    }
    if (r.error().is(kube::ErrorKind::kDecode)) {
      // An event that could not be read may have been a change: resuming after it would lose
      // it, so the cache is rebuilt from a list (after the backoff below).
      std::lock_guard lock(mu_);
      ++stats_.decode_errors;
      need_list = true;
    }
    {
      std::lock_guard lock(mu_);
      ++stats_.errors;
    }
    spdlog::warn("reflector {}: watch failed: {}", options_.type.plural, r.error().to_string());
    if (!sleep_for(backoff.next(), cancel)) return;
  }
}

}  // namespace kstack::informer
