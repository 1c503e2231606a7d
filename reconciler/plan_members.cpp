// plan(): who is in the Stack this pass (members in the spec keep their node IDs; new ones get
// the next, which only grow; leaving members wait in delete_pending while --delnodes is owed,
// then are deleting), and each member's state from its pod and its setup.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "catalog/defaults.h"
#include "reconciler/plan_internal.h"

namespace kstack::reconciler::detail {

namespace {

std::optional<catalog::SetupPackage> package_of(const catalog::AppType& app,
                                                std::string_view role_id) {
  const auto* ar = catalog::find_role(app, role_id);
  return ar != nullptr ? catalog::role_package(app, *ar) : std::nullopt;
}

bool handles(const catalog::AppType& app, std::string_view role_id, std::string_view event) {
  const auto* ar = catalog::find_role(app, role_id);
  return ar != nullptr && package_of(app, role_id) && catalog::role_handles_event(app, *ar, event);
}

bool is_delnodes(const catalog::NotifyCmd& cmd) {
  return !cmd.arguments.empty() && cmd.arguments.front() == "--delnodes";
}

struct Delnodes {
  bool outstanding = false;  // a --delnodes is still owed to a ready remaining member
  bool wanted = false;       // some configured remaining member's role handles --delnodes
};

Delnodes delnodes_of(const Planning& p) {
  Delnodes d;
  for (const auto& role : p.desired->roles) {
    for (const auto& dm : role.members) {
      auto it = p.previous.find(dm.pod);
      if (it == p.previous.end() || !configured_member(*it->second)) continue;
      if (handles(p.app->app, role.id, catalog::kEventDelNodes)) d.wanted = true;
      // A configured member whose pod is not Ready gets its --delnodes later; it does not
      // hold the leaving members up.
      if (it->second->state != catalog::kMemberReady) continue;
      const auto& cmds = it->second->state_detail.pending_notify_cmds;
      if (std::any_of(cmds.begin(), cmds.end(), is_delnodes)) d.outstanding = true;
    }
  }
  return d;
}

// The members of `role` in the spec: kept as they were, or new (next node ID).
void spec_members(Planning& p, const DesiredRole& role, RolePlan& plan) {
  for (const auto& dm : role.members) {
    catalog::MemberStatus m;
    auto it = p.previous.find(dm.pod);
    const bool fresh = it == p.previous.end() ||
                       it->second->state == catalog::kMemberDeletePending ||
                       it->second->state == catalog::kMemberDeleting;
    if (!fresh) {
      m = *it->second;
    } else {
      // New, or scaled back up before it was gone: a new member that happens to reuse a name.
      m.node_id = ++p.st().last_node_id;
      m.state = std::string(catalog::kMemberCreatePending);
    }
    m.pod = dm.pod;
    m.service = dm.service;
    m.pvc = dm.pvc;
    plan.status.members.push_back(std::move(m));
  }
}

// The members of `role` above its new size. A member never announced to the others (it left
// before its setup settled) needs no --delnodes: nobody was told it existed.
void leaving_members(Planning& p, const Delnodes& d, RolePlan& plan,
                     std::vector<std::string>& newly_leaving) {
  auto it = p.previous_roles.find(plan.id);
  if (it == p.previous_roles.end()) return;
  for (const auto& old : it->second->members) {
    const auto ord = ordinal_of(old.pod);
    if (!ord || *ord < plan.desired->replicas) continue;
    catalog::MemberStatus m = old;
    if (m.state == catalog::kMemberDeletePending) {
      if (d.outstanding) {
        plan.replicas = std::max(plan.replicas, *ord + 1);
      } else {
        m.state = std::string(catalog::kMemberDeleting);
      }
    } else if (m.state != catalog::kMemberDeleting) {
      if (d.wanted && m.state_detail.last_setup_generation) {
        m.state = std::string(catalog::kMemberDeletePending);
        newly_leaving.push_back(p.desired->fqdn(m.pod));
        plan.replicas = std::max(plan.replicas, *ord + 1);
      } else {
        m.state = std::string(catalog::kMemberDeleting);
      }
    }
    plan.leaving.push_back(std::move(m));
  }
}

// One --delnodes per shrinking role on every configured remaining member that wants it (one
// whose pod is not Ready keeps it queued until it is: it is not set up again, so this is how it
// learns).
void queue_delnodes(Planning& p, const std::map<std::string, std::vector<std::string>>& leaving) {
  for (auto& plan : p.roles) {
    if (!handles(p.app->app, plan.id, catalog::kEventDelNodes)) continue;
    for (auto& m : plan.status.members) {
      if (!configured_member(m)) continue;
      for (const auto& [role_id, fqdns] : leaving) {
        m.state_detail.pending_notify_cmds.push_back(
            catalog::NotifyCmd{{"--delnodes", "--role", role_id, "--fqdns",
                                fmt::format("{}", fmt::join(fqdns, ","))}});
      }
    }
  }
  for (const auto& [role_id, fqdns] : leaving) {
    p.event("Normal", "Scaling", "Scale",
            fmt::format("role {}: {} leaving; --delnodes queued for the remaining members", role_id,
                        fmt::join(fqdns, ",")));
  }
}

// configmeta describes the members in the spec; its generation moves when they change.
void bump_config_generation(Planning& p) {
  std::string key;
  for (const auto& plan : p.roles) {
    for (const auto& m : plan.status.members)
      key += fmt::format("{}/{}/{};", plan.id, m.pod, m.node_id);
  }
  std::string old_key;
  for (const auto& r : p.snap.old_status.roles) {
    for (const auto& m : r.members) {
      if (m.state == catalog::kMemberDeletePending || m.state == catalog::kMemberDeleting) continue;
      old_key += fmt::format("{}/{}/{};", r.id, m.pod, m.node_id);
    }
  }
  if (p.st().config_generation == 0 || old_key != key) ++p.st().config_generation;
}

// Why a member that is not ready holds the Stack, in the rollup.
void roll_up(Planning& p, const catalog::MemberStatus& m, const PodView& pod) {
  const auto* prev = p.previous.contains(m.pod) ? p.previous.at(m.pod) : nullptr;
  auto& acc = p.rollup;
  p.waiting = true;
  if (prev != nullptr && prev->state == catalog::kMemberReady) acc.members_down = true;
  if (!pod.exists) acc.membership_changing = true;
  if (pod.unschedulable) acc.members_not_scheduled = true;
  if (pod.exists && pod.scheduled && pod.container_state == "waiting") acc.members_waiting = true;
  if (pod.exists && pod.scheduled) acc.members_initializing = true;
  if (pod.exists && pod.restart_count > 0) acc.members_restarting = true;
}

}  // namespace

void plan_membership(Planning& p) {
  for (const auto& r : p.snap.old_status.roles) {
    p.previous_roles[r.id] = &r;
    for (const auto& m : r.members) p.previous[m.pod] = &m;
  }
  const auto delnodes = delnodes_of(p);
  std::map<std::string, std::vector<std::string>> leaving;  // role -> FQDNs now delete_pending
  for (const auto& role : p.desired->roles) {
    RolePlan plan;
    plan.id = role.id;
    plan.desired = &role;
    plan.package = package_of(p.app->app, role.id);
    plan.status.id = role.id;
    plan.status.stateful_set = role.stateful_set_name;
    // Stopped: no pods, every member kept (claims, Services, status) for the resume.
    plan.replicas = p.stack().spec.stopped ? 0 : role.replicas;
    spec_members(p, role, plan);
    std::vector<std::string> fqdns;
    leaving_members(p, delnodes, plan, fqdns);
    if (!fqdns.empty()) leaving[role.id] = std::move(fqdns);
    p.roles.push_back(std::move(plan));
  }
  queue_delnodes(p, leaving);
  bump_config_generation(p);
}

void plan_member_states(Planning& p) {
  const bool stopped = p.stack().spec.stopped;
  for (auto& role : p.roles) {
    for (auto& m : role.status.members) {
      ++p.wanted;
      const auto live_pod = p.gone_pods.contains(m.pod) ? nullptr : live(p.snap.owned.pods, m.pod);
      const auto pod = view_pod(live_pod.get());
      if (stopped) {
        // The pod goes with the StatefulSet's replicas; the member stays, `stopped` once it is
        // gone. Nothing is set up or notified meanwhile.
        m.state_detail.last_known_container_state = pod.container_state;
        if (pod.exists) {
          p.waiting = true;
        } else {
          m.state = std::string(catalog::kMemberStopped);
          m.template_revision.clear();
          m.app.clear();
        }
        continue;
      }
      m.state_detail.last_known_container_state = pod.container_state;
      m.state_detail.scheduling_error_message = pod.unschedulable ? pod.scheduling_message : "";
      m.template_revision = pod.revision;
      m.app = pod.app;
      plan_member_setup(p, role, m, pod);
      if (m.state == catalog::kMemberReady) {
        ++p.ready;
      } else if (m.state == catalog::kMemberConfigError) {
        p.rollup.config_errors = true;
        p.degrade(kReasonConfigError,
                  fmt::format("member {}: {}", m.pod, m.state_detail.config_error_detail));
      } else {
        roll_up(p, m, pod);
      }
    }
    for (auto& m : role.leaving) {
      const auto pod = live(p.snap.owned.pods, m.pod);
      m.state_detail.last_known_container_state = view_pod(pod.get()).container_state;
      p.rollup.membership_changing = true;
      if (pod || m.state == catalog::kMemberDeletePending) p.waiting = true;
    }
  }
}

namespace {

// Whether the role ran pods before: a member past create_pending, or StatefulSet replicas.
bool started(const Planning& p, const RolePlan& role) {
  for (const auto& m : role.status.members) {
    if (m.state != catalog::kMemberCreatePending) return true;
  }
  const auto sts = live(p.snap.owned.stateful_sets, role.desired->stateful_set_name);
  return sts && replicas_of(*sts) > 0;
}

// "db (1/3 ready)" for a dependency that is not ready yet, "" when it is.
std::string unready(const Planning& p, const std::string& id) {
  for (const auto& role : p.roles) {
    if (role.id != id) continue;
    const auto ready =
        std::count_if(role.status.members.begin(), role.status.members.end(),
                      [](const auto& m) { return m.state == catalog::kMemberReady; });
    if (ready == static_cast<std::int64_t>(role.status.members.size())) return {};
    return fmt::format("{} ({}/{} ready)", id, ready, role.status.members.size());
  }
  return {};  // not a role of this Stack's AppType (admission refuses it): nothing to wait for
}

}  // namespace

void plan_start_order(Planning& p) {
  if (p.stack().spec.stopped) return;
  std::vector<std::string> waits;
  for (auto& role : p.roles) {
    const auto* app_role = catalog::find_role(p.app->app, role.id);
    if (app_role == nullptr || app_role->depends_on.empty() || started(p, role)) continue;
    std::vector<std::string> pending;
    for (const auto& dep : app_role->depends_on) {
      if (auto why = unready(p, dep); !why.empty()) pending.push_back(std::move(why));
    }
    if (pending.empty()) continue;
    role.replicas = 0;
    p.waiting = true;
    waits.push_back(fmt::format("role {} waits for {}", role.id, fmt::join(pending, ", ")));
  }
  p.start_order_wait = fmt::format("{}", fmt::join(waits, "; "));
}

std::vector<catalog::RoleStatus> leaving_roles(Planning& p) {
  // Leaving members stay listed until their pod is gone (delete_pending ones in any case).
  std::vector<catalog::RoleStatus> roles;
  for (auto& plan : p.roles) {
    for (auto& m : plan.leaving) {
      if (m.state == catalog::kMemberDeletePending || live(p.snap.owned.pods, m.pod)) {
        plan.status.members.push_back(std::move(m));
      }
    }
    roles.push_back(std::move(plan.status));
  }
  // Roles no longer in the spec: their StatefulSet is deleted; reported until their pods go.
  for (const auto& old : p.snap.old_status.roles) {
    if (p.wanted_sets.contains(old.stateful_set)) continue;
    catalog::RoleStatus rs = old;
    rs.members.clear();
    for (const auto& om : old.members) {
      if (!live(p.snap.owned.pods, om.pod)) continue;
      catalog::MemberStatus m = om;
      m.state = std::string(catalog::kMemberDeleting);
      p.rollup.membership_changing = true;
      p.waiting = true;
      rs.members.push_back(std::move(m));
    }
    if (!rs.members.empty()) roles.push_back(std::move(rs));
  }
  return roles;
}

}  // namespace kstack::reconciler::detail
