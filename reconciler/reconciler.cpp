#include "reconciler/reconciler.h"

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "catalog/defaults.h"
#include "catalog/names.h"
#include "catalog/parse.h"
#include "executor/drift.h"
#include "reconciler/desired_state.h"
#include "reconciler/pass.h"
#include "reconciler/status.h"

namespace kstack::reconciler {
namespace json = boost::json;
using informer::ObjectPtr;
using informer::WorkResult;
namespace res = kube::resources;

namespace {

const json::value* at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  return v.find_pointer(pointer, ec);
}

std::string str_at(const json::value& v, std::string_view pointer) {
  const auto* p = at(v, pointer);
  return p != nullptr && p->is_string() ? std::string(p->as_string()) : std::string();
}

bool is_deleting(const json::value& object) {
  const auto* ts = at(object, "/metadata/deletionTimestamp");
  return ts != nullptr && !ts->is_null();
}

// The controller ownerReference's uid, "" when none.
std::string controller_uid(const json::value& object) {
  const auto* refs = at(object, "/metadata/ownerReferences");
  if (refs == nullptr || !refs->is_array()) return {};
  for (const auto& r : refs->as_array()) {
    if (!r.is_object()) continue;
    const auto* c = r.as_object().if_contains("controller");
    if (c != nullptr && c->is_bool() && c->as_bool()) {
      const auto* uid = r.as_object().if_contains("uid");
      return uid != nullptr && uid->is_string() ? std::string(uid->as_string()) : std::string();
    }
  }
  return {};
}

bool owned_by(const json::value& object, std::string_view uid) {
  const auto* refs = at(object, "/metadata/ownerReferences");
  if (refs == nullptr || !refs->is_array()) return false;
  for (const auto& r : refs->as_array()) {
    if (r.is_object() && str_at(r, "/uid") == uid) return true;
  }
  return false;
}

std::int64_t replicas_of(const json::value& sts) {
  const auto* r = at(sts, "/spec/replicas");
  return r != nullptr && r->is_int64() ? r->as_int64() : 1;
}

bool has_finalizer(const catalog::Stack& stack) {
  const auto& f = stack.metadata.finalizers;
  return std::find(f.begin(), f.end(), catalog::kCleanupFinalizer) != f.end();
}

// The PVC metadata kstack applies to adopt a member's claim, or, without the ownerReference and
// with `retained` (the policy) as kstack.io/retained, to let go of a retained one. kstack owns
// the annotation through server-side apply, so a later adoption (no annotation) removes it.
json::value pvc_claim(const json::value& live, const json::object& labels,
                      const json::object* owner, std::string_view retained = {}) {
  json::object md{{"name", str_at(live, "/metadata/name")},
                  {"namespace", str_at(live, "/metadata/namespace")},
                  {"labels", labels}};
  if (owner != nullptr) md["ownerReferences"] = json::array{*owner};
  if (!retained.empty()) {
    md["annotations"] = json::object{{catalog::kRetainedAnnotation, retained}};
  }
  return json::object{{"apiVersion", "v1"}, {"kind", "PersistentVolumeClaim"}, {"metadata", md}};
}

// Whether a claim of this Stack (found through its labels) is kstack's to delete or retain: it
// names the Stack as its owner, or it is one the StatefulSet controller made for a member that
// kstack never adopted (the operator stopped in between): no controller, not marked retained,
// and made no earlier than the Stack. A claim kstack let go of carries kstack.io/retained; one
// retained from an earlier Stack of the same name is also older than this Stack. Anything in
// doubt is kept: it holds data.
bool claim_of(const json::value& pvc, const json::value& stack, std::string_view uid) {
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

}  // namespace

Reconciler::Reconciler(Caches caches, executor::Executor& executor, ReconcilerOptions options,
                       SetupHooks setup)
    : caches_(caches),
      executor_(executor),
      options_(std::move(options)),
      catalog_(catalog::CatalogStores{caches.apptypes, caches.stacks, caches.configs,
                                      caches.storage_classes},
               catalog::CatalogOptions{options_.operator_namespace}),
      observer_(caches.owned),
      setup_(setup) {}

std::vector<std::string> Reconciler::stacks_for_owned(const json::value& object) {
  const auto ns = str_at(object, "/metadata/namespace");
  if (const auto* refs = at(object, "/metadata/ownerReferences"); refs && refs->is_array()) {
    for (const auto& r : refs->as_array()) {
      if (r.is_object() && str_at(r, "/kind") == catalog::kStackKind &&
          str_at(r, "/apiVersion").starts_with(catalog::kGroup)) {
        return {informer::object_key(ns, str_at(r, "/name"))};
      }
    }
  }
  const auto label = str_at(object, "/metadata/labels/kstack.io~1stack");
  if (!label.empty()) return {informer::object_key(ns, label)};
  return {};
}

std::vector<std::string> Reconciler::stacks_for_apptype(const json::value& apptype) const {
  std::vector<std::string> keys;
  for (const auto& s : catalog_.stacks_using(str_at(apptype, "/metadata/namespace"),
                                             str_at(apptype, "/metadata/name"))) {
    keys.push_back(informer::object_key(*s));
  }
  return keys;
}

std::vector<std::string> Reconciler::all_stacks() const { return caches_.stacks->keys(); }

void Reconciler::remember(informer::Store* store, json::value object) {
  // What the server answered may be newer than the cache: keep it there (ordered against the
  // watch, informer/store.h) so that a pass running before the watch event arrives does not
  // act on the old object again.
  auto* o = object.if_object();
  if (o == nullptr) return;  // not an object: nothing a cache could hold
  if (auto* md = o->if_contains("metadata"); md && md->is_object()) {
    md->get_object().erase("managedFields");
  }
  store->upsert_write_answer(std::make_shared<const json::value>(std::move(object)));
}

bool Reconciler::apply(Pass& pass, const kube::ResourceType& type, const json::value& desired,
                       const ObjectPtr& live) {
  const auto name = str_at(desired, "/metadata/name");
  json::value answer;
  auto change = executor_.apply(type, desired, live.get(), &answer);
  if (!change) {
    const auto what =
        fmt::format("apply {} {}/{}: {}", type.kind, pass.ns(), name, change.error().message);
    spdlog::warn("stack {}/{}: {}", pass.ns(), pass.stack.metadata.name, what);
    if (change.error().kind != kube::ErrorKind::kConflict) {
      pass.degraded.emplace_back(std::string(kReasonApplyFailed), what);
      executor_.event(*pass.object, "Warning", "ApplyFailed", "Apply", what);
    }
    if (!pass.failure) pass.failure = result_for(change.error(), what);
    return false;
  }
  if (*change == executor::Change::kNone) return true;
  informer::Store* store = type == res::kStatefulSets             ? caches_.owned.stateful_sets
                           : type == res::kServices               ? caches_.owned.services
                           : type == res::kPersistentVolumeClaims ? caches_.owned.pvcs
                                                                  : nullptr;
  if (store != nullptr && answer.is_object()) remember(store, std::move(answer));
  const bool created = *change == executor::Change::kCreated;
  // A claim the StatefulSet controller made gets kstack's ownerReference: adoption, not drift.
  const bool adopted =
      type == res::kPersistentVolumeClaims && live && controller_uid(*live).empty();
  // A StatefulSet whose replicas kstack moves (scale, the end of a delete_pending hold) is a
  // scale, not a repair of drift.
  const bool scaled = type == res::kStatefulSets && live &&
                      executor::first_difference(*live, desired) == "/spec/replicas" &&
                      pass.scaling;
  const std::string reason = created             ? "Created"
                             : adopted           ? "Adopted"
                             : scaled            ? "Scaled"
                             : pass.spec_changed ? "Updated"
                                                 : "Repaired";
  std::string note =
      created   ? fmt::format("{} {} created", type.kind, name)
      : adopted ? fmt::format("{} {} adopted (owned by the Stack from now on)", type.kind, name)
      : scaled  ? fmt::format("{} {} replicas {} -> {}", type.kind, name, replicas_of(*live),
                              replicas_of(desired))
      : pass.spec_changed ? fmt::format("{} {} updated to the Stack's spec", type.kind, name)
                          : fmt::format("{} {} restored to its desired state ({})", type.kind, name,
                                        live ? executor::first_difference(*live, desired) : "");
  spdlog::info("stack {}/{}: {}", pass.ns(), pass.stack.metadata.name, note);
  pass.object_events.push_back({reason, created ? "Create" : "Update", std::move(note)});
  return true;
}

bool Reconciler::remove(Pass& pass, const kube::ResourceType& type, const ObjectPtr& live,
                        std::string_view why) {
  if (is_deleting(*live)) return true;  // already on its way
  const auto name = str_at(*live, "/metadata/name");
  auto change = executor_.remove(type, pass.ns(), name, str_at(*live, "/metadata/uid"));
  if (!change) {
    const auto what =
        fmt::format("delete {} {}/{}: {}", type.kind, pass.ns(), name, change.error().message);
    spdlog::warn("stack {}/{}: {}", pass.ns(), pass.stack.metadata.name, what);
    if (!pass.failure) pass.failure = result_for(change.error(), what);
    return false;
  }
  if (*change == executor::Change::kDeleted) {
    const auto note = fmt::format("{} {} deleted: {}", type.kind, name, why);
    spdlog::info("stack {}/{}: {}", pass.ns(), pass.stack.metadata.name, note);
    pass.object_events.push_back({"Deleted", "Delete", note});
  }
  return true;
}

kube::LogFields Reconciler::pass_log_fields(std::string_view key) {
  // 64 random bits: unique enough to grep one pass out of days of logs, cheap to make.
  thread_local std::mt19937_64 engine{std::random_device{}()};
  kube::LogFields fields;
  const auto slash = key.find('/');
  fields.ns =
      std::string(slash == std::string_view::npos ? std::string_view{} : key.substr(0, slash));
  fields.stack = std::string(slash == std::string_view::npos ? key : key.substr(slash + 1));
  fields.reconcile_id = fmt::format("{:016x}", engine());
  return fields;
}

WorkResult Reconciler::reconcile(const std::string& key) {
  std::optional<kube::LogScope> log_scope;
  if (const auto& current = kube::log_fields();
      current.reconcile_id.empty() || informer::object_key(current.ns, current.stack) != key) {
    log_scope.emplace(pass_log_fields(key));
  }
  Pass pass;
  pass.object = caches_.stacks->get(key);
  if (!pass.object) return WorkResult::success();  // gone: the garbage collector has the rest
  catalog::FieldErrors errors;
  pass.stack = catalog::decode_stack(*pass.object, errors);
  if (pass.stack.status) {
    pass.old_status = *pass.stack.status;
    // Round-trip so that comparisons see the same canonical form this pass writes.
    catalog::FieldErrors ignored;
    pass.old_status = catalog::decode_stack_status(catalog::to_json(pass.old_status), ignored);
  }
  pass.status = pass.old_status;
  pass.now = rfc3339_now();
  pass.spec_changed = pass.old_status.observed_generation != pass.stack.metadata.generation;

  if (pass.stack.metadata.deleting) {
    auto result = finalize(pass);
    post_object_events(pass);
    return result;
  }

  if (!has_finalizer(pass.stack)) {
    // The finalizer goes on first, so that a Stack deleted from here on is cleaned up by kstack
    // (retention policy) rather than only by the garbage collector.
    auto finalizers = pass.stack.metadata.finalizers;
    finalizers.emplace_back(catalog::kCleanupFinalizer);
    auto stored =
        executor_.set_finalizers(catalog::resources::kStacks, pass.ns(), pass.stack.metadata.name,
                                 pass.stack.metadata.resource_version, finalizers);
    if (!stored) {
      return result_for(stored.error(),
                        fmt::format("add finalizer to Stack {}: {}", key, stored.error().message));
    }
    remember(caches_.stacks, *stored);
    pass.object = caches_.stacks->get(key);
    if (!pass.object) return WorkResult::success();
    catalog::FieldErrors ignored;
    pass.stack = catalog::decode_stack(*pass.object, ignored);
  }
  auto result = run(pass);
  post_object_events(pass);
  return result;
}

void Reconciler::post_object_events(Pass& pass) {
  // Notes grouped by (reason, action), in the order the pass made them.
  std::vector<std::pair<std::pair<std::string, std::string>, std::vector<std::string>>> groups;
  for (auto& e : pass.object_events) {
    auto key = std::pair(std::move(e.reason), std::move(e.action));
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {std::move(key), {}});
    it->second.push_back(std::move(e.note));
  }
  pass.object_events.clear();
  for (const auto& [key, notes] : groups) {
    executor_.events(*pass.object, "Normal", key.first, key.second, notes);
  }
}

WorkResult Reconciler::run(Pass& pass) {
  auto& st = pass.status;
  const auto& stack = pass.stack;
  st.observed_generation = stack.metadata.generation;

  const auto found = catalog_.find_app(stack);
  if (!found) {
    // Admission refuses deleting an AppType in use; if it happened anyway, keep every object
    // (the data is the user's) and say why nothing progresses.
    const auto msg = fmt::format(
        "AppType \"{}\" ({} catalog) not found; nothing is changed "
        "until it exists again",
        stack.spec.app, stack.spec.app_catalog.value_or("any"));
    st.state = std::string(catalog::kStackError);
    set_condition(st.conditions, kConditionDegraded, "True", kReasonAppTypeMissing, msg,
                  st.observed_generation, pass.now);
    set_condition(st.conditions, kConditionReady, "False", kReasonAppTypeMissing, msg,
                  st.observed_generation, pass.now);
    set_condition(st.conditions, kConditionProgressing, "False", kReasonBlocked, msg,
                  st.observed_generation, pass.now);
    if (!same_status(st, pass.old_status)) {
      executor_.event(*pass.object, "Warning", kReasonAppTypeMissing, "Reconcile", msg);
    }
    return write_status(pass, WorkResult::success());
  }
  const auto config = catalog_.config();
  const catalog::KStackConfig* cfg = config ? &*config : nullptr;
  auto desired = desired_state(stack, found->app, cfg);
  if (!desired) {
    const auto& msg = desired.error().message;
    st.state = std::string(catalog::kStackError);
    set_condition(st.conditions, kConditionDegraded, "True", kReasonInvalidSpec, msg,
                  st.observed_generation, pass.now);
    set_condition(st.conditions, kConditionReady, "False", kReasonInvalidSpec, msg,
                  st.observed_generation, pass.now);
    set_condition(st.conditions, kConditionProgressing, "False", kReasonBlocked, msg,
                  st.observed_generation, pass.now);
    if (!same_status(st, pass.old_status)) {
      executor_.event(*pass.object, "Warning", kReasonInvalidSpec, "Reconcile", msg);
    }
    return write_status(pass, WorkResult::terminal(msg));
  }
  const auto observed = observer_.observe(pass.ns(), stack.metadata.name);
  const auto owner = owner_reference(stack);
  const auto& uid = stack.metadata.uid;
  auto live = [](const std::map<std::string, ObjectPtr>& m, const std::string& name) {
    auto it = m.find(name);
    return it == m.end() ? ObjectPtr{} : it->second;
  };

  // ---- membership ----
  // Who is in the Stack this pass: the spec's members (keeping their node IDs; new ones get
  // the next IDs, which only grow) and the members leaving it. Leaving members of a Stack
  // whose remaining members want --delnodes wait in delete_pending, replicas held, until those
  // notifications are delivered (or given up); then they are `deleting`: replicas lowered.
  auto fqdn_of = [&](const std::string& pod) { return desired->fqdn(pod); };
  std::map<std::string, const catalog::MemberStatus*> previous;
  std::map<std::string, const catalog::RoleStatus*> previous_roles;
  for (const auto& r : pass.old_status.roles) {
    previous_roles[r.id] = &r;
    for (const auto& m : r.members) previous[m.pod] = &m;
  }
  auto package_of = [&](std::string_view role_id) -> std::optional<catalog::SetupPackage> {
    const auto* ar = catalog::find_role(found->app, role_id);
    return ar != nullptr ? catalog::role_package(found->app, *ar) : std::nullopt;
  };
  auto handles = [&](std::string_view role_id, std::string_view event) {
    const auto* ar = catalog::find_role(found->app, role_id);
    return ar != nullptr && package_of(role_id) &&
           catalog::role_handles_event(found->app, *ar, event);
  };
  // A --delnodes still owed to a ready remaining member keeps leaving members delete_pending.
  bool delnodes_outstanding = false;
  bool delnodes_wanted = false;  // some ready remaining member's role handles delnodes
  for (const auto& role : desired->roles) {
    for (const auto& dm : role.members) {
      auto it = previous.find(dm.pod);
      if (it == previous.end() || it->second->state != catalog::kMemberReady) continue;
      if (handles(role.id, catalog::kEventDelNodes)) delnodes_wanted = true;
      for (const auto& cmd : it->second->state_detail.pending_notify_cmds) {
        if (!cmd.arguments.empty() && cmd.arguments.front() == "--delnodes") {
          delnodes_outstanding = true;
        }
      }
    }
  }
  std::vector<RolePlan> plans;
  std::map<std::string, std::vector<std::string>> leaving;  // role -> FQDNs entering delete_pending
  for (const auto& role : desired->roles) {
    RolePlan plan;
    plan.id = role.id;
    plan.desired = &role;
    plan.package = package_of(role.id);
    plan.status.id = role.id;
    plan.status.stateful_set = role.stateful_set_name;
    plan.replicas = role.replicas;
    for (const auto& dm : role.members) {
      catalog::MemberStatus m;
      auto it = previous.find(dm.pod);
      const bool fresh = it == previous.end() ||
                         it->second->state == catalog::kMemberDeletePending ||
                         it->second->state == catalog::kMemberDeleting;
      if (!fresh) {
        m = *it->second;
      } else {
        // New, or scaled back up before it was gone: a new member that happens to reuse a name.
        m.node_id = ++st.last_node_id;
        m.state = std::string(catalog::kMemberCreatePending);
      }
      m.pod = dm.pod;
      m.service = dm.service;
      m.pvc = dm.pvc;
      plan.status.members.push_back(std::move(m));
    }
    if (auto it = previous_roles.find(role.id); it != previous_roles.end()) {
      for (const auto& old : it->second->members) {
        const auto ord = ordinal_of(old.pod);
        if (!ord || *ord < role.replicas) continue;
        catalog::MemberStatus m = old;
        if (m.state == catalog::kMemberDeletePending) {
          if (delnodes_outstanding) {
            plan.replicas = std::max(plan.replicas, *ord + 1);
          } else {
            m.state = std::string(catalog::kMemberDeleting);
          }
        } else if (m.state != catalog::kMemberDeleting) {
          // A member never announced to the others (it left before its setup settled) needs no
          // --delnodes: nobody was told it existed.
          if (delnodes_wanted && m.state_detail.last_setup_generation) {
            m.state = std::string(catalog::kMemberDeletePending);
            leaving[role.id].push_back(fqdn_of(m.pod));
            plan.replicas = std::max(plan.replicas, *ord + 1);
          } else {
            m.state = std::string(catalog::kMemberDeleting);
          }
        }
        plan.leaving.push_back(std::move(m));
      }
    }
    plans.push_back(std::move(plan));
  }
  // Queue one --delnodes per shrinking role on every ready remaining member that wants it.
  for (auto& plan : plans) {
    if (!handles(plan.id, catalog::kEventDelNodes)) continue;
    for (auto& m : plan.status.members) {
      if (m.state != catalog::kMemberReady) continue;
      for (const auto& [role_id, fqdns] : leaving) {
        m.state_detail.pending_notify_cmds.push_back(
            catalog::NotifyCmd{{"--delnodes", "--role", role_id, "--fqdns",
                                fmt::format("{}", fmt::join(fqdns, ","))}});
      }
    }
  }
  for (const auto& [role_id, fqdns] : leaving) {
    executor_.event(*pass.object, "Normal", "Scaling", "Scale",
                    fmt::format("role {}: {} leaving; --delnodes queued for the remaining members",
                                role_id, fmt::join(fqdns, ",")));
  }
  // configmeta describes the members in the spec; its generation moves when they change.
  {
    auto key = [](const std::vector<RolePlan>& ps) {
      std::string k;
      for (const auto& p : ps) {
        for (const auto& m : p.status.members)
          k += fmt::format("{}/{}/{};", p.id, m.pod, m.node_id);
      }
      return k;
    };
    std::string old_key;
    for (const auto& r : pass.old_status.roles) {
      for (const auto& m : r.members) {
        if (m.state == catalog::kMemberDeletePending || m.state == catalog::kMemberDeleting)
          continue;
        old_key += fmt::format("{}/{}/{};", r.id, m.pod, m.node_id);
      }
    }
    if (st.config_generation == 0 || old_key != key(plans)) ++st.config_generation;
  }

  // ---- objects ----
  st.cluster_service = desired->headless_service_name;
  apply(pass, kube::resources::kServices, desired->headless_service,
        live(observed.services, desired->headless_service_name));
  std::set<std::string> wanted_services{desired->headless_service_name};
  std::set<std::string> wanted_sets;
  for (const auto& plan : plans) {
    const auto& role = *plan.desired;
    wanted_sets.insert(role.stateful_set_name);
    for (const auto& m : plan.leaving) {
      if (m.state == catalog::kMemberDeletePending && !m.service.empty()) {
        wanted_services.insert(m.service);  // kept until the member is really going
      }
    }
    const auto sts = live(observed.stateful_sets, role.stateful_set_name);
    if (sts && is_deleting(*sts)) {
      pass.waiting = true;  // recreated once the old one is gone (same name, same PVCs)
      continue;
    }
    json::value wanted = role.stateful_set;
    wanted.as_object()["spec"].as_object()["replicas"] = plan.replicas;
    // kstack itself moves replicas when the member count it reported last differs (a spec
    // change, or the end of a delete_pending hold); otherwise a difference is drift.
    std::int64_t reported = 0;
    if (auto it = previous_roles.find(role.id); it != previous_roles.end()) {
      for (const auto& m : it->second->members) {
        if (m.state != catalog::kMemberDeleting) ++reported;
      }
    }
    pass.scaling = sts && replicas_of(*sts) != plan.replicas && reported != plan.replicas;
    apply(pass, kube::resources::kStatefulSets, wanted, sts);
  }
  for (const auto& svc : desired->member_services) {
    const auto name = str_at(svc, "/metadata/name");
    wanted_services.insert(name);
    apply(pass, kube::resources::kServices, svc, live(observed.services, name));
  }
  for (const auto& [name, obj] : observed.services) {
    if (!wanted_services.contains(name) && owned_by(*obj, uid)) {
      remove(pass, kube::resources::kServices, obj, "its member is no longer in the Stack");
    }
  }
  for (const auto& [name, obj] : observed.stateful_sets) {
    if (!wanted_sets.contains(name) && owned_by(*obj, uid)) {
      remove(pass, kube::resources::kStatefulSets, obj, "its role is no longer in the Stack");
    }
  }

  // ---- claims ----
  std::set<std::string> kept_pvcs;
  const bool retain_scaled =
      stack.spec.pvc_retention.when_scaled.value_or("") == catalog::kRetentionRetain;
  for (const auto& plan : plans) {
    for (const auto& m : plan.status.members) {
      if (m.pvc.empty()) continue;
      kept_pvcs.insert(m.pvc);
      const auto pod_obj = live(observed.pods, m.pod);
      const auto pvc = live(observed.pvcs, m.pvc);
      const auto labels = common_labels(stack, found->app, plan.id);
      if (pvc && is_deleting(*pvc)) {
        pass.degraded.emplace_back(std::string(kReasonPvcMissing),
                                   fmt::format("PVC {} of member {} is being deleted; the "
                                               "StatefulSet recreates it with the pod",
                                               m.pvc, m.pod));
        pass.waiting = true;
      } else if (pvc) {
        const auto other = controller_uid(*pvc);
        if (other.empty() || other == uid) {
          apply(pass, kube::resources::kPersistentVolumeClaims, pvc_claim(*pvc, labels, &owner),
                pvc);
        } else {
          pass.degraded.emplace_back(std::string(kReasonPvcMissing),
                                     fmt::format("PVC {} of member {} is controlled by another "
                                                 "owner ({})",
                                                 m.pvc, m.pod, other));
        }
      } else if (pod_obj) {
        // The pod exists, so its claim did: deleted, or kstack's labels were taken off it.
        auto got =
            executor_.client().get(kube::resources::kPersistentVolumeClaims, pass.ns(), m.pvc);
        if (got && !is_deleting(*got) &&
            (controller_uid(*got).empty() || controller_uid(*got) == uid)) {
          apply(pass, kube::resources::kPersistentVolumeClaims, pvc_claim(*got, labels, &owner),
                std::make_shared<const json::value>(*got));
        } else {
          pass.degraded.emplace_back(std::string(kReasonPvcMissing),
                                     fmt::format("PVC {} of member {} is missing", m.pvc, m.pod));
          pass.waiting = true;
        }
      }
    }
    for (const auto& m : plan.leaving) {
      if (m.state == catalog::kMemberDeletePending && !m.pvc.empty()) kept_pvcs.insert(m.pvc);
    }
  }
  // Claims of members that are gone: Delete (default) or Retain (drop the ownerReference so the
  // claim outlives the Stack), once no pod uses them.
  for (const auto& [name, pvc] : observed.pvcs) {
    if (kept_pvcs.contains(name) || is_deleting(*pvc)) continue;
    const auto member = name.substr(std::min(name.size(), catalog::kDataVolumeName.size() + 1));
    if (live(observed.pods, member)) {
      pass.waiting = true;
      continue;
    }
    if (!claim_of(*pvc, *pass.object, uid)) continue;
    if (retain_scaled) {
      retain(pass, pvc, "whenScaled");
    } else {
      remove(pass, kube::resources::kPersistentVolumeClaims, pvc, "its member was removed");
    }
  }

  // ---- member states and setup ----
  catalog::MemberStateRollup acc;
  std::int64_t ready = 0;
  std::int64_t wanted = 0;
  SetupContext setup_ctx{pass, *found, cfg, *desired, plans};
  for (auto& plan : plans) {
    for (auto& m : plan.status.members) {
      ++wanted;
      const auto* prev = previous.contains(m.pod) ? previous.at(m.pod) : nullptr;
      const bool was_ready = prev != nullptr && prev->state == catalog::kMemberReady;
      const auto pod = view_pod(live(observed.pods, m.pod).get());
      m.state_detail.last_known_container_state = pod.container_state;
      m.state_detail.scheduling_error_message = pod.unschedulable ? pod.scheduling_message : "";
      member_setup(setup_ctx, plan, m, pod);
      if (m.state == catalog::kMemberReady) {
        ++ready;
        continue;
      }
      if (m.state == catalog::kMemberConfigError) {
        acc.config_errors = true;
        pass.degraded.emplace_back(
            std::string(kReasonConfigError),
            fmt::format("member {}: {}", m.pod, m.state_detail.config_error_detail));
        continue;
      }
      pass.waiting = true;
      if (was_ready) acc.members_down = true;
      if (!pod.exists) acc.membership_changing = true;
      if (pod.unschedulable) acc.members_not_scheduled = true;
      if (pod.exists && pod.scheduled && pod.container_state == "waiting")
        acc.members_waiting = true;
      if (pod.exists && pod.scheduled) acc.members_initializing = true;
      if (pod.exists && pod.restart_count > 0) acc.members_restarting = true;
    }
    for (auto& m : plan.leaving) {
      const auto pod_obj = live(observed.pods, m.pod);
      m.state_detail.last_known_container_state = view_pod(pod_obj.get()).container_state;
      acc.membership_changing = true;
      if (pod_obj || m.state == catalog::kMemberDeletePending) pass.waiting = true;
    }
  }
  announce(setup_ctx);
  deliver_notifications(setup_ctx);

  // Roles no longer in the spec: their StatefulSet was deleted above; report until pods go.
  std::vector<catalog::RoleStatus> roles;
  for (auto& plan : plans) {
    for (auto& m : plan.leaving) {
      if (m.state == catalog::kMemberDeletePending || live(observed.pods, m.pod)) {
        plan.status.members.push_back(std::move(m));
      }
    }
    roles.push_back(std::move(plan.status));
  }
  for (const auto& old : pass.old_status.roles) {
    if (wanted_sets.contains(old.stateful_set)) continue;
    catalog::RoleStatus rs = old;
    rs.members.clear();
    for (const auto& om : old.members) {
      const auto pod_obj = live(observed.pods, om.pod);
      if (!pod_obj) continue;
      catalog::MemberStatus m = om;
      m.state = std::string(catalog::kMemberDeleting);
      acc.membership_changing = true;
      pass.waiting = true;
      rs.members.push_back(std::move(m));
    }
    if (!rs.members.empty()) roles.push_back(std::move(rs));
  }

  // ---- status ----
  st.roles = std::move(roles);
  st.desired_members = wanted;
  st.ready_members = ready;
  st.member_summary = fmt::format("{}/{}", ready, wanted);
  for (const auto& plan : plans) {
    const auto sts = live(observed.stateful_sets, plan.desired->stateful_set_name);
    if (!sts || replicas_of(*sts) != plan.desired->replicas) acc.membership_changing = true;
  }
  for (const auto& r : st.roles) {
    for (const auto& m : r.members) {
      if (!m.state_detail.last_notify_error.empty()) {
        pass.degraded.emplace_back(
            std::string(kReasonNotifyFailed),
            fmt::format("member {}: {}", m.pod, m.state_detail.last_notify_error));
      }
    }
  }
  st.member_state_rollup = acc;
  const bool all_ready = ready == wanted && !acc.membership_changing;
  const auto gen = st.observed_generation;
  if (all_ready) {
    set_condition(st.conditions, kConditionReady, "True", kReasonAllMembersReady,
                  fmt::format("{} of {} members ready", ready, wanted), gen, pass.now);
  } else {
    set_condition(st.conditions, kConditionReady, "False", kReasonMembersNotReady,
                  fmt::format("{} of {} members ready", ready, wanted), gen, pass.now);
  }
  const bool never_ready =
      pass.old_status.state.empty() || pass.old_status.state == catalog::kStackCreating;
  if (all_ready) {
    set_condition(st.conditions, kConditionProgressing, "False", kReasonStable,
                  "every member is as the spec asks", gen, pass.now);
  } else {
    const auto reason = never_ready               ? kReasonCreating
                        : acc.membership_changing ? kReasonScaling
                                                  : kReasonRecovering;
    set_condition(st.conditions, kConditionProgressing, "True", reason,
                  fmt::format("{} of {} members ready", ready, wanted), gen, pass.now);
  }
  if (pass.degraded.empty()) {
    set_condition(st.conditions, kConditionDegraded, "False", kReasonAsExpected, "no problem found",
                  gen, pass.now);
  } else {
    std::string message;
    for (const auto& [reason, msg] : pass.degraded) {
      if (!message.empty()) message += "; ";
      message += msg;
    }
    if (message.size() > 2048) message.resize(2048);
    set_condition(st.conditions, kConditionDegraded, "True", pass.degraded.front().first, message,
                  gen, pass.now);
  }
  if (all_ready && pass.degraded.empty()) {
    st.state = std::string(catalog::kStackReady);
  } else if (never_ready && !all_ready) {
    st.state = std::string(catalog::kStackCreating);
  } else if (all_ready) {
    st.state = std::string(catalog::kStackReady);
  } else {
    st.state = std::string(catalog::kStackUpdating);
  }
  if (st.state != pass.old_status.state) {
    executor_.event(*pass.object, "Normal", "StateChanged", "Reconcile",
                    fmt::format("Stack state {} -> {} ({})",
                                pass.old_status.state.empty() ? "none" : pass.old_status.state,
                                st.state, st.member_summary));
  }

  WorkResult result = WorkResult::success();
  if (pass.failure) {
    result = *pass.failure;
  } else if (pass.waiting || !all_ready) {
    result = WorkResult::requeue_after(options_.poll_interval);
  }
  return write_status(pass, result);
}

WorkResult Reconciler::write_status(Pass& pass, WorkResult result) {
  if (same_status(pass.status, pass.old_status)) return result;
  json::value object = *pass.object;
  object.as_object()["status"] = catalog::to_json(pass.status);
  auto stored = executor_.update_status(catalog::resources::kStacks, object);
  if (!stored) {
    const auto what = fmt::format("write status of Stack {}/{}: {}", pass.ns(),
                                  pass.stack.metadata.name, stored.error().message);
    if (stored.error().kind == kube::ErrorKind::kNotFound) return WorkResult::success();
    spdlog::debug("{}", what);
    if (result.kind == WorkResult::Kind::kError ||
        result.kind == WorkResult::Kind::kTerminalError) {
      return result;
    }
    return result_for(stored.error(), what);
  }
  remember(caches_.stacks, std::move(*stored));
  // Only now that status no longer lists them may the notifier drop delivered commands: had
  // the write failed, the next pass would still see them pending and must not send them again.
  if (setup_.notifier != nullptr) {
    for (const auto& [target, args] : pass.delivered) setup_.notifier->forget(target, args);
  }
  return result;
}

void Reconciler::retain(Pass& pass, const informer::ObjectPtr& pvc, std::string_view policy) {
  json::object labels;
  if (const auto* l = at(*pvc, "/metadata/labels"); l && l->is_object()) labels = l->as_object();
  auto kept = executor_.force_apply(kube::resources::kPersistentVolumeClaims,
                                    pvc_claim(*pvc, labels, nullptr, policy));
  if (!kept) {
    if (!pass.failure) pass.failure = result_for(kept.error(), kept.error().message);
    return;
  }
  remember(caches_.owned.pvcs, std::move(*kept));
  executor_.event(*pass.object, "Normal", "Retained", policy == "whenScaled" ? "Scale" : "Delete",
                  fmt::format("PVC {} kept ({}: Retain)", str_at(*pvc, "/metadata/name"), policy));
}

WorkResult Reconciler::finalize(Pass& pass) {
  if (!has_finalizer(pass.stack)) return WorkResult::success();
  const auto observed = observer_.observe(pass.ns(), pass.stack.metadata.name);
  const auto& uid = pass.stack.metadata.uid;
  const bool retain_deleted =
      pass.stack.spec.pvc_retention.when_deleted.value_or("") == catalog::kRetentionRetain;
  bool remaining = false;
  for (const auto& [name, sts] : observed.stateful_sets) {
    if (!owned_by(*sts, uid)) continue;
    remaining = true;
    remove(pass, kube::resources::kStatefulSets, sts, "the Stack is being deleted");
  }
  for (const auto& [name, svc] : observed.services) {
    if (!owned_by(*svc, uid)) continue;
    remaining = true;
    remove(pass, kube::resources::kServices, svc, "the Stack is being deleted");
  }
  for (const auto& [name, pod] : observed.pods) {
    (void)name;
    (void)pod;
    remaining = true;  // the garbage collector removes them with their StatefulSet
  }
  for (const auto& [name, pvc] : observed.pvcs) {
    if (!claim_of(*pvc, *pass.object, uid)) continue;
    if (retain_deleted) {
      retain(pass, pvc, "whenDeleted");
      continue;
    }
    remaining = true;
    remove(pass, kube::resources::kPersistentVolumeClaims, pvc, "the Stack is being deleted");
  }
  if (pass.failure) return *pass.failure;
  if (remaining) return WorkResult::requeue_after(options_.poll_interval);
  auto finalizers = pass.stack.metadata.finalizers;
  std::erase(finalizers, std::string(catalog::kCleanupFinalizer));
  auto stored =
      executor_.set_finalizers(catalog::resources::kStacks, pass.ns(), pass.stack.metadata.name,
                               pass.stack.metadata.resource_version, finalizers);
  if (!stored) {
    if (stored.error().kind == kube::ErrorKind::kNotFound) return WorkResult::success();
    return result_for(stored.error(),
                      fmt::format("remove finalizer of Stack {}/{}: {}", pass.ns(),
                                  pass.stack.metadata.name, stored.error().message));
  }
  spdlog::info("stack {}/{}: cleanup done, finalizer removed", pass.ns(), pass.stack.metadata.name);
  return WorkResult::success();
}

}  // namespace kstack::reconciler
