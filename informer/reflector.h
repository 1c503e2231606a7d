// The reflector: keeps a Store equal to the API server's state of one resource type by
// listing, then watching from the list's resourceVersion (client-go's Reflector, kube-rs's
// watcher). It resumes a dropped watch from the last version seen, re-lists after 410 Gone,
// and backs off with jitter on errors. Deltas go to an EventSink on the reflector's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "informer/backoff.h"
#include "informer/store.h"
#include "kube/client.h"

namespace kstack::informer {

// Page size of the initial list (client-go's pager default).
inline constexpr std::int64_t kListPageSize = 500;
// A watch asks the server to end it after a random duration in [min, max] (client-go: 5–10 min),
// so that load spreads and connections are refreshed.
inline constexpr std::chrono::seconds kMinWatchTimeout{300};
inline constexpr std::chrono::seconds kMaxWatchTimeout{600};

struct ReflectorOptions {
  kube::ResourceType type;
  std::string namespace_name;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  std::int64_t page_size = kListPageSize;
  bool drop_managed_fields = true;  // metadata.managedFields is large and unused by kstack
  std::function<void(boost::json::value&)> transform;  // applied after dropping managedFields
  std::chrono::seconds min_watch_timeout = kMinWatchTimeout;
  std::chrono::seconds max_watch_timeout = kMaxWatchTimeout;
  std::chrono::milliseconds backoff_initial = kBackoffInitial;
  std::chrono::milliseconds backoff_max = kBackoffMax;
};

// Receives what changed, in order, on the reflector's thread.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_add(const ObjectPtr& object) = 0;
  virtual void on_update(const ObjectPtr& old_object, const ObjectPtr& object) = 0;
  // final_state_unknown: the deletion was inferred from a re-list, `object` is the last state
  // the cache had (client-go's DeletedFinalStateUnknown).
  virtual void on_delete(const ObjectPtr& object, bool final_state_unknown) = 0;
  // After every completed list, once its deltas were delivered (the store is synced).
  virtual void on_listed() {}
};

struct ReflectorStats {
  std::uint64_t lists = 0;
  std::uint64_t watches = 0;
  std::uint64_t relists_after_gone = 0;
  std::uint64_t errors = 0;
  std::uint64_t decode_errors = 0;  // answers that were not what the API promises (kDecode)
};

class Reflector {
 public:
  Reflector(std::shared_ptr<kube::Client> client, ReflectorOptions options, Store& store,
            EventSink& sink);

  // Lists and watches until `cancel` fires. Never returns early on errors: they are logged,
  // counted and retried with backoff.
  void run(const kube::CancelToken& cancel);

  std::string last_resource_version() const;
  ReflectorStats stats() const;

 private:
  bool list(const kube::CancelToken& cancel);
  // One complete LIST: its objects, ready to cache, and its resourceVersion in `version`.
  kube::Result<std::vector<ObjectPtr>> fetch(std::string& version) const;
  kube::Result<void> watch(const kube::CancelToken& cancel);
  // Drops managedFields, applies the transform and packs the object (informer/packed.h).
  ObjectPtr ingest(boost::json::value object) const;
  void set_resource_version(std::string rv);

  std::shared_ptr<kube::Client> client_;
  ReflectorOptions options_;
  Store& store_;
  EventSink& sink_;
  mutable std::mutex mu_;
  std::string last_rv_;
  ReflectorStats stats_;
};

}  // namespace kstack::informer
