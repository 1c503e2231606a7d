// The Kubernetes API client: REST verbs on any resource type, watch, discovery, with
// authentication, client-side rate limiting and per-verb/per-code request counters.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>

#include "kube/config.h"
#include "kube/error.h"
#include "kube/rate_limiter.h"
#include "kube/resource.h"
#include "kube/transport.h"
#include "kube/watch.h"

namespace kstack::kube {

// Page size for list_all, as client-go's pager.
inline constexpr std::int64_t kDefaultListPageSize = 500;
// A watch with no event and no bookmark for this long is considered dead (the API server sends
// bookmarks about once a minute when asked to).
inline constexpr std::chrono::milliseconds kDefaultWatchIdleTimeout{5 * 60 * 1000};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::int64_t limit = 0;  // 0 = no paging
  std::string continue_token;
  std::string resource_version;        // "" = most recent (quorum read), "0" = any
  std::string resource_version_match;  // Exact | NotOlderThan
  std::optional<int> timeout_seconds;
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // start after this version; "" = from now
  bool allow_bookmarks = true;
  std::optional<int> timeout_seconds;  // server-side watch duration
  std::chrono::milliseconds idle_timeout = kDefaultWatchIdleTimeout;
};

struct WriteOptions {
  std::string field_manager;
  bool dry_run = false;
};

enum class PatchType { kJson, kMerge, kStrategicMerge, kApply };
std::string_view content_type(PatchType type);

struct PatchOptions {
  std::string field_manager;  // required for kApply
  bool force = false;         // apply: take ownership of conflicting fields
  bool dry_run = false;
};

struct DeleteOptions {
  std::string propagation_policy;  // Foreground | Background | Orphan; "" = server default
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  std::optional<std::int64_t> grace_period_seconds;
  bool dry_run = false;
};

// Counters of requests by HTTP method (or WATCH/LIST) and result code ("200", "404",
// "<error>" when no response), for rest_client_requests_total.
class RequestMetrics {
 public:
  using Key = std::pair<std::string, std::string>;  // {verb, code}
  void record(std::string_view verb, std::string_view code);
  std::map<Key, std::uint64_t> snapshot() const;
  std::uint64_t total() const { return total_.load(); }

 private:
  mutable std::mutex mu_;
  std::map<Key, std::uint64_t> counts_;
  std::atomic<std::uint64_t> total_{0};
};

class Client {
 public:
  static Result<std::shared_ptr<Client>> create(Config config);
  // For tests and embedding: a client over a given transport.
  Client(Config config, std::unique_ptr<Transport> transport, std::string path_prefix);

  const Config& config() const { return config_; }
  RequestMetrics& metrics() { return metrics_; }
  const Transport& transport() const { return *transport_; }
  // The token bucket a request on `type` takes its token from: Events' own when
  // Config::event_qps is set, else the client's.
  RateLimiter& limiter_for(const ResourceType& type);

  Result<boost::json::value> get(const ResourceType& type, std::string_view ns,
                                 std::string_view name, std::string_view subresource = {});
  // One page (or everything when limit is 0). The result is the List object, allocated from
  // `storage` (default: the heap).
  Result<boost::json::value> list(const ResourceType& type, std::string_view ns,
                                  const ListOptions& options = {},
                                  boost::json::storage_ptr storage = {});
  // Every page, following `continue`; returns a List with all items and the first page's
  // resourceVersion (the snapshot all pages belong to).
  Result<boost::json::value> list_all(const ResourceType& type, std::string_view ns,
                                      ListOptions options = {});
  Result<boost::json::value> create(const ResourceType& type, std::string_view ns,
                                    const boost::json::value& object,
                                    const WriteOptions& options = {});
  // PUT of the whole object; name taken from object.metadata.name. A stale
  // metadata.resourceVersion yields kConflict.
  Result<boost::json::value> update(const ResourceType& type, std::string_view ns,
                                    const boost::json::value& object,
                                    const WriteOptions& options = {});
  Result<boost::json::value> update_status(const ResourceType& type, std::string_view ns,
                                           const boost::json::value& object,
                                           const WriteOptions& options = {});
  Result<boost::json::value> patch(const ResourceType& type, std::string_view ns,
                                   std::string_view name, PatchType patch_type,
                                   std::string_view body, const PatchOptions& options = {},
                                   std::string_view subresource = {});
  // Returns the server's answer: the deleted object or a Status.
  Result<boost::json::value> remove(const ResourceType& type, std::string_view ns,
                                    std::string_view name, const DeleteOptions& options = {});

  // Streams events to `handler` until the server ends the watch (returns success), the
  // handler returns false (success), `cancel` fires (kCancelled), or an error occurs — an
  // expired resourceVersion is kGone, whether refused up front or sent as an ERROR event.
  Result<void> watch(const ResourceType& type, std::string_view ns, const WatchOptions& options,
                     const WatchHandler& handler, const CancelToken& cancel = {});

  // Resolves apiVersion + kind ("apps/v1", "StatefulSet") to a resource type via discovery;
  // results are cached.
  Result<ResourceType> discover(std::string_view api_version, std::string_view kind);

  // A raw request on the API server (path with query), authenticated and rate limited.
  // Returns any HTTP status as a response; only transport failures are errors.
  Result<HttpResponse> raw(std::string_view method, std::string_view path_and_query,
                           std::string body = {}, std::string_view content_type = {},
                           std::string_view verb = {});

  // The request raw() would send for `path_and_query` (path prefix, User-Agent, Authorization),
  // after waiting for the rate limiter; for exchanges that do not go through this client's
  // transport, such as exec over WebSocket (kube/exec.h). After a 401, invalidate the
  // credentials (config().credentials) and prepare the request again.
  Result<HttpRequest> prepare_request(std::string_view method, std::string_view path_and_query);

 private:
  Result<HttpRequest> make_request(std::string_view method, std::string_view path_and_query,
                                   std::string body, std::string_view content_type);
  Result<boost::json::value> call(RateLimiter& limiter, std::string_view verb,
                                  std::string_view method, std::string path_and_query,
                                  std::string body = {}, std::string_view content_type = {},
                                  boost::json::storage_ptr storage = {});
  Result<HttpResponse> send(RateLimiter& limiter, std::string_view method,
                            std::string_view path_and_query, std::string body,
                            std::string_view content_type, std::string_view verb);

  Result<boost::json::value> write(std::string_view method, const ResourceType& type,
                                   std::string_view ns, const boost::json::value& object,
                                   const WriteOptions& options, std::string_view subresource);

  Config config_;
  std::unique_ptr<Transport> transport_;
  std::string path_prefix_;
  RateLimiter limiter_;
  std::optional<RateLimiter> event_limiter_;  // Config::event_qps set
  RequestMetrics metrics_;
  std::mutex discovery_mu_;
  std::map<std::string, boost::json::value> discovery_cache_;  // groupVersion -> resource list
};

}  // namespace kstack::kube
