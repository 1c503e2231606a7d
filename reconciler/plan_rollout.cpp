// plan(): live upgrades (docs/api.md "Upgrades"). When a role's pod template changes (a new
// AppType, image, package, resources, env...), its StatefulSet gets the new template with the
// RollingUpdate partition at the live replica count, so that no member moves on its own; then
// kstack lowers the partition one member at a time, highest ordinal first: the member's
// `--preupgrade` (when the new AppType's role asks for it), the partition below it (the
// StatefulSet controller recreates its pod with the new template), its setup again
// (plan_setup.cpp: `--configure --upgrade-from`), Ready, then the next. Everything a later pass
// needs is in the cluster — the partition and the pods' revisions — or in the Stack's status
// (hook outcomes), so a restarted operator carries on where the last one stopped.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "catalog/defaults.h"
#include "executor/drift.h"
#include "kube/time.h"
#include "reconciler/plan_internal.h"

namespace kstack::reconciler::detail {
namespace json = boost::json;
using catalog::MemberStatus;
using executor::SetupOutcome;
using executor::SetupStepKind;

namespace {

// How long a member may take, once let go, to be ready on the new template (as a Deployment's
// default progressDeadlineSeconds).
constexpr std::chrono::seconds kMoveDeadline{600};

std::int64_t partition_of(const informer::PackedValue& sts) {
  const auto* v = at(sts, "/spec/updateStrategy/rollingUpdate/partition");
  return v != nullptr && v->is_int64() ? v->as_int64() : 0;
}

// The StatefulSet controller has seen the current spec: status.updateRevision is its template.
bool observed(const informer::PackedValue& sts) {
  const auto* gen = at(sts, "/metadata/generation");
  const auto* seen = at(sts, "/status/observedGeneration");
  return gen != nullptr && seen != nullptr && gen->is_int64() && seen->is_int64() &&
         seen->as_int64() >= gen->as_int64() && !str_at(sts, "/status/updateRevision").empty();
}

bool template_covered(const informer::PackedValue& live, const json::value& desired) {
  const auto* l = at(live, "/spec/template");
  const auto* d = at(desired, "/spec/template");
  return l != nullptr && d != nullptr && executor::covers(*l, *d);
}

// A script's output for a condition message: the end of its stderr (else stdout), one line.
std::string output_of(std::string_view stderr_tail, std::string_view stdout_tail) {
  std::string_view text = stderr_tail.empty() ? stdout_tail : stderr_tail;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty()) return {};
  std::string out = last_lines(text, 512);
  std::replace(out.begin(), out.end(), '\n', ' ');
  return fmt::format(" (output: {})", out);
}

void forget_hook(catalog::MemberStateDetail& d) {
  d.preupgrade_revision.clear();
  d.preupgrade_container.clear();
  d.preupgrade_succeeded = false;
  d.upgrade_error.clear();
  d.preupgrade_stdout.clear();
  d.preupgrade_stderr.clear();
}

// A member of the role as the rollout sees it.
struct Member {
  MemberStatus* m = nullptr;
  std::int64_t ordinal = 0;
  PodView pod;
  bool at_update = false;  // runs (or, without a pod, will be made from) the update revision
  bool released = false;   // at or above the live partition: the controller may move it
};

enum class Hook { kNotNeeded, kDone, kRunning, kFailed };

class RoleRollout {
 public:
  RoleRollout(Planning& p, RolePlan& role) : p_(p), role_(role) {}
  void plan();

 private:
  void observe(const informer::PackedValue& sts);
  void restart_reverted();
  std::string failure() const;
  void release();
  Hook preupgrade(Member& c);
  const SetupOutcome* step(Member& c, SetupStepKind kind, std::vector<SetupKey>& used);
  void record(Member& c, bool ok, std::string why, const executor::SetupRunner::RunResult* run);

  Planning& p_;
  RolePlan& role_;
  std::string update_;  // the StatefulSet's update revision
  std::int64_t live_partition_ = 0;
  std::vector<Member> members_;
  std::set<std::int64_t> unavailable_;  // ordinals
};

void RoleRollout::plan() {
  const auto sts = live(p_.snap.owned.stateful_sets, role_.desired->stateful_set_name);
  role_.partition = 0;  // a new StatefulSet: every member starts with the template
  if (!sts || is_deleting(*sts)) return plan_stateful_set(p_, role_);
  if (p_.stack().spec.stopped) {
    // No member runs: nothing moves. The partition stays; a template changed meanwhile is
    // what the members come back with.
    role_.partition = partition_of(*sts);
    if (auto it = p_.previous_roles.find(role_.id); it != p_.previous_roles.end()) {
      role_.status.update_revision = it->second->update_revision;
      role_.status.updated_members = it->second->updated_members;
    }
    role_.status.partition = role_.partition;
    return plan_stateful_set(p_, role_);
  }
  live_partition_ = partition_of(*sts);
  if (!template_covered(*sts, role_.desired->stateful_set)) {
    // A new template: nobody moves until kstack lets each member go. New members (ordinals at
    // or above the live count) are made with it directly.
    role_.partition = replicas_of(*sts);
    p_.rolling = true;
    p_.waiting = true;
    p_.event("Normal", "RollingUpdate", "Upgrade",
             fmt::format("role {}: new member template; members move one at a time, highest "
                         "ordinal first",
                         role_.id));
    return plan_stateful_set(p_, role_);
  }
  if (!observed(*sts)) {
    // The controller has not seen the last write yet: keep everything as it is.
    role_.partition = live_partition_;
    p_.waiting = true;
    if (auto it = p_.previous_roles.find(role_.id); it != p_.previous_roles.end()) {
      role_.status.update_revision = it->second->update_revision;
      role_.status.updated_members = it->second->updated_members;
      p_.rolling = p_.rolling || it->second->updated_members <
                                     static_cast<std::int64_t>(role_.status.members.size());
    }
    role_.status.partition = role_.partition;
    return plan_stateful_set(p_, role_);
  }
  observe(*sts);
  restart_reverted();
  std::vector<Member*> candidates;
  bool moving = false;
  for (auto& c : members_) {
    if (!c.released && !c.at_update) candidates.push_back(&c);
    if (c.released && !c.at_update) moving = true;
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const Member* a, const Member* b) { return a->ordinal > b->ordinal; });
  // Lowered to just above the highest member still to move: nothing below it moves yet.
  role_.partition = candidates.empty() ? 0 : candidates.front()->ordinal + 1;
  if (!candidates.empty() || moving) p_.rolling = true;
  if (auto why = failure(); !why.empty()) {
    p_.rollout_failure += (p_.rollout_failure.empty() ? "" : "; ") + why;
  } else if (!candidates.empty() && p_.stack().spec.paused) {
    // Members already let go finish; nobody else starts.
  } else if (!candidates.empty() && !role_.leaving.empty()) {
    p_.waiting = true;  // members leaving the role sit above the partition: they go first
  } else if (!candidates.empty()) {
    bool contiguous = true;
    const auto* spec_role = catalog::find_role(p_.stack(), role_.id);
    const std::int64_t max_unavailable =
        spec_role != nullptr ? spec_role->max_unavailable.value_or(1) : 1;
    for (auto* c : candidates) {
      const bool down = unavailable_.contains(c->ordinal);
      // A member already unavailable may always move: that costs nothing more.
      if (!down && static_cast<std::int64_t>(unavailable_.size()) + 1 > max_unavailable) break;
      const auto hook = preupgrade(*c);
      if (hook == Hook::kFailed) {
        p_.rollout_failure += (p_.rollout_failure.empty() ? "" : "; ") + failure();
        break;
      }
      unavailable_.insert(c->ordinal);
      if (hook == Hook::kRunning) {
        contiguous = false;
        continue;
      }
      if (!contiguous) continue;
      role_.partition = c->ordinal;
      c->m->state_detail.moved_at = p_.snap.now;
      p_.event("Normal", "Upgrading", "Upgrade",
               fmt::format("member {} moves to revision {}", c->m->pod, update_));
      if (p_.rollout_progress.empty()) {
        p_.rollout_progress = fmt::format("member {} moving", c->m->pod);
      }
    }
  }
  if (p_.rollout_progress.empty()) {
    for (const auto& c : members_) {
      if (c.released && (!c.at_update || c.m->state != catalog::kMemberReady)) {
        p_.rollout_progress = fmt::format("member {} moving", c.m->pod);
        break;
      }
    }
  }
  if (p_.rolling) p_.waiting = true;
  role_.status.partition = role_.partition;
  plan_stateful_set(p_, role_);
}

void RoleRollout::observe(const informer::PackedValue& sts) {
  update_ = str_at(sts, "/status/updateRevision");
  const auto current = str_at(sts, "/status/currentRevision");
  role_.status.update_revision = update_;
  for (auto& m : role_.status.members) {
    Member c;
    c.m = &m;
    c.ordinal = ordinal_of(m.pod).value_or(0);
    c.pod = view_pod(live(p_.snap.owned.pods, m.pod).get());
    // A missing pod below the partition comes back from the current revision.
    c.at_update = (c.pod.exists ? c.pod.revision : current) == update_;
    c.released = c.ordinal >= live_partition_;
    if (c.pod.exists && c.at_update) ++role_.status.updated_members;
    auto& d = m.state_detail;
    // Its hook's container is gone: the member moved (or restarted); the record is done.
    if (!d.preupgrade_container.empty() && !c.pod.container_id.empty() &&
        c.pod.container_id != d.preupgrade_container) {
      forget_hook(d);
    }
    if (m.state != catalog::kMemberReady || (c.released && !c.at_update)) {
      unavailable_.insert(c.ordinal);
    }
    if (c.at_update && m.state == catalog::kMemberReady) d.moved_at.clear();  // it arrived
    members_.push_back(std::move(c));
  }
}

// A member whose --preupgrade ran for a revision that is no longer the target and that did not
// move: the hook may have stopped or drained its daemon, so its pod is made anew.
void RoleRollout::restart_reverted() {
  for (auto& c : members_) {
    const auto& d = c.m->state_detail;
    if (d.preupgrade_revision.empty() || d.preupgrade_revision == update_ || !c.at_update ||
        !c.pod.exists || c.pod.deleting || c.pod.container_id != d.preupgrade_container) {
      continue;
    }
    add_delete(p_, kube::resources::kPods, live(p_.snap.owned.pods, c.m->pod),
               fmt::format("its startscript --preupgrade ran for revision {}, which is no longer "
                           "the target; the member starts afresh",
                           d.preupgrade_revision));
    unavailable_.insert(c.ordinal);
    p_.rolling = true;
  }
}

// Why the role's rollout cannot go on: a failed --preupgrade for the update revision, or a
// member that moved and whose setup failed.
std::string RoleRollout::failure() const {
  for (const auto& c : members_) {
    const auto& d = c.m->state_detail;
    if (d.preupgrade_revision == update_ && !d.preupgrade_succeeded &&
        d.preupgrade_container == c.pod.container_id) {
      return fmt::format("member {}: {}{}", c.m->pod, d.upgrade_error,
                         output_of(d.preupgrade_stderr, d.preupgrade_stdout));
    }
    if (c.at_update && c.m->state == catalog::kMemberConfigError &&
        !d.last_configured_revision.empty() && d.last_configured_revision != c.pod.revision) {
      return fmt::format("member {} moved to revision {} and its setup failed: {}{}", c.m->pod,
                         update_, d.config_error_detail,
                         output_of(d.start_script_stderr_message, d.start_script_stdout_message));
    }
    const auto moved = kube::parse_rfc3339(d.moved_at);
    const auto now = kube::parse_rfc3339(p_.snap.now);
    if (c.released && moved && now && *now - *moved > kMoveDeadline) {
      return fmt::format(
          "member {} was let go to revision {} at {} and is not ready on it "
          "{} s later (state {})",
          c.m->pod, update_, d.moved_at, kMoveDeadline.count(), c.m->state);
    }
  }
  return {};
}

// The step's outcome, or nullptr while it runs (started now, or in flight). Keyed by the
// Stack's generation: a changed spec runs the hook again.
const SetupOutcome* RoleRollout::step(Member& c, SetupStepKind kind, std::vector<SetupKey>& used) {
  const SetupKey key{c.m->pod, c.pod.container_id, kind, p_.stack().metadata.generation};
  if (auto it = p_.snap.setup.find(key); it != p_.snap.setup.end()) {
    if (!it->second.done) return nullptr;
    used.push_back(key);
    return &it->second.outcome;
  }
  executor::SetupStep s;
  s.kind = kind;
  s.role = role_.id;
  s.target = {p_.snap.ns(), c.m->pod, c.pod.container_id};
  s.generation = key.generation;
  if (kind == SetupStepKind::kStageUpgrade) {
    s.package = *role_.package;
    s.package_namespace = p_.app->namespace_name;
  } else {
    const auto from = c.pod.app.empty() ? c.m->state_detail.last_configured_app : c.pod.app;
    s.arguments = {"--preupgrade", "--from-app", from, "--to-app", p_.stack().spec.app};
  }
  p_.out.setup_steps.push_back(std::move(s));
  return nullptr;
}

void RoleRollout::record(Member& c, bool ok, std::string why,
                         const executor::SetupRunner::RunResult* run) {
  auto& d = c.m->state_detail;
  d.preupgrade_revision = update_;
  d.preupgrade_container = c.pod.container_id;
  d.preupgrade_succeeded = ok;
  d.upgrade_error = std::move(why);
  d.preupgrade_stdout = run != nullptr ? last_lines(run->stdout_tail, 2048) : std::string();
  d.preupgrade_stderr = run != nullptr ? last_lines(run->stderr_tail, 2048) : std::string();
  if (ok) {
    p_.event("Normal", "PreUpgrade", "Upgrade",
             fmt::format("member {}: startscript --preupgrade exited 0", c.m->pod));
  } else {
    p_.event("Warning", "UpgradeFailed", "Upgrade",
             fmt::format("member {}: {}", c.m->pod, d.upgrade_error));
  }
}

// The new AppType's --preupgrade on a member about to move, in its running container: the next
// package staged in /opt/kstack/upgrade, then its startscript. Only for a member set up in that
// container (one that is down or never set up has nothing to prepare).
Hook RoleRollout::preupgrade(Member& c) {
  const auto* app_role = catalog::find_role(p_.app->app, role_.id);
  if (!role_.package || app_role == nullptr ||
      !catalog::role_handles_event(p_.app->app, *app_role, catalog::kEventPreUpgrade)) {
    return Hook::kNotNeeded;
  }
  const auto& cid = c.pod.container_id;
  if (c.pod.container_state != "running" || cid.empty() || c.pod.deleting ||
      !configured_member(*c.m, cid)) {
    return Hook::kNotNeeded;
  }
  const auto& d = c.m->state_detail;
  if (d.preupgrade_revision == update_ && d.preupgrade_container == cid) {
    return d.preupgrade_succeeded ? Hook::kDone : Hook::kFailed;
  }
  std::vector<SetupKey> used;
  const auto keep = [&] {
    p_.setup_kept.insert(used.begin(), used.end());
    p_.waiting = true;
    return Hook::kRunning;
  };
  const auto* staged = step(c, SetupStepKind::kStageUpgrade, used);
  if (staged == nullptr) return keep();
  if (staged->kind == SetupOutcome::Kind::kConfigError) {
    record(c, false, staged->message, nullptr);
    return Hook::kFailed;
  }
  if (staged->kind == SetupOutcome::Kind::kRetry) {
    p_.waiting = true;  // consumed: started again next pass
    return Hook::kRunning;
  }
  const auto* ran = step(c, SetupStepKind::kPreupgrade, used);
  if (ran == nullptr) return keep();
  if (ran->kind == SetupOutcome::Kind::kRetry) {
    p_.waiting = true;
    return Hook::kRunning;
  }
  if (ran->kind == SetupOutcome::Kind::kConfigError) {
    record(c, false, ran->message, nullptr);
    return Hook::kFailed;
  }
  const bool ok = ran->run.exit_code == 0;
  record(c, ok, ok ? "" : fmt::format("startscript --preupgrade exited {}", ran->run.exit_code),
         &ran->run);
  return ok ? Hook::kDone : Hook::kFailed;
}

}  // namespace

void plan_rollout(Planning& p) {
  for (auto& role : p.roles) RoleRollout(p, role).plan();
}

// The members set up again after moving are told to the others whose role asks for
// `upgradenodes`, one command per role, queued like --addnodes.
void plan_upgrade_notices(Planning& p) {
  if (p.upgraded.empty()) return;
  std::set<std::string> moved;
  for (const auto& [role_id, fqdns] : p.upgraded) moved.insert(fqdns.begin(), fqdns.end());
  for (auto& role : p.roles) {
    const auto* app_role = catalog::find_role(p.app->app, role.id);
    if (!role.package || app_role == nullptr ||
        !catalog::role_handles_event(p.app->app, *app_role, catalog::kEventUpgradeNodes)) {
      continue;
    }
    for (auto& m : role.status.members) {
      if (m.state != catalog::kMemberReady || moved.contains(p.desired->fqdn(m.pod))) continue;
      for (const auto& [role_id, fqdns] : p.upgraded) {
        m.state_detail.pending_notify_cmds.push_back(
            catalog::NotifyCmd{{"--upgradenodes", "--role", role_id, "--fqdns",
                                fmt::format("{}", fmt::join(fqdns, ","))}});
      }
    }
  }
}

}  // namespace kstack::reconciler::detail
