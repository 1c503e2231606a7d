// act(): carries out a Plan (reconciler/plan.h) through small interfaces — the object writer and
// event sink (executor::Executor in the operator), the notification and setup queues — and keeps
// the server's answers in the caches, so a pass that runs before their watch events arrive does not
// repeat a write. Failed writes are the pass's result (Conflict = stale cache: retried) and, for
// applies, a Degraded cause in the status it writes.
#pragma once

#include "executor/actuators.h"
#include "informer/store.h"
#include "informer/work_queue.h"
#include "observer/observer.h"
#include "reconciler/notifier.h"
#include "reconciler/plan.h"
#include "reconciler/setup_executor.h"
#include "reconciler/snapshot.h"

namespace kstack::reconciler {

struct Actuators {
  executor::ObjectWriter& writer;
  executor::EventSink& events;
  NotifyQueue* notifier = nullptr;  // null: notifications are not sent
  // Where server answers are kept (null: nowhere).
  informer::Store* stacks = nullptr;
  observer::Stores owned;
  SetupQueue* setup = nullptr;  // null: setup steps are not started
};

informer::WorkResult act(const Snapshot& snapshot, const Plan& plan, Actuators& actuators);

}  // namespace kstack::reconciler
