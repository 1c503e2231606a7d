#include "kube/client.h"

#include <charconv>

#include <boost/json.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <fmt/format.h>
#include <openssl/evp.h>

#include "kube/json_parser.h"

namespace kstack::kube {
namespace json = boost::json;

namespace {

std::string base64(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::chrono::seconds> retry_after(const HttpResponse& r) {
  auto h = r.header("Retry-After");
  if (!h) return std::nullopt;
  long v = 0;
  auto [p, ec] = std::from_chars(h->data(), h->data() + h->size(), v);
  if (ec != std::errc{} || v < 0) return std::nullopt;
  return std::chrono::seconds(v);
}

std::string metadata_string(const json::value& object, std::string_view field) {
  if (const auto* o = object.if_object()) {
    if (const auto* md = o->if_contains("metadata"); md && md->is_object()) {
      if (const auto* v = md->get_object().if_contains(field); v && v->is_string()) {
        return std::string(v->get_string());
      }
    }
  }
  return {};
}

bool is_success(int status) { return status >= 200 && status < 300; }

}  // namespace

std::string_view content_type(PatchType type) {
  switch (type) {
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return "application/json";
}

void RequestMetrics::record(std::string_view verb, std::string_view code) {
  std::lock_guard lock(mu_);
  ++counts_[{std::string(verb), std::string(code)}];
  ++total_;
}

std::map<RequestMetrics::Key, std::uint64_t> RequestMetrics::snapshot() const {
  std::lock_guard lock(mu_);
  return counts_;
}

Result<std::shared_ptr<Client>> Client::create(Config config) {
  auto url = boost::urls::parse_uri(config.server);
  if (!url) {
    return make_error(ErrorKind::kConfig,
                      fmt::format("server \"{}\" ({}): not a URL: {}", config.server, config.source,
                                  url.error().message()));
  }
  TransportOptions opts;
  opts.scheme = std::string(url->scheme());
  if (opts.scheme != "https" && opts.scheme != "http") {
    return make_error(ErrorKind::kConfig,
                      fmt::format("server \"{}\" ({}): scheme must be https or http", config.server,
                                  config.source));
  }
  if (url->host_type() == boost::urls::host_type::ipv6) {
    opts.host = url->host_ipv6_address().to_string();
  } else {
    opts.host = std::string(url->encoded_host());
  }
  if (url->has_port()) {
    opts.port = url->port_number();
  } else {
    opts.port = opts.scheme == "https" ? 443 : 80;
  }
  opts.tls.ca_pem = config.ca_pem;
  opts.tls.insecure_skip_verify = config.insecure_skip_tls_verify;
  opts.tls.server_name = config.tls_server_name;
  opts.tls.client_cert_pem = config.client_cert_pem;
  opts.tls.client_key_pem = config.client_key_pem;
  auto transport = make_transport(std::move(opts));
  if (!transport) return tl::unexpected(std::move(transport.error()));
  std::string prefix(url->encoded_path());
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return std::make_shared<Client>(std::move(config), std::move(*transport), std::move(prefix));
}

Client::Client(Config config, std::unique_ptr<Transport> transport, std::string path_prefix)
    : config_(std::move(config)),
      transport_(std::move(transport)),
      path_prefix_(std::move(path_prefix)),
      limiter_(config_.qps, config_.burst) {
  if (config_.event_qps) event_limiter_.emplace(*config_.event_qps, config_.event_burst);
}

RateLimiter& Client::limiter_for(const ResourceType& type) {
  const bool events =
      type.plural == "events" && (type.group.empty() || type.group == "events.k8s.io");
  return events && event_limiter_ ? *event_limiter_ : limiter_;
}

Result<HttpRequest> Client::make_request(std::string_view method, std::string_view path_and_query,
                                         std::string body, std::string_view ctype) {
  HttpRequest req;
  req.method = std::string(method);
  req.target = path_prefix_ + std::string(path_and_query);
  req.headers.push_back({"Accept", "application/json"});
  req.headers.push_back({"User-Agent", config_.user_agent});
  if (!ctype.empty()) req.headers.push_back({"Content-Type", std::string(ctype)});
  if (config_.credentials) {
    auto token = config_.credentials->bearer_token();
    if (!token) return tl::unexpected(std::move(token.error()));
    if (!token->empty()) req.headers.push_back({"Authorization", "Bearer " + *token});
  } else if (!config_.username.empty()) {
    req.headers.push_back(
        {"Authorization", "Basic " + base64(config_.username + ":" + config_.password)});
  }
  req.body = std::move(body);
  req.timeout = config_.request_timeout;
  return req;
}

Result<HttpResponse> Client::raw(std::string_view method, std::string_view path_and_query,
                                 std::string body, std::string_view ctype, std::string_view verb) {
  return send(limiter_, method, path_and_query, std::move(body), ctype, verb);
}

Result<HttpResponse> Client::send(RateLimiter& limiter, std::string_view method,
                                  std::string_view path_and_query, std::string body,
                                  std::string_view ctype, std::string_view verb) {
  if (verb.empty()) verb = method;
  for (int attempt = 0;; ++attempt) {
    auto req = make_request(method, path_and_query, body, ctype);
    if (!req) return tl::unexpected(std::move(req.error()));
    limiter.acquire();
    auto resp = transport_->send(*req);
    if (!resp) {
      metrics_.record(verb, "<error>");
      return resp;
    }
    metrics_.record(verb, std::to_string(resp->status));
    // Rotated credentials (token file, exec plugin): refresh once and retry, as client-go.
    if (resp->status == 401 && attempt == 0 && config_.credentials) {
      config_.credentials->invalidate();
      continue;
    }
    return resp;
  }
}

Result<HttpRequest> Client::prepare_request(std::string_view method,
                                            std::string_view path_and_query) {
  auto req = make_request(method, path_and_query, {}, {});
  if (req) limiter_.acquire();
  return req;
}

Result<json::value> Client::call(RateLimiter& limiter, std::string_view verb,
                                 std::string_view method, std::string path_and_query,
                                 std::string body, std::string_view ctype,
                                 json::storage_ptr storage) {
  auto resp = send(limiter, method, path_and_query, std::move(body), ctype, verb);
  if (!resp) return tl::unexpected(std::move(resp.error()));
  if (!is_success(resp->status)) {
    Error e = error_from_response(resp->status, resp->body, retry_after(*resp));
    e.message = fmt::format("{} {}: {}", method, path_and_query.substr(0, path_and_query.find('?')),
                            e.message);
    return tl::unexpected(std::move(e));
  }
  // Exact numbers, as the watch stream reads them (kube/json_parser.h): a LIST and a watch
  // event of the same object must decode to the same values.
  boost::system::error_code ec;
  json::value v = parse_json(resp->body, ec, std::move(storage));
  if (ec) {
    return make_error(ErrorKind::kDecode, fmt::format("{} {}: response is not JSON: {}", method,
                                                      path_and_query, ec.message()));
  }
  return v;
}

Result<json::value> Client::get(const ResourceType& type, std::string_view ns,
                                std::string_view name, std::string_view subresource) {
  if (auto r = check_path_segment("name", name); !r) return tl::unexpected(r.error());
  return call(limiter_for(type), "GET", "GET", resource_path(type, ns, name, subresource));
}

Result<json::value> Client::list(const ResourceType& type, std::string_view ns,
                                 const ListOptions& o, json::storage_ptr storage) {
  Query q;
  q.add("labelSelector", o.label_selector).add("fieldSelector", o.field_selector);
  if (o.limit > 0) q.add("limit", o.limit);
  q.add("continue", o.continue_token)
      .add("resourceVersion", o.resource_version)
      .add("resourceVersionMatch", o.resource_version_match);
  if (o.timeout_seconds) q.add("timeoutSeconds", std::int64_t{*o.timeout_seconds});
  return call(limiter_for(type), "LIST", "GET", resource_path(type, ns) + q.str(), {}, {},
              std::move(storage));
}

namespace {

// A LIST page's shape, checked without throwing: a proxy or a broken server may answer 200
// with any JSON at all. `items` may be null (Go's nil slice) or absent: no items.
Result<void> check_list_page(const json::value& page, std::string_view what) {
  const auto* obj = page.if_object();
  if (obj == nullptr) {
    return make_error(ErrorKind::kDecode, fmt::format("{}: the answer is {}, not a List object",
                                                      what, json::to_string(page.kind())));
  }
  const auto* items = obj->if_contains("items");
  if (items != nullptr && !items->is_array() && !items->is_null()) {
    return make_error(ErrorKind::kDecode, fmt::format("{}: \"items\" is {}, not an array", what,
                                                      json::to_string(items->kind())));
  }
  const auto* md = obj->if_contains("metadata");
  if (md != nullptr && !md->is_object()) {
    return make_error(ErrorKind::kDecode, fmt::format("{}: \"metadata\" is {}, not an object", what,
                                                      json::to_string(md->kind())));
  }
  if (const auto* c = md ? md->get_object().if_contains("continue") : nullptr;
      c != nullptr && !c->is_string() && !c->is_null()) {
    return make_error(ErrorKind::kDecode, fmt::format("{}: \"metadata.continue\" is {}, not a "
                                                      "string",
                                                      what, json::to_string(c->kind())));
  }
  return {};
}

}  // namespace

Result<json::value> Client::list_all(const ResourceType& type, std::string_view ns,
                                     ListOptions options) {
  if (options.limit <= 0) options.limit = kDefaultListPageSize;
  const std::string what = fmt::format("LIST {}", resource_path(type, ns));
  json::object result;
  json::array items;
  for (bool first = true;; first = false) {
    auto page = list(type, ns, options);
    if (!page) return page;
    if (auto ok = check_list_page(*page, what); !ok) return tl::unexpected(std::move(ok.error()));
    auto& obj = page->get_object();  // checked above
    if (first) {
      for (const std::string_view field : {"apiVersion", "kind", "metadata"}) {
        if (const auto* v = obj.if_contains(field)) result[field] = *v;
      }
      // Later pages are served from the first page's snapshot; the version must not be sent.
      options.resource_version.clear();
      options.resource_version_match.clear();
    }
    if (auto* page_items = obj.if_contains("items"); page_items && page_items->is_array()) {
      for (auto& item : page_items->get_array()) items.push_back(std::move(item));
    }
    std::string next;
    if (const auto* md = obj.if_contains("metadata"); md && md->is_object()) {
      if (const auto* c = md->get_object().if_contains("continue"); c && c->is_string()) {
        next = std::string(c->get_string());
      }
    }
    if (next.empty()) break;
    options.continue_token = std::move(next);
  }
  if (auto* md = result.if_contains("metadata"); md && md->is_object()) {
    md->get_object().erase("continue");
  }
  result["items"] = std::move(items);
  return json::value(std::move(result));
}

Result<json::value> Client::write(std::string_view method, const ResourceType& type,
                                  std::string_view ns, const json::value& object,
                                  const WriteOptions& options, std::string_view subresource) {
  std::string path;
  if (method == "POST") {
    path = resource_path(type, ns);
  } else {
    const std::string name = metadata_string(object, "name");
    if (auto r = check_path_segment("metadata.name", name); !r) return tl::unexpected(r.error());
    path = resource_path(type, ns, name, subresource);
  }
  Query q;
  q.add("fieldManager", options.field_manager);
  if (options.dry_run) q.add("dryRun", "All");
  return call(limiter_for(type), method, method, path + q.str(), json::serialize(object),
              "application/json");
}

Result<json::value> Client::create(const ResourceType& type, std::string_view ns,
                                   const json::value& object, const WriteOptions& options) {
  return write("POST", type, ns, object, options, {});
}

Result<json::value> Client::update(const ResourceType& type, std::string_view ns,
                                   const json::value& object, const WriteOptions& options) {
  return write("PUT", type, ns, object, options, {});
}

Result<json::value> Client::update_status(const ResourceType& type, std::string_view ns,
                                          const json::value& object, const WriteOptions& options) {
  return write("PUT", type, ns, object, options, "status");
}

Result<json::value> Client::patch(const ResourceType& type, std::string_view ns,
                                  std::string_view name, PatchType patch_type,
                                  std::string_view body, const PatchOptions& options,
                                  std::string_view subresource) {
  if (auto r = check_path_segment("name", name); !r) return tl::unexpected(r.error());
  if (patch_type == PatchType::kApply && options.field_manager.empty()) {
    return make_error(ErrorKind::kInvalidArgument,
                      "server-side apply needs a field manager (PatchOptions::field_manager)");
  }
  Query q;
  q.add("fieldManager", options.field_manager);
  if (patch_type == PatchType::kApply) q.add_flag("force", options.force);
  if (options.dry_run) q.add("dryRun", "All");
  return call(limiter_for(type), "PATCH", "PATCH",
              resource_path(type, ns, name, subresource) + q.str(), std::string(body),
              content_type(patch_type));
}

Result<json::value> Client::remove(const ResourceType& type, std::string_view ns,
                                   std::string_view name, const DeleteOptions& o) {
  if (auto r = check_path_segment("name", name); !r) return tl::unexpected(r.error());
  json::object body{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!o.propagation_policy.empty()) body["propagationPolicy"] = o.propagation_policy;
  if (o.grace_period_seconds) body["gracePeriodSeconds"] = *o.grace_period_seconds;
  if (o.dry_run) body["dryRun"] = json::array{"All"};
  if (o.precondition_uid || o.precondition_resource_version) {
    json::object pre;
    if (o.precondition_uid) pre["uid"] = *o.precondition_uid;
    if (o.precondition_resource_version) pre["resourceVersion"] = *o.precondition_resource_version;
    body["preconditions"] = std::move(pre);
  }
  return call(limiter_for(type), "DELETE", "DELETE", resource_path(type, ns, name),
              json::serialize(body), "application/json");
}

Result<void> Client::watch(const ResourceType& type, std::string_view ns, const WatchOptions& o,
                           const WatchHandler& handler, const CancelToken& cancel) {
  Query q;
  q.add("watch", "1")
      .add("labelSelector", o.label_selector)
      .add("fieldSelector", o.field_selector)
      .add("resourceVersion", o.resource_version)
      .add_flag("allowWatchBookmarks", o.allow_bookmarks);
  if (o.timeout_seconds) q.add("timeoutSeconds", std::int64_t{*o.timeout_seconds});
  const std::string path = resource_path(type, ns);
  auto req = make_request("GET", path + q.str(), {}, {});
  if (!req) return tl::unexpected(std::move(req.error()));
  limiter_for(type).acquire();

  WatchDecoder decoder;
  std::vector<WatchEvent> events;
  std::optional<Error> failure;
  bool stopped = false;
  auto on_chunk = [&](std::string_view chunk) {
    events.clear();
    auto fed = decoder.feed(chunk, events);
    for (auto& ev : events) {
      if (!handler(std::move(ev))) {
        stopped = true;
        return false;
      }
    }
    if (!fed) {
      failure = std::move(fed.error());
      return false;
    }
    return true;
  };
  auto resp = transport_->stream(*req, on_chunk, cancel, o.idle_timeout);
  if (!resp) {
    metrics_.record("WATCH", "<error>");
    Error e = std::move(resp.error());
    e.message = fmt::format("WATCH {}: {}", path, e.message);
    return tl::unexpected(std::move(e));
  }
  metrics_.record("WATCH", std::to_string(resp->status));
  if (!is_success(resp->status)) {
    if (resp->status == 401 && config_.credentials) config_.credentials->invalidate();
    Error e = error_from_response(resp->status, resp->body, retry_after(*resp));
    e.message = fmt::format("WATCH {}: {}", path, e.message);
    return tl::unexpected(std::move(e));
  }
  if (failure) {
    failure->message = fmt::format("WATCH {}: {}", path, failure->message);
    return tl::unexpected(std::move(*failure));
  }
  if (!stopped && !decoder.at_boundary()) {
    return make_error(ErrorKind::kTransport,
                      fmt::format("WATCH {}: stream ended in the middle of an event", path));
  }
  return {};
}

namespace {

std::optional<ResourceType> find_kind(const json::value& resource_list, const std::string& gv,
                                      std::string_view kind) {
  const auto slash = gv.find('/');
  ResourceType rt;
  rt.group = slash == std::string::npos ? "" : gv.substr(0, slash);
  rt.version = slash == std::string::npos ? gv : gv.substr(slash + 1);
  const auto* obj = resource_list.if_object();
  const auto* arr = obj ? obj->if_contains("resources") : nullptr;
  if (arr == nullptr || !arr->is_array()) return std::nullopt;
  for (const auto& r : arr->get_array()) {
    const auto* o = r.if_object();
    if (o == nullptr) continue;
    const auto* name = o->if_contains("name");
    const auto* k = o->if_contains("kind");
    if (!name || !name->is_string() || !k || !k->is_string()) continue;
    // Subresources ("statefulsets/status") carry the parent's kind too.
    if (k->get_string() != kind || name->get_string().find('/') != json::string::npos) continue;
    rt.plural = std::string(name->get_string());
    rt.kind = std::string(kind);
    const auto* ns = o->if_contains("namespaced");
    rt.namespaced = ns && ns->is_bool() && ns->get_bool();
    return rt;
  }
  return std::nullopt;
}

}  // namespace

Result<ResourceType> Client::discover(std::string_view api_version, std::string_view kind) {
  const std::string gv(api_version);
  {
    std::lock_guard lock(discovery_mu_);
    if (auto it = discovery_cache_.find(gv); it != discovery_cache_.end()) {
      if (auto rt = find_kind(it->second, gv, kind)) return *rt;
    }
  }
  // Not cached, or cached before the kind existed (a CRD installed since): fetch afresh.
  const std::string path = gv.find('/') == std::string::npos ? "/api/" + gv : "/apis/" + gv;
  auto list = call(limiter_, "GET", "GET", path);
  if (!list) return tl::unexpected(std::move(list.error()));
  auto rt = find_kind(*list, gv, kind);
  {
    std::lock_guard lock(discovery_mu_);
    discovery_cache_[gv] = std::move(*list);
  }
  if (rt) return *rt;
  return make_error(ErrorKind::kNotFound,
                    fmt::format("discovery: no resource of kind \"{}\" in {}", kind, gv));
}

}  // namespace kstack::kube
