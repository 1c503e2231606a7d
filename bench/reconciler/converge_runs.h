// The two runs of the convergence benchmark (converge_bench.cpp), each in a fresh namespace of
// the same control plane and simulated nodes, each timed from its first create:
//   kstack     — N Stacks created at once; an in-process reconciler::Controller converges them;
//                done when every Stack's status.state is "ready" (seen on a watch). Then a new
//                Controller on fresh caches re-reconciles them all (must write nothing).
//   reference  — the same objects (reconciler::desired_state of each Stack, ownerReferences
//                dropped) created with a plain client at the same rate limits; done when every
//                pod is Ready.
// Both record when every StatefulSet existed and every pod was Ready, the kube-apiserver's CPU
// and this process's, and (kstack) the controller's requests by verb and code.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <tl/expected.hpp>

#include "bench/reconciler/bench_cluster.h"
#include "kube/config.h"
#include "tests/testenv/control_plane.h"

namespace kstack::bench {

struct Settings {
  int stacks = 100;
  Shape shape;
  int nodes = 4;
  int workers = 4;  // the operator's --workers default
  double qps = kube::kDefaultQps;
  int burst = kube::kDefaultBurst;
  // The controller's Events' own bucket (the operator's --event-qps/--event-burst defaults);
  // event_qps < 0: Events share the objects' bucket.
  double event_qps = kube::kDefaultQps;
  int event_burst = kube::kDefaultBurst;
  int controller_manager_qps = 100;
  bool reference = true;
  // false: Stacks are created as written, without the admission webhook's defaults and
  // finalizer (as in a cluster whose webhook is off: the controller adds the finalizer).
  bool admission = true;
  // The controller's status_progress_interval (ms); negative: the controller's default.
  int status_progress_ms = -1;
  int rounds = 1;  // each round runs both; which goes first alternates
  std::chrono::seconds timeout{900};
  std::string source = default_source_dir().string();
  int pods() const { return stacks * shape.roles * shape.members; }
};

struct Run {
  double seconds = 0;        // first create -> done
  double sets_seconds = 0;   // first create -> every StatefulSet exists
  double pods_seconds = 0;   // first create -> every pod Ready
  double apiserver_cpu = 0;  // kube-apiserver CPU seconds over the run
  double own_cpu = 0;        // this process (controller, creating threads, watches)
  RequestCounts requests;    // kstack: the controller's; reference: the creating client's
  std::uint64_t reconciles = 0;
  RequestCounts restart_requests;  // kstack restarted: besides the informers' LIST and WATCH
  std::uint64_t restart_reconciles = 0;
};

// `cleanup`: delete the namespace afterwards and wait until its pods (and Stacks) are gone, so
// that the next run has the simulated nodes to itself.
tl::expected<Run, std::string> run_reference(const testenv::ControlPlane& cp, const Settings& s,
                                             const std::string& ns, bool cleanup);
tl::expected<Run, std::string> run_kstack(const testenv::ControlPlane& cp, const Settings& s,
                                          const std::string& ns, bool cleanup);

}  // namespace kstack::bench
