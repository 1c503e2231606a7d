// act(): carries out a Plan (reconciler/plan.h) through small interfaces — the object writer and
// event sink (executor::Executor in the operator), the notification and setup queues — and keeps
// the server's answers in the caches, so a pass that runs before their watch events arrive does not
// repeat a write. Failed writes are the pass's result (Conflict = stale cache: retried) and, for
// applies, a Degraded cause in the status it writes.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "executor/actuators.h"
#include "informer/store.h"
#include "informer/work_queue.h"
#include "observer/observer.h"
#include "reconciler/notifier.h"
#include "reconciler/plan.h"
#include "reconciler/setup_executor.h"
#include "reconciler/snapshot.h"

namespace kstack::reconciler {

// Paces a Stack's status writes that carry nothing but its members' progress (a plan's
// progress_only): such a write waits until `interval` has passed since this Stack's last status
// write, and the pass asks to be run again then; whatever else changes (the Stack's state, a
// condition's status or reason, Degraded, setup and notification records) is written at once,
// with the progress so far. While a new Stack's pods start, their create_pending -> creating
// -> ready steps thus cost one status write per interval instead of one per burst of pod
// events. Thread-safe (one per Reconciler, shared by its workers).
class StatusPacer {
 public:
  using Clock = std::chrono::steady_clock;
  explicit StatusPacer(std::chrono::milliseconds interval) : interval_(interval) {}

  std::chrono::milliseconds interval() const { return interval_; }
  // How long a progress-only write of Stack `key` must still wait at `now` (nullopt: write).
  std::optional<std::chrono::milliseconds> hold(const std::string& key, Clock::time_point now);
  // The Stack's status was written at `now`.
  void written(const std::string& key, Clock::time_point now);

 private:
  std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::unordered_map<std::string, Clock::time_point> last_;  // last status write per Stack
  std::size_t prune_at_ = 1024;  // size at which entries older than interval_ are dropped
};

// Stacks whose namespace the API server said is being deleted (kube::Error::
// namespace_terminating): nothing can be created there any more, Events included, and the
// namespace's deletion deletes the Stack. Until then such a Stack's passes send nothing, where
// they would send one refused apply per missing object (and a refused Warning Event) for every
// object the namespace controller removes. Keyed by the Stack and its uid: a Stack made again
// under the same name (in a namespace made again) is not in it. Thread-safe.
class TerminatingStacks {
 public:
  bool contains(const std::string& key, std::string_view uid) const;
  void add(const std::string& key, std::string uid);
  void forget(const std::string& key);  // the Stack is gone

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::string> uids_;  // Stack key -> uid
};

struct Actuators {
  executor::ObjectWriter& writer;
  executor::EventSink& events;
  NotifyQueue* notifier = nullptr;  // null: notifications are not sent
  // Where server answers are kept (null: nowhere).
  informer::Store* stacks = nullptr;
  observer::Stores owned;
  SetupQueue* setup = nullptr;               // null: setup steps are not started
  StatusPacer* pacer = nullptr;              // null: every changed status is written at once
  TerminatingStacks* terminating = nullptr;  // null: not remembered between passes
};

informer::WorkResult act(const Snapshot& snapshot, const Plan& plan, Actuators& actuators);

}  // namespace kstack::reconciler
