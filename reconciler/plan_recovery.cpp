// plan(): members on lost nodes (docs/api.md "Lost nodes"). A member whose pod's Node has been
// NotReady/Unknown for longer than the role's memberRecovery.nodeLostGraceSeconds is taken off
// it: its pod is force-deleted (no kubelet will ever confirm a graceful deletion, so the pod
// would stay Terminating and the StatefulSet would never make it again), unless its claim is
// on a volume only that node reaches — then it waits for the node (localStorage: Keep), or its
// claims go too and it starts empty elsewhere (Recreate): the other members get --delnodes for
// it before it is set up, and --addnodes after (plan_announce). Also: a pod the StatefulSet made
// while its claim was still being deleted is deleted, so that claim and pod are made again.
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "catalog/defaults.h"
#include "kube/resource.h"
#include "kube/time.h"
#include "reconciler/plan_internal.h"

namespace kstack::reconciler::detail {
namespace json = boost::json;
namespace res = kube::resources;
using informer::ObjectPtr;

namespace {

// The label a Node carries and a local volume's node affinity names.
constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";

struct NodeHealth {
  bool lost = false;   // Ready is False or Unknown
  std::string status;  // the Ready condition's status
  std::string since;   // its lastTransitionTime
  std::chrono::seconds lost_for{0};
};

NodeHealth health_of(const informer::PackedValue& node, std::string_view now_text) {
  NodeHealth h;
  const auto* conditions = at(node, "/status/conditions");
  if (conditions == nullptr || !conditions->is_array()) return h;
  for (const auto& c : conditions->get_array()) {
    if (str_at(c, "/type") != "Ready") continue;
    h.status = str_at(c, "/status");
    h.since = str_at(c, "/lastTransitionTime");
    h.lost = h.status != "True";
  }
  const auto since = kube::parse_rfc3339(h.since);
  const auto now = kube::parse_rfc3339(now_text);
  if (h.lost && since && now && *now > *since) h.lost_for = *now - *since;
  return h;
}

bool contains(const informer::PackedValue* values, std::string_view v) {
  if (values == nullptr || !values->is_array()) return false;
  const auto& a = values->get_array();
  return std::any_of(a.begin(), a.end(), [&](const informer::PackedValue& x) {
    return x.is_string() && x.get_string() == v;
  });
}

// The volume can only be reached from `node`: every term of its required node affinity asks
// for that node's hostname (a local or hostPath volume), not a zone or a pool of nodes.
bool pinned_to(const informer::PackedValue& pv, const informer::PackedValue& node) {
  const auto* terms = at(pv, "/spec/nodeAffinity/required/nodeSelectorTerms");
  if (terms == nullptr || !terms->is_array() || terms->get_array().empty()) return false;
  std::string hostname = str_at(node, "/metadata/labels/kubernetes.io~1hostname");
  if (hostname.empty()) hostname = str_at(node, "/metadata/name");
  for (const auto& term : terms->get_array()) {
    const auto* exprs = at(term, "/matchExpressions");
    if (exprs == nullptr || !exprs->is_array()) return false;
    const bool pins = std::any_of(
        exprs->get_array().begin(), exprs->get_array().end(), [&](const informer::PackedValue& e) {
          return str_at(e, "/key") == kHostnameLabel && str_at(e, "/operator") == "In" &&
                 contains(at(e, "/values"), hostname);
        });
    if (!pins) return false;
  }
  return true;
}

// The deletion that frees a member from a lost node: at once (gracePeriodSeconds 0), also when
// the pod is already Terminating (the taint manager evicted it, and nobody will finish that).
void force_delete_pod(Planning& p, const ObjectPtr& pod, std::string_view why) {
  const auto name = str_at(*pod, "/metadata/name");
  Write w{Write::Op::kDelete, &res::kPods, {}, pod, name, {}, 0, true};
  w.event = {"Deleted", "Delete", fmt::format("Pod {} force-deleted: {}", name, why)};
  p.out.writes.push_back(std::move(w));
  p.gone_pods.insert(name);
}

bool handles_delnodes(const Planning& p, std::string_view role_id) {
  const auto* ar = catalog::find_role(p.app->app, role_id);
  return ar != nullptr && catalog::role_package(p.app->app, *ar) &&
         catalog::role_handles_event(p.app->app, *ar, catalog::kEventDelNodes);
}

// --delnodes for a member made again empty, to every other configured member that takes it.
void queue_replaced(Planning& p, std::string_view role_id, const catalog::MemberStatus& gone) {
  const auto fqdn = p.desired->fqdn(gone.pod);
  for (auto& role : p.roles) {
    if (!handles_delnodes(p, role.id)) continue;
    for (auto& m : role.status.members) {
      if (m.pod == gone.pod || !configured_member(m)) continue;
      m.state_detail.pending_notify_cmds.push_back(
          catalog::NotifyCmd{{"--delnodes", "--role", std::string(role_id), "--fqdns", fqdn}});
    }
  }
}

// No duration in it: the status keeps this text, and a pass while the node stays lost must
// find the status unchanged (the Events say how long).
std::string lost_text(std::string_view node, const NodeHealth& h) {
  return fmt::format("node {} has been Ready={} since {}", node,
                     h.status.empty() ? "Unknown" : h.status, h.since);
}

class MemberRecovery {
 public:
  MemberRecovery(Planning& p, RolePlan& role, catalog::MemberStatus& m,
                 const catalog::EffectiveRecovery& policy)
      : p_(p), role_(role), m_(m), d_(m.state_detail), policy_(policy) {}

  void plan() {
    const auto pod = live(p_.snap.owned.pods, m_.pod);
    if (!pod) return;
    const auto node_name = str_at(*pod, "/spec/nodeName");
    if (node_name.empty()) return stuck_replacement(pod);
    const auto node = live(p_.snap.owned.nodes, node_name);
    if (!node) return;  // not cached (yet): nothing to go on
    const auto h = health_of(*node, p_.snap.now);
    if (!h.lost) {
      if (!d_.recovery.empty() && !d_.replacing) d_.recovery.clear();  // the node is back
      return;
    }
    const auto grace = std::chrono::seconds(policy_.node_lost_grace_seconds);
    if (h.lost_for < grace) {
      p_.waiting = true;  // looked at again by the poll until the grace period is over
      return;
    }
    const auto lost = lost_text(node_name, h);
    if (policy_.policy == catalog::kRecoveryOff) {
      note(fmt::format("{}; memberRecovery.policy is Off: kstack leaves the pod to the cluster",
                       lost));
      p_.degrade(kReasonNodeLost, fmt::format("member {}: {}", m_.pod, d_.recovery));
      return;
    }
    const auto pvc = m_.pvc.empty() ? nullptr : live(p_.snap.owned.pvcs, m_.pvc);
    const auto volume_name = pvc ? str_at(*pvc, "/spec/volumeName") : std::string();
    const auto volume = volume_name.empty() ? nullptr : live(p_.snap.owned.volumes, volume_name);
    const bool local = volume && pinned_to(*volume, *node);
    if (!local) {
      force_delete_pod(p_, pod, lost);
      note(fmt::format("{}: pod {} force-deleted; the StatefulSet makes it again on a live node{}",
                       lost, m_.pod, pvc ? fmt::format(" with claim {}", m_.pvc) : ""));
      p_.event(
          "Warning", "MemberRescheduled", "Recover",
          fmt::format("member {}: {} (lost for {} s)", m_.pod, d_.recovery, h.lost_for.count()));
      p_.waiting = true;
      return;
    }
    if (policy_.local_storage == catalog::kLocalStorageKeep) {
      const bool first = d_.recovery.find("waiting for node") == std::string::npos;
      note(
          fmt::format("waiting for node {}: {}; claim {} is on volume {}, which only that node "
                      "reaches (memberRecovery.localStorage: Keep)",
                      node_name, lost, m_.pvc, volume_name));
      p_.degrade(kReasonNodeLost, fmt::format("member {}: {}", m_.pod, d_.recovery));
      if (first) {
        p_.event("Warning", "MemberWaitingForNode", "Recover",
                 fmt::format("member {}: {}", m_.pod, d_.recovery));
      }
      p_.waiting = true;
      return;
    }
    replace(pod, pvc, lost, volume_name, h.lost_for);
  }

 private:
  void note(std::string text) { d_.recovery = std::move(text); }

  // localStorage: Recreate. The claim first (it goes once no scheduled pod uses it), then the
  // pod; the member starts empty, and the app re-replicates to it.
  void replace(const ObjectPtr& pod, const ObjectPtr& pvc, const std::string& lost,
               const std::string& volume_name, std::chrono::seconds lost_for) {
    if (!is_deleting(*pvc)) {
      const auto name = str_at(*pvc, "/metadata/name");
      Write w{Write::Op::kDelete, &res::kPersistentVolumeClaims, {}, pvc, name, {}, 0, false};
      w.event = {"Deleted", "Delete",
                 fmt::format("PVC {} deleted: its volume {} is on a lost node", name, volume_name)};
      p_.out.writes.push_back(std::move(w));
    }
    force_delete_pod(p_, pod, lost);
    note(
        fmt::format("{}: claim {} (volume {} on that node) deleted and pod {} force-deleted; the "
                    "member starts empty on another node (memberRecovery.localStorage: "
                    "Recreate)",
                    lost, m_.pvc, volume_name, m_.pod));
    p_.event("Warning", "MemberRescheduled", "Recover",
             fmt::format("member {}: {} (lost for {} s)", m_.pod, d_.recovery, lost_for.count()));
    p_.event("Warning", "ClaimRecreated", "Recover",
             fmt::format("member {}: claim {} is made again, empty; the other members get "
                         "--delnodes for it before it is set up and --addnodes after",
                         m_.pod, m_.pvc));
    if (!d_.replacing) queue_replaced(p_, role_.id, m_);
    d_.replacing = true;
    d_.last_setup_generation.reset();  // announced again (--addnodes) once set up
    d_.pending_notify_cmds.clear();    // news for the member that is gone
    p_.waiting = true;
  }

  // A pod the StatefulSet made while its claim was still being deleted (or after it was gone)
  // is never scheduled: the scheduler refuses a claim being deleted, and nothing makes a
  // missing claim for an existing pod. Deleting it (it runs nowhere) lets the StatefulSet make
  // claim and pod again.
  void stuck_replacement(const ObjectPtr& pod) {
    if (m_.pvc.empty() || is_deleting(*pod)) return;
    auto claim = live(p_.snap.owned.pvcs, m_.pvc);
    if (!claim) {
      auto read = p_.found.claims.find(m_.pvc);
      if (read == p_.found.claims.end()) return;  // plan_claims asked the server
      claim = read->second;
    }
    if (claim && !is_deleting(*claim)) return;
    add_delete(p_, res::kPods, pod,
               fmt::format("it waits for claim {}, which is {}; the StatefulSet makes both again",
                           m_.pvc, claim ? "being deleted" : "gone"));
    p_.gone_pods.insert(m_.pod);
    p_.waiting = true;
  }

  Planning& p_;
  RolePlan& role_;
  catalog::MemberStatus& m_;
  catalog::MemberStateDetail& d_;
  const catalog::EffectiveRecovery& policy_;
};

}  // namespace

void plan_recovery(Planning& p) {
  if (p.stack().spec.stopped) return;
  for (auto& role : p.roles) {
    const auto* stack_role = catalog::find_role(p.stack(), role.id);
    if (stack_role == nullptr) continue;
    const auto policy = catalog::effective_recovery(*stack_role, p.config);
    for (auto& m : role.status.members) MemberRecovery(p, role, m, policy).plan();
  }
}

// The replacement of a member made again empty is set up once every ready member that was
// owed a --delnodes for it got it (else the app would remove the new member, not the old one).
bool replacement_held(const Planning& p, const catalog::MemberStatus& member) {
  if (!member.state_detail.replacing) return false;
  const auto fqdn = p.desired->fqdn(member.pod);
  for (const auto& role : p.roles) {
    for (const auto& m : role.status.members) {
      if (m.pod == member.pod || m.state != catalog::kMemberReady) continue;
      for (const auto& cmd : m.state_detail.pending_notify_cmds) {
        const auto& a = cmd.arguments;
        if (a.size() >= 5 && a[0] == "--delnodes" && a[4] == fqdn) return true;
      }
    }
  }
  return false;
}

}  // namespace kstack::reconciler::detail
