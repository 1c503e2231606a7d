// plan(): one pass over a Stack as a pure function (docs/reconciler.md "One pass"): cleanup of
// a Stack being deleted, the finalizer, a missing AppType or an unrenderable spec, else the
// objects, claims, members, notifications, and the status they add up to.
#include "reconciler/plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "catalog/defaults.h"
#include "reconciler/plan_internal.h"

namespace kstack::reconciler {
using informer::WorkResult;

namespace {
constexpr std::size_t kMaxDegradedMessage = 2048;

bool progress_state(std::string_view s) {
  return s == catalog::kMemberCreatePending || s == catalog::kMemberCreating ||
         s == catalog::kMemberReady;
}

// `st` without what progress_only_change() lets differ; `first_revision`: blank the roles'
// update revisions (the other status had none yet).
void blank_progress(catalog::StackStatus& st, const std::vector<bool>& first_revision) {
  for (auto& c : st.conditions) {
    if (c.type == kConditionReady || c.type == kConditionProgressing) c.message.clear();
  }
  auto& rollup = st.member_state_rollup;
  // Whether the StatefulSets have the replicas the spec asks: while a new Stack's are made
  // they do not; where it matters to people it moves the Progressing reason (Scaling).
  rollup.membership_changing = false;
  rollup.members_initializing = rollup.members_not_scheduled = rollup.members_waiting = false;
  st.ready_members = st.updated_members = 0;
  st.member_summary.clear();
  st.update_summary.clear();
  for (std::size_t i = 0; i < st.roles.size(); ++i) {
    auto& r = st.roles[i];
    r.updated_members = 0;
    if (i < first_revision.size() && first_revision[i]) r.update_revision.clear();
    for (auto& m : r.members) {
      if (progress_state(m.state)) m.state.clear();
      m.template_revision.clear();
      m.app.clear();
      m.state_detail.last_known_container_state.clear();
      m.state_detail.scheduling_error_message.clear();
    }
  }
}

}  // namespace

bool progress_only_change(const catalog::StackStatus& before, const catalog::StackStatus& after) {
  if (before.state.empty() || before.state != after.state ||
      before.observed_generation != after.observed_generation ||
      before.roles.size() != after.roles.size()) {
    return false;
  }
  std::vector<bool> first_revision(before.roles.size());
  for (std::size_t i = 0; i < before.roles.size(); ++i) {
    first_revision[i] = before.roles[i].update_revision.empty();
  }
  auto a = before;
  auto b = after;
  blank_progress(a, first_revision);
  blank_progress(b, first_revision);
  return same_status(a, b);
}

void set_degraded(catalog::StackStatus& st, std::vector<DegradedCause> causes,
                  std::string_view now) {
  const auto gen = st.observed_generation;
  if (causes.empty()) {
    set_condition(st.conditions, kConditionDegraded, "False", kReasonAsExpected, "no problem found",
                  gen, now);
    return;
  }
  std::stable_sort(causes.begin(), causes.end(),
                   [](const auto& a, const auto& b) { return a.rank < b.rank; });
  std::string message;
  for (const auto& c : causes) {
    if (!message.empty()) message += "; ";
    message += c.message;
  }
  // Cut between characters: the API server stores a split one as U+FFFD, and every later
  // pass, cutting the same way, would find the status changed and write it again.
  message.resize(detail::utf8_prefix(message, kMaxDegradedMessage).size());
  set_condition(st.conditions, kConditionDegraded, "True", causes.front().reason, message, gen,
                now);
}

namespace detail {
namespace {

// The Stack cannot progress (AppType missing, spec that cannot be rendered): state error,
// nothing written but status, one Warning while the status changes.
void plan_blocked(Planning& p, std::string_view reason, const std::string& msg) {
  auto& st = p.st();
  st.state = std::string(catalog::kStackError);
  const auto gen = st.observed_generation;
  set_condition(st.conditions, kConditionDegraded, "True", reason, msg, gen, p.snap.now);
  set_condition(st.conditions, kConditionReady, "False", reason, msg, gen, p.snap.now);
  set_condition(st.conditions, kConditionProgressing, "False", kReasonBlocked, msg, gen,
                p.snap.now);
  if (!same_status(st, p.snap.old_status)) p.event("Warning", reason, "Reconcile", msg);
}

// Progressing while the Stack is not Ready: a rollout stopped (UpgradeFailed) or held
// (Paused) is False; a rollout, creation, scaling or recovery under way is True.
void plan_progressing(Planning& p, bool never_ready, const std::string& summary) {
  auto& st = p.st();
  const auto gen = st.observed_generation;
  const auto& now = p.snap.now;
  if (!p.rollout_failure.empty()) {
    set_condition(st.conditions, kConditionProgressing, "False", kReasonUpgradeFailed,
                  fmt::format("rollout stopped: {}; nothing else moves until the spec changes "
                              "(revert it, or fix forward)",
                              p.rollout_failure),
                  gen, now);
  } else if (p.rolling && p.stack().spec.paused) {
    set_condition(
        st.conditions, kConditionProgressing, "False", kReasonPaused,
        fmt::format("rollout paused by spec.paused ({} members updated)", st.update_summary), gen,
        now);
  } else if (p.rolling) {
    set_condition(st.conditions, kConditionProgressing, "True", kReasonRollingUpdate,
                  fmt::format("{} members updated{}{}", st.update_summary,
                              p.rollout_progress.empty() ? "" : "; ", p.rollout_progress),
                  gen, now);
  } else if (!p.start_order_wait.empty()) {
    set_condition(st.conditions, kConditionProgressing, "True", kReasonWaitingForDependencies,
                  fmt::format("{}; {}", summary, p.start_order_wait), gen, now);
  } else {
    const auto reason = never_ready                    ? kReasonCreating
                        : p.rollup.membership_changing ? kReasonScaling
                                                       : kReasonRecovering;
    set_condition(st.conditions, kConditionProgressing, "True", reason, summary, gen, now);
  }
}

// spec.stopped: `stopped` once no member has a pod (Progressing False), until then Stopping.
void plan_stopped(Planning& p) {
  auto& st = p.st();
  const auto gen = st.observed_generation;
  const auto& now = p.snap.now;
  std::int64_t running = 0;
  for (const auto& r : st.roles) {
    for (const auto& m : r.members) {
      if (m.state != catalog::kMemberStopped) ++running;
    }
  }
  const bool stopped = running == 0;
  const auto msg = stopped ? fmt::format(
                                 "stopped by spec.stopped: {} members without pods, their "
                                 "claims, Services and status kept",
                                 p.wanted)
                           : fmt::format(
                                 "stopping (spec.stopped): {} of {} members still have a "
                                 "pod",
                                 running, p.wanted);
  set_condition(st.conditions, kConditionReady, "False", kReasonStopped, msg, gen, now);
  set_condition(st.conditions, kConditionProgressing, stopped ? "False" : "True",
                stopped ? kReasonStopped : kReasonStopping, msg, gen, now);
  p.out.status_base = st;
  set_degraded(st, p.degraded, now);
  p.out.degraded = p.degraded;
  const auto& old_state = p.snap.old_status.state;
  st.state = std::string(stopped ? catalog::kStackStopped : catalog::kStackUpdating);
  if (st.state != old_state) {
    p.event("Normal", "StateChanged", "Reconcile",
            fmt::format("Stack state {} -> {} ({})", old_state.empty() ? "none" : old_state,
                        st.state, msg));
  }
  p.out.result = stopped && !p.waiting ? WorkResult::success()
                                       : WorkResult::requeue_after(p.snap.poll_interval);
}

// Ready, Progressing and the stack state from the members; then Degraded from the causes.
void plan_state(Planning& p, bool all_ready) {
  auto& st = p.st();
  const auto gen = st.observed_generation;
  const auto& now = p.snap.now;
  const auto summary = fmt::format("{} of {} members ready", p.ready, p.wanted);
  if (all_ready) {
    set_condition(st.conditions, kConditionReady, "True", kReasonAllMembersReady, summary, gen,
                  now);
    set_condition(st.conditions, kConditionProgressing, "False", kReasonStable,
                  "every member is as the spec asks", gen, now);
  } else if (p.rolling && p.ready == p.wanted) {
    set_condition(st.conditions, kConditionReady, "False", kReasonRollingUpdate,
                  fmt::format("{}; {} run the current template", summary, st.update_summary), gen,
                  now);
  } else {
    set_condition(st.conditions, kConditionReady, "False", kReasonMembersNotReady, summary, gen,
                  now);
  }
  const auto& old_state = p.snap.old_status.state;
  const bool never_ready = old_state.empty() || old_state == catalog::kStackCreating;
  if (!all_ready) plan_progressing(p, never_ready, summary);
  p.out.status_base = st;
  set_degraded(st, p.degraded, now);
  p.out.degraded = p.degraded;
  st.state = std::string(all_ready     ? catalog::kStackReady
                         : never_ready ? catalog::kStackCreating
                                       : catalog::kStackUpdating);
  if (st.state != old_state) {
    p.event("Normal", "StateChanged", "Reconcile",
            fmt::format("Stack state {} -> {} ({})", old_state.empty() ? "none" : old_state,
                        st.state, st.member_summary));
  }
}

}  // namespace

void plan_conditions(Planning& p) {
  auto& st = p.st();
  st.updated_members = 0;
  for (const auto& role : p.roles) st.updated_members += role.status.updated_members;
  st.roles = leaving_roles(p);
  st.desired_members = p.wanted;
  st.ready_members = p.ready;
  st.member_summary = fmt::format("{}/{}", p.ready, p.wanted);
  st.update_summary = fmt::format("{}/{}", st.updated_members, p.wanted);
  for (const auto& role : p.roles) {
    const auto sts = live(p.snap.owned.stateful_sets, role.desired->stateful_set_name);
    if (!sts || replicas_of(*sts) != role.desired->replicas) p.rollup.membership_changing = true;
  }
  for (const auto& r : st.roles) {
    for (const auto& m : r.members) {
      if (!m.state_detail.last_notify_error.empty()) {
        p.degrade(kReasonNotifyFailed,
                  fmt::format("member {}: {}", m.pod, m.state_detail.last_notify_error));
      }
    }
  }
  st.member_state_rollup = p.rollup;
  if (p.stack().spec.stopped) return plan_stopped(p);
  const bool all_ready = p.ready == p.wanted && !p.rollup.membership_changing && !p.rolling;
  plan_state(p, all_ready);
  p.out.result = p.waiting || !all_ready ? WorkResult::requeue_after(p.snap.poll_interval)
                                         : WorkResult::success();
}

namespace {

void plan_running(Planning& p) {
  const auto& stack = p.stack();
  if (!p.snap.app) {
    // Admission refuses deleting an AppType in use; if it happened anyway, keep every object
    // (the data is the user's) and say why nothing progresses.
    plan_blocked(p, kReasonAppTypeMissing,
                 fmt::format("AppType \"{}\" ({} catalog) not found; nothing is changed "
                             "until it exists again",
                             stack.spec.app, stack.spec.app_catalog.value_or("any")));
    p.out.result = WorkResult::success();
    return;
  }
  p.app = &*p.snap.app;
  p.config = p.snap.config ? &*p.snap.config : nullptr;
  auto desired = desired_state(stack, p.app->app, p.config);
  if (!desired) {
    plan_blocked(p, kReasonInvalidSpec, desired.error().message);
    p.out.result = WorkResult::terminal(desired.error().message);
    return;
  }
  p.desired = &*desired;
  plan_membership(p);
  plan_objects(p);
  plan_disruption_budgets(p);
  plan_claims(p);
  plan_recovery(p);
  plan_member_states(p);
  plan_start_order(p);
  plan_rollout(p);
  plan_announce(p);
  plan_upgrade_notices(p);
  plan_notifications(p);
  plan_conditions(p);
  p.desired = nullptr;  // `desired` ends here; the plan holds copies of what it needs
}

}  // namespace
}  // namespace detail

Plan plan(const Snapshot& snapshot, const Findings& findings) {
  Plan out;
  detail::Planning p(snapshot, findings, out);
  if (snapshot.stack.metadata.deleting) {
    if (detail::has_finalizer(snapshot.stack)) detail::plan_cleanup(p);
    return out;
  }
  // The finalizer goes on first, so that a Stack deleted from here on is cleaned up by kstack
  // (retention policy) rather than only by the garbage collector.
  out.add_finalizer = !detail::has_finalizer(snapshot.stack);
  out.status = snapshot.old_status;
  out.status.observed_generation = snapshot.stack.metadata.generation;
  p.spec_changed = snapshot.old_status.observed_generation != snapshot.stack.metadata.generation;
  detail::plan_running(p);
  for (const auto& [key, state] : snapshot.setup) {
    if (state.done && !p.setup_kept.contains(key)) out.setup_consumed.push_back(key);
  }
  out.write_status = !same_status(out.status, snapshot.old_status);
  out.progress_only = out.write_status && !out.add_finalizer && out.writes.empty() &&
                      out.events.empty() && out.sends.empty() && out.setup_steps.empty() &&
                      out.delivered.empty() && out.setup_consumed.empty() &&
                      out.claims_to_read.empty() &&
                      progress_only_change(snapshot.old_status, out.status);
  return out;
}

}  // namespace kstack::reconciler
