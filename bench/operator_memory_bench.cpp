// Memory and watches of `kstack operator` with N Stacks cached (issue 10, "one cache per kind
// per process"). On the test control plane (tests/testenv) with kstack's CRDs: an AppType and N
// Stacks (default 1,000) in one namespace, and the leader Lease held by someone else for an hour,
// so that every operator started here only caches (its controller's and its webhook's
// informers all run; nothing is reconciled, no object is written: the figures are the caches').
// With --members M, each Stack also gets the objects kstack's reconciler makes for M members
// (3 StatefulSets, a headless and M member Services, M claims and M pods, with kstack's labels:
// bench/owned_objects.h), so that the operator's informers of owned kinds cache them too; the
// pods stay Pending (no nodes), their status is a Running one PUT by the bench.
// Each `--kstack` binary given is started in turn on the same objects and measured:
//   ready      time from start to /readyz 200 (every cache synced, the webhook serving)
//   VmRSS      /proc/<pid>/status at ready, and again after --settle seconds idle; VmHWM
//   watches    WATCH requests the API server has in flight for each kstack kind, minus those it
//              had before the operator started (apiserver_longrunning_gauge): the operator's
//   informers  its own kstack_informers gauge, where the binary has it ("-" otherwise)
// So before/after is one run: --kstack <base build>/cmd/kstack --kstack build/cmd/kstack.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include "bench/owned_objects.h"
#include "bench/reconciler/bench_cluster.h"
#include "catalog/model.h"
#include "catalog/parse.h"
#include "tests/testenv/process.h"

namespace {

using namespace kstack;
namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* kOperatorNamespace = "kstack-system";
constexpr const char* kStackNamespace = "bench";
// The kinds both the controller and the webhook cache (the rest only one of them does).
const std::vector<std::string> kSharedKinds = {"stacks", "apptypes", "kstackconfigs"};

struct Options {
  int stacks = 1000;
  int members = 0;  // per Stack, over 3 roles: with owned objects (StatefulSets, Services...)
  int threads = 8;
  std::vector<std::string> binaries;
  std::vector<std::string> extra_args;
  int settle_seconds = 5;
  int rounds = 1;  // every binary once per round, in the order given
  std::string source = bench::default_source_dir().string();
};

struct Figures {
  std::string binary;
  double ready_s = 0;
  long rss_ready_kib = 0, rss_settled_kib = 0, hwm_kib = 0;
  std::map<std::string, double> watches;    // by resource, from the API server
  std::map<std::string, double> informers;  // kstack_informers by resource; empty: no gauge
};

// GET http://127.0.0.1:<port><path> (curl, argv: no shell); {status, body}, status 0 if none.
std::pair<int, std::string> http_get(std::uint16_t port, const std::string& path) {
  auto r = testenv::run_command({"curl", "-s", "--max-time", "5", "-w", "\n%{http_code}",
                                 fmt::format("http://127.0.0.1:{}{}", port, path)});
  if (!r || !r->ok()) return {0, {}};
  const auto nl = r->out.rfind('\n');
  if (nl == std::string::npos) return {0, {}};
  return {std::atoi(r->out.c_str() + nl + 1), r->out.substr(0, nl)};
}

long status_kib(int pid, const std::string& field) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return 0;
}

// Samples of `name` in a Prometheus exposition with every label of `labels`, summed by the
// value of label `by`.
std::map<std::string, double> samples_by(const std::string& exposition, const std::string& name,
                                         const std::vector<std::string>& labels,
                                         const std::string& by) {
  std::map<std::string, double> out;
  std::istringstream lines(exposition);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + "{", 0) != 0) continue;
    bool all = true;
    for (const auto& l : labels) all = all && line.find(l) != std::string::npos;
    const auto key = line.find(by + "=\"");
    const auto space = line.rfind(' ');
    if (!all || key == std::string::npos || space == std::string::npos) continue;
    const auto start = key + by.size() + 2;
    out[line.substr(start, line.find('"', start) - start)] += std::atof(line.c_str() + space + 1);
  }
  return out;
}

// WATCH requests in flight at the API server, by resource, for kstack's kinds.
std::map<std::string, double> server_watches(kube::Client& admin) {
  auto r = admin.raw("GET", "/metrics");
  if (!r || r->status != 200) return {};
  return samples_by(r->body, "apiserver_longrunning_gauge",
                    {R"(verb="WATCH")", R"(group="kstack.io")"}, "resource");
}

tl::expected<void, std::string> create_objects(kube::Client& client, const Options& o) {
  const int stacks = o.stacks;
  for (const char* ns : {kOperatorNamespace, kStackNamespace}) {
    if (auto ok = bench::create_namespace(client, ns, false); !ok) return ok;
  }
  bench::Shape shape;
  if (o.members > 0) {
    shape.roles = o.members % 3 == 0 ? 3 : 1;
    shape.members = o.members / shape.roles;
    shape.storage = true;
  }
  std::vector<bench::Creation> creations;
  creations.push_back(
      {catalog::resources::kAppTypes, bench::apptype_object(kStackNamespace, shape)});
  for (int i = 0; i < stacks; ++i) {
    creations.push_back({catalog::resources::kStacks,
                         bench::stack_object(kStackNamespace, bench::stack_name(i), shape)});
  }
  // The Lease, held for an hour by a holder that is not an operator: the operators only cache.
  json::value lease = {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata", {{"name", "kstack-operator"}, {"namespace", kOperatorNamespace}}},
      {"spec", {{"holderIdentity", "bench-holder"}, {"leaseDurationSeconds", 3600}}}};
  creations.push_back({kube::resources::kLeases, std::move(lease)});
  auto created = bench::create_all(client, creations, o.threads);
  if (!created) return tl::unexpected(created.error());
  if (o.members <= 0) return {};
  // What the reconciler would have made for each Stack, with kstack's labels, so that the
  // operator's informers of owned kinds cache them (bench/owned_objects.h).
  if (auto ok = bench::create_default_service_account(client, kStackNamespace); !ok) return ok;
  catalog::FieldErrors errors;
  const auto app = catalog::decode_apptype(created->front(), errors);
  std::uint64_t serial = 0;
  std::vector<bench::OwnedObject> owned;
  for (std::size_t i = 1; i <= static_cast<std::size_t>(stacks); ++i) {
    auto objects = bench::owned_objects((*created)[i], app, serial);
    if (!objects) return tl::unexpected(objects.error());
    for (auto& x : *objects) owned.push_back(std::move(x));
  }
  const auto start = std::chrono::steady_clock::now();
  if (auto ok = bench::create_owned(client, owned, o.threads); !ok) return ok;
  fmt::print("created {} owned objects ({} per Stack) in {:.1f} s\n", owned.size(),
             owned.size() / static_cast<std::size_t>(std::max(1, stacks)),
             bench::seconds(std::chrono::steady_clock::now() - start));
  return {};
}

tl::expected<Figures, std::string> measure(const testenv::ControlPlane& cp, kube::Client& admin,
                                           const std::string& binary, const Options& o) {
  const auto before = server_watches(admin);
  const std::uint16_t metrics_port = testenv::free_port(), probe_port = testenv::free_port();
  std::vector<std::string> argv = {binary,
                                   "operator",
                                   "--kubeconfig=" + cp.kubeconfig().string(),
                                   std::string("--namespace=") + kOperatorNamespace,
                                   "--bind-address=127.0.0.1",
                                   fmt::format("--webhook-port={}", testenv::free_port()),
                                   fmt::format("--metrics-port={}", metrics_port),
                                   fmt::format("--probe-port={}", probe_port),
                                   "--webhook-url-host=127.0.0.1",
                                   "--log-level=warn"};
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  const auto started = std::chrono::steady_clock::now();
  auto child = testenv::spawn("kstack", argv, cp.work_dir() / "operator-bench.log");
  if (!child) return tl::unexpected(child.error());
  Figures f;
  f.binary = binary;
  // An external process: polled, as a kubelet probe would.
  while (http_get(probe_port, "/readyz").first != 200) {
    if (!child->running() || std::chrono::steady_clock::now() - started > 300s) {
      return tl::unexpected(fmt::format("{} not ready ({}):\n{}", binary, child->how_it_ended(),
                                        testenv::tail_file(child->log())));
    }
    std::this_thread::sleep_for(20ms);
  }
  f.ready_s = bench::seconds(std::chrono::steady_clock::now() - started);
  f.rss_ready_kib = status_kib(child->pid(), "VmRSS");
  // The measurement point "idle after N s", not a wait for an event.
  std::this_thread::sleep_for(std::chrono::seconds(o.settle_seconds));
  f.rss_settled_kib = status_kib(child->pid(), "VmRSS");
  f.hwm_kib = status_kib(child->pid(), "VmHWM");
  for (const auto& [resource, n] : server_watches(admin)) {
    const auto was = before.find(resource);
    f.watches[resource] = n - (was == before.end() ? 0 : was->second);
  }
  f.informers = samples_by(http_get(metrics_port, "/metrics").second, "kstack_informers",
                           {R"(group="kstack.io")"}, "resource");
  child->stop(20s);
  return f;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

void report(const Options& o, const std::vector<Figures>& all) {
  fmt::print(
      "\n{} Stacks cached ({} members each{}); VmRSS in MiB; KiB/Stack = RSS idle / Stacks; "
      "watches = the API server's WATCH requests in flight from the operator; informers = its "
      "kstack_informers; load {}\n",
      o.stacks, o.members, o.members > 0 ? ", with their owned objects" : "", load_average());
  fmt::print("{:<48} {:>8} {:>10} {:>10} {:>8} {:>10}", "binary", "ready s", "RSS ready",
             "RSS idle", "HWM", "KiB/Stack");
  for (const auto& k : kSharedKinds) fmt::print(" {:>14}", k + " w/i");
  fmt::print("\n");
  for (const auto& f : all) {
    fmt::print("{:<48} {:>8.2f} {:>10.1f} {:>10.1f} {:>8.1f} {:>10.2f}", f.binary, f.ready_s,
               f.rss_ready_kib / 1024.0, f.rss_settled_kib / 1024.0, f.hwm_kib / 1024.0,
               static_cast<double>(f.rss_settled_kib) / std::max(1, o.stacks));
    for (const auto& k : kSharedKinds) {
      const auto w = f.watches.find(k);
      const auto i = f.informers.find(k);
      fmt::print(" {:>14}",
                 fmt::format("{}/{}", w == f.watches.end() ? 0 : w->second,
                             i == f.informers.end() ? "-" : fmt::format("{}", i->second)));
    }
    fmt::print("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"RSS and watches of `kstack operator` with N Stacks cached"};
  Options o;
  cli.add_option("--kstack", o.binaries, "kstack binaries to measure in turn")
      ->default_str(KSTACK_BINARY);
  cli.add_option("--stacks", o.stacks, "Stacks created (and cached by the operator)");
  cli.add_option("--members", o.members,
                 "members per Stack (3 roles): also create each Stack's StatefulSets, Services, "
                 "claims and pods as kstack would (0: Stacks only)");
  cli.add_option("--threads", o.threads, "client threads creating the objects");
  cli.add_option("--settle", o.settle_seconds, "seconds idle before the second RSS reading");
  cli.add_option("--rounds", o.rounds, "measure every binary this many times, alternating");
  cli.add_option("--operator-arg", o.extra_args, "extra flag for `kstack operator` (repeatable)");
  cli.add_option("--source", o.source, "kstack checkout (for deploy/crds)");
  CLI11_PARSE(cli, argc, argv);
  if (o.binaries.empty()) o.binaries.push_back(KSTACK_BINARY);

  auto cp = bench::start_with_crds(o.source);
  if (!cp) {
    fmt::print(stderr, "{}\n", cp.error());
    return 1;
  }
  auto admin = bench::admin_client(**cp);
  if (auto ok = create_objects(*admin, o); !ok) {
    fmt::print(stderr, "{}\n", ok.error());
    return 1;
  }
  std::vector<Figures> all;
  for (int round = 0; round < std::max(1, o.rounds); ++round) {
    for (const auto& binary : o.binaries) {
      auto f = measure(**cp, *admin, binary, o);
      if (!f) {
        fmt::print(stderr, "{}\n", f.error());
        return 1;
      }
      all.push_back(std::move(*f));
    }
  }
  report(o, all);
  return 0;
}
