// The Stack controller: informers on Stacks, AppTypes, the KStackConfig, StorageClasses and
// the owned kinds (StatefulSets, Services, PVCs, Pods — filtered by kstack's managed-by
// label), a rate-limited work queue keyed "<namespace>/<stack>", N workers running the
// Reconciler, and the event plumbing: a change to an owned object enqueues its Stack, a change
// to an AppType or the KStackConfig enqueues the Stacks that use it, and the periodic resync of
// the Stack informer enqueues every Stack as a safety net.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "executor/executor.h"
#include "executor/setup.h"
#include "kube/client.h"
#include "reconciler/notifier.h"
#include "reconciler/setup_executor.h"

namespace kstack::informer {
class InformerFactory;
class WorkQueueMetrics;
}  // namespace kstack::informer

namespace kstack::reconciler {

// The outcome of one reconcile pass, as controller-runtime's `result` label of
// controller_runtime_reconcile_total: "success", "error", "requeue", "requeue_after".
using ReconcileObserver =
    std::function<void(std::string_view result, std::chrono::nanoseconds duration)>;

struct ControllerOptions {
  std::string operator_namespace = "kstack-system";  // where KStackConfig and `system` apps live
  std::string watch_namespace;                       // "" = all namespaces
  int workers = 2;
  std::chrono::milliseconds resync_period{5 * 60 * 1000};
  // While members are still converging the Stack is looked at again after this long, even if
  // no watch event arrives (watch events normally come first).
  std::chrono::milliseconds poll_interval{2000};
  // Pod events and status-only StatefulSet updates make their Stack due after this long (or
  // sooner, if it already is): while members start, their transitions come in bursts, and one
  // pass (one status write) per burst does what one per event would. Drift — a changed spec,
  // label or owner, a Service or claim — is reconciled at once. 0: every event at once.
  std::chrono::milliseconds coalesce{250};
  // A Stack's status write that carries nothing but its members' progress (pods moving through
  // create_pending -> creating -> ready) waits until this long after its last status write;
  // the Stack's state, conditions' status and reason, Degraded, setup and notification
  // records are written at once (reconciler/act.h, StatusPacer). 0: every change at once.
  std::chrono::milliseconds status_progress_interval{5000};
  std::chrono::milliseconds sync_timeout{60 * 1000};
  executor::ExecutorOptions executor;
  executor::SetupOptions setup;
  NotifierOptions notifier;
  SetupExecutorOptions setup_steps;  // the pool members' setup steps run on
  // false: start() syncs the caches and queues keys but reconciles nothing until
  // start_workers() (the operator calls it once it holds the leader Lease).
  bool start_workers = true;
  std::shared_ptr<informer::WorkQueueMetrics> queue_metrics;  // null: none
  // The process's shared caches (started by whoever calls start() first, stopped by their
  // owner after the controller; their resync period applies instead of resync_period). Null:
  // the controller makes and stops its own.
  std::shared_ptr<informer::InformerFactory> informers;
  ReconcileObserver on_reconcile;  // called by the worker after every pass; null: none
};

struct ControllerStats {
  std::uint64_t reconciles = 0;        // reconcile passes run
  std::uint64_t reconcile_errors = 0;  // passes that ended in retry or terminal error
  std::uint64_t resyncs = 0;           // periodic resync deliveries of Stacks
};

class Controller {
 public:
  Controller(std::shared_ptr<kube::Client> client, ControllerOptions options);
  ~Controller();  // stop()
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Starts the informers, waits (bounded by sync_timeout) for their caches, then the workers.
  kube::Result<void> start();
  // Starts the workers, once start() has succeeded; no-op if they run or were stopped.
  void start_workers();
  // Stops taking work and waits for the in-flight reconciles, setup steps and notifications; the
  // caches keep running. Final: the workers cannot be started again. Idempotent.
  void stop_workers();
  // stop_workers(), then stops the informers. Idempotent.
  void stop();

  bool synced() const;
  ControllerStats stats() const;
  kube::Client& client() { return *client_; }

 private:
  // The steps of start(): one shared informer per kind; the queue, executor, setup runners and
  // reconciler; the event handlers that enqueue Stacks; the wait until every cache has synced.
  kube::Result<void> open_informers();
  void build_pipeline();
  void add_handlers();
  kube::Result<void> wait_synced();

  struct Impl;
  std::shared_ptr<kube::Client> client_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kstack::reconciler
