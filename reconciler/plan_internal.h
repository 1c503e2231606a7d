// The working state of plan() and the pieces it is made of (internal to reconciler/plan*.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "catalog/model.h"
#include "reconciler/desired_state.h"
#include "reconciler/plan.h"
#include "reconciler/status.h"

namespace kstack::reconciler::detail {

// JSON readers that never throw (cached objects are server data).
// Each for a DOM and for a cached (packed) object.
const boost::json::value* at(const boost::json::value& v, std::string_view pointer);
const informer::PackedValue* at(const informer::PackedValue& v, std::string_view pointer);
std::string str_at(const boost::json::value& v, std::string_view pointer);
std::string str_at(const informer::PackedValue& v, std::string_view pointer);
bool is_deleting(const boost::json::value& object);
bool is_deleting(const informer::PackedValue& object);
// Points into `object` ("" when none): no copy of a uid per object read.
std::string_view controller_uid(const boost::json::value& object);
std::string_view controller_uid(const informer::PackedValue& object);
bool owned_by(const boost::json::value& object, std::string_view uid);
bool owned_by(const informer::PackedValue& object, std::string_view uid);
std::int64_t replicas_of(const boost::json::value& sts);
std::int64_t replicas_of(const informer::PackedValue& sts);
bool has_finalizer(const catalog::Stack& stack);
// The claim metadata kstack applies to adopt (owner) or, marked `retained`, to let go of it.
boost::json::value pvc_claim(const informer::PackedValue& live, const boost::json::object& labels,
                             const boost::json::object* owner, std::string_view retained = {});
// The same without a name and a namespace (what every claim of a role gets).
boost::json::value pvc_claim(const boost::json::object& labels, const boost::json::object* owner,
                             std::string_view retained = {});
// Whether a claim labelled with the Stack is kstack's to delete or retain.
bool claim_of(const informer::PackedValue& pvc, const informer::PackedValue& stack,
              std::string_view uid);
// The longest prefix of `text` of at most `max_bytes` that does not split a UTF-8 sequence.
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes);
informer::ObjectPtr live(const std::map<std::string, informer::ObjectPtr>& objects,
                         const std::string& name);

// One role's members this pass: those in the spec, and those leaving it.
struct RolePlan {
  std::string id;
  const DesiredRole* desired = nullptr;
  std::optional<catalog::SetupPackage> package;
  catalog::RoleStatus status;                  // members in the spec
  std::vector<catalog::MemberStatus> leaving;  // delete_pending / deleting
  std::int64_t replicas = 0;                   // what the StatefulSet gets this pass
  std::int64_t partition = 0;                  // what the StatefulSet gets this pass
};

struct Planning {
  Planning(const Snapshot& s, const Findings& f, Plan& p) : snap(s), found(f), out(p) {}
  const Snapshot& snap;
  const Findings& found;
  Plan& out;
  catalog::StackStatus& st() { return out.status; }
  const catalog::Stack& stack() const { return snap.stack; }
  const catalog::FoundApp* app = nullptr;
  const catalog::KStackConfig* config = nullptr;
  const DesiredState* desired = nullptr;

  bool spec_changed = false;  // generation differs from what status last observed
  bool waiting = false;       // something converges outside this pass: poll again
  bool scaling = false;       // the role being applied moves its replicas
  std::vector<DegradedCause> degraded;
  std::set<SetupKey> setup_kept;  // outcomes a member's continuing setup still needs
  int next_rank = 0;
  void degrade(std::string_view reason, std::string message) {
    degraded.push_back({next_rank++, std::string(reason), std::move(message)});
  }
  void event(std::string_view type, std::string_view reason, std::string_view action,
             std::string note) {
    out.events.push_back(
        {std::string(type), std::string(reason), std::string(action), std::move(note)});
  }

  std::map<std::string, const catalog::MemberStatus*> previous;      // by pod
  std::map<std::string, const catalog::RoleStatus*> previous_roles;  // by role id
  std::vector<RolePlan> roles;
  std::set<std::string> wanted_sets;
  // Pods this pass deletes to free their members (plan_recovery.cpp): treated as gone.
  std::set<std::string> gone_pods;
  // Members set up again this pass after moving to a new template, by role (their FQDNs):
  // --upgradenodes for the others.
  std::map<std::string, std::vector<std::string>> upgraded;
  // The rollout over all roles (plan_rollout.cpp), for the conditions.
  bool rolling = false;          // some member does not run its role's template yet
  std::string rollout_failure;   // why the rollout stopped (UpgradeFailed), "" when it did not
  std::string rollout_progress;  // which member moves now, for Progressing's message
  // Roles held back by dependsOn this pass, for Progressing's message ("" when none).
  std::string start_order_wait;
  catalog::MemberStateRollup rollup;
  std::int64_t ready = 0;
  std::int64_t wanted = 0;
};

// plan_members.cpp
void plan_membership(Planning& p);
void plan_member_states(Planning& p);
// AppType dependsOn: a role not started yet gets no pods while a role it depends on is not
// ready (its StatefulSet at 0 replicas).
void plan_start_order(Planning& p);
std::vector<catalog::RoleStatus> leaving_roles(Planning& p);
// plan_objects.cpp
void plan_objects(Planning& p);
// The role's StatefulSet with role.replicas and role.partition.
void plan_stateful_set(Planning& p, const RolePlan& role);
void add_delete(Planning& p, const kube::ResourceType& type, const informer::ObjectPtr& live,
                std::string_view why);
// plan_rollout.cpp: each role's partition (who may move to a new template now), the members'
// --preupgrade hooks, the pods of reverted hooks, the rollout's status; then the StatefulSets.
void plan_rollout(Planning& p);
void plan_upgrade_notices(Planning& p);
void plan_claims(Planning& p);
void plan_cleanup(Planning& p);
void add_apply(Planning& p, const kube::ResourceType& type, const boost::json::value& desired,
               const informer::ObjectPtr& live);
// plan_setup.cpp
// The end of a script's output, from its first whole character: `tail -c` in the container and
// the cut here may start inside one, and the API server would store that byte as U+FFFD.
std::string last_lines(std::string_view text, std::size_t max_bytes);
// The member's setup finished in container `cid` (it is `ready`, or `creating` until its pod is
// Ready): it is not set up again while that container runs.
bool configured_member(const catalog::MemberStatus& m, std::string_view cid);
// The member was set up in the last container kstack saw it in (from its status alone): it
// takes notifications, delivered once it is ready.
bool configured_member(const catalog::MemberStatus& m);
void plan_member_setup(Planning& p, const RolePlan& role, catalog::MemberStatus& member,
                       const PodView& pod);
void plan_announce(Planning& p);
void plan_notifications(Planning& p);
// plan_recovery.cpp: members on lost nodes, and pods stuck on a claim being deleted.
void plan_recovery(Planning& p);
// A member made again empty waits to be set up until the --delnodes for it went out.
bool replacement_held(const Planning& p, const catalog::MemberStatus& member);
// plan_objects.cpp: the roles' PodDisruptionBudgets (AppType role minAvailable).
void plan_disruption_budgets(Planning& p);
// plan.cpp
void plan_conditions(Planning& p);

}  // namespace kstack::reconciler::detail
