// One Stack's reconcile pass (docs/spec.md §4): observe (a snapshot of the caches), plan (a pure
// function: reconciler/plan.h), act (the writes, Events and status write: reconciler/act.h).
// Level-based and idempotent: running it again on an unchanged cluster issues no write.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "catalog/catalog.h"
#include "executor/executor.h"
#include "informer/store.h"
#include "informer/work_queue.h"
#include "kube/log_context.h"
#include "observer/observer.h"
#include "reconciler/act.h"
#include "reconciler/desired_state.h"
#include "reconciler/notifier.h"
#include "reconciler/plan.h"
#include "reconciler/setup_executor.h"
#include "reconciler/snapshot.h"
#include "reconciler/status.h"

namespace kstack::reconciler {

struct Caches {
  informer::Store* stacks = nullptr;
  informer::Store* apptypes = nullptr;
  informer::Store* configs = nullptr;
  informer::Store* storage_classes = nullptr;  // may be null
  observer::Stores owned;
};

struct ReconcilerOptions {
  std::string operator_namespace = std::string(catalog::kDefaultOperatorNamespace);
  // Requeue delay while members converge or cleanup waits on the garbage collector.
  std::chrono::milliseconds poll_interval{2000};
  // PodDisruptionBudget as the API server serves it; nullopt: not served (no budgets).
  std::optional<kube::ResourceType> pdb_type;
  // A status write carrying only members' progress waits this long after the Stack's last one
  // (StatusPacer, act.h); 0: written at once.
  std::chrono::milliseconds status_progress_interval{0};
};

// What runs setup packages (issue 6), off the reconcile workers; without `steps`, members of
// roles with a package end in config_error saying so.
struct SetupHooks {
  SetupExecutor* steps = nullptr;
  Notifier* notifier = nullptr;
};

class Reconciler {
 public:
  // Registers its indexes on the stores: construct before the informers start.
  Reconciler(Caches caches, executor::Executor& executor, ReconcilerOptions options = {},
             SetupHooks setup = {});

  // `key` is "<namespace>/<name>" of a Stack. Every line logged during the pass carries the
  // Stack, its namespace and a reconcile_id (kube::LogScope): the caller's when it already
  // opened a pass scope for this key (pass_log_fields), else a new one.
  informer::WorkResult reconcile(const std::string& key);

  // The log fields of a new pass over the Stack `key`: stack, namespace, a fresh reconcile_id.
  static kube::LogFields pass_log_fields(std::string_view key);

  // The Stack keys an event on an owned object (StatefulSet, Service, PVC, Pod) concerns:
  // its controller ownerReference to a Stack, else its kstack.io/stack label.
  static std::vector<std::string> stacks_for_owned(const informer::PackedValue& object);
  // Stacks using an AppType (for AppType events), and every Stack (for KStackConfig events).
  std::vector<std::string> stacks_for_apptype(const informer::PackedValue& apptype) const;
  std::vector<std::string> all_stacks() const;

  const catalog::Catalog& catalog() const { return catalog_; }

 private:
  // observe: the snapshot of everything the pass over `key` plans from; nullopt when the Stack
  // is gone from the cache.
  std::optional<Snapshot> observe(const std::string& key) const;
  // The rest of observe: the claims a plan could not find in the cache, read from the server
  // (single GETs, bounded by the client's request timeout).
  void observe_claims(const Snapshot& snapshot, const std::vector<std::string>& names,
                      Findings& findings) const;

  Caches caches_;
  executor::Executor& executor_;
  ReconcilerOptions options_;
  catalog::Catalog catalog_;
  observer::Observer observer_;
  SetupHooks setup_;
  StatusPacer pacer_;
  TerminatingStacks terminating_;
};

}  // namespace kstack::reconciler
