// One Stack's reconcile pass (docs/spec.md §4): observe from the caches, compute the desired
// objects, issue only the writes needed through the executor, advance the member and stack
// state machines, write status once if it changed, and post Events for what it did.
// Level-based and idempotent: running it again on an unchanged cluster issues no write.
#pragma once

#include <chrono>
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
#include "reconciler/desired_state.h"
#include "reconciler/notifier.h"
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
};

// What runs setup packages (issue 6); without it, members of roles with a package end in
// config_error saying so.
struct SetupHooks {
  executor::SetupRunner* runner = nullptr;
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
  static std::vector<std::string> stacks_for_owned(const boost::json::value& object);
  // Stacks using an AppType (for AppType events), and every Stack (for KStackConfig events).
  std::vector<std::string> stacks_for_apptype(const boost::json::value& apptype) const;
  std::vector<std::string> all_stacks() const;

  const catalog::Catalog& catalog() const { return catalog_; }

 private:
  struct Pass;
  // One role's members this pass: those in the spec, and those leaving it.
  struct RolePlan {
    std::string id;
    const DesiredRole* desired = nullptr;
    std::optional<catalog::SetupPackage> package;
    catalog::RoleStatus status;                  // members in the spec
    std::vector<catalog::MemberStatus> leaving;  // delete_pending / deleting
    std::int64_t replicas = 0;                   // what the StatefulSet gets this pass
  };
  struct SetupContext {
    Pass& pass;
    const catalog::FoundApp& app;
    const catalog::KStackConfig* config;
    const DesiredState& desired;
    std::vector<RolePlan>& plans;
  };
  void member_setup(SetupContext& ctx, const RolePlan& plan, catalog::MemberStatus& member,
                    const PodView& pod);
  void announce(SetupContext& ctx);
  void deliver_notifications(SetupContext& ctx);
  kube::Result<std::string> package_payload(const SetupContext& ctx,
                                            const catalog::SetupPackage& package);
  informer::WorkResult run(Pass& pass);
  informer::WorkResult finalize(Pass& pass);
  informer::WorkResult write_status(Pass& pass, informer::WorkResult result);
  bool apply(Pass& pass, const kube::ResourceType& type, const boost::json::value& desired,
             const informer::ObjectPtr& live);
  bool remove(Pass& pass, const kube::ResourceType& type, const informer::ObjectPtr& live,
              std::string_view why);
  void remember(informer::Store* store, boost::json::value object);
  // Posts the pass's object events, one Event per reason (a new Stack's 13 creations are one
  // Event, not 13 requests; Executor::events splits notes that do not fit one Event).
  void post_object_events(Pass& pass);
  // Lets go of a claim for a retention policy: drops kstack's ownerReference and marks it
  // retained (catalog::kRetainedAnnotation = `policy`); a failed write is the pass's failure.
  void retain(Pass& pass, const informer::ObjectPtr& pvc, std::string_view policy);

  Caches caches_;
  executor::Executor& executor_;
  ReconcilerOptions options_;
  catalog::Catalog catalog_;
  observer::Observer observer_;
  SetupHooks setup_;
};

}  // namespace kstack::reconciler
