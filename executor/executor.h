// The executor: the only place kstack writes Kubernetes objects for a Stack.
//
// Owned objects are written with server-side apply (field manager "kstack", force): the
// request carries only the fields kstack sets, the API server merges them and records
// kstack as their owner, so fields other controllers or users own (StatefulSet defaults,
// a Service's clusterIP, extra labels) are neither fought over nor wiped, and one request
// both creates and repairs. An apply is sent only when the cached live object does not
// already cover the desired one (executor/drift.h) — that is what keeps a stable Stack at
// zero writes. A minimal JSON patch would need kstack to diff against the defaulted object
// itself and could not express "take back ownership of replicas"; apply does both.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <boost/json/value.hpp>

#include "executor/actuators.h"
#include "informer/packed.h"
#include "kube/client.h"

namespace kstack::executor {

inline constexpr std::string_view kFieldManager = "kstack";
inline constexpr std::string_view kReportingController = "kstack.io/operator";

// core/v1 Events, the API kstack posts its Events through (see Executor::event).
extern const kube::ResourceType kCoreEvents;

struct ExecutorOptions {
  std::string field_manager = std::string(kFieldManager);
  std::string reporting_instance;  // events' reportingInstance; default: the host name
  // The same event (object, reason, note) is not posted again within this window.
  std::chrono::seconds event_dedup_window{600};
  std::size_t max_note_bytes = 1024;  // events.k8s.io/v1 limit on `note`
};

class Executor : public ObjectWriter, public EventSink {
 public:
  Executor(std::shared_ptr<kube::Client> client, ExecutorOptions options = {});

  kube::Client& client() { return *client_; }

  // Makes `desired` (a full object with apiVersion, kind, metadata.name/namespace) hold.
  // `live` is the cached object or nullptr. No request when `live` covers `desired`
  // (kNone); otherwise a forced server-side apply: kCreated when `live` was null, else
  // kUpdated. The server's answer is returned in `*result` when non-null.
  kube::Result<Change> apply(const kube::ResourceType& type, const boost::json::value& desired,
                             const informer::PackedValue* live,
                             boost::json::value* result = nullptr) override;

  // Applies `desired` unconditionally (no cache to compare with), e.g. to drop a field kstack
  // owned: what kstack's manager no longer sends, the server removes.
  kube::Result<boost::json::value> force_apply(const kube::ResourceType& type,
                                               const boost::json::value& desired) override;

  // Deletes, with a UID precondition when `uid` is non-empty (never deletes a newer object of
  // the same name). NotFound counts as done (kNone); kDeleted otherwise.
  kube::Result<Change> remove(const kube::ResourceType& type, std::string_view ns,
                              std::string_view name, std::string_view uid = {},
                              std::string_view propagation_policy = "Background",
                              std::optional<std::int64_t> grace_period_seconds = {}) override;

  // PUT of the status subresource; `object` carries metadata.resourceVersion, so a stale write
  // fails with kConflict. Returns the stored object.
  kube::Result<boost::json::value> update_status(const kube::ResourceType& type,
                                                 const boost::json::value& object) override;

  // Sets metadata.finalizers with a JSON merge patch that carries `resource_version`
  // (optimistic concurrency: kConflict when the object changed). Returns the stored object.
  kube::Result<boost::json::value> set_finalizers(
      const kube::ResourceType& type, std::string_view ns, std::string_view name,
      std::string_view resource_version, const std::vector<std::string>& finalizers) override;

  // Posts an Event about `regarding` (an object with apiVersion, kind and metadata) through
  // core/v1 with both the events.k8s.io/v1 fields and the deprecated timestamps and count
  // older clients sort by. type: "Normal" | "Warning". Best effort: failures are logged, never
  // returned. Identical events within event_dedup_window are dropped, and so are all Events
  // about an object once its namespace refused one because it is being deleted.
  void event(const informer::PackedValue& regarding, std::string_view type, std::string_view reason,
             std::string_view action, std::string_view note) override;
  // The same for several notes of one reason: they are joined with "; " into as few Events as
  // fit max_note_bytes each (a note longer than that alone is cut, as event() does).
  void events(const informer::PackedValue& regarding, std::string_view type,
              std::string_view reason, std::string_view action,
              const std::vector<std::string>& notes) override;

  // Counters for tests and metrics.
  std::uint64_t applies() const;
  std::uint64_t events_posted() const;

 private:
  kube::Result<boost::json::value> replace_lists(const kube::ResourceType& type,
                                                 const boost::json::value& base,
                                                 const boost::json::value& desired);

  std::shared_ptr<kube::Client> client_;
  ExecutorOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> recent_events_;
  // Objects whose namespace refused an Event because it is being deleted: later Events about
  // them are dropped (uids: an object made again under the same name is not one of them).
  std::unordered_set<std::string> terminating_uids_;
  std::uint64_t applies_ = 0;
  std::uint64_t events_posted_ = 0;
};

}  // namespace kstack::executor
