// Stack UPDATE rules: what may change once a Stack exists.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/defaults.h"
#include "catalog/parse.h"
#include "kube/json_equal.h"
#include "kube/json_member.h"
#include "validator/rules/defaulting.h"
#include "validator/rules/stack_rules.h"

namespace kstack::validator {
namespace json = boost::json;
using catalog::child_path;
using catalog::index_path;

namespace {

const json::array* raw_roles(const json::value& stack) {
  const auto* o = stack.if_object();
  const auto* spec = o ? kube::member(*o, "spec") : nullptr;
  const auto* so = spec ? spec->if_object() : nullptr;
  const auto* roles = so ? kube::member(*so, "roles") : nullptr;
  return roles ? roles->if_array() : nullptr;
}

const json::object* raw_role(const json::value& stack, std::string_view id) {
  const auto* roles = raw_roles(stack);
  if (roles == nullptr) return nullptr;
  for (const auto& r : *roles) {
    const auto* o = r.if_object();
    const auto* rid = o ? kube::member(*o, "id") : nullptr;
    if (rid && rid->is_string() && rid->get_string() == id) return o;
  }
  return nullptr;
}

// Absent and null are the same; otherwise the JSON must be identical (Kubernetes compares the
// volumeClaimTemplates as written: "20Gi" -> "20480Mi" is a change too).
bool same_value(const json::object& before, const json::object& after, std::string_view key) {
  const auto* a = kube::member(before, key);
  const auto* b = kube::member(after, key);
  if (a == nullptr || a->is_null()) return b == nullptr || b->is_null();
  return b != nullptr && kube::json_equal(*a, *b);
}

// Once set, a value may not change; a missing new value counts as unchanged (the defaulting
// webhook puts the old one back).
void check_immutable(const std::optional<std::string>& old_value,
                     const std::optional<std::string>& new_value, const std::string& path,
                     Violations& out) {
  if (!old_value || old_value->empty() || !new_value) return;
  if (*old_value != *new_value) {
    out.push_back({path, fmt::format("field is immutable (was \"{}\")", *old_value)});
  }
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += fmt::format("{}\"{}\"", out.empty() ? "" : ", ", n);
  return out;
}

// Some member of the Stack runs `app`, or its setup last finished in it (status, which only the
// operator writes).
bool runs(const catalog::Stack& stack, std::string_view app) {
  if (!stack.status) return false;
  for (const auto& r : stack.status->roles) {
    for (const auto& m : r.members) {
      if (m.app == app || m.state_detail.last_configured_app == app) return true;
    }
  }
  return false;
}

bool lists(const catalog::AppType& app, std::string_view from) {
  const auto& f = app.spec.upgrade_from;
  return std::find(f.begin(), f.end(), from) != f.end();
}

// spec.app may move to an AppType of the current one's namespace and distroID that lists the
// current one in its upgradeFrom (docs/api.md "Upgrades").
void check_app_change(const catalog::Stack& old_stack, const catalog::Stack& new_stack,
                      const catalog::Catalog& catalog, Violations& out) {
  const std::string& from = old_stack.spec.app;
  const std::string& to = new_stack.spec.app;
  if (from.empty() || to == from) return;
  const std::string head = fmt::format("cannot change from \"{}\" to \"{}\"", from, to);
  auto current = catalog.find_app_ref(old_stack);
  if (!current) {
    out.push_back({"spec.app", fmt::format("{}: the current AppType \"{}\" is not found, so "
                                           "what it may be upgraded to is unknown",
                                           head, from)});
    return;
  }
  const std::string& distro = current->app->spec.distro_id;
  std::vector<std::string> allowed;
  std::vector<std::string> other_distro;  // list it, but are another app
  for (const auto& a : catalog.apps_in(current->namespace_name)) {
    if (a.metadata.name == from || !lists(a, from)) continue;
    (a.spec.distro_id == distro ? allowed : other_distro).push_back(a.metadata.name);
  }
  // Looked up the way the Stack resolves its app (appCatalog is immutable: the old one rules).
  std::optional<std::string_view> where;
  if (old_stack.spec.app_catalog && !old_stack.spec.app_catalog->empty()) {
    where = *old_stack.spec.app_catalog;
  } else if (new_stack.spec.app_catalog && !new_stack.spec.app_catalog->empty()) {
    where = *new_stack.spec.app_catalog;
  }
  auto target = catalog.find_app_ref(new_stack.metadata.namespace_name, to, where);
  if (target && target->namespace_name == current->namespace_name &&
      std::find(allowed.begin(), allowed.end(), to) != allowed.end()) {
    return;
  }
  // A rollback: members still run (or were last set up by) that AppType, as the operator's
  // status says; setting spec.app back moves the others back the same way.
  if (target && target->namespace_name == current->namespace_name &&
      target->app->spec.distro_id == distro && runs(old_stack, to)) {
    return;
  }
  if (allowed.empty()) {
    std::string why = fmt::format("{}: no AppType lists \"{}\" in its upgradeFrom", head, from);
    if (!other_distro.empty()) {
      why += fmt::format(" with distroID \"{}\" ({} of another distroID)", distro,
                         quoted_list(other_distro));
    }
    out.push_back({"spec.app", std::move(why)});
    return;
  }
  out.push_back(
      {"spec.app",
       fmt::format("{}: allowed upgrade{} of \"{}\" {} {} (AppTypes of distroID "
                   "\"{}\" whose upgradeFrom lists \"{}\")",
                   head, allowed.size() == 1 ? "" : "s", from, allowed.size() == 1 ? "is" : "are",
                   quoted_list(allowed), distro, from)});
}

// A running role may change everything but its storage: the size and class are in the
// StatefulSet's volumeClaimTemplates, which Kubernetes refuses to update.
void check_running_roles(const catalog::Stack& old_stack, const catalog::Stack& new_stack,
                         Violations& out) {
  for (std::size_t i = 0; i < new_stack.spec.roles.size(); ++i) {
    const auto& id = new_stack.spec.roles[i].id;
    const catalog::StackRole* old_role = catalog::find_role(old_stack, id);
    if (id.empty() || old_role == nullptr || old_role->members.value_or(0) <= 0) continue;
    const auto* before = raw_role(catalog::to_json(old_stack), id);
    const auto* after = raw_role(catalog::to_json(new_stack), id);
    if (before == nullptr || after == nullptr || same_value(*before, *after, "storage")) continue;
    out.push_back({child_path(index_path("spec.roles", i), "storage"),
                   fmt::format("cannot change while role \"{}\" has members: the size and class "
                               "are in the StatefulSet's volumeClaimTemplates, which Kubernetes "
                               "does not let change",
                               id)});
  }
}

// Fields of the Stack spec whose members are keys of a map (named as path[key]).
bool is_map_field(std::string_view key) {
  for (std::string_view m : {"podLabels", "podAnnotations", "serviceLabels", "serviceAnnotations",
                             "nodeSelector", "requests", "limits"}) {
    if (key == m) return true;
  }
  return false;
}

bool unset(const json::value* v) { return v == nullptr || v->is_null(); }

// The path of the first place where `before` and `after` differ, "" when they are the same.
// Absent and null are the same; objects in key order (before's keys, then after's new ones),
// arrays by index (an item added or removed is named by its index).
std::string first_difference(const json::value* before, const json::value* after,
                             const std::string& path, bool map = false) {
  if (unset(before) && unset(after)) return {};
  if (unset(before) || unset(after)) return path;
  const auto* bo = before->if_object();
  const auto* ao = after->if_object();
  if (bo && ao) {
    auto walk = [&](const json::object& keys, bool skip_known) -> std::string {
      for (const auto& kv : keys) {
        if (skip_known && bo->contains(kv.key())) continue;
        std::string p = map ? catalog::key_path(path, kv.key()) : child_path(path, kv.key());
        std::string d = first_difference(kube::member(*bo, kv.key()), kube::member(*ao, kv.key()),
                                         p, !map && is_map_field(kv.key()));
        if (!d.empty()) return d;
      }
      return {};
    };
    std::string d = walk(*bo, false);
    return d.empty() ? walk(*ao, true) : d;
  }
  const auto* ba = before->if_array();
  const auto* aa = after->if_array();
  if (ba && aa) {
    std::size_t common = std::min(ba->size(), aa->size());
    for (std::size_t i = 0; i < common; ++i) {
      std::string d = first_difference(&(*ba)[i], &(*aa)[i], index_path(path, i));
      if (!d.empty()) return d;
    }
    return ba->size() == aa->size() ? std::string() : index_path(path, common);
  }
  return kube::json_equal(*before, *after) ? std::string() : path;
}

// spec without `stopped` (null when there is no spec object).
json::value spec_but_stopped(const json::value& stack) {
  const auto* o = stack.if_object();
  const auto* spec = o ? kube::member(*o, "spec") : nullptr;
  if (spec == nullptr || !spec->is_object()) return nullptr;
  json::object copy = spec->get_object();
  copy.erase("stopped");
  return copy;
}

// RFC 6901 reference tokens of `pointer` ("/a/b~1c" -> a, b/c).
std::vector<std::string> pointer_tokens(std::string_view pointer) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < pointer.size() && pointer[i] == '/') {
    const auto end = std::min(pointer.find('/', i + 1), pointer.size());
    std::string token;
    for (std::size_t k = i + 1; k < end; ++k) {
      if (pointer[k] == '~' && k + 1 < end) {
        token += pointer[k + 1] == '1' ? '/' : '~';
        ++k;
      } else {
        token += pointer[k];
      }
    }
    out.push_back(std::move(token));
    i = end;
  }
  return out;
}

// Applies the "add" operations of a defaulting patch (paths under /spec) to `spec`, where
// their parent exists. (Boost.JSON 1.81 has no set_at_pointer; the patch is only adds.)
void add_defaults(json::value& spec, const json::array& patch) {
  for (const auto& op : patch) {
    const auto* path = op.as_object().if_contains("path");
    const auto* value = op.as_object().if_contains("value");
    if (path == nullptr || value == nullptr || !path->is_string()) continue;
    auto tokens = pointer_tokens(path->get_string());
    if (tokens.size() < 2 || tokens.front() != "spec") continue;
    json::value* at = &spec;
    for (std::size_t i = 1; at != nullptr && i + 1 < tokens.size(); ++i) {
      if (auto* o = at->if_object()) {
        at = o->if_contains(tokens[i]);
      } else if (auto* a = at->if_array()) {
        const auto index = static_cast<std::size_t>(std::strtoull(tokens[i].c_str(), nullptr, 10));
        at = index < a->size() ? &(*a)[index] : nullptr;
      } else {
        at = nullptr;
      }
    }
    if (auto* o = at != nullptr ? at->if_object() : nullptr) (*o)[tokens.back()] = *value;
  }
}

// A stopped Stack keeps its spec as it was (docs/api.md "Stop and resume"): stopping and
// resuming are updates of their own, so what the members come back to is what they left.
// The old spec is compared with the defaults the mutating webhook gives it today: a field the
// webhook adds in the same update (an object stored before a default existed) is no change.
void check_stopped(const catalog::Stack& old_stack, const catalog::Stack& new_stack,
                   const catalog::Catalog& catalog, Violations& out) {
  const bool was = old_stack.spec.stopped;
  const bool is = new_stack.spec.stopped;
  if (!was && !is) return;
  json::value before = spec_but_stopped(catalog::to_json(old_stack));
  if (!before.is_null()) add_defaults(before, default_stack(old_stack, &old_stack, catalog));
  json::value after = spec_but_stopped(catalog::to_json(new_stack));
  std::string path = first_difference(&before, &after, "spec");
  if (path.empty()) return;
  if (was && is) {
    out.push_back({path,
                   "cannot change while the Stack is stopped (spec.stopped: true); resume "
                   "it first (set spec.stopped to false in an update of its own)"});
  } else {
    out.push_back({path,
                   "cannot change in the same update that sets spec.stopped (stop or "
                   "resume in an update of its own)"});
  }
}

}  // namespace

Violations validate_stack_update(const catalog::Stack& old_stack, const catalog::Stack& new_stack,
                                 const catalog::Catalog& catalog) {
  Violations out;
  check_stopped(old_stack, new_stack, catalog, out);
  check_app_change(old_stack, new_stack, catalog, out);
  check_immutable(old_stack.spec.app_catalog, new_stack.spec.app_catalog, "spec.appCatalog", out);
  // Every object name derives from the naming scheme: changing it would orphan them all.
  check_immutable(old_stack.spec.naming_scheme, new_stack.spec.naming_scheme, "spec.namingScheme",
                  out);
  check_running_roles(old_stack, new_stack, out);
  return out;
}

Violations validate_stack_update(const json::value& old_object, const catalog::Stack& new_stack,
                                 const catalog::Catalog& catalog) {
  Violations ignored;  // the stored object was admitted; its shape is not this request's fault
  auto old_stack = catalog::decode_stack_outline(old_object, ignored);
  // Of what the outline leaves out, only status is read, by check_app_change (which app the
  // members run). check_stopped reads the stored spec as JSON, and what default_stack reads
  // of it is in the outline.
  if (!old_stack.spec.app.empty() && old_stack.spec.app != new_stack.spec.app) {
    old_stack = catalog::decode_stack(old_object, ignored, catalog::DecodeSource::kBorrow);
  }
  // The current app is looked up where the Stack lives (a hand-made review may name the
  // namespace only on the request).
  if (old_stack.metadata.namespace_name.empty()) {
    old_stack.metadata.namespace_name = new_stack.metadata.namespace_name;
  }
  return validate_stack_update(old_stack, new_stack, catalog);
}

}  // namespace kstack::validator
