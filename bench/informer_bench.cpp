// Informer memory per cached object, kstack against client-go, for one kind (--kind): N objects
// created in the test control plane (tests/testenv), then each informer in a fresh process
// lists and watches them; B/object = (VmRSS once synced - VmRSS before) / N.
//   kstack          the informer exactly as `kstack operator` makes it for that kind (namespace,
//                   label selector and the default ReflectorOptions: managedFields dropped,
//                   objects packed: informer/packed.h)
//   client-go       a SharedIndexInformer of the Kubernetes 1.20.2 tree the control plane was
//                   built from (bench/informer_go, built on demand); RSS as synced and after
//                   runtime.GC() + debug.FreeOSMemory(); it keeps managedFields, as client-go
//                   1.20 does (no transform)
//   client-go-dropmf  the same, managedFields cleared by a ListWatch wrapper (kstack's content)
// Kinds: configmaps (~1.5 KB as served: a 1,000-byte value), or the kinds the operator caches,
// shaped as kstack makes them (bench/owned_objects.h): stacks, statefulsets, services, pvcs,
// pods. Rounds interleave the three processes. Not part of CI; docs/benchmarks.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include "bench/owned_objects.h"
#include "bench/reconciler/bench_cluster.h"
#include "catalog/parse.h"
#include "informer/informer.h"
#include "kube/client.h"
#include "reconciler/desired_state.h"
#include "tests/testenv/control_plane.h"
#include "tests/testenv/process.h"

namespace {

using namespace kstack;
namespace json = boost::json;
namespace fs = std::filesystem;

constexpr const char* kNamespace = "bench";

long vm_rss_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

struct KindInfo {
  kube::ResourceType type;
  std::string ns;        // the operator watches all namespaces (its default)
  std::string selector;  // the operator's selector for owned kinds
};

KindInfo kind_info(const std::string& kind) {
  const std::string owned =
      fmt::format("{}={}", reconciler::kLabelManagedBy, reconciler::kManagedByValue);
  if (kind == "configmaps") return {kube::resources::kConfigMaps, kNamespace, {}};
  if (kind == "stacks") return {catalog::resources::kStacks, {}, {}};
  if (kind == "statefulsets") return {kube::resources::kStatefulSets, {}, owned};
  if (kind == "services") return {kube::resources::kServices, {}, owned};
  if (kind == "pvcs") return {kube::resources::kPersistentVolumeClaims, {}, owned};
  if (kind == "pods") return {kube::resources::kPods, {}, owned};
  throw std::runtime_error("unknown kind " + kind);
}

// The child: one informer, prints "<objects> <RSS KiB before> <RSS KiB synced> <ms> <bytes>",
// the last the packed objects' own bytes (informer/packed.h), without the store's map.
int measure(const std::string& kind, const std::string& server, const std::string& ca_file,
            const std::string& token) {
  std::ifstream in(ca_file);
  std::string ca((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  kube::Config c;
  c.server = server;
  c.ca_pem = ca;
  c.credentials = kube::static_token(token);
  c.qps = 0;
  auto client = kube::Client::create(c);
  if (!client) return 1;
  // One request first, as the client-go side does: the connection's memory is not the cache's.
  if (!(*client)->raw("GET", "/version")) return 1;
  const auto k = kind_info(kind);
  informer::ReflectorOptions ro;  // as informer/factory.cpp makes them
  ro.type = k.type;
  ro.namespace_name = k.ns;
  ro.label_selector = k.selector;
  const long before = vm_rss_kib();
  const auto start = std::chrono::steady_clock::now();
  informer::Informer inf(*client, ro, {.resync_period = std::chrono::milliseconds(0)});
  inf.start();
  if (!inf.wait_for_sync(std::chrono::minutes(5))) return 1;
  const auto synced = std::chrono::steady_clock::now() - start;
  const long after = vm_rss_kib();
  std::size_t packed = 0;
  for (const auto& o : inf.store().list()) packed += informer::packed_size(*o);
  fmt::print("{} {} {} {:.1f} {}\n", inf.store().size(), before, after,
             std::chrono::duration<double, std::milli>(synced).count(), packed);
  inf.stop();
  return 0;
}

struct Figures {
  std::string mode;
  std::size_t count = 0;
  double b_per_object = 0;     // RSS delta
  double gc_b_per_object = 0;  // client-go: RSS delta after GC
  // client-go: the Go heap; kstack: the packed objects' bytes (no "after GC").
  double heap_per_object = 0, heap_gc_per_object = 0;
  double ms = 0;
};

// bench/informer_go built against the control plane's Kubernetes tree (vendored, offline, in
// GOPATH mode as tests/testenv/get-binaries.sh builds kube-apiserver: the Go cache is shared)
// into ~/.cache/kstack-testenv/bench; rebuilt when main.go is newer.
tl::expected<fs::path, std::string> go_reference(const fs::path& source) {
  const fs::path main_go = source / "bench/informer_go/main.go";
  const fs::path cache = testenv::default_bin_dir().parent_path();
  const fs::path tree = cache / "gopath/src/k8s.io/kubernetes";
  const fs::path out = cache / "bench/informer-go";
  std::error_code ec;
  if (fs::exists(out) && fs::last_write_time(out, ec) >= fs::last_write_time(main_go, ec)) {
    return out;
  }
  if (!fs::exists(tree / "vendor")) {
    return tl::unexpected("no Kubernetes tree at " + tree.string() +
                          " (tests/testenv/get-binaries.sh makes it)");
  }
  fs::create_directories(tree / "cmd/kstack-informer-bench");
  fs::create_directories(out.parent_path());
  fs::copy_file(main_go, tree / "cmd/kstack-informer-bench/main.go",
                fs::copy_options::overwrite_existing);
  fmt::print("building the client-go reference ({})\n", out.string());
  auto r = testenv::run_command(
      {"sh", "-c",
       fmt::format("cd '{}' && /usr/lib/go-1.19/bin/go build -p 2 -trimpath -o '{}' "
                   "./cmd/kstack-informer-bench",
                   tree.string(), out.string())},
      {{"GOCACHE", (cache / "gocache").string()},
       {"GOPATH", (cache / "gopath").string()},
       {"GO111MODULE", "off"},
       {"CGO_ENABLED", "0"},
       {"GOFLAGS", ""}},
      {}, std::chrono::minutes(30));
  if (!r || !r->ok()) return tl::unexpected("go build: " + (r ? r->err : r.error()));
  return out;
}

Figures run_child(const std::string& mode, const std::string& kind, const testenv::ControlPlane& cp,
                  const fs::path& go) {
  Figures f;
  f.mode = mode;
  if (mode.rfind("client-go", 0) == 0) {
    const auto k = kind_info(kind);
    std::vector<std::string> argv = {
        go.string(),  "-kubeconfig", cp.kubeconfig().string(), "-kind",   kind,
        "-namespace", k.ns,          "-label-selector",        k.selector};
    if (mode == "client-go-dropmf") argv.push_back("-drop-managed-fields");
    auto r = testenv::run_command(argv, {}, {}, std::chrono::minutes(10));
    if (!r || !r->ok()) {
      fmt::print(stderr, "{}: {}\n", mode, r ? r->err : r.error());
      return f;
    }
    std::istringstream line(r->out);
    long n = 0, before = 0, rss = 0, rss_gc = 0;
    double heap = 0, heap_gc = 0;
    line >> n >> before >> rss >> rss_gc >> heap >> heap_gc >> f.ms;
    if (n <= 0) return f;
    f.count = static_cast<std::size_t>(n);
    f.b_per_object = static_cast<double>(rss - before) * 1024.0 / static_cast<double>(n);
    f.gc_b_per_object = static_cast<double>(rss_gc - before) * 1024.0 / static_cast<double>(n);
    f.heap_per_object = heap / static_cast<double>(n);
    f.heap_gc_per_object = heap_gc / static_cast<double>(n);
    return f;
  }
  auto r = testenv::run_command(
      {fmt::format("/proc/{}/exe", getpid()), "--measure", mode, "--kind", kind, "--server",
       cp.server(), "--ca-file", cp.ca_file().string(), "--token", cp.admin_token()},
      {}, {}, std::chrono::minutes(10));
  if (!r || !r->ok()) {
    fmt::print(stderr, "{}: {}\n", mode, r ? r->err : r.error());
    return f;
  }
  std::istringstream line(r->out);
  long n = 0, before = 0, after = 0;
  double packed = 0;
  line >> n >> before >> after >> f.ms >> packed;
  if (n <= 0) return f;
  f.count = static_cast<std::size_t>(n);
  f.b_per_object = static_cast<double>(after - before) * 1024.0 / static_cast<double>(n);
  f.gc_b_per_object = f.b_per_object;
  f.heap_per_object = f.heap_gc_per_object = packed / static_cast<double>(n);
  return f;
}

tl::expected<void, std::string> create_config_maps(kube::Client& client, int objects) {
  const std::string payload(1000, 'x');
  std::vector<bench::Creation> creations;
  for (int i = 0; i < objects; ++i) {
    creations.push_back({kube::resources::kConfigMaps,
                         {{"apiVersion", "v1"},
                          {"kind", "ConfigMap"},
                          {"metadata",
                           {{"name", fmt::format("cm-{:05}", i)},
                            {"namespace", kNamespace},
                            {"labels", {{"app", "bench"}}}}},
                          {"data", {{"payload", payload}}}}});
  }
  auto r = bench::create_all(client, creations, 8);
  if (!r) return tl::unexpected(r.error());
  return {};
}

// Stacks (and the objects kstack owns for them) until there are `objects` of `kind`.
tl::expected<void, std::string> create_owned_kind(kube::Client& client, const std::string& kind,
                                                  int objects) {
  if (auto ok = bench::create_default_service_account(client, kNamespace); !ok) return ok;
  bench::Shape shape;
  shape.storage = true;  // claims, as a stateful app's members have
  const auto type = kind_info(kind).type;
  const int per_stack = kind == "stacks"         ? 1
                        : kind == "statefulsets" ? shape.roles
                        : kind == "services"     ? 1 + shape.roles * shape.members
                                                 : shape.roles * shape.members;
  const int stacks = (objects + per_stack - 1) / per_stack;
  std::vector<bench::Creation> creations{
      {catalog::resources::kAppTypes, bench::apptype_object(kNamespace, shape)}};
  for (int i = 0; i < stacks; ++i) {
    creations.push_back({catalog::resources::kStacks,
                         bench::stack_object(kNamespace, bench::stack_name(i), shape)});
  }
  auto created = bench::create_all(client, creations, 8);
  if (!created) return tl::unexpected(created.error());
  if (kind == "stacks") return {};
  catalog::FieldErrors errors;
  const auto app = catalog::decode_apptype(created->front(), errors);
  std::uint64_t serial = 0;
  std::vector<bench::OwnedObject> owned;
  for (std::size_t i = 1; i < created->size(); ++i) {
    auto o = bench::owned_objects((*created)[i], app, serial);
    if (!o) return tl::unexpected(o.error());
    for (auto& x : *o) {
      if (x.type.plural == type.plural) owned.push_back(std::move(x));
    }
  }
  return bench::create_owned(client, owned, 8);
}

// Average JSON size of one object as the API server serves it, and without managedFields.
std::pair<double, double> served_size(kube::Client& client, const std::string& kind) {
  const auto k = kind_info(kind);
  kube::ListOptions lo;
  lo.label_selector = k.selector;
  lo.limit = 200;
  auto page = client.list(k.type, k.ns, lo);
  if (!page) return {0, 0};
  double with = 0, without = 0;
  const auto& items = page->at("items").as_array();
  for (auto item : items) {
    with += static_cast<double>(json::serialize(item).size());
    bench::drop_managed_fields(item);
    without += static_cast<double>(json::serialize(item).size());
  }
  const auto n = static_cast<double>(std::max<std::size_t>(1, items.size()));
  return {with / n, without / n};
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"informer memory per cached object: kstack against client-go"};
  int objects = 10000, rounds = 1;
  std::string kind = "configmaps", measure_mode, server, ca_file, token, go_binary;
  std::string source = bench::default_source_dir().string();
  app.add_option("--kind", kind, "configmaps|stacks|statefulsets|services|pvcs|pods");
  app.add_option("--objects", objects, "objects of that kind to create and cache");
  app.add_option("--rounds", rounds, "each informer this many times, interleaved");
  app.add_option("--go-binary", go_binary, "the client-go reference (default: built on demand)");
  app.add_option("--source", source, "kstack checkout (CRDs, bench/informer_go)");
  app.add_option("--measure", measure_mode, "internal: kstack");
  app.add_option("--server", server);
  app.add_option("--ca-file", ca_file);
  app.add_option("--token", token);
  CLI11_PARSE(app, argc, argv);
  if (!measure_mode.empty()) return measure(kind, server, ca_file, token);
  try {
    (void)kind_info(kind);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 2;
  }
  fs::path go = go_binary;
  if (go.empty()) {
    auto built = go_reference(source);
    if (!built) {
      fmt::print(stderr, "{}\n", built.error());
      return 1;
    }
    go = *built;
  }

  auto cp = bench::start_with_crds(source);
  if (!cp) {
    fmt::print(stderr, "{}\n", cp.error());
    return 1;
  }
  auto client = bench::admin_client(**cp);
  if (auto ok = bench::create_namespace(*client, kNamespace, false); !ok) {
    fmt::print(stderr, "{}\n", ok.error());
    return 1;
  }
  const auto create_start = std::chrono::steady_clock::now();
  auto created = kind == "configmaps" ? create_config_maps(*client, objects)
                                      : create_owned_kind(*client, kind, objects);
  if (!created) {
    fmt::print(stderr, "{}\n", created.error());
    return 1;
  }
  const auto [with_mf, without_mf] = served_size(*client, kind);
  fmt::print(
      "created {} in {:.1f} s; one object as served: {:.0f} B of JSON, {:.0f} B without "
      "managedFields\n",
      kind, bench::seconds(std::chrono::steady_clock::now() - create_start), with_mf, without_mf);

  const std::vector<std::string> modes = {"kstack", "client-go", "client-go-dropmf"};
  std::map<std::string, std::vector<Figures>> all;
  for (int round = 0; round < std::max(1, rounds); ++round) {
    for (const auto& mode : modes) {
      const auto load = load_average();
      auto f = run_child(mode, kind, **cp, go);
      fmt::print(
          "round {} {:<17} {:>6} objects {:>7.0f} B/object {:>7.0f} after GC; heap {:>6.0f} / "
          "{:>6.0f} after GC; synced in {:>7.1f} ms; load {}\n",
          round + 1, mode, f.count, f.b_per_object, f.gc_b_per_object, f.heap_per_object,
          f.heap_gc_per_object, f.ms, load);
      all[mode].push_back(f);
    }
  }
  auto med = [&](const std::string& mode, double Figures::*field) {
    std::vector<double> v;
    for (const auto& f : all[mode]) v.push_back(f.*field);
    return median(v);
  };
  fmt::print("\n{} {} (medians of {} rounds), B/object of VmRSS; load {}\n", objects, kind,
             std::max(1, rounds), load_average());
  fmt::print("{:<18} {:>10} {:>10} {:>10}\n", "", "synced", "after GC", "sync ms");
  for (const auto& mode : modes) {
    fmt::print("{:<18} {:>10.0f} {:>10.0f} {:>10.1f}\n", mode, med(mode, &Figures::b_per_object),
               med(mode, &Figures::gc_b_per_object), med(mode, &Figures::ms));
  }
  const double k = med("kstack", &Figures::b_per_object);
  const double gc = med("client-go", &Figures::gc_b_per_object);
  const double gc_nogc = med("client-go", &Figures::b_per_object);
  fmt::print("kstack / client-go after GC: {:.2f}x; / client-go without GC: {:.2f}x\n",
             gc > 0 ? k / gc : 0, gc_nogc > 0 ? k / gc_nogc : 0);
  for (const auto& [mode, figures] : all) {
    for (const auto& f : figures) {
      if (f.count != static_cast<std::size_t>(figures.front().count) || f.count == 0) return 1;
    }
  }
  return 0;
}
