// plan(): what one pass over a Stack should do, as a pure function of its Snapshot and what the
// pass found out so far (docs/reconciler.md): the objects to apply and delete, claims to adopt,
// release or delete, setup steps to start, notifications to queue, Events, the new status and
// when to look again. No I/O, no clock: everything comes in through the snapshot, so every
// transition of the member and Stack state machines is a table test.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "catalog/model.h"
#include "executor/actuators.h"
#include "informer/store.h"
#include "informer/work_queue.h"
#include "kube/resource.h"
#include "reconciler/snapshot.h"

namespace kstack::reconciler {

// An Event on the Stack, posted as it is.
struct EventSpec {
  std::string type;  // Normal | Warning
  std::string reason;
  std::string action;
  std::string note;
  bool operator==(const EventSpec&) const = default;
};

// An object event, batched with the pass's others of the same reason into one Event.
struct ObjectEvent {
  std::string reason;
  std::string action;
  std::string note;
  bool operator==(const ObjectEvent&) const = default;
};

// One write to an owned object.
struct Write {
  enum class Op {
    kApply,   // server-side apply of `object` (live: the cached object, or null)
    kDelete,  // delete `live` with a UID precondition
    kRetain,  // let go of claim `live`: force-apply `object` (no ownerReference, marked)
  } op = Op::kApply;
  const kube::ResourceType* type = nullptr;
  boost::json::value object;
  informer::ObjectPtr live;
  std::string name;
  // On success: kApply/kDelete add `event` to the batched object events; kRetain posts it.
  ObjectEvent event;
  // kApply: where an ApplyFailed cause ranks among the plan's Degraded causes.
  int cause_rank = 0;
  // kDelete of a pod: gracePeriodSeconds 0, the pod object goes at once (its node is lost and
  // no kubelet would ever confirm a graceful deletion).
  bool force = false;
};

// Why the Stack is Degraded; the lowest rank gives the condition's reason.
struct DegradedCause {
  int rank = 0;
  std::string reason;
  std::string message;
};

struct Notification {
  std::string role;
  executor::MemberTarget target;
  std::vector<std::string> arguments;
};

struct Plan {
  // ---- what the pass must find out before this plan is final ----
  std::vector<std::string> claims_to_read;
  bool is_final() const { return claims_to_read.empty(); }

  // ---- what to do, in order ----
  bool add_finalizer = false;     // before anything else; a failure ends the pass
  std::vector<Write> writes;      // owned objects and claims
  std::vector<EventSpec> events;  // after the writes
  std::vector<Notification> sends;
  // Setup steps to start on the setup executor; their outcomes come to a later pass.
  std::vector<executor::SetupStep> setup_steps;
  bool write_status = false;  // `status` differs from the Stack's
  catalog::StackStatus status;
  // `status` differs from the Stack's only in members' progress (progress_only_change) and the
  // pass has nothing else to do or say: act() may hold this write back for a while
  // (StatusPacer, act.h) and look again instead.
  bool progress_only = false;
  // Notifications whose outcome this plan consumed: forgotten once the status is written.
  std::vector<Notification> delivered;
  // Setup outcomes this plan is done with (a member's setup moved on to a conclusion, or the
  // step's container or generation is gone): forgotten once the status is written. Outcomes of
  // a member whose setup continues with a started step are kept: the next pass replays them.
  std::vector<SetupKey> setup_consumed;
  bool remove_finalizer = false;  // cleanup done: the Stack may go

  // Degraded: `status` holds the condition as the plan's causes make it; when writes fail,
  // act() recomputes it from `status_base` (status before the condition) with their causes.
  std::vector<DegradedCause> degraded;
  std::optional<catalog::StackStatus> status_base;

  informer::WorkResult result;  // when every write succeeds
};

Plan plan(const Snapshot& snapshot, const Findings& findings = {});

// Whether `after` differs from `before` only in what members' pods moving through
// create_pending -> creating -> ready change: those member states, the ready/updated counts
// and summaries, the Ready and Progressing messages (not their status or reason), the pods'
// revisions and container states, the scheduler's message, a role's first update revision,
// the rollup's flags for members starting and for StatefulSets catching up with the spec.
// Anything else — the Stack state, observedGeneration, a condition's status or reason,
// Degraded, members coming or going or entering any other state, setup and notification
// records, partitions — is not progress. False when `before` has no state yet.
bool progress_only_change(const catalog::StackStatus& before, const catalog::StackStatus& after);

// Sets the Degraded condition from `causes` (sorted by rank): the first one's reason, the
// messages joined. Used by plan() and, with failed writes added, by act().
void set_degraded(catalog::StackStatus& status, std::vector<DegradedCause> causes,
                  std::string_view now);

}  // namespace kstack::reconciler
