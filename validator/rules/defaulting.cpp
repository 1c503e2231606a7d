#include "validator/rules/defaulting.h"

#include <boost/json.hpp>

#include "catalog/defaults.h"
#include "catalog/model.h"
#include "catalog/parse.h"
#include "kube/json_member.h"

namespace kstack::validator {
namespace json = boost::json;

namespace {

// Absent, null and (for enum-like strings) "" count as unset.
bool unset(const json::object& o, std::string_view key) {
  const auto* v = kube::member(o, key);
  return v == nullptr || v->is_null() || (v->is_string() && v->get_string().empty());
}

std::string pointer(std::initializer_list<std::string_view> segments) {
  std::string out;
  for (auto s : segments) out.append("/").append(json_pointer_escape(s));
  return out;
}

void add(json::array& patch, std::string path, json::value value) {
  patch.push_back(
      json::object{{"op", "add"}, {"path", std::move(path)}, {"value", std::move(value)}});
}

std::optional<std::string> non_empty(const std::optional<std::string>& v) {
  if (v && !v->empty()) return v;
  return std::nullopt;
}

void default_roles(const json::object& spec, const catalog::Stack* old_stack,
                   const catalog::AppType* app, const catalog::Catalog& catalog,
                   json::array& patch) {
  const auto* roles_v = kube::member(spec, "roles");
  const auto* roles = roles_v ? roles_v->if_array() : nullptr;
  if (roles == nullptr) return;
  std::optional<std::optional<std::string>> default_class;  // looked up once, when needed
  for (std::size_t i = 0; i < roles->size(); ++i) {
    const auto* role = (*roles)[i].if_object();
    const auto* id_v = role ? kube::member(*role, "id") : nullptr;
    if (id_v == nullptr || !id_v->is_string()) continue;
    std::string_view id = id_v->get_string();
    const catalog::StackRole* old_role = old_stack ? catalog::find_role(*old_stack, id) : nullptr;
    std::string index = std::to_string(i);

    const auto* members = kube::member(*role, "members");
    if (members == nullptr || members->is_null()) {
      if (old_role && old_role->members) {
        add(patch, pointer({"spec", "roles", index, "members"}), *old_role->members);
      } else if (const auto* app_role = app ? catalog::find_role(*app, id) : nullptr) {
        if (auto c = catalog::parse_cardinality(app_role->cardinality)) {
          add(patch, pointer({"spec", "roles", index, "members"}), c->min);
        }
      }
    }

    const auto* storage_v = kube::member(*role, "storage");
    const auto* storage = storage_v ? storage_v->if_object() : nullptr;
    const auto* cls = storage ? kube::member(*storage, "storageClassName") : nullptr;
    if (storage == nullptr || (cls != nullptr && !cls->is_null())) continue;
    std::optional<std::string> chosen;
    if (old_role && old_role->storage) {
      // Storage is frozen on a running role: keep exactly what the old object had, even ""
      // or nothing (an object admitted while the webhook was down), rather than a new default.
      if (!old_role->storage->storage_class_name) continue;
      chosen = old_role->storage->storage_class_name;
    } else {
      if (!default_class) default_class = catalog.default_storage_class();
      chosen = *default_class;
    }
    if (chosen) {
      add(patch, pointer({"spec", "roles", index, "storage", "storageClassName"}),
          json::string(*chosen));
    }
  }
}

// CREATE: kstack's cleanup finalizer, so that the operator's first pass need not add it with a
// write of its own (docs/reconciler.md "One pass"). After the spec defaults: the patch's
// order is the API server's, and those are what `kubectl apply --dry-run=server` users read.
void add_cleanup_finalizer(const json::object& root, json::array& patch) {
  const auto* md_v = kube::member(root, "metadata");
  const auto* md = md_v ? md_v->if_object() : nullptr;
  if (md == nullptr) return;  // refused by validation (no name)
  const auto* list_v = kube::member(*md, "finalizers");
  if (list_v == nullptr || list_v->is_null()) {
    add(patch, pointer({"metadata", "finalizers"}),
        json::array{json::string(catalog::kCleanupFinalizer)});
    return;
  }
  const auto* list = list_v->if_array();
  if (list == nullptr) return;  // not a list: validation reports it
  for (const auto& f : *list) {
    if (f.is_string() && f.get_string() == catalog::kCleanupFinalizer) return;
  }
  add(patch, pointer({"metadata", "finalizers", "-"}), json::string(catalog::kCleanupFinalizer));
}

}  // namespace

std::string json_pointer_escape(std::string_view segment) {
  std::string out;
  out.reserve(segment.size());
  for (char c : segment) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

json::array default_stack(const catalog::Stack& stack, const catalog::Stack* old_stack,
                          const catalog::Catalog& catalog, bool add_finalizer) {
  json::array patch;
  const auto* root = catalog::to_json(stack).if_object();
  const auto* spec_v = root ? kube::member(*root, "spec") : nullptr;
  const auto* spec = spec_v ? spec_v->if_object() : nullptr;
  if (spec == nullptr) return patch;
  auto config = catalog.config_ref();

  // The app is looked up where the old object says (immutable), else local then system.
  std::optional<std::string> where = non_empty(stack.spec.app_catalog);
  if (!where && old_stack) where = non_empty(old_stack->spec.app_catalog);
  auto found = catalog.find_app_ref(stack.metadata.namespace_name, stack.spec.app,
                                    where ? std::optional<std::string_view>(*where) : std::nullopt);
  if (unset(*spec, "appCatalog")) {
    if (where) {
      add(patch, pointer({"spec", "appCatalog"}), json::string(*where));
    } else if (found) {
      add(patch, pointer({"spec", "appCatalog"}), json::string(found->catalog));
    }
  }
  if (unset(*spec, "serviceType")) {
    std::string type(catalog::kServiceTypeClusterIP);
    if (config) {
      if (auto t = non_empty(config->spec.default_service_type)) type = *t;
    }
    add(patch, pointer({"spec", "serviceType"}), json::string(type));
  }
  if (unset(*spec, "namingScheme")) {
    std::string scheme(catalog::kNamingCrNameRole);
    std::optional<std::string> old_scheme;
    if (old_stack) old_scheme = non_empty(old_stack->spec.naming_scheme);
    if (old_scheme) {
      scheme = *old_scheme;
    } else if (config) {
      if (auto s = non_empty(config->spec.default_naming_scheme)) scheme = *s;
    }
    add(patch, pointer({"spec", "namingScheme"}), json::string(scheme));
  }
  default_roles(*spec, old_stack, found ? found->app.get() : nullptr, catalog, patch);
  if (old_stack == nullptr && add_finalizer) add_cleanup_finalizer(*root, patch);
  return patch;
}

}  // namespace kstack::validator
