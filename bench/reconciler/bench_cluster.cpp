#include "bench/reconciler/bench_cluster.h"

#include <atomic>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include "catalog/model.h"

namespace kstack::bench {
namespace json = boost::json;

std::filesystem::path default_source_dir() { return KSTACK_SOURCE_DIR; }

tl::expected<void, std::string> install_crds(const testenv::ControlPlane& cp,
                                             const std::filesystem::path& dir) {
  auto applied = cp.kubectl({"apply", "-k", dir.string(), "-o", "name"});
  if (!applied.ok()) {
    return tl::unexpected(fmt::format("kubectl apply -k {}: {}", dir.string(), applied.err));
  }
  // "customresourcedefinition.apiextensions.k8s.io/stacks.kstack.io" -> "crd/stacks.kstack.io"
  std::vector<std::string> wait = {"wait", "--for=condition=Established", "--timeout=60s"};
  std::istringstream lines(applied.out);
  for (std::string line; std::getline(lines, line);) {
    if (auto slash = line.find('/'); slash != std::string::npos) {
      wait.push_back("crd/" + line.substr(slash + 1));
    }
  }
  if (auto established = cp.kubectl(wait); !established.ok()) {
    return tl::unexpected(fmt::format("CRDs not Established: {}", established.err));
  }
  return {};
}

tl::expected<std::unique_ptr<testenv::ControlPlane>, std::string> start_with_crds(
    const std::filesystem::path& source) {
  auto cp = testenv::ControlPlane::start({});
  if (!cp) return tl::unexpected("control plane: " + cp.error());
  if (auto ok = install_crds(**cp, source / "deploy/crds"); !ok) return tl::unexpected(ok.error());
  return std::move(*cp);
}

std::shared_ptr<kube::Client> admin_client(const testenv::ControlPlane& cp, double qps, int burst,
                                           std::optional<double> event_qps, int event_burst) {
  kube::Config c;
  c.server = cp.server();
  c.ca_pem = cp.ca_pem();
  c.credentials = kube::static_token(cp.admin_token());
  c.source = "bench control plane";
  c.qps = qps;
  c.burst = burst;
  c.event_qps = event_qps;
  c.event_burst = event_burst;
  auto client = kube::Client::create(std::move(c));
  if (!client) throw std::runtime_error(client.error().to_string());
  return *client;
}

std::string str_at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  return p != nullptr && p->is_string() ? std::string(p->get_string()) : std::string();
}

void drop_managed_fields(json::value& object) {
  if (!object.is_object()) return;
  if (auto* md = object.as_object().if_contains("metadata"); md != nullptr && md->is_object()) {
    md->as_object().erase("managedFields");
  }
}

tl::expected<void, std::string> create_namespace(kube::Client& client, const std::string& name,
                                                 bool for_pods) {
  const json::value ns = {
      {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
  if (auto r = client.create(kube::resources::kNamespaces, "", ns); !r) {
    return tl::unexpected(fmt::format("create namespace {}: {}", name, r.error().to_string()));
  }
  if (!for_pods) return {};
  auto has_token = [](const json::value& sa) {
    boost::system::error_code ec;
    const auto* secrets = sa.find_pointer("/secrets", ec);
    return str_at(sa, "/metadata/name") == "default" && secrets != nullptr && secrets->is_array() &&
           !secrets->get_array().empty();
  };
  auto ok = wait_for(
      client, kube::resources::kServiceAccounts, name, {}, has_token,
      [](std::size_t matching, std::size_t) { return matching == 1; }, std::chrono::seconds(60));
  if (!ok) return tl::unexpected(fmt::format("namespace {}: {}", name, ok.error()));
  return {};
}

json::value apptype_object(const std::string& ns, const Shape& shape) {
  json::array services, roles, role_services, selected;
  for (int r = 0; r < shape.roles; ++r) {
    const auto id = fmt::format("role{}", r);
    if (r < shape.ported_roles) {
      const auto svc = fmt::format("port{}", r);
      services.push_back(json::object{{"id", svc}, {"endpoint", {{"port", 8000 + r}}}});
      role_services.push_back(json::object{{"roleID", id}, {"serviceIDs", json::array{svc}}});
    }
    json::object role{{"id", id}, {"cardinality", "1+"}};
    if (shape.storage) role["minStorage"] = json::object{{"size", "1Gi"}};
    roles.push_back(std::move(role));
    selected.push_back(json::string(id));
  }
  json::object spec{
      {"label", {{"name", "Bench"}}},
      {"distroID", "kstack/bench"},
      {"version", "1.0"},
      {"configSchemaVersion", 1},
      {"defaultImageRepoTag", "docker.io/library/busybox:1.36"},
      {"defaultConfigPackage", nullptr},
      {"services", std::move(services)},
      {"roles", std::move(roles)},
      {"config",
       {{"roleServices", std::move(role_services)}, {"selectedRoles", std::move(selected)}}}};
  if (shape.storage) spec["defaultPersistDirs"] = json::array{"/var/lib/bench"};
  return json::object{{"apiVersion", catalog::kApiVersion},
                      {"kind", "AppType"},
                      {"metadata", {{"name", kAppName}, {"namespace", ns}}},
                      {"spec", std::move(spec)}};
}

json::value stack_object(const std::string& ns, const std::string& name, const Shape& shape) {
  json::array roles;
  for (int r = 0; r < shape.roles; ++r) {
    json::object role{{"id", fmt::format("role{}", r)}, {"members", shape.members}};
    if (shape.storage) role["storage"] = json::object{{"size", "1Gi"}};
    roles.push_back(std::move(role));
  }
  return json::object{
      {"apiVersion", catalog::kApiVersion},
      {"kind", catalog::kStackKind},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec",
       {{"app", kAppName}, {"appCatalog", catalog::kCatalogLocal}, {"roles", std::move(roles)}}}};
}

std::string stack_name(int index) { return fmt::format("s-{:04}", index); }

tl::expected<std::vector<json::value>, std::string> create_all(kube::Client& client,
                                                               const std::vector<Creation>& objects,
                                                               int threads) {
  std::vector<json::value> stored(objects.size());
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::string first_error;
  auto work = [&] {
    for (std::size_t i = next++; i < objects.size(); i = next++) {
      const auto& c = objects[i];
      auto r = client.create(c.type, str_at(c.object, "/metadata/namespace"), c.object);
      if (!r) {
        std::lock_guard lock(mu);
        if (first_error.empty()) {
          first_error = fmt::format("create {} {}: {}", c.type.kind,
                                    str_at(c.object, "/metadata/name"), r.error().to_string());
        }
        return;
      }
      drop_managed_fields(*r);
      stored[i] = std::move(*r);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  if (!first_error.empty()) return tl::unexpected(first_error);
  return stored;
}

tl::expected<std::chrono::steady_clock::time_point, std::string> wait_for(
    kube::Client& client, const kube::ResourceType& type, const std::string& ns,
    const std::string& label_selector, const Match& match,
    const std::function<bool(std::size_t, std::size_t)>& done, std::chrono::seconds timeout,
    const kube::CancelToken& cancel) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  std::map<std::string, bool> objects;  // name -> matches
  std::size_t matching = 0;
  auto set = [&](const json::value& o, bool present) {
    const auto name = str_at(o, "/metadata/name");
    if (auto it = objects.find(name); it != objects.end()) {
      matching -= it->second ? 1 : 0;
      objects.erase(it);
    }
    if (!present) return;
    const bool m = match(o);
    objects.emplace(name, m);
    matching += m ? 1 : 0;
  };
  std::string last_error;
  int failures = 0;  // in a row; a few are retried (a watch may end with 410 Gone)
  while (Clock::now() < deadline && failures < 5 && !cancel.cancelled()) {
    kube::ListOptions lo;
    lo.label_selector = label_selector;
    lo.limit = kube::kDefaultListPageSize;
    auto list = client.list_all(type, ns, lo);
    if (!list) {
      last_error = list.error().to_string();
      ++failures;
      continue;
    }
    objects.clear();
    matching = 0;
    for (const auto& o : list->at("items").as_array()) set(o, true);
    if (done(matching, objects.size())) return Clock::now();
    kube::WatchOptions wo;
    wo.label_selector = label_selector;
    wo.resource_version = str_at(*list, "/metadata/resourceVersion");
    std::optional<Clock::time_point> when;
    // A re-list follows when the watch ends before `done` (server timeout, 410 Gone).
    while (!when && Clock::now() < deadline && !cancel.cancelled()) {
      const auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - Clock::now());
      wo.timeout_seconds = static_cast<int>(std::max<std::int64_t>(1, left.count()));
      auto watched = client.watch(
          type, ns, wo,
          [&](kube::WatchEvent&& e) {
            if (const auto rv = str_at(e.object, "/metadata/resourceVersion"); !rv.empty()) {
              wo.resource_version = rv;
            }
            if (e.type == kube::WatchEvent::Type::kBookmark) return true;
            set(e.object, e.type != kube::WatchEvent::Type::kDeleted);
            if (done(matching, objects.size())) when = Clock::now();
            return !when;
          },
          cancel);
      if (!watched) {
        last_error = watched.error().to_string();
        ++failures;
        break;
      }
      failures = 0;
    }
    if (when) return *when;
  }
  if (cancel.cancelled()) return tl::unexpected(std::string("cancelled"));
  return tl::unexpected(fmt::format("{} in {}: not done after {} s ({} of {} matching){}",
                                    type.kind, ns, timeout.count(), matching, objects.size(),
                                    last_error.empty() ? "" : "; last error: " + last_error));
}

bool pod_ready(const json::value& pod) {
  if (str_at(pod, "/status/phase") != "Running") return false;
  boost::system::error_code ec;
  const auto* conditions = pod.find_pointer("/status/conditions", ec);
  if (conditions == nullptr || !conditions->is_array()) return false;
  for (const auto& c : conditions->get_array()) {
    if (str_at(c, "/type") == "Ready") return str_at(c, "/status") == "True";
  }
  return false;
}

RequestCounts difference(const RequestCounts& after, const RequestCounts& before) {
  RequestCounts out;
  for (const auto& [key, n] : after) {
    const auto it = before.find(key);
    const auto d = n - (it == before.end() ? 0 : it->second);
    if (d > 0) out[key] = d;
  }
  return out;
}

std::uint64_t total(const RequestCounts& counts) {
  std::uint64_t n = 0;
  for (const auto& [key, c] : counts) n += c;
  return n;
}

std::uint64_t writes(const RequestCounts& counts) {
  std::uint64_t n = 0;
  for (const auto& [key, c] : counts) {
    if (key.first != "GET" && key.first != "LIST" && key.first != "WATCH") n += c;
  }
  return n;
}

std::uint64_t count_verb(const RequestCounts& counts, std::string_view verb) {
  std::uint64_t n = 0;
  for (const auto& [key, c] : counts) {
    if (key.first == verb) n += c;
  }
  return n;
}

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double cpu_seconds(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace kstack::bench
