#include "bench/reconciler/converge_runs.h"

#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "catalog/memory_catalog.h"
#include "catalog/parse.h"
#include "reconciler/controller.h"
#include "reconciler/desired_state.h"
#include "validator/rules/handler.h"

namespace kstack::bench {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

bool stack_ready(const json::value& stack) {
  return str_at(stack, "/status/state") == catalog::kStackReady;
}

bool any(const json::value&) { return true; }

// RFC 6902 "add" (all the mutating webhook emits: validator/rules/defaulting.h), as the API
// server applies an admission patch: object members set, array elements inserted ("-": at the
// end).
tl::expected<void, std::string> apply_patch(json::value& doc, const json::array& patch) {
  for (const auto& op : patch) {
    const auto* o = op.if_object();
    if (o == nullptr || !o->contains("path") || !o->contains("value") ||
        o->at("op") != json::value("add")) {
      return tl::unexpected("admission patch: unsupported operation " + json::serialize(op));
    }
    std::string_view path = o->at("path").as_string();
    json::value* cur = &doc;
    for (std::size_t pos = 1; pos <= path.size();) {
      auto next = path.find('/', pos);
      if (next == std::string_view::npos) next = path.size();
      std::string token;
      for (std::size_t i = pos; i < next; ++i) {
        if (path[i] == '~' && i + 1 < next) {
          token += path[++i] == '1' ? '/' : '~';
        } else {
          token += path[i];
        }
      }
      const bool last = next == path.size();
      if (auto* arr = cur->if_array()) {
        const std::size_t at = token == "-" ? arr->size() : std::stoul(token);
        if (at > arr->size()) return tl::unexpected("admission patch: no " + std::string(path));
        if (last) {
          arr->insert(arr->begin() + static_cast<std::ptrdiff_t>(at), o->at("value"));
        } else {
          cur = &arr->at(at);
        }
      } else if (auto* obj = cur->if_object()) {
        if (last) {
          (*obj)[token] = o->at("value");
        } else {
          auto* child = obj->if_contains(token);
          if (child == nullptr) return tl::unexpected("admission patch: no " + std::string(path));
          cur = child;
        }
      } else {
        return tl::unexpected("admission patch: no " + std::string(path));
      }
      pos = next + 1;
    }
  }
  return {};
}

// The Stacks as the API server stores them with kstack's admission webhooks registered (as
// deploy/ does): each CREATE goes through the operator's own rules, validator::RulesHandler's
// mutate (spec defaults and the cleanup finalizer) and then validate, against a catalog holding
// the bench's AppType. The webhook server itself is not in the loop (its speed is
// bench/admission's); what the Stacks look like when the controller first sees them is.
tl::expected<std::vector<Creation>, std::string> stack_creations(const std::string& ns,
                                                                 const Settings& s) {
  catalog::MemoryCatalog memory({}, /*know_storage_classes=*/false);
  memory.add(apptype_object(ns, s.shape));
  validator::RulesHandler rules(memory.catalog());
  std::vector<Creation> out;
  out.reserve(static_cast<std::size_t>(s.stacks));
  for (int i = 0; i < s.stacks; ++i) {
    validator::AdmissionRequest r;
    r.group = std::string(catalog::kGroup);
    r.kind = std::string(catalog::kStackKind);
    r.resource = "stacks";
    r.operation = "CREATE";
    r.name = stack_name(i);
    r.namespace_name = ns;
    r.username = "bench";
    r.object = stack_object(ns, r.name, s.shape);
    if (!s.admission) {
      out.push_back({catalog::resources::kStacks, std::move(r.object)});
      continue;
    }
    const auto mutated = rules.mutate(r);
    if (!mutated.allowed) return tl::unexpected("mutate Stack: " + mutated.message);
    if (mutated.patch) {
      if (auto ok = apply_patch(r.object, *mutated.patch); !ok) return tl::unexpected(ok.error());
    }
    const auto validated = rules.validate(r);
    if (!validated.allowed) return tl::unexpected("validate Stack: " + validated.message);
    out.push_back({catalog::resources::kStacks, std::move(r.object)});
  }
  return out;
}

// Watches started before a run's first create, on their own threads and clients: when every
// StatefulSet exists and when every pod is Ready. Also the CPU both sides spent.
class Timeline {
 public:
  Timeline(const testenv::ControlPlane& cp, const std::string& ns, const Settings& s)
      : cp_(cp), apiserver_cpu_(cpu_seconds(cp.apiserver_pid())), own_cpu_(cpu_seconds(getpid())) {
    const auto sets = static_cast<std::size_t>(s.stacks) * static_cast<std::size_t>(s.shape.roles);
    const auto pods = static_cast<std::size_t>(s.pods());
    sets_ = std::thread([this, &cp, ns, sets, timeout = s.timeout] {
      auto client = admin_client(cp);
      sets_at_ = wait_for(
          *client, kube::resources::kStatefulSets, ns, {}, any,
          [sets](std::size_t, std::size_t total) { return total == sets; }, timeout, cancel_);
    });
    pods_ = std::thread([this, &cp, ns, pods, timeout = s.timeout] {
      auto client = admin_client(cp);
      pods_at_ = wait_for(
          *client, kube::resources::kPods, ns, {}, pod_ready,
          [pods](std::size_t matching, std::size_t) { return matching == pods; }, timeout, cancel_);
    });
  }
  ~Timeline() {
    cancel_.cancel();
    finish(nullptr, {});
  }
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Waits for both watches and fills in the run's timeline and CPU figures.
  void finish(Run* run, Clock::time_point start) {
    if (sets_.joinable()) sets_.join();
    if (pods_.joinable()) pods_.join();
    if (run == nullptr) return;
    if (sets_at_) run->sets_seconds = seconds(*sets_at_ - start);
    if (pods_at_) run->pods_seconds = seconds(*pods_at_ - start);
    run->apiserver_cpu = cpu_seconds(cp_.apiserver_pid()) - apiserver_cpu_;
    run->own_cpu = cpu_seconds(getpid()) - own_cpu_;
  }
  // The run failed: stop watching.
  void cancel() { cancel_.cancel(); }
  std::string error() const {
    return !pods_at_ ? pods_at_.error() : !sets_at_ ? sets_at_.error() : std::string();
  }

 private:
  const testenv::ControlPlane& cp_;
  double apiserver_cpu_;
  double own_cpu_;
  kube::CancelToken cancel_;
  std::thread sets_, pods_;
  tl::expected<Clock::time_point, std::string> sets_at_ = tl::unexpected(std::string("not run"));
  tl::expected<Clock::time_point, std::string> pods_at_ = tl::unexpected(std::string("not run"));
};

tl::expected<void, std::string> delete_namespace(kube::Client& admin, const std::string& ns,
                                                 const Settings& s) {
  const auto start = Clock::now();
  if (auto r = admin.remove(kube::resources::kNamespaces, "", ns); !r) {
    return tl::unexpected(fmt::format("delete namespace {}: {}", ns, r.error().to_string()));
  }
  auto none = [](std::size_t, std::size_t total) { return total == 0; };
  if (auto gone = wait_for(admin, kube::resources::kPods, ns, {}, any, none, s.timeout); !gone) {
    return tl::unexpected(fmt::format("cleanup of {}: {}", ns, gone.error()));
  }
  const double pods_gone = seconds(Clock::now() - start);
  // Until the namespace itself is gone, its Services keep their ClusterIPs.
  auto named = [&ns](const json::value& o) { return str_at(o, "/metadata/name") == ns; };
  auto zero = [](std::size_t matching, std::size_t) { return matching == 0; };
  if (auto gone = wait_for(admin, kube::resources::kNamespaces, "", {}, named, zero, s.timeout);
      !gone) {
    return tl::unexpected(fmt::format("cleanup of {}: {}", ns, gone.error()));
  }
  fmt::print("  namespace {} deleted: its pods gone after {:.1f} s, itself after {:.1f} s\n", ns,
             pods_gone, seconds(Clock::now() - start));
  return {};
}

// The controller's client: rate limited as the operator's (objects, and Events on their own).
std::shared_ptr<kube::Client> controller_client(const testenv::ControlPlane& cp,
                                                const Settings& s) {
  return admin_client(cp, s.qps, s.burst,
                      s.event_qps < 0 ? std::nullopt : std::optional<double>(s.event_qps),
                      s.event_burst);
}

reconciler::ControllerOptions controller_options(const std::string& ns, const Settings& s) {
  reconciler::ControllerOptions o;
  o.watch_namespace = ns;
  o.workers = s.workers;
  if (s.status_progress_ms >= 0) {
    o.status_progress_interval = std::chrono::milliseconds(s.status_progress_ms);
  }
  return o;
}

// A new Controller on fresh caches reconciles every converged Stack once: what its client
// sends besides the informers' LIST and WATCH requests. Returns it still running (it has to
// remove the Stacks' finalizers if the namespace is deleted next).
tl::expected<std::unique_ptr<reconciler::Controller>, std::string> restart(
    const testenv::ControlPlane& cp, const Settings& s, const std::string& ns, Run& run) {
  auto client = controller_client(cp, s);
  // Start-up (the caches' sync, the PodDisruptionBudget API's discovery: two GETs on a 1.20
  // server) is not a pass's doing: counted from when the workers start.
  auto options = controller_options(ns, s);
  options.start_workers = false;
  auto controller = std::make_unique<reconciler::Controller>(client, std::move(options));
  if (auto started = controller->start(); !started) {
    return tl::unexpected("controller: " + started.error().to_string());
  }
  const auto before = client->metrics().snapshot();
  controller->start_workers();
  // Every Stack was queued while the caches synced; the count of finished passes has no event
  // to watch, so it is polled (in-process, not part of any figure).
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (controller->stats().reconciles < static_cast<std::uint64_t>(s.stacks) &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const auto& [key, n] : difference(client->metrics().snapshot(), before)) {
    if (key.first != "LIST" && key.first != "WATCH" && n > 0) run.restart_requests[key] = n;
  }
  run.restart_reconciles = controller->stats().reconciles;
  return controller;
}

}  // namespace

tl::expected<Run, std::string> run_reference(const testenv::ControlPlane& cp, const Settings& s,
                                             const std::string& ns, bool cleanup) {
  auto admin = admin_client(cp);
  if (auto ok = create_namespace(*admin, ns, true); !ok) return tl::unexpected(ok.error());
  catalog::FieldErrors errors;
  const auto app = catalog::decode_apptype(apptype_object(ns, s.shape), errors);
  std::vector<Creation> creations;
  auto stacks = stack_creations(ns, s);
  if (!stacks) return tl::unexpected(stacks.error());
  for (const auto& c : *stacks) {
    auto stack = catalog::decode_stack(c.object, errors);
    auto desired = reconciler::desired_state(stack, app, nullptr);
    if (!desired) return tl::unexpected(desired.error().to_string());
    // No Stack exists here: an ownerReference to it would have the garbage collector delete
    // the objects.
    auto add = [&](const kube::ResourceType& type, json::value o) {
      o.at("metadata").as_object().erase("ownerReferences");
      creations.push_back({type, std::move(o)});
    };
    add(kube::resources::kServices, desired->headless_service);
    for (const auto& role : desired->roles) add(kube::resources::kStatefulSets, role.stateful_set);
    for (const auto& svc : desired->member_services) add(kube::resources::kServices, svc);
  }
  auto client = admin_client(cp, s.qps, s.burst);
  Run run;
  Timeline timeline(cp, ns, s);
  const auto start = Clock::now();
  auto created = create_all(*client, creations, s.workers);
  if (!created) {
    timeline.cancel();
    return tl::unexpected(created.error());
  }
  timeline.finish(&run, start);
  if (run.pods_seconds == 0) return tl::unexpected("reference: " + timeline.error());
  run.seconds = run.pods_seconds;
  run.requests = client->metrics().snapshot();
  fmt::print("  reference in {}: every pod Ready after {:.1f} s\n", ns, run.seconds);
  if (cleanup) {
    if (auto ok = delete_namespace(*admin, ns, s); !ok) return tl::unexpected(ok.error());
  }
  return run;
}

tl::expected<Run, std::string> run_kstack(const testenv::ControlPlane& cp, const Settings& s,
                                          const std::string& ns, bool cleanup) {
  auto admin = admin_client(cp);
  if (auto ok = create_namespace(*admin, ns, true); !ok) return tl::unexpected(ok.error());
  if (auto r = admin->create(catalog::resources::kAppTypes, ns, apptype_object(ns, s.shape)); !r) {
    return tl::unexpected("create AppType: " + r.error().to_string());
  }
  auto stacks = stack_creations(ns, s);
  if (!stacks) return tl::unexpected(stacks.error());
  Run run;
  {
    auto client = controller_client(cp, s);
    reconciler::Controller controller(client, controller_options(ns, s));
    if (auto started = controller.start(); !started) {
      return tl::unexpected("controller: " + started.error().to_string());
    }
    const auto before = client->metrics().snapshot();
    const auto reconciles = controller.stats().reconciles;
    Timeline timeline(cp, ns, s);
    const auto start = Clock::now();
    auto created = create_all(*admin, *stacks, s.workers);
    tl::expected<Clock::time_point, std::string> ready =
        tl::unexpected(std::string("Stacks not created"));
    if (created) {
      const auto n = static_cast<std::size_t>(s.stacks);
      ready = wait_for(
          *admin, catalog::resources::kStacks, ns, {}, stack_ready,
          [n](std::size_t matching, std::size_t) { return matching == n; }, s.timeout);
    }
    run.requests = difference(client->metrics().snapshot(), before);
    run.reconciles = controller.stats().reconciles - reconciles;
    if (!ready) timeline.cancel();
    timeline.finish(&run, start);
    controller.stop();
    if (!created) return tl::unexpected(created.error());
    if (!ready) return tl::unexpected("kstack: " + ready.error());
    run.seconds = seconds(*ready - start);
  }
  fmt::print("  kstack in {}: every Stack ready after {:.1f} s\n", ns, run.seconds);
  auto again = restart(cp, s, ns, run);
  if (!again) return tl::unexpected(again.error());
  if (cleanup) {
    // Not measured; what the controller does meanwhile is summed up below instead of logged.
    const auto level = spdlog::get_level();
    spdlog::set_level(spdlog::level::off);
    const auto before = (*again)->client().metrics().snapshot();
    auto ok = delete_namespace(*admin, ns, s);
    const auto during = difference((*again)->client().metrics().snapshot(), before);
    spdlog::set_level(level);
    if (!ok) return tl::unexpected(ok.error());
    std::string summary;
    for (const auto& [key, n] : during) {
      if (key.first != "LIST" && key.first != "WATCH") {
        summary += fmt::format(" {} {}: {};", key.first, key.second, n);
      }
    }
    fmt::print("  the controller's requests while the namespace was deleted:{}\n", summary);
  }
  (*again)->stop();
  return run;
}

}  // namespace kstack::bench
