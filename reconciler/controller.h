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
#include <memory>
#include <string>

#include "executor/executor.h"
#include "executor/setup.h"
#include "kube/client.h"
#include "reconciler/notifier.h"

namespace kstack::reconciler {

struct ControllerOptions {
  std::string operator_namespace = "kstack-system";  // where KStackConfig and `system` apps live
  std::string watch_namespace;                       // "" = all namespaces
  int workers = 2;
  std::chrono::milliseconds resync_period{5 * 60 * 1000};
  // While members are still converging the Stack is looked at again after this long, even if
  // no watch event arrives (watch events normally come first).
  std::chrono::milliseconds poll_interval{2000};
  std::chrono::milliseconds sync_timeout{60 * 1000};
  executor::ExecutorOptions executor;
  executor::SetupOptions setup;
  NotifierOptions notifier;
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
  // Stops taking work, lets in-flight reconciles finish, stops the informers. Idempotent.
  void stop();

  bool synced() const;
  ControllerStats stats() const;
  kube::Client& client() { return *client_; }

 private:
  struct Impl;
  std::shared_ptr<kube::Client> client_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kstack::reconciler
