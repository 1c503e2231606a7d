// The informer cache: a thread-safe map of namespace/name -> immutable object snapshots, with
// secondary indexes (namespace, controller owner UID, labels, custom functions).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>

#include "informer/packed.h"

namespace kstack::informer {

// Objects are shared, never mutated once stored: readers keep a snapshot without copying and
// without holding the store's lock. Each is packed (informer/packed.h) and read in place.
using ObjectPtr = PackedPtr;

// "namespace/name" for namespaced objects, "name" otherwise (client-go's MetaNamespaceKeyFunc).
std::string object_key(const boost::json::value& object);
std::string object_key(const PackedValue& object);
std::string object_key(std::string_view ns, std::string_view name);
std::string_view resource_version(const boost::json::value& object);
std::string_view resource_version(const PackedValue& object);
std::string_view object_namespace(const boost::json::value& object);
std::string_view object_namespace(const PackedValue& object);
std::string_view object_name(const boost::json::value& object);
std::string_view object_name(const PackedValue& object);

// A resourceVersion as the number it is on a kube-apiserver backed by etcd3: the etcd revision
// of the object's last write, one counter for the whole cluster, so versions of different
// objects compare too. Kubernetes calls the value opaque; kstack relies on this (as the
// apiserver's own watch cache does) only to order a write's answer against the watch, and
// treats anything that is not a plain decimal number as unordered (std::nullopt).
std::optional<std::uint64_t> resource_version_number(std::string_view rv);

// Returns the index values of an object (none, one or several).
using IndexFunc = std::function<std::vector<std::string>(const PackedValue&)>;

namespace indexes {
inline constexpr std::string_view kNamespace = "namespace";
inline constexpr std::string_view kControllerUid = "controller-uid";
IndexFunc by_namespace();
IndexFunc by_controller_uid();              // metadata.ownerReferences[controller=true].uid
IndexFunc by_label(std::string label_key);  // the label's value, if present
}  // namespace indexes

// What changed when a list replaced the cache (used by the reflector after a re-list).
struct ReplaceDelta {
  enum class Type { kAdded, kUpdated, kDeleted };
  Type type;
  ObjectPtr old_object;  // for kUpdated and kDeleted
  ObjectPtr object;      // for kAdded and kUpdated
};

// What Store::upsert_write_answer did with the object a write request returned.
enum class WriteAnswer {
  kApplied,    // newer than the cached object and than anything the watch delivered
  kStale,      // the watch already delivered this version, a newer one or the deletion
  kUnordered,  // the answer's resourceVersion is not a number: left for the watch to deliver
};
std::string_view to_string(WriteAnswer answer);

// Changes come from the watch (upsert, erase, replace, observe_resource_version: the
// reflector's calls, authoritative) or from a write's answer (upsert_write_answer), which is
// ordered against the watch so that it never rolls an object back nor resurrects a deleted one.
class Store {
 public:
  // Registers an index; call before objects are added (existing objects are indexed too).
  void add_index(std::string name, IndexFunc func);

  // The watch's ADDED/MODIFIED: inserts or replaces; returns the previous object, if any.
  // A cached write answer later than `object` stays (the watch is behind it and will deliver
  // it); then the returned object is that write answer, still cached.
  ObjectPtr upsert(ObjectPtr object);
  // The watch's DELETED: removes by key; returns the removed object, if any.
  // `deleted_at` is the DELETED event's resourceVersion (the deletion's revision). A cached
  // write answer later than the deletion (the object re-created since) stays.
  ObjectPtr erase(const std::string& key, std::string_view deleted_at = {});
  // Replaces the whole content (a fresh LIST at `list_version`) and returns the differences:
  // objects whose resourceVersion did not change produce no delta. Write answers later than
  // the list stay, as in upsert.
  std::vector<ReplaceDelta> replace(std::vector<ObjectPtr> objects,
                                    std::string_view list_version = {});
  // A watch BOOKMARK: every change up to `rv` has been delivered.
  void observe_resource_version(std::string_view rv);

  // The object a create/update/patch returned, from a worker thread. Cached only if its
  // resourceVersion is newer than both the cached object's and every version the watch has
  // delivered: once the watch went past it, the cache already holds that write, a later
  // one, or the object's deletion (which is how a deleted object is never resurrected, with no
  // per-object tombstone to keep). Assumes the answer matches this store's selector.
  WriteAnswer upsert_write_answer(ObjectPtr object);

  ObjectPtr get(const std::string& key) const;
  std::vector<ObjectPtr> list() const;
  std::vector<std::string> keys() const;
  std::vector<ObjectPtr> by_index(std::string_view index, std::string_view value) const;
  // The same with each object's key ("namespace/name"), which the caller then need not read
  // out of the object: a cached object is cold memory, the index and its keys are not.
  std::vector<std::pair<std::string, ObjectPtr>> by_index_keyed(std::string_view index,
                                                                std::string_view value) const;
  std::size_t size() const;

  // True once the first complete list has been stored.
  bool has_synced() const;
  void mark_synced();

 private:
  using Items = std::unordered_map<std::string, ObjectPtr>;
  // An entry of items_: its address is stable while it is in the map (unordered_map nodes do
  // not move on rehash, nor when the whole map is moved), so indexes point at it instead of
  // holding a copy of its key — one pointer per indexed object instead of a string, and a
  // lookup by index reads the entry without hashing the key again.
  using Item = Items::value_type;
  struct Index {
    IndexFunc func;
    std::unordered_map<std::string, std::unordered_set<const Item*>> values;  // value -> items
  };
  // Both take the entry while it is in items_ (unindex before erasing it).
  void index_locked(const Item& item);
  void unindex_locked(const Item& item);
  ObjectPtr upsert_locked(std::string key, ObjectPtr object);
  void observe_locked(std::string_view rv);

  mutable std::shared_mutex mu_;
  Items items_;
  std::map<std::string, Index, std::less<>> indexes_;
  bool synced_ = false;
  // The highest resourceVersion the watch delivered (events, bookmarks, list versions).
  std::uint64_t watch_version_ = 0;
};

}  // namespace kstack::informer
