// Time to converge (issue 5): N Stacks (default 100 × 3 roles × 3 members) created at once on
// the test control plane with kube-controller-manager and simulated nodes (tests/nodesim),
// converged by an in-process reconciler::Controller with the operator's defaults (4 workers,
// client qps 50, burst 100, Events on a bucket of their own of the same size): the time until every
// Stack is ready, Stacks/s, pods/s and the API requests per Stack. Reference, side by side in the
// same run: the same objects created without kstack, until their pods are Ready
// (bench/reconciler/converge_runs.h). With
// --rounds R both run R times, alternating which goes first; medians are reported.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench/reconciler/converge_runs.h"
#include "reconciler/controller.h"
#include "tests/testenv/node_simulator.h"

namespace {

using namespace kstack;
using bench::Run;
using bench::Settings;

// ClusterIP Services one run may hold: the test control plane's service range is 10.0.0.0/16
// (tests/testenv/control_plane.cpp), 65,534 addresses, one of them the `kubernetes` Service;
// the other run's Services may still be releasing theirs.
constexpr int kServiceCapacity = 30000;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Each figure's median over the runs; requests summed.
Run combine(const std::vector<Run>& runs) {
  Run out;
  if (runs.empty()) return out;
  auto med = [&](double Run::*field) {
    std::vector<double> v;
    v.reserve(runs.size());
    for (const auto& r : runs) v.push_back(r.*field);
    return median(v);
  };
  out.seconds = med(&Run::seconds);
  out.sets_seconds = med(&Run::sets_seconds);
  out.pods_seconds = med(&Run::pods_seconds);
  out.apiserver_cpu = med(&Run::apiserver_cpu);
  out.own_cpu = med(&Run::own_cpu);
  for (const auto& r : runs) {
    for (const auto& [key, n] : r.requests) out.requests[key] += n;
    for (const auto& [key, n] : r.restart_requests) out.restart_requests[key] += n;
    out.reconciles += r.reconciles;
    out.restart_reconciles += r.restart_reconciles;
  }
  return out;
}

void report(const Settings& s, const std::vector<Run>& kstack_runs,
            const std::vector<Run>& reference_runs) {
  const double n = s.stacks;
  const double runs = static_cast<double>(kstack_runs.size());
  const double pods = s.pods();
  const Run kstack = combine(kstack_runs);
  const Run ref = combine(reference_runs);
  const bool with_ref = !reference_runs.empty();
  fmt::print(
      "\n{} Stacks × {} roles × {} members = {} pods{}; member Services for {} of {} roles; "
      "{} simulated nodes; {} workers; client qps {} burst {}; {}; {} round(s){}; Stacks {}; "
      "members' progress written at most every {} ms\n",
      s.stacks, s.shape.roles, s.shape.members, s.pods(), s.shape.storage ? " with PVCs" : "",
      s.shape.ported_roles, s.shape.roles, s.nodes, s.workers, s.qps, s.burst,
      s.event_qps < 0
          ? std::string("Events in the same bucket")
          : fmt::format("Events' own bucket qps {} burst {}", s.event_qps, s.event_burst),
      s.rounds, s.rounds > 1 ? ", medians" : "",
      s.admission ? "as the admission webhook stores them" : "without admission",
      s.status_progress_ms >= 0 ? s.status_progress_ms
                                : reconciler::ControllerOptions{}.status_progress_interval.count());
  fmt::print("{:<44} {:>10} {:>10} {:>11}\n", "", "kstack", "reference", "kstack/ref");
  auto row = [&](std::string_view name, double k, double r, int precision) {
    if (!with_ref) {
      fmt::print("{:<44} {:>10.{}f}\n", name, k, precision);
      return;
    }
    fmt::print("{:<44} {:>10.{}f} {:>10.{}f} {:>11.2f}\n", name, k, precision, r, precision,
               r > 0 ? k / r : 0.0);
  };
  const double per = n * runs;
  // Requests counted over every run, per Stack of one run.
  auto per_stack = [per](std::uint64_t count) { return static_cast<double>(count) / per; };
  const double kw = 1 + per_stack(bench::writes(kstack.requests));
  const double rw = with_ref ? static_cast<double>(bench::writes(ref.requests)) /
                                   (n * static_cast<double>(reference_runs.size()))
                             : 0;
  row("every StatefulSet exists (s)", kstack.sets_seconds, ref.sets_seconds, 1);
  row("every pod Ready (s)", kstack.pods_seconds, ref.pods_seconds, 1);
  row("converged (s): kstack every Stack ready", kstack.seconds, ref.seconds, 1);
  row("Stacks/s", n / kstack.seconds, ref.seconds > 0 ? n / ref.seconds : 0, 2);
  row("pods/s", pods / kstack.seconds, ref.seconds > 0 ? pods / ref.seconds : 0, 1);
  row("API writes per Stack", kw, rw, 1);
  row("kube-apiserver CPU (s)", kstack.apiserver_cpu, ref.apiserver_cpu, 1);
  row("bench process CPU (s)", kstack.own_cpu, ref.own_cpu, 1);
  fmt::print(
      "(writes per Stack — kstack: the Stack's create + the controller's writes; reference: the "
      "objects' creates. The reference is done when its pods are Ready.)\n");
  if (s.rounds > 1) {
    fmt::print("per round, converged (s):");
    for (std::size_t i = 0; i < kstack_runs.size(); ++i) {
      fmt::print(" kstack {:.1f}", kstack_runs[i].seconds);
      if (i < reference_runs.size()) fmt::print(" / reference {:.1f};", reference_runs[i].seconds);
    }
    fmt::print("\n");
  }

  fmt::print(
      "\nAPI requests of the controller's client from the first create to all ready "
      "({:.1f} reconciles per Stack):\n",
      per_stack(kstack.reconciles));
  fmt::print("  {:<7} {:<8} {:>8} {:>10}\n", "verb", "code", "count", "per Stack");
  for (const auto& [key, c] : kstack.requests) {
    fmt::print("  {:<7} {:<8} {:>8} {:>10.2f}\n", key.first, key.second, c, per_stack(c));
  }
  fmt::print(
      "  total {:.2f}/Stack; writes {:.2f}/Stack: status updates (PUT) {:.2f}, server-side "
      "applies + finalizer (PATCH) {:.2f}, events (POST) {:.2f}\n",
      per_stack(bench::total(kstack.requests)), per_stack(bench::writes(kstack.requests)),
      per_stack(bench::count_verb(kstack.requests, "PUT")),
      per_stack(bench::count_verb(kstack.requests, "PATCH")),
      per_stack(bench::count_verb(kstack.requests, "POST")));
  fmt::print(
      "\ncontroller restarted on fresh caches: {} reconciles of {} ready Stacks, {} requests "
      "besides LIST/WATCH (must be 0)\n",
      kstack.restart_reconciles, s.stacks * kstack_runs.size(),
      bench::total(kstack.restart_requests));
  for (const auto& [key, c] : kstack.restart_requests) {
    fmt::print("  {:<7} {:<8} {:>8}\n", key.first, key.second, c);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"time for the reconciler to converge N Stacks on simulated nodes"};
  Settings s;
  bool no_reference = false;
  int ported_roles = -1;
  int timeout_s = static_cast<int>(s.timeout.count());
  std::string log_level = "warn";
  cli.add_option("--stacks", s.stacks, "Stacks created at once");
  cli.add_option("--roles", s.shape.roles, "roles per Stack");
  cli.add_option("--members", s.shape.members, "members per role");
  cli.add_flag("--storage", s.shape.storage, "a 1Gi PVC per member");
  cli.add_option("--ported-roles", ported_roles,
                 "roles with a port (a Service per member); default: as many as the test "
                 "control plane's service range (~250 ClusterIPs) holds");
  cli.add_option("--nodes", s.nodes, "simulated nodes");
  cli.add_option("--workers", s.workers, "controller workers (also the creating threads)");
  cli.add_option("--qps", s.qps, "client-side rate limit of the controller and the reference");
  cli.add_option("--burst", s.burst);
  cli.add_option("--event-qps", s.event_qps,
                 "the controller's Events' own bucket (the operator's --event-qps); -1: Events "
                 "share the --qps bucket");
  cli.add_option("--event-burst", s.event_burst);
  cli.add_option("--controller-manager-qps", s.controller_manager_qps,
                 "kube-controller-manager --kube-api-qps (burst twice that)");
  cli.add_option("--rounds", s.rounds, "runs of each, alternating which goes first");
  cli.add_flag("--no-reference", no_reference, "skip the reference runs");
  bool no_admission = false;
  cli.add_flag("--no-admission", no_admission,
               "create the Stacks as written, not as the mutating webhook stores them (defaults, "
               "the cleanup finalizer): the controller adds the finalizer");
  cli.add_option("--status-progress-ms", s.status_progress_ms,
                 "the controller's status_progress_interval: members' progress is written at "
                 "most this often per Stack (default: the operator's; 0: at once)");
  cli.add_option("--timeout", timeout_s, "seconds each run may take");
  cli.add_option("--source", s.source, "kstack checkout (for deploy/crds)");
  cli.add_option("--log-level", log_level);
  CLI11_PARSE(cli, argc, argv);
  s.reference = !no_reference;
  s.admission = !no_admission;
  s.rounds = std::max(1, s.rounds);
  s.timeout = std::chrono::seconds(timeout_s);
  spdlog::set_level(spdlog::level::from_str(log_level));
  const int per_role = std::max(1, s.stacks * s.shape.members);
  s.shape.ported_roles = ported_roles >= 0 ? std::min(ported_roles, s.shape.roles)
                                           : std::min(s.shape.roles, kServiceCapacity / per_role);
  if (s.shape.ported_roles * per_role > kServiceCapacity) {
    fmt::print(stderr,
               "{} member Services do not fit the test control plane's service range (~{})\n",
               s.shape.ported_roles * per_role, kServiceCapacity);
    return 1;
  }

  testenv::ControlPlane::Options options;
  options.controller_manager = true;
  options.controller_manager_extra_args = {
      fmt::format("--kube-api-qps={}", s.controller_manager_qps),
      fmt::format("--kube-api-burst={}", 2 * s.controller_manager_qps)};
  // Before the controller-manager starts, so that its garbage collector knows the kinds.
  options.before_controller_manager = [&s](testenv::ControlPlane& cp) {
    return bench::install_crds(cp, std::filesystem::path(s.source) / "deploy/crds");
  };
  auto cp = testenv::ControlPlane::start(options);
  if (!cp) {
    fmt::print(stderr, "control plane: {}\n", cp.error());
    return 1;
  }
  std::vector<std::unique_ptr<testenv::NodeSimulator>> nodes;
  for (int i = 0; i < s.nodes; ++i) {
    testenv::NodeSimulatorOptions no;
    no.node_name = fmt::format("bench-{}", i);
    // Room for a run's pods and leftovers of the previous one, on any node.
    no.pods = 2 * s.pods() / s.nodes + 10;
    no.log_level = "warn";
    auto sim = testenv::NodeSimulator::start(**cp, no);
    if (!sim) {
      fmt::print(stderr, "node simulator: {}\n", sim.error());
      return 1;
    }
    nodes.push_back(std::move(*sim));
  }
  fmt::print("control plane and {} simulated nodes up\n", s.nodes);

  std::vector<Run> kstack_runs, reference_runs;
  for (int r = 0; r < s.rounds; ++r) {
    const bool reference_first = r % 2 == 0;
    const bool last_round = r + 1 == s.rounds;
    auto reference = [&]() -> bool {
      if (!s.reference) return true;
      // The last run of all leaves its namespace: the control plane goes next.
      const bool cleanup = !(last_round && !reference_first);
      auto run = bench::run_reference(**cp, s, fmt::format("bench-reference-{}", r), cleanup);
      if (!run) fmt::print(stderr, "{}\n", run.error());
      if (run) reference_runs.push_back(*run);
      return run.has_value();
    };
    auto kstack = [&]() -> bool {
      const bool cleanup = !(last_round && (reference_first || !s.reference));
      auto run = bench::run_kstack(**cp, s, fmt::format("bench-kstack-{}", r), cleanup);
      if (!run) fmt::print(stderr, "{}\n", run.error());
      if (run) kstack_runs.push_back(*run);
      return run.has_value();
    };
    fmt::print("round {}:\n", r + 1);
    const bool ok = reference_first ? reference() && kstack() : kstack() && reference();
    if (!ok) return 1;
  }
  report(s, kstack_runs, reference_runs);
  for (const auto& run : kstack_runs) {
    if (bench::total(run.restart_requests) != 0) return 1;
  }
  return 0;
}
