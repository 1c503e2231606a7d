// The state of one reconcile pass, shared by reconciler.cpp and setup_stage.cpp (internal).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "catalog/model.h"
#include "executor/setup.h"
#include "informer/store.h"
#include "informer/work_queue.h"
#include "reconciler/reconciler.h"

namespace kstack::reconciler {

struct Reconciler::Pass {
  informer::ObjectPtr object;  // the cached Stack
  catalog::Stack stack;
  catalog::StackStatus old_status;
  catalog::StackStatus status;
  std::string now;
  bool spec_changed = false;  // generation differs from what status last observed
  // Degraded causes, first one wins the reason.
  std::vector<std::pair<std::string, std::string>> degraded;
  std::optional<informer::WorkResult> failure;  // the first failed write
  bool waiting = false;
  bool scaling = false;  // some role's replicas move this pass (spec change or hold released)
  // What this pass created, adopted, scaled, updated, repaired or deleted; posted as one Event
  // per reason when the pass ends (Reconciler::post_object_events).
  struct ObjectEvent {
    std::string reason;
    std::string action;
    std::string note;
  };
  std::vector<ObjectEvent> object_events;
  // Notifications whose outcome was consumed this pass; forgotten once status is written.
  std::vector<std::pair<executor::MemberTarget, std::vector<std::string>>>
      delivered;  // something converges outside this pass: poll again
  std::string ns() const { return stack.metadata.namespace_name; }
};

}  // namespace kstack::reconciler
