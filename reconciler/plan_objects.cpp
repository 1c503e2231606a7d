// plan(): the owned objects (headless Service, StatefulSets, member Services), the members'
// claims, and the cleanup of a Stack being deleted (docs/reconciler.md steps 7–9, Cleanup).
#include <algorithm>
#include <array>
#include <charconv>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/defaults.h"
#include "catalog/names.h"
#include "executor/drift.h"
#include "reconciler/plan_internal.h"

namespace kstack::reconciler::detail {
namespace json = boost::json;
using informer::ObjectPtr;
namespace res = kube::resources;

namespace {

// What json::value::find_pointer finds (nullptr where it reports an error), walked directly for
// the plain pointers the plan uses: it reads fields this way on every owned object in every
// pass, and find_pointer's general parsing cost more than the lookups themselves.
template <class V>
const V* at_t(const V& v, std::string_view pointer) {
  if (pointer.find('~') != std::string_view::npos) {  // escaped tokens: the general parser
    std::error_code ec;
    return v.find_pointer(pointer, ec);
  }
  const V* cur = &v;
  while (!pointer.empty()) {
    if (pointer.front() != '/') return nullptr;  // not a JSON pointer
    pointer.remove_prefix(1);
    const auto end = std::min(pointer.find('/'), pointer.size());
    const auto token = pointer.substr(0, end);
    pointer.remove_prefix(end);
    if (const auto* o = cur->if_object()) {
      cur = o->if_contains(token);
    } else if (const auto* a = cur->if_array()) {
      // An index: digits without a leading zero ("-", one past the end, names nothing).
      std::size_t i = 0;
      const auto [last, ec] = std::from_chars(token.data(), token.data() + token.size(), i);
      if (token.empty() || ec != std::errc() || last != token.data() + token.size() ||
          (token.size() > 1 && token.front() == '0') || i >= a->size()) {
        return nullptr;
      }
      cur = &(*a)[i];
    } else {
      return nullptr;
    }
    if (cur == nullptr) return nullptr;
  }
  return cur;
}

template <class V>
std::string str_at_t(const V& v, std::string_view pointer) {
  const auto* p = at_t(v, pointer);
  return p != nullptr && p->is_string() ? std::string(p->as_string()) : std::string();
}

template <class V>
bool is_deleting_t(const V& object) {
  const auto* ts = at_t(object, "/metadata/deletionTimestamp");
  return ts != nullptr && !ts->is_null();
}

template <class V>
std::string_view controller_uid_t(const V& object) {
  const auto* refs = at_t(object, "/metadata/ownerReferences");
  if (refs == nullptr || !refs->is_array()) return {};
  for (const auto& r : refs->as_array()) {
    if (!r.is_object()) continue;
    const auto* c = r.as_object().if_contains("controller");
    if (c != nullptr && c->is_bool() && c->as_bool()) {
      const auto* uid = r.as_object().if_contains("uid");
      return uid != nullptr && uid->is_string() ? std::string_view(uid->as_string())
                                                : std::string_view();
    }
  }
  return {};
}

template <class V>
bool owned_by_t(const V& object, std::string_view uid) {
  const auto* refs = at_t(object, "/metadata/ownerReferences");
  if (refs == nullptr || !refs->is_array()) return false;
  for (const auto& r : refs->as_array()) {
    if (r.is_object() && str_at_t(r, "/uid") == uid) return true;
  }
  return false;
}

template <class V>
std::int64_t replicas_of_t(const V& sts) {
  const auto* r = at_t(sts, "/spec/replicas");
  return r != nullptr && r->is_int64() ? r->as_int64() : 1;
}

}  // namespace

const json::value* at(const json::value& v, std::string_view pointer) { return at_t(v, pointer); }
const informer::PackedValue* at(const informer::PackedValue& v, std::string_view pointer) {
  return at_t(v, pointer);
}
std::string str_at(const json::value& v, std::string_view pointer) { return str_at_t(v, pointer); }
std::string str_at(const informer::PackedValue& v, std::string_view pointer) {
  return str_at_t(v, pointer);
}
bool is_deleting(const json::value& object) { return is_deleting_t(object); }
bool is_deleting(const informer::PackedValue& object) { return is_deleting_t(object); }
std::string_view controller_uid(const json::value& object) { return controller_uid_t(object); }
std::string_view controller_uid(const informer::PackedValue& object) {
  return controller_uid_t(object);
}
bool owned_by(const json::value& object, std::string_view uid) { return owned_by_t(object, uid); }
bool owned_by(const informer::PackedValue& object, std::string_view uid) {
  return owned_by_t(object, uid);
}
std::int64_t replicas_of(const json::value& sts) { return replicas_of_t(sts); }
std::int64_t replicas_of(const informer::PackedValue& sts) { return replicas_of_t(sts); }

bool has_finalizer(const catalog::Stack& stack) {
  const auto& f = stack.metadata.finalizers;
  return std::find(f.begin(), f.end(), catalog::kCleanupFinalizer) != f.end();
}

// kstack owns the kstack.io/retained annotation through server-side apply, so a later
// adoption (no annotation) removes it.
namespace {
json::value claim_with(json::object md, const json::object& labels, const json::object* owner,
                       std::string_view retained) {
  md["labels"] = labels;
  if (owner != nullptr) md["ownerReferences"] = json::array{*owner};
  if (!retained.empty()) {
    md["annotations"] = json::object{{catalog::kRetainedAnnotation, retained}};
  }
  return json::object{{"apiVersion", "v1"}, {"kind", "PersistentVolumeClaim"}, {"metadata", md}};
}
}  // namespace

json::value pvc_claim(const informer::PackedValue& live, const json::object& labels,
                      const json::object* owner, std::string_view retained) {
  return claim_with(json::object{{"name", str_at(live, "/metadata/name")},
                                 {"namespace", str_at(live, "/metadata/namespace")}},
                    labels, owner, retained);
}

json::value pvc_claim(const json::object& labels, const json::object* owner,
                      std::string_view retained) {
  return claim_with(json::object{}, labels, owner, retained);
}

// It names the Stack as its owner, or it is one the StatefulSet controller made for a member
// that kstack never adopted (the operator stopped in between): no controller, not marked
// retained, and made no earlier than the Stack. A claim kstack let go of carries
// kstack.io/retained; one retained from an earlier Stack of the same name is also older than
// this Stack. Anything in doubt is kept: it holds data.
bool claim_of(const informer::PackedValue& pvc, const informer::PackedValue& stack,
              std::string_view uid) {
  if (owned_by(pvc, uid)) return true;
  if (!controller_uid(pvc).empty()) return false;
  const auto* annotations = at(pvc, "/metadata/annotations");
  if (annotations != nullptr && annotations->is_object() &&
      annotations->as_object().contains(catalog::kRetainedAnnotation)) {
    return false;
  }
  // RFC 3339 in UTC with whole seconds, as the API server writes them: ordered as strings.
  const auto made = str_at(pvc, "/metadata/creationTimestamp");
  const auto stack_made = str_at(stack, "/metadata/creationTimestamp");
  return !made.empty() && !stack_made.empty() && made >= stack_made;
}

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t cut = max_bytes;
  // A continuation byte (10xxxxxx) at the cut: back off to its lead byte.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut);
}

ObjectPtr live(const std::map<std::string, ObjectPtr>& objects, const std::string& name) {
  auto it = objects.find(name);
  return it == objects.end() ? ObjectPtr{} : it->second;
}

namespace {

// The batched event of an apply: creation, adoption of a claim, a scale kstack makes, or an
// update (spec changed) / repair (drift) naming the first field that differed.
ObjectEvent apply_event(const Planning& p, const kube::ResourceType& type,
                        const json::value& desired, const ObjectPtr& live,
                        const std::string& name) {
  if (!live) return {"Created", "Create", fmt::format("{} {} created", type.kind, name)};
  if (type == res::kPersistentVolumeClaims && controller_uid(*live).empty()) {
    return {"Adopted", "Update",
            fmt::format("{} {} adopted (owned by the Stack from now on)", type.kind, name)};
  }
  const auto diff = executor::first_difference(*live, desired);
  if (type == res::kStatefulSets && diff == "/spec/replicas" && p.scaling) {
    return {"Scaled", "Update",
            fmt::format("{} {} replicas {} -> {}", type.kind, name, replicas_of(*live),
                        replicas_of(desired))};
  }
  const auto* live_template = at(*live, "/spec/template");
  const auto* desired_template = at(desired, "/spec/template");
  if (type == res::kStatefulSets && diff == "/spec/updateStrategy/rollingUpdate/partition" &&
      live_template != nullptr && desired_template != nullptr &&
      executor::covers(*live_template, *desired_template)) {
    // kstack moving a rollout on (plan_rollout.cpp), not drift.
    const auto* from = at(*live, "/spec/updateStrategy/rollingUpdate/partition");
    return {"RollingUpdate", "Update",
            fmt::format("{} {} partition {} -> {}", type.kind, name,
                        from != nullptr && from->is_int64() ? from->as_int64() : 0,
                        at(desired, "/spec/updateStrategy/rollingUpdate/partition")->as_int64())};
  }
  if (p.spec_changed) {
    return {"Updated", "Update", fmt::format("{} {} updated to the Stack's spec", type.kind, name)};
  }
  return {"Repaired", "Update",
          fmt::format("{} {} restored to its desired state ({})", type.kind, name, diff)};
}

}  // namespace

void add_delete(Planning& p, const kube::ResourceType& type, const ObjectPtr& live,
                std::string_view why) {
  if (is_deleting(*live)) return;  // already on its way
  const auto name = str_at(*live, "/metadata/name");
  Write w{Write::Op::kDelete, &type, {}, live, name, {}, 0};
  w.event = {"Deleted", "Delete", fmt::format("{} {} deleted: {}", type.kind, name, why)};
  p.out.writes.push_back(std::move(w));
}

namespace {

void add_retain(Planning& p, const ObjectPtr& pvc, std::string_view policy) {
  json::object labels;
  if (const auto* l = at(*pvc, "/metadata/labels"); l && l->is_object()) {
    labels = std::move(l->to_value().get_object());
  }
  const auto name = str_at(*pvc, "/metadata/name");
  Write w{Write::Op::kRetain,
          &res::kPersistentVolumeClaims,
          pvc_claim(*pvc, labels, nullptr, policy),
          pvc,
          name,
          {},
          0};
  w.event = {"Retained", policy == "whenScaled" ? "Scale" : "Delete",
             fmt::format("PVC {} kept ({}: Retain)", name, policy)};
  p.out.writes.push_back(std::move(w));
}

}  // namespace

// The StatefulSet of one role, its replicas and partition as this pass wants them.
void plan_stateful_set(Planning& p, const RolePlan& role) {
  const auto& desired = *role.desired;
  const auto sts = live(p.snap.owned.stateful_sets, desired.stateful_set_name);
  if (sts && is_deleting(*sts)) {
    p.waiting = true;  // recreated once the old one is gone (same name, same PVCs)
    return;
  }
  // kstack itself moves replicas when the member count it reported last differs (a spec
  // change, or the end of a delete_pending hold); otherwise a difference is drift.
  std::int64_t reported = 0;
  if (auto it = p.previous_roles.find(role.id); it != p.previous_roles.end()) {
    for (const auto& m : it->second->members) {
      if (m.state != catalog::kMemberDeleting) ++reported;
    }
  }
  p.scaling = sts && replicas_of(*sts) != role.replicas && reported != role.replicas;
  // The usual case, a StatefulSet that already holds all of it: checked without copying the
  // desired object to set replicas and partition in it.
  static constexpr std::array<std::string_view, 2> kReplicas{"spec", "replicas"};
  static constexpr std::array<std::string_view, 4> kPartition{"spec", "updateStrategy",
                                                              "rollingUpdate", "partition"};
  const json::value replicas(role.replicas);
  const json::value partition(role.partition);
  const std::array<executor::Override, 2> decided{executor::Override{kReplicas, &replicas},
                                                  executor::Override{kPartition, &partition}};
  if (sts && executor::covers(*sts, desired.stateful_set, decided)) return;
  json::value wanted = desired.stateful_set;
  auto& spec = wanted.as_object()["spec"].as_object();
  spec["replicas"] = role.replicas;
  spec["updateStrategy"].as_object()["rollingUpdate"].as_object()["partition"] = role.partition;
  add_apply(p, res::kStatefulSets, wanted, sts);
}

namespace {

// What kstack sets on every claim of one role (pvc_claim), made once per role.
struct RoleClaims {
  json::object labels;
  json::object owner;
  json::value claim;  // pvc_claim() without a name and a namespace
};

// The live claim already holds what pvc_claim(*pvc, labels, &owner) would apply: the
// role's claim, which names no claim, compared with the live one, whose name and namespace are
// its own — without building the claim.
bool claim_covered(const informer::PackedValue& pvc, const RoleClaims& c) {
  const auto* name = at(pvc, "/metadata/name");
  const auto* ns = at(pvc, "/metadata/namespace");
  if (name == nullptr || !name->is_string() || ns == nullptr || !ns->is_string()) return false;
  return executor::covers(pvc, c.claim);
}

// The claim of a member in the spec: adopted, or why it cannot be.
void plan_member_claim(Planning& p, const RoleClaims& claims, const catalog::MemberStatus& m) {
  const auto& uid = p.stack().metadata.uid;
  const auto pod = live(p.snap.owned.pods, m.pod);
  const auto pvc = live(p.snap.owned.pvcs, m.pvc);
  const auto& labels = claims.labels;
  const auto& owner = claims.owner;
  if (pvc && is_deleting(*pvc)) {
    p.degrade(kReasonPvcMissing, fmt::format("PVC {} of member {} is being deleted; the "
                                             "StatefulSet recreates it with the pod",
                                             m.pvc, m.pod));
    p.waiting = true;
  } else if (pvc) {
    const auto other = controller_uid(*pvc);
    if (other.empty() || other == uid) {
      if (claim_covered(*pvc, claims)) return;
      add_apply(p, res::kPersistentVolumeClaims, pvc_claim(*pvc, labels, &owner), pvc);
    } else {
      p.degrade(kReasonPvcMissing,
                fmt::format("PVC {} of member {} is controlled by another owner ({})", m.pvc, m.pod,
                            other));
    }
  } else if (pod) {
    // The pod exists, so its claim did: deleted, or kstack's labels were taken off it. Only the
    // server can say which.
    auto read = p.found.claims.find(m.pvc);
    if (read == p.found.claims.end()) {
      p.out.claims_to_read.push_back(m.pvc);
      return;
    }
    const auto& got = read->second;
    if (got && !is_deleting(*got) &&
        (controller_uid(*got).empty() || controller_uid(*got) == uid)) {
      add_apply(p, res::kPersistentVolumeClaims, pvc_claim(*got, labels, &owner), got);
    } else {
      p.degrade(kReasonPvcMissing, fmt::format("PVC {} of member {} is missing", m.pvc, m.pod));
      p.waiting = true;
    }
  }
}

}  // namespace

void add_apply(Planning& p, const kube::ResourceType& type, const json::value& desired,
               const ObjectPtr& live) {
  // Covered: nothing to send (the executor would check the same and send nothing).
  if (live && executor::covers(*live, desired)) return;
  const auto name = str_at(desired, "/metadata/name");
  Write w{Write::Op::kApply, &type, desired, live, name, apply_event(p, type, desired, live, name),
          p.next_rank++};
  p.out.writes.push_back(std::move(w));
}

void plan_objects(Planning& p) {
  const auto& desired = *p.desired;
  const auto& owned = p.snap.owned;
  const auto& uid = p.stack().metadata.uid;
  p.st().cluster_service = desired.headless_service_name;
  add_apply(p, res::kServices, desired.headless_service,
            live(owned.services, desired.headless_service_name));
  std::set<std::string> wanted_services{desired.headless_service_name};
  for (const auto& role : p.roles) {
    p.wanted_sets.insert(role.desired->stateful_set_name);
    for (const auto& m : role.leaving) {
      if (m.state == catalog::kMemberDeletePending && !m.service.empty()) {
        wanted_services.insert(m.service);  // kept until the member is really going
      }
    }
  }
  for (const auto& svc : desired.member_services) {
    const auto name = str_at(svc, "/metadata/name");
    wanted_services.insert(name);
    add_apply(p, res::kServices, svc, live(owned.services, name));
  }
  for (const auto& [name, obj] : owned.services) {
    if (!wanted_services.contains(name) && owned_by(*obj, uid)) {
      add_delete(p, res::kServices, obj, "its member is no longer in the Stack");
    }
  }
  for (const auto& [name, obj] : owned.stateful_sets) {
    if (!p.wanted_sets.contains(name) && owned_by(*obj, uid)) {
      add_delete(p, res::kStatefulSets, obj, "its role is no longer in the Stack");
    }
  }
}

// One PodDisruptionBudget per role whose AppType role declares minAvailable (its quorum), so
// that a node drain never evicts the role below it; named and selecting like the role's
// StatefulSet. Budgets kstack made for a role that no longer declares one are deleted.
void plan_disruption_budgets(Planning& p) {
  std::set<std::string> wanted;
  const auto* type = p.snap.pdb_type;
  for (const auto& role : p.roles) {
    const auto* app_role = catalog::find_role(p.app->app, role.id);
    if (app_role == nullptr || app_role->min_available.is_null()) continue;
    const auto& name = role.desired->stateful_set_name;
    if (type == nullptr) {
      p.degrade(kReasonNoDisruptionBudget,
                fmt::format("role {} declares minAvailable {}, but the API server serves no "
                            "PodDisruptionBudget (policy/v1 or v1beta1); drains are not limited",
                            role.id, json::serialize(app_role->min_available)));
      continue;
    }
    wanted.insert(name);
    const auto* selector = at(role.desired->stateful_set, "/spec/selector");
    json::object metadata{{"name", name},
                          {"namespace", p.snap.ns()},
                          {"labels", common_labels(p.stack(), p.app->app, role.id)},
                          {"ownerReferences", json::array{owner_reference(p.stack())}}};
    json::value pdb = json::object{
        {"apiVersion", type->api_version()},
        {"kind", type->kind},
        {"metadata", std::move(metadata)},
        {"spec", json::object{{"minAvailable", app_role->min_available},
                              {"selector", selector != nullptr ? *selector : json::object{}}}}};
    add_apply(p, *type, pdb, live(p.snap.owned.pdbs, name));
  }
  if (type == nullptr) return;
  const auto& uid = p.stack().metadata.uid;
  for (const auto& [name, obj] : p.snap.owned.pdbs) {
    if (!wanted.contains(name) && owned_by(*obj, uid)) {
      add_delete(p, *type, obj, "its role no longer declares minAvailable");
    }
  }
}

void plan_claims(Planning& p) {
  std::set<std::string> kept;
  const auto owner = owner_reference(p.stack());
  for (const auto& role : p.roles) {
    RoleClaims claims{common_labels(p.stack(), p.app->app, role.id), owner, {}};
    claims.claim = pvc_claim(claims.labels, &claims.owner);
    for (const auto& m : role.status.members) {
      if (m.pvc.empty()) continue;
      kept.insert(m.pvc);
      plan_member_claim(p, claims, m);
    }
    for (const auto& m : role.leaving) {
      if (m.state == catalog::kMemberDeletePending && !m.pvc.empty()) kept.insert(m.pvc);
    }
  }
  // Claims of members that are gone: Delete (default) or Retain (drop the ownerReference so the
  // claim outlives the Stack), once no pod uses them.
  const bool retain =
      p.stack().spec.pvc_retention.when_scaled.value_or("") == catalog::kRetentionRetain;
  for (const auto& [name, pvc] : p.snap.owned.pvcs) {
    if (kept.contains(name) || is_deleting(*pvc)) continue;
    const auto member = name.substr(std::min(name.size(), catalog::kDataVolumeName.size() + 1));
    if (live(p.snap.owned.pods, member)) {
      p.waiting = true;
      continue;
    }
    if (!claim_of(*pvc, *p.snap.object, p.stack().metadata.uid)) continue;
    if (retain) {
      add_retain(p, pvc, "whenScaled");
    } else {
      add_delete(p, res::kPersistentVolumeClaims, pvc, "its member was removed");
    }
  }
}

void plan_cleanup(Planning& p) {
  const auto& owned = p.snap.owned;
  const auto& uid = p.stack().metadata.uid;
  const bool retain =
      p.stack().spec.pvc_retention.when_deleted.value_or("") == catalog::kRetentionRetain;
  bool remaining = !owned.pods.empty();  // the garbage collector removes them with their set
  for (const auto& [name, sts] : owned.stateful_sets) {
    if (!owned_by(*sts, uid)) continue;
    remaining = true;
    add_delete(p, res::kStatefulSets, sts, "the Stack is being deleted");
  }
  for (const auto& [name, svc] : owned.services) {
    if (!owned_by(*svc, uid)) continue;
    remaining = true;
    add_delete(p, res::kServices, svc, "the Stack is being deleted");
  }
  for (const auto& [name, pvc] : owned.pvcs) {
    if (!claim_of(*pvc, *p.snap.object, uid)) continue;
    if (retain) {
      add_retain(p, pvc, "whenDeleted");
      continue;
    }
    remaining = true;
    add_delete(p, res::kPersistentVolumeClaims, pvc, "the Stack is being deleted");
  }
  p.out.remove_finalizer = !remaining;
  p.out.result = remaining ? informer::WorkResult::requeue_after(p.snap.poll_interval)
                           : informer::WorkResult::success();
}

}  // namespace kstack::reconciler::detail
