#include "informer/store.h"

#include <algorithm>
#include <charconv>
#include <mutex>
#include <utility>

#include <boost/json.hpp>

namespace kstack::informer {
namespace json = boost::json;

namespace {

template <class Value>
auto metadata(const Value& object) -> decltype(object.if_object()) {
  const auto* o = object.if_object();
  if (o == nullptr) return nullptr;
  const auto* md = o->if_contains("metadata");
  return md ? md->if_object() : nullptr;
}

template <class Value>
std::string_view md_string(const Value& object, std::string_view field) {
  const auto* md = metadata(object);
  if (md == nullptr) return {};
  const auto* v = md->if_contains(field);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view{};
}

}  // namespace

std::string_view resource_version(const json::value& object) {
  return md_string(object, "resourceVersion");
}
std::string_view object_namespace(const json::value& object) {
  return md_string(object, "namespace");
}
std::string_view object_name(const json::value& object) { return md_string(object, "name"); }
std::string_view resource_version(const PackedValue& object) {
  return md_string(object, "resourceVersion");
}
std::string_view object_namespace(const PackedValue& object) {
  return md_string(object, "namespace");
}
std::string_view object_name(const PackedValue& object) { return md_string(object, "name"); }

std::optional<std::uint64_t> resource_version_number(std::string_view rv) {
  std::uint64_t n = 0;
  if (rv.empty() || rv.front() < '0' || rv.front() > '9') return std::nullopt;  // no sign
  const auto [end, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), n);
  if (ec != std::errc{} || end != rv.data() + rv.size()) return std::nullopt;
  return n;
}

std::string_view to_string(WriteAnswer answer) {
  switch (answer) {
    case WriteAnswer::kApplied:
      return "applied";
    case WriteAnswer::kStale:
      return "stale";
    case WriteAnswer::kUnordered:
      return "unordered";
  }
  return "unknown";
}

std::string object_key(std::string_view ns, std::string_view name) {
  if (ns.empty()) return std::string(name);
  std::string key;
  key.reserve(ns.size() + 1 + name.size());
  key.append(ns).append("/").append(name);
  return key;
}

std::string object_key(const json::value& object) {
  return object_key(object_namespace(object), object_name(object));
}
std::string object_key(const PackedValue& object) {
  return object_key(object_namespace(object), object_name(object));
}

namespace indexes {

IndexFunc by_namespace() {
  return [](const PackedValue& o) -> std::vector<std::string> {
    return {std::string(object_namespace(o))};
  };
}

IndexFunc by_controller_uid() {
  return [](const PackedValue& o) -> std::vector<std::string> {
    const auto* md = metadata(o);
    const auto* refs = md ? md->if_contains("ownerReferences") : nullptr;
    if (refs == nullptr || !refs->is_array()) return {};
    for (const auto& ref : refs->get_array()) {
      const auto* r = ref.if_object();
      if (r == nullptr) continue;
      const auto* controller = r->if_contains("controller");
      const auto* uid = r->if_contains("uid");
      if (controller && controller->is_bool() && controller->get_bool() && uid &&
          uid->is_string()) {
        return {std::string(uid->get_string())};
      }
    }
    return {};
  };
}

IndexFunc by_label(std::string label_key) {
  return [key = std::move(label_key)](const PackedValue& o) -> std::vector<std::string> {
    const auto* md = metadata(o);
    const auto* labels = md ? md->if_contains("labels") : nullptr;
    if (labels == nullptr || !labels->is_object()) return {};
    const auto* v = labels->get_object().if_contains(key);
    if (v == nullptr || !v->is_string()) return {};
    return {std::string(v->get_string())};
  };
}

}  // namespace indexes

void Store::add_index(std::string name, IndexFunc func) {
  std::unique_lock lock(mu_);
  auto& index = indexes_[name];
  index.func = std::move(func);
  index.values.clear();
  for (const auto& item : items_) {
    for (auto& v : index.func(*item.second)) index.values[std::move(v)].insert(&item);
  }
}

void Store::index_locked(const Item& item) {
  for (auto& [name, index] : indexes_) {
    for (auto& v : index.func(*item.second)) index.values[std::move(v)].insert(&item);
  }
}

void Store::unindex_locked(const Item& item) {
  for (auto& [name, index] : indexes_) {
    for (const auto& v : index.func(*item.second)) {
      auto it = index.values.find(v);
      if (it == index.values.end()) continue;
      it->second.erase(&item);
      if (it->second.empty()) index.values.erase(it);
    }
  }
}

void Store::observe_locked(std::string_view rv) {
  if (const auto n = resource_version_number(rv)) watch_version_ = std::max(watch_version_, *n);
}

ObjectPtr Store::upsert_locked(std::string key, ObjectPtr object) {
  auto [it, inserted] = items_.try_emplace(std::move(key));
  if (!inserted) unindex_locked(*it);
  ObjectPtr previous = std::exchange(it->second, std::move(object));
  index_locked(*it);
  return previous;
}

namespace {

// True if `cached` is a later version than `incoming`. The watch is ordered, so a cached
// object later than the watch's own event (or than a fresh list) is a write answer the watch
// has not reached yet: replacing it would roll the object back until the watch catches up.
bool later(const PackedValue& cached, const PackedValue& incoming) {
  const auto c = resource_version_number(resource_version(cached));
  const auto i = resource_version_number(resource_version(incoming));
  return c && i && *c > *i;
}

}  // namespace

ObjectPtr Store::upsert(ObjectPtr object) {
  std::string key = object_key(*object);
  std::unique_lock lock(mu_);
  observe_locked(resource_version(*object));
  if (auto it = items_.find(key); it != items_.end() && later(*it->second, *object)) {
    return it->second;
  }
  return upsert_locked(std::move(key), std::move(object));
}

WriteAnswer Store::upsert_write_answer(ObjectPtr object) {
  const auto version = resource_version_number(resource_version(*object));
  if (!version) return WriteAnswer::kUnordered;
  std::string key = object_key(*object);
  std::unique_lock lock(mu_);
  if (*version <= watch_version_) return WriteAnswer::kStale;
  if (auto it = items_.find(key); it != items_.end()) {
    // A cached object without a numeric version cannot be ordered: keep what is there.
    const auto cached = resource_version_number(resource_version(*it->second));
    if (!cached || *version <= *cached) return WriteAnswer::kStale;
  }
  upsert_locked(std::move(key), std::move(object));
  return WriteAnswer::kApplied;
}

void Store::observe_resource_version(std::string_view rv) {
  std::unique_lock lock(mu_);
  observe_locked(rv);
}

ObjectPtr Store::erase(const std::string& key, std::string_view deleted_at) {
  std::unique_lock lock(mu_);
  observe_locked(deleted_at);
  auto it = items_.find(key);
  if (it == items_.end()) return nullptr;
  if (const auto cached = resource_version_number(resource_version(*it->second)),
      deleted = resource_version_number(deleted_at);
      cached && deleted && *cached > *deleted) {
    return nullptr;  // a write answer re-created it after this deletion: the watch is behind
  }
  unindex_locked(*it);
  ObjectPtr removed = std::move(it->second);
  items_.erase(it);
  return removed;
}

std::vector<ReplaceDelta> Store::replace(std::vector<ObjectPtr> objects,
                                         std::string_view list_version) {
  std::vector<ReplaceDelta> deltas;
  std::unique_lock lock(mu_);
  observe_locked(list_version);
  Items fresh;
  fresh.reserve(objects.size());
  const auto listed_at = resource_version_number(list_version);
  for (auto& obj : objects) {
    std::string key = object_key(*obj);
    auto it = items_.find(key);
    if (it == items_.end()) {
      deltas.push_back({ReplaceDelta::Type::kAdded, nullptr, obj});
    } else if (later(*it->second, *obj)) {
      obj = it->second;  // a write answer newer than the list: the watch will deliver it
    } else if (resource_version(*it->second) != resource_version(*obj)) {
      deltas.push_back({ReplaceDelta::Type::kUpdated, it->second, obj});
    } else {
      obj = it->second;  // unchanged: keep the snapshot readers may already hold
    }
    fresh.emplace(std::move(key), std::move(obj));
  }
  for (auto& [key, obj] : items_) {
    if (fresh.contains(key)) continue;
    const auto cached = resource_version_number(resource_version(*obj));
    if (listed_at && cached && *cached > *listed_at) {
      // Created (a write answer) after the list's snapshot: the watch from the list's
      // version delivers its ADDED, or its DELETED.
      fresh.emplace(key, obj);
      continue;
    }
    deltas.push_back({ReplaceDelta::Type::kDeleted, obj, nullptr});
  }
  items_ = std::move(fresh);
  for (auto& [name, index] : indexes_) index.values.clear();
  for (const auto& item : items_) index_locked(item);
  return deltas;
}

ObjectPtr Store::get(const std::string& key) const {
  std::shared_lock lock(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Store::list() const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(items_.size());
  for (const auto& [key, obj] : items_) out.push_back(obj);
  return out;
}

std::vector<std::string> Store::keys() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& [key, obj] : items_) out.push_back(key);
  return out;
}

std::vector<ObjectPtr> Store::by_index(std::string_view index, std::string_view value) const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  auto idx = indexes_.find(index);
  if (idx == indexes_.end()) return out;
  auto it = idx->second.values.find(std::string(value));
  if (it == idx->second.values.end()) return out;
  out.reserve(it->second.size());
  for (const Item* item : it->second) out.push_back(item->second);
  return out;
}

std::vector<std::pair<std::string, ObjectPtr>> Store::by_index_keyed(std::string_view index,
                                                                     std::string_view value) const {
  std::shared_lock lock(mu_);
  std::vector<std::pair<std::string, ObjectPtr>> out;
  auto idx = indexes_.find(index);
  if (idx == indexes_.end()) return out;
  auto it = idx->second.values.find(std::string(value));
  if (it == idx->second.values.end()) return out;
  out.reserve(it->second.size());
  for (const Item* item : it->second) out.emplace_back(item->first, item->second);
  return out;
}

std::size_t Store::size() const {
  std::shared_lock lock(mu_);
  return items_.size();
}

bool Store::has_synced() const {
  std::shared_lock lock(mu_);
  return synced_;
}

void Store::mark_synced() {
  std::unique_lock lock(mu_);
  synced_ = true;
}

}  // namespace kstack::informer
