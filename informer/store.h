// The informer cache: a thread-safe map of namespace/name -> immutable object snapshots, with
// secondary indexes (namespace, controller owner UID, labels, custom functions).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <boost/json/value.hpp>

namespace kstack::informer {

// Objects are shared, never mutated once stored: readers keep a snapshot without copying and
// without holding the store's lock.
using ObjectPtr = std::shared_ptr<const boost::json::value>;

// "namespace/name" for namespaced objects, "name" otherwise (client-go's MetaNamespaceKeyFunc).
std::string object_key(const boost::json::value& object);
std::string object_key(std::string_view ns, std::string_view name);
std::string_view resource_version(const boost::json::value& object);
std::string_view object_namespace(const boost::json::value& object);
std::string_view object_name(const boost::json::value& object);

// Returns the index values of an object (none, one or several).
using IndexFunc = std::function<std::vector<std::string>(const boost::json::value&)>;

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

class Store {
 public:
  // Registers an index; call before objects are added (existing objects are indexed too).
  void add_index(std::string name, IndexFunc func);

  // Inserts or replaces; returns the previous object, if any.
  ObjectPtr upsert(ObjectPtr object);
  // Removes by key; returns the removed object, if any.
  ObjectPtr erase(const std::string& key);
  // Replaces the whole content (a fresh LIST) and returns the differences: objects whose
  // resourceVersion did not change produce no delta.
  std::vector<ReplaceDelta> replace(std::vector<ObjectPtr> objects);

  ObjectPtr get(const std::string& key) const;
  std::vector<ObjectPtr> list() const;
  std::vector<std::string> keys() const;
  std::vector<ObjectPtr> by_index(std::string_view index, std::string_view value) const;
  std::size_t size() const;

  // True once the first complete list has been stored.
  bool has_synced() const;
  void mark_synced();

 private:
  struct Index {
    IndexFunc func;
    std::unordered_map<std::string, std::unordered_set<std::string>> values;  // value -> keys
  };
  void index_locked(const std::string& key, const boost::json::value& object);
  void unindex_locked(const std::string& key, const boost::json::value& object);

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, ObjectPtr> items_;
  std::map<std::string, Index, std::less<>> indexes_;
  bool synced_ = false;
};

}  // namespace kstack::informer
