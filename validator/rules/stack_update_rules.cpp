// Stack UPDATE rules: what may change once a Stack exists.
#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/defaults.h"
#include "validator/rules/stack_rules.h"

namespace kstack::validator {
namespace json = boost::json;
using catalog::child_path;
using catalog::index_path;

namespace {

// Role fields a running role may change: scaling, and metadata that Kubernetes applies
// without recreating anything.
constexpr std::string_view kMutableRoleFields[] = {"members", "podLabels", "podAnnotations",
                                                   "serviceLabels", "serviceAnnotations"};

bool is_mutable(std::string_view field) {
  for (auto f : kMutableRoleFields) {
    if (f == field) return true;
  }
  return false;
}

const json::array* raw_roles(const json::value& stack) {
  const auto* o = stack.if_object();
  const auto* spec = o ? o->if_contains("spec") : nullptr;
  const auto* so = spec ? spec->if_object() : nullptr;
  const auto* roles = so ? so->if_contains("roles") : nullptr;
  return roles ? roles->if_array() : nullptr;
}

const json::object* raw_role(const json::value& stack, std::string_view id) {
  const auto* roles = raw_roles(stack);
  if (roles == nullptr) return nullptr;
  for (const auto& r : *roles) {
    const auto* o = r.if_object();
    const auto* rid = o ? o->if_contains("id") : nullptr;
    if (rid && rid->is_string() && rid->get_string() == id) return o;
  }
  return nullptr;
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

}  // namespace

Violations validate_stack_update(const catalog::Stack& old_stack, const catalog::Stack& new_stack) {
  Violations out;
  if (!old_stack.spec.app.empty() && new_stack.spec.app != old_stack.spec.app) {
    out.push_back({"spec.app", fmt::format("field is immutable (was \"{}\")", old_stack.spec.app)});
  }
  check_immutable(old_stack.spec.app_catalog, new_stack.spec.app_catalog, "spec.appCatalog", out);
  // Every object name derives from the naming scheme: changing it would orphan them all.
  check_immutable(old_stack.spec.naming_scheme, new_stack.spec.naming_scheme, "spec.namingScheme",
                  out);

  for (std::size_t i = 0; i < new_stack.spec.roles.size(); ++i) {
    const auto& id = new_stack.spec.roles[i].id;
    const catalog::StackRole* old_role = catalog::find_role(old_stack, id);
    if (id.empty() || old_role == nullptr || old_role->members.value_or(0) <= 0) continue;
    const auto* before = raw_role(old_stack.raw, id);
    const auto* after = raw_role(new_stack.raw, id);
    if (before == nullptr || after == nullptr) continue;
    std::set<std::string> keys;
    for (const auto& kv : *before) keys.emplace(kv.key());
    for (const auto& kv : *after) keys.emplace(kv.key());
    for (const auto& k : keys) {
      if (is_mutable(k)) continue;
      const auto* a = before->if_contains(k);
      const auto* b = after->if_contains(k);
      bool same = (a == nullptr || a->is_null()) ? (b == nullptr || b->is_null())
                                                 : (b != nullptr && *a == *b);
      if (!same) {
        out.push_back({child_path(index_path("spec.roles", i), k),
                       fmt::format("cannot be changed while role \"{}\" has members (only "
                                   "members, labels and annotations may change; live role "
                                   "upgrade does not exist yet)",
                                   id)});
      }
    }
  }
  return out;
}

}  // namespace kstack::validator
