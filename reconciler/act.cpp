// act(): the writes, Events, notifications and status write of one planned pass.
#include "reconciler/act.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "catalog/defaults.h"
#include "catalog/names.h"
#include "catalog/parse.h"
#include "kube/log_context.h"
#include "reconciler/status.h"

namespace kstack::reconciler {
namespace json = boost::json;
using informer::WorkResult;
namespace res = kube::resources;

namespace {

// Retry quickly on conflicts (stale cache) and transient errors; give up on the rest.
WorkResult result_for(const kube::Error& e, std::string what) {
  switch (e.kind) {
    case kube::ErrorKind::kBadRequest:
    case kube::ErrorKind::kInvalid:
    case kube::ErrorKind::kForbidden:
    case kube::ErrorKind::kMethodNotAllowed:
    case kube::ErrorKind::kUnsupportedMedia:
      return WorkResult::terminal(std::move(what));
    default:
      return WorkResult::retry(std::move(what));
  }
}

std::string uid_of(const informer::PackedValue& object) {
  std::error_code ec;
  const auto* v = object.find_pointer("/metadata/uid", ec);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

// What the server answered is newer than the cache: keep it there so that a pass running
// before the watch event arrives does not act on the old object again.
void remember(informer::Store* store, json::value object) {
  if (store == nullptr || !object.is_object()) return;
  if (auto* md = object.as_object().if_contains("metadata"); md && md->is_object()) {
    md->as_object().erase("managedFields");
  }
  // Ordered against the watch (informer/store.h): an answer older than what the watch already
  // delivered (a newer version, a DELETE) is not cached, so nothing is rolled back or revived.
  store->upsert_write_answer(informer::pack(object));
}

// One pass's acting: the Stack object its writes go to, what failed, what to post at the end.
struct Acting {
  const Snapshot& snap;
  const Plan& plan;
  Actuators& a;
  informer::ObjectPtr object;         // the Stack (updated by the finalizer write)
  std::optional<WorkResult> failure;  // the first failed write
  std::vector<DegradedCause> failed_applies;
  std::vector<ObjectEvent> object_events;
  bool namespace_terminating = false;  // an apply was refused: the namespace is being deleted
  bool status_current = false;  // the status the plan made is the Stack's (written or unchanged)

  void fail(WorkResult r) {
    if (!failure) failure = std::move(r);
  }
  informer::Store* store_for(const kube::ResourceType& type) const {
    return type == res::kStatefulSets                           ? a.owned.stateful_sets
           : type == res::kServices                             ? a.owned.services
           : type == res::kPersistentVolumeClaims               ? a.owned.pvcs
           : snap.pdb_type != nullptr && type == *snap.pdb_type ? a.owned.pdbs
                                                                : nullptr;
  }
  void done(const ObjectEvent& e) {
    spdlog::info("stack {}: {}", snap.key, e.note);
    object_events.push_back(e);
  }
  void apply(const Write& w);
  void remove(const Write& w);
  void retain(const Write& w);
  std::optional<WorkResult> set_finalizers(bool add);
  WorkResult write_status(WorkResult result);
  void post_object_events();
};

void Acting::apply(const Write& w) {
  json::value answer;
  auto change = a.writer.apply(*w.type, w.object, w.live.get(), &answer);
  if (!change && change.error().namespace_terminating()) {
    // Not a failure of the Stack's: its deletion follows (see TerminatingStacks).
    namespace_terminating = true;
    return;
  }
  if (!change) {
    const auto what =
        fmt::format("apply {} {}/{}: {}", w.type->kind, snap.ns(), w.name, change.error().message);
    spdlog::warn("stack {}: {}", snap.key, what);
    if (change.error().kind != kube::ErrorKind::kConflict) {
      failed_applies.push_back({w.cause_rank, std::string(kReasonApplyFailed), what});
      a.events.event(*object, "Warning", "ApplyFailed", "Apply", what);
    }
    return fail(result_for(change.error(), what));
  }
  if (*change == executor::Change::kNone) return;
  remember(store_for(*w.type), std::move(answer));
  done(w.event);
}

void Acting::remove(const Write& w) {
  auto change = w.force ? a.writer.remove(*w.type, snap.ns(), w.name, uid_of(*w.live), "Background",
                                          std::int64_t{0})
                        : a.writer.remove(*w.type, snap.ns(), w.name, uid_of(*w.live));
  if (!change) {
    const auto what =
        fmt::format("delete {} {}/{}: {}", w.type->kind, snap.ns(), w.name, change.error().message);
    spdlog::warn("stack {}: {}", snap.key, what);
    return fail(result_for(change.error(), what));
  }
  if (*change == executor::Change::kDeleted) done(w.event);
}

void Acting::retain(const Write& w) {
  auto kept = a.writer.force_apply(*w.type, w.object);
  if (!kept) return fail(result_for(kept.error(), kept.error().message));
  remember(a.owned.pvcs, std::move(*kept));
  a.events.event(*object, "Normal", w.event.reason, w.event.action, w.event.note);
}

// Adds (or, cleanup done, removes) kstack.io/cleanup; a result when the pass ends here.
std::optional<WorkResult> Acting::set_finalizers(bool add) {
  const auto& md = snap.stack.metadata;
  auto finalizers = md.finalizers;
  if (add) {
    finalizers.emplace_back(catalog::kCleanupFinalizer);
  } else {
    std::erase(finalizers, std::string(catalog::kCleanupFinalizer));
  }
  auto stored = a.writer.set_finalizers(catalog::resources::kStacks, snap.ns(), md.name,
                                        md.resource_version, finalizers);
  if (!stored) {
    if (!add && stored.error().kind == kube::ErrorKind::kNotFound) return WorkResult::success();
    return result_for(
        stored.error(),
        add ? fmt::format("add finalizer to Stack {}: {}", snap.key, stored.error().message)
            : fmt::format("remove finalizer of Stack {}: {}", snap.key, stored.error().message));
  }
  if (!add) {
    spdlog::info("stack {}: cleanup done, finalizer removed", snap.key);
    return WorkResult::success();
  }
  remember(a.stacks, std::move(*stored));
  if (a.stacks != nullptr) object = a.stacks->get(snap.key);
  if (!object) return WorkResult::success();
  return std::nullopt;
}

// The plan's writes in the order they are sent: as planned, except that a pass creating
// StatefulSets sends its Service applies after them, so that the pods (the slow part: scheduled,
// pulled, started) get going while the Services are made; nothing needs a Service to exist
// before its pods are made (the headless Service's DNS records follow the pods, as a
// StatefulSet's do in any cluster).
std::vector<const Write*> write_order(const std::vector<Write>& writes) {
  std::vector<const Write*> out;
  out.reserve(writes.size());
  const bool creates_sets = std::any_of(writes.begin(), writes.end(), [](const Write& w) {
    return w.op == Write::Op::kApply && w.type != nullptr && *w.type == res::kStatefulSets &&
           !w.live;
  });
  auto service_apply = [](const Write& w) {
    return w.op == Write::Op::kApply && w.type != nullptr && *w.type == res::kServices;
  };
  for (const auto& w : writes) {
    if (!creates_sets || !service_apply(w)) out.push_back(&w);
  }
  if (creates_sets) {
    for (const auto& w : writes) {
      if (service_apply(w)) out.push_back(&w);
    }
  }
  return out;
}

// A later pass within `wait`: the sooner of the plan's own requeue and `wait`.
WorkResult look_again_within(WorkResult result, std::chrono::milliseconds wait) {
  switch (result.kind) {
    case WorkResult::Kind::kSuccess:
      return WorkResult::requeue_after(wait);
    case WorkResult::Kind::kRequeueAfter:
      if (result.delay > wait) result.delay = wait;
      return result;
    default:
      return result;  // errors and immediate requeues come back sooner anyway
  }
}

WorkResult Acting::write_status(WorkResult result) {
  const catalog::StackStatus* status = &plan.status;
  catalog::StackStatus with_failures;
  bool changed = plan.write_status;
  if (changed && plan.progress_only && failed_applies.empty() && !failure && a.pacer != nullptr) {
    if (auto wait = a.pacer->hold(snap.key, snap.clock)) {
      spdlog::debug("stack {}: members' progress written in {} ms", snap.key, wait->count());
      return look_again_within(std::move(result), *wait);
    }
  }
  if (!failed_applies.empty() && plan.status_base) {
    with_failures = *plan.status_base;
    auto causes = plan.degraded;
    causes.insert(causes.end(), failed_applies.begin(), failed_applies.end());
    set_degraded(with_failures, std::move(causes), snap.now);
    status = &with_failures;
    changed = !same_status(with_failures, snap.old_status);
  }
  if (!changed) {
    status_current = true;
    return result;
  }
  json::value obj = object->to_value();
  obj.as_object()["status"] = catalog::to_json(*status);
  auto stored = a.writer.update_status(catalog::resources::kStacks, obj);
  if (!stored) {
    if (stored.error().kind == kube::ErrorKind::kNotFound) return WorkResult::success();
    const auto what = fmt::format("write status of Stack {}: {}", snap.key, stored.error().message);
    spdlog::debug("{}", what);
    if (result.kind == WorkResult::Kind::kError ||
        result.kind == WorkResult::Kind::kTerminalError) {
      return result;
    }
    return result_for(stored.error(), what);
  }
  remember(a.stacks, std::move(*stored));
  status_current = true;
  if (a.pacer != nullptr) a.pacer->written(snap.key, snap.clock);
  // Only now that status no longer lists them may the notifier drop delivered commands: had
  // the write failed, the next pass would still see them pending and must not send them again.
  if (a.notifier != nullptr) {
    for (const auto& n : plan.delivered) a.notifier->forget(n.target, n.arguments);
  }
  return result;
}

// The pass's object events, one Event per (reason, action) in the order the pass made them (a
// new Stack's 13 creations are one Event, not 13 requests).
void Acting::post_object_events() {
  std::vector<std::pair<std::pair<std::string, std::string>, std::vector<std::string>>> groups;
  for (auto& e : object_events) {
    auto key = std::pair(std::move(e.reason), std::move(e.action));
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {std::move(key), {}});
    it->second.push_back(std::move(e.note));
  }
  object_events.clear();
  for (const auto& [key, notes] : groups) {
    a.events.events(*object, "Normal", key.first, key.second, notes);
  }
}

}  // namespace

std::optional<std::chrono::milliseconds> StatusPacer::hold(const std::string& key,
                                                           Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = last_.find(key);
  if (it == last_.end() || now >= it->second + interval_) return std::nullopt;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(it->second + interval_ - now);
  return std::max(left, std::chrono::milliseconds(1));
}

void StatusPacer::written(const std::string& key, Clock::time_point now) {
  std::lock_guard lock(mu_);
  last_[key] = now;
  if (last_.size() < prune_at_) return;
  // Entries older than the interval hold nothing back: dropped, so that Stacks that are gone
  // do not stay. Amortised: the next prune waits until the map has doubled.
  std::erase_if(last_, [&](const auto& kv) { return now >= kv.second + interval_; });
  prune_at_ = std::max<std::size_t>(1024, 2 * last_.size());
}

bool TerminatingStacks::contains(const std::string& key, std::string_view uid) const {
  std::lock_guard lock(mu_);
  const auto it = uids_.find(key);
  return it != uids_.end() && it->second == uid;
}

void TerminatingStacks::add(const std::string& key, std::string uid) {
  std::lock_guard lock(mu_);
  uids_[key] = std::move(uid);
}

void TerminatingStacks::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  uids_.erase(key);
}

WorkResult act(const Snapshot& snap, const Plan& plan, Actuators& actuators) {
  const std::string& uid = snap.stack.metadata.uid;
  if (!snap.stack.metadata.deleting && actuators.terminating != nullptr &&
      actuators.terminating->contains(snap.key, uid)) {
    spdlog::debug("stack {}: its namespace is being deleted: nothing to write", snap.key);
    return WorkResult::success();
  }
  Acting acting{snap, plan, actuators, snap.object, {}, {}, {}, false, false};
  if (plan.add_finalizer) {
    if (auto ended = acting.set_finalizers(true)) return *ended;
  }
  for (const auto* wp : write_order(plan.writes)) {
    if (acting.namespace_terminating) break;
    const auto& w = *wp;
    switch (w.op) {
      case Write::Op::kApply:
        acting.apply(w);
        break;
      case Write::Op::kDelete:
        acting.remove(w);
        break;
      case Write::Op::kRetain:
        acting.retain(w);
        break;
    }
  }
  if (acting.namespace_terminating) {
    // No Events (they cannot be created there) and no status: the Stack goes with its namespace.
    spdlog::info("stack {}: namespace {} is being deleted: no more writes for this Stack", snap.key,
                 snap.ns());
    if (actuators.terminating != nullptr) actuators.terminating->add(snap.key, uid);
    return WorkResult::success();
  }
  for (const auto& e : plan.events) {
    if (e.type == "Warning") spdlog::warn("stack {}: {}: {}", snap.key, e.reason, e.note);
    actuators.events.event(*acting.object, e.type, e.reason, e.action, e.note);
  }
  if (actuators.notifier != nullptr) {
    for (const auto& n : plan.sends) {
      // Also captured by the notifier for the lines its threads log about this command.
      const kube::LogScope log_scope(kube::with_member(n.role, n.target.pod));
      actuators.notifier->send(snap.key, n.target, n.arguments);
    }
  }
  if (actuators.setup != nullptr) {
    for (const auto& step : plan.setup_steps) {
      const kube::LogScope log_scope(kube::with_member(step.role, step.target.pod));
      actuators.setup->start(snap.key, step);
    }
  }
  WorkResult result = acting.failure.value_or(plan.result);
  if (snap.stack.metadata.deleting) {
    if (!acting.failure && plan.remove_finalizer) result = *acting.set_finalizers(false);
  } else {
    result = acting.write_status(std::move(result));
  }
  // As for delivered notifications: had the status write failed, the next pass replays the
  // setup from the old status and needs these outcomes again.
  if (actuators.setup != nullptr && (acting.status_current || snap.stack.metadata.deleting) &&
      !plan.setup_consumed.empty()) {
    actuators.setup->forget(snap.key, plan.setup_consumed);
  }
  acting.post_object_events();
  return result;
}

}  // namespace kstack::reconciler
