// CPU time of one resync pass (issue 5): the reconciler run once for each of N cached, settled
// Stacks (default 1,000 × 3 roles × 3 members, with their StatefulSets, Services, pods and
// claims in the caches as a converged cluster holds them). Such a pass must issue no request:
// its cost is CPU only, measured on the calling thread (CLOCK_THREAD_CPUTIME_ID) R times.
// Reference, side by side in the same run: decoding the same Stacks as cached (a packed object,
// informer/packed.h: its DOM, then catalog::decode_stack, as a pass decodes it) and computing
// their desired objects (reconciler::desired_state) — what any pass has to do at least.
//
// The Stacks' status and finalizer must be exactly what the reconciler writes, so a warm-up
// pass runs first against the test control plane (CRDs installed, the Stacks created there);
// the owned objects are synthetic and live in the caches only (bench/reconciler/live_objects.h).
// The measured passes run on a copy of those caches through a client whose server is
// unreachable: every request it attempts is counted (and fails); any request is an error.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <time.h>

#include "bench/reconciler/bench_cluster.h"
#include "bench/reconciler/live_objects.h"
#include "catalog/parse.h"
#include "executor/executor.h"
#include "informer/store.h"
#include "reconciler/desired_state.h"
#include "reconciler/reconciler.h"

namespace {

using namespace kstack;
namespace json = boost::json;
using informer::WorkResult;

// The caches a Reconciler reads, as plain stores.
struct Caches {
  informer::Store stacks, apptypes, configs, sets, services, pvcs, pods;

  reconciler::Caches view() {
    reconciler::Caches c;
    c.stacks = &stacks;
    c.apptypes = &apptypes;
    c.configs = &configs;
    c.owned = observer::Stores{&sets, &services, &pvcs, &pods};
    return c;
  }
  // Shares `from`'s snapshots (they are immutable).
  void copy_from(const Caches& from) {
    auto copy = [](informer::Store& to, const informer::Store& src) {
      for (const auto& o : src.list()) to.upsert(o);
    };
    copy(stacks, from.stacks);
    copy(apptypes, from.apptypes);
    copy(configs, from.configs);
    copy(sets, from.sets);
    copy(services, from.services);
    copy(pvcs, from.pvcs);
    copy(pods, from.pods);
  }
};

informer::ObjectPtr share(const json::value& v) { return informer::pack(v); }

struct Times {
  double cpu_ms = 0;
  double wall_ms = 0;
};

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

template <typename F>
Times measure(F&& f) {
  const auto wall = std::chrono::steady_clock::now();
  const double cpu = thread_cpu_ms();
  f();
  return Times{
      thread_cpu_ms() - cpu,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall).count()};
}

std::string kind_name(WorkResult::Kind k) {
  switch (k) {
    case WorkResult::Kind::kSuccess:
      return "success";
    case WorkResult::Kind::kRequeue:
      return "requeue";
    case WorkResult::Kind::kRequeueAfter:
      return "requeue-after";
    case WorkResult::Kind::kError:
      return "error";
    case WorkResult::Kind::kTerminalError:
      return "terminal-error";
  }
  return "?";
}

void print_requests(const bench::RequestCounts& counts) {
  for (const auto& [key, n] : counts)
    fmt::print("    {:<7} {:<8} {:>8}\n", key.first, key.second, n);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double min_of(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

struct Options {
  int stacks = 1000;
  int repeat = 5;
  bench::Shape shape;
  std::string source = bench::default_source_dir().string();
};

// The AppType and the Stacks as the API server stored them, managedFields dropped.
tl::expected<std::vector<json::value>, std::string> create_stacks(kube::Client& client,
                                                                  const std::string& ns,
                                                                  const Options& o) {
  if (auto ok = bench::create_namespace(client, ns, false); !ok) return tl::unexpected(ok.error());
  std::vector<bench::Creation> creations{
      {catalog::resources::kAppTypes, bench::apptype_object(ns, o.shape)}};
  for (int i = 0; i < o.stacks; ++i) {
    creations.push_back(
        {catalog::resources::kStacks, bench::stack_object(ns, bench::stack_name(i), o.shape)});
  }
  return bench::create_all(client, creations, 8);
}

// Each Stack with the owned objects of a converged cluster (bench/reconciler/live_objects.h).
tl::expected<void, std::string> fill(Caches& caches, std::vector<json::value> created,
                                     const catalog::AppType& app) {
  std::uint64_t serial = 0;
  catalog::FieldErrors errors;
  caches.apptypes.upsert(share(std::move(created.front())));
  for (std::size_t i = 1; i < created.size(); ++i) {
    const auto stack = catalog::decode_stack(created[i], errors);
    auto desired = reconciler::desired_state(stack, app, nullptr);
    if (!desired) return tl::unexpected("desired_state: " + desired.error().to_string());
    auto live = bench::live_objects(stack, app, *desired, serial);
    for (auto& o : live.stateful_sets) caches.sets.upsert(share(std::move(o)));
    for (auto& o : live.services) caches.services.upsert(share(std::move(o)));
    for (auto& o : live.pvcs) caches.pvcs.upsert(share(std::move(o)));
    for (auto& o : live.pods) caches.pods.upsert(share(std::move(o)));
    caches.stacks.upsert(share(std::move(created[i])));
  }
  return {};
}

// One pass for real: the reconciler writes each Stack's finalizer and status itself and keeps
// the server's answers in the Stack cache. The owned objects already cover the desired ones,
// so nothing may be applied.
tl::expected<void, std::string> warm_up(Caches& caches, std::shared_ptr<kube::Client> client,
                                        const std::vector<std::string>& keys) {
  executor::Executor executor(client);
  reconciler::Reconciler rec(caches.view(), executor);
  const auto before = client->metrics().snapshot();
  std::map<std::string, int> results;
  std::string first_error;
  const auto t = measure([&] {
    for (const auto& key : keys) {
      const auto r = rec.reconcile(key);
      ++results[kind_name(r.kind)];
      if (!r.error.empty() && first_error.empty()) first_error = r.error;
    }
  });
  std::size_t ready = 0;
  for (const auto& o : caches.stacks.list()) {
    ready += bench::str_at(o->to_value(), "/status/state") == catalog::kStackReady ? 1 : 0;
  }
  const auto requests = bench::difference(client->metrics().snapshot(), before);
  fmt::print(
      "warm-up pass against the API server: {:.0f} ms, {} requests, {} applies; {} of {} "
      "Stacks ready\n",
      t.wall_ms, bench::total(requests), executor.applies(), ready, keys.size());
  print_requests(requests);
  for (const auto& [k, n] : results) fmt::print("    result {}: {}\n", k, n);
  if (!first_error.empty()) fmt::print("    first error: {}\n", first_error);
  if (executor.applies() != 0) {
    return tl::unexpected(std::string("the synthetic owned objects do not cover the desired ones"));
  }
  if (ready != keys.size()) return tl::unexpected(std::string("not every Stack is ready"));
  return {};
}

struct Passes {
  std::vector<double> pass_cpu, pass_wall, ref_cpu, ref_wall;
  std::map<std::string, int> results;
  std::uint64_t requests = 0;
};

// The measured passes on a copy of `warm`, through a client whose server is unreachable,
// alternating with the reference.
tl::expected<Passes, std::string> measure_passes(const Caches& warm, const catalog::AppType& app,
                                                 const std::vector<std::string>& keys, int repeat) {
  kube::Config unreachable;
  unreachable.server = "https://127.0.0.1:1";
  unreachable.credentials = kube::static_token("bench");
  unreachable.qps = 0;
  auto offline = kube::Client::create(unreachable);
  if (!offline) return tl::unexpected(offline.error().to_string());
  Caches cached;
  executor::Executor executor(*offline);
  reconciler::Reconciler rec(cached.view(), executor);
  cached.copy_from(warm);
  std::vector<informer::ObjectPtr> stack_objects;
  stack_objects.reserve(keys.size());
  for (const auto& key : keys) stack_objects.push_back(cached.stacks.get(key));

  Passes p;
  std::size_t sink = 0;
  for (int r = 0; r < repeat; ++r) {
    const auto ref = measure([&] {
      catalog::FieldErrors ignored;
      for (const auto& o : stack_objects) {
        const auto stack = catalog::decode_stack(o->to_value(), ignored);
        const auto desired = reconciler::desired_state(stack, app, nullptr);
        sink += desired ? desired->member_services.size() : 0;
      }
    });
    const auto pass = measure([&] {
      for (const auto& key : keys) ++p.results[kind_name(rec.reconcile(key).kind)];
    });
    p.ref_cpu.push_back(ref.cpu_ms);
    p.ref_wall.push_back(ref.wall_ms);
    p.pass_cpu.push_back(pass.cpu_ms);
    p.pass_wall.push_back(pass.wall_ms);
  }
  p.requests = (*offline)->metrics().total();
  print_requests((*offline)->metrics().snapshot());
  (void)sink;
  return p;
}

void report(const Options& o, const Caches& caches, const Passes& p) {
  const auto owned =
      caches.sets.size() + caches.services.size() + caches.pvcs.size() + caches.pods.size();
  fmt::print(
      "\n{} cached Stacks ({} roles × {} members{}), {} owned objects in the caches; "
      "{} passes\n",
      o.stacks, o.shape.roles, o.shape.members, o.shape.storage ? ", storage" : "", owned,
      o.repeat);
  fmt::print("{:<44} {:>10} {:>10} {:>10} {:>12}\n", "", "CPU min", "CPU median", "wall min",
             "CPU/Stack");
  auto row = [&](const char* name, const std::vector<double>& cpu,
                 const std::vector<double>& wall) {
    fmt::print("{:<44} {:>8.1f}ms {:>8.1f}ms {:>8.1f}ms {:>10.1f}µs\n", name, min_of(cpu),
               median(cpu), min_of(wall), min_of(cpu) * 1e3 / std::max(1, o.stacks));
  };
  row("resync pass (reconcile every Stack)", p.pass_cpu, p.pass_wall);
  row("reference (to_value, decode, desired_state)", p.ref_cpu, p.ref_wall);
  fmt::print("{:<44} {:>10.2f} {:>10.2f}\n", "ratio pass/reference",
             min_of(p.pass_cpu) / min_of(p.ref_cpu), median(p.pass_cpu) / median(p.ref_cpu));
  for (const auto& [k, n] : p.results) fmt::print("pass results: {} {}\n", k, n);
  fmt::print("requests issued by the measured passes: {} (must be 0)\n", p.requests);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"CPU time of one resync pass of the reconciler over N cached, settled Stacks"};
  Options o;
  bool no_storage = false;
  std::string log_level = "warn";
  cli.add_option("--stacks", o.stacks, "cached Stacks");
  cli.add_option("--roles", o.shape.roles, "roles per Stack");
  cli.add_option("--members", o.shape.members, "members per role");
  cli.add_flag("--no-storage", no_storage, "roles without storage (no PVCs)");
  cli.add_option("--repeat", o.repeat, "measured passes (min and median printed)");
  cli.add_option("--source", o.source, "kstack checkout (for deploy/crds)");
  cli.add_option("--log-level", log_level);
  CLI11_PARSE(cli, argc, argv);
  o.shape.storage = !no_storage;
  o.shape.ported_roles = o.shape.roles;
  o.repeat = std::max(1, o.repeat);
  spdlog::set_level(spdlog::level::from_str(log_level));

  auto cp = bench::start_with_crds(o.source);
  if (!cp) {
    fmt::print(stderr, "{}\n", cp.error());
    return 1;
  }
  auto client = bench::admin_client(**cp);
  const auto create_start = std::chrono::steady_clock::now();
  auto created = create_stacks(*client, "bench", o);
  if (!created) {
    fmt::print(stderr, "{}\n", created.error());
    return 1;
  }
  fmt::print("created the AppType and {} Stacks ({} roles × {} members{}) in {:.1f} s\n", o.stacks,
             o.shape.roles, o.shape.members, o.shape.storage ? ", storage" : "",
             bench::seconds(std::chrono::steady_clock::now() - create_start));
  catalog::FieldErrors errors;
  const auto app = catalog::decode_apptype(created->front(), errors);
  Caches warm;
  if (auto ok = fill(warm, std::move(*created), app); !ok) {
    fmt::print(stderr, "{}\n", ok.error());
    return 1;
  }
  std::vector<std::string> keys = warm.stacks.keys();
  std::sort(keys.begin(), keys.end());
  if (auto ok = warm_up(warm, client, keys); !ok) {
    fmt::print(stderr, "{}\n", ok.error());
    return 1;
  }
  (*cp)->stop();  // the measured passes need no server

  auto passes = measure_passes(warm, app, keys, o.repeat);
  if (!passes) {
    fmt::print(stderr, "{}\n", passes.error());
    return 1;
  }
  report(o, warm, *passes);
  const bool all_success = passes->results.size() == 1 &&
                           passes->results.begin()->first == kind_name(WorkResult::Kind::kSuccess);
  return passes->requests == 0 && all_success ? 0 : 1;
}
