#include "validator/rules/stack_rules.h"

#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "catalog/defaults.h"
#include "catalog/names.h"
#include "catalog/parse.h"
#include "catalog/quantity.h"
#include "kube/json_member.h"
#include "validator/rules/config_rules.h"

namespace kstack::validator {
using catalog::child_path;
using catalog::index_path;
using catalog::key_path;
using catalog::Quantity;

namespace {

// Parses a quantity, reporting a failure at `path`; nullopt when it does not parse.
// Paths below are built only for a message: most requests have none, and a path is an
// allocation each.
std::optional<Quantity> quantity_at(const std::string& text, const std::string& p,
                                    std::string_view field, Violations& out) {
  auto q = Quantity::parse(text);
  if (!q) {
    out.push_back({child_path(p, field), q.error().message});
    return std::nullopt;
  }
  return *q;
}

void check_enum(const std::optional<std::string>& value, const std::string& path,
                std::initializer_list<std::string_view> allowed, Violations& out) {
  if (!value) return;
  for (auto a : allowed) {
    if (*value == a) return;
  }
  std::string list;
  for (auto a : allowed) list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", a);
  out.push_back(
      {path, fmt::format("unsupported value \"{}\": supported values: {}", *value, list)});
}

// The parsed quantities of a ResourceList, in its (sorted) order. Lists are a few entries
// long: a vector searched in turn, and paths built only for a message.
using ParsedQuantities = std::vector<std::pair<std::string_view, Quantity>>;

ParsedQuantities parse_quantities(const catalog::StringMap& list, const std::string& p,
                                  std::string_view field, Violations& out) {
  ParsedQuantities parsed;
  parsed.reserve(list.size());
  for (const auto& [name, text] : list) {
    auto q = Quantity::parse(text);
    if (!q) {
      out.push_back({key_path(child_path(p, field), name), q.error().message});
      continue;
    }
    parsed.emplace_back(name, std::move(*q));
  }
  return parsed;
}

const Quantity* find_quantity(const ParsedQuantities& parsed, std::string_view name) {
  for (const auto& [n, q] : parsed) {
    if (n == name) return &q;
  }
  return nullptr;
}

void check_resources(const catalog::StackRole& role, const catalog::AppRole* app_role,
                     const std::string& p, Violations& out) {
  if (role.resources.requests.empty() && role.resources.limits.empty() &&
      (app_role == nullptr || app_role->min_resources.empty())) {
    return;
  }
  constexpr std::string_view kRequests = "resources.requests";
  const auto requests = parse_quantities(role.resources.requests, p, kRequests, out);
  const auto limits = parse_quantities(role.resources.limits, p, "resources.limits", out);
  const auto req_path = [&](std::string_view name) {
    return key_path(child_path(p, kRequests), name);
  };
  for (const auto& [name, req] : requests) {
    const auto* lim = find_quantity(limits, name);
    if (lim != nullptr && req > *lim) {
      out.push_back({req_path(name), fmt::format("must be less than or equal to {} limit of {}",
                                                 name, role.resources.limits.find(name)->second)});
    }
  }
  if (app_role == nullptr) return;
  for (const auto& [name, min_text] : app_role->min_resources) {
    auto min = Quantity::parse(min_text);
    if (!min || min->sign() <= 0) continue;  // a bad minimum is the AppType's problem
    // A container without a request gets its limit as request (Kubernetes defaulting).
    const Quantity* have = find_quantity(requests, name);
    if (have == nullptr) have = find_quantity(limits, name);
    bool unparsed = role.resources.requests.count(name) || role.resources.limits.count(name);
    if (have == nullptr && !unparsed) {
      out.push_back(
          {req_path(name), fmt::format("is required: role \"{}\" needs at least {} (minResources)",
                                       role.id, min_text)});
    } else if (have != nullptr && *have < *min) {
      out.push_back(
          {req_path(name),
           fmt::format("must be at least {} (minResources of role \"{}\")", min_text, role.id)});
    }
  }
}

void check_storage(const catalog::StackRole& role, const catalog::AppRole* app_role,
                   const catalog::Catalog& catalog, const std::string& p, Violations& out) {
  std::optional<Quantity> size;
  if (role.storage && !role.storage->size.empty()) {
    size = quantity_at(role.storage->size, p, "storage.size", out);
    if (size && size->sign() <= 0) {
      out.push_back({child_path(p, "storage.size"), "must be greater than zero"});
      size.reset();
    }
  }
  if (app_role != nullptr && app_role->min_storage) {
    const auto& ms = *app_role->min_storage;
    auto min = Quantity::parse(ms.size);
    if (!role.storage && !ms.ephemeral_mode_supported) {
      out.push_back({child_path(p, "storage"),
                     fmt::format("is required: role \"{}\" needs persistent storage{} and does "
                                 "not support ephemeral mode",
                                 role.id, min ? fmt::format(" of at least {}", ms.size) : "")});
    } else if (size && min && *size < *min) {
      out.push_back(
          {child_path(p, "storage.size"),
           fmt::format("must be at least {} (minStorage of role \"{}\")", ms.size, role.id)});
    }
  }
  if (!role.storage || !catalog.knows_storage_classes()) return;
  const auto class_path = [&] { return child_path(p, "storage.storageClassName"); };
  const auto& cls = role.storage->storage_class_name;
  if (cls && !cls->empty()) {  // "" asks for no class (static binding): nothing to check
    if (!catalog.storage_class_exists(*cls)) {
      out.push_back({class_path(), fmt::format("StorageClass \"{}\" not found", *cls)});
    }
  } else if (!cls) {
    auto def = catalog.default_storage_class();
    if (!def) {
      out.push_back({class_path(), fmt::format("is required: no default StorageClass (neither "
                                               "KStackConfig defaultStorageClassName nor a class "
                                               "annotated {}=true)",
                                               catalog::kDefaultClassAnnotation)});
    } else if (!catalog.storage_class_exists(*def)) {
      out.push_back({class_path(), fmt::format("is required: the default StorageClass \"{}\" "
                                               "does not exist",
                                               *def)});
    }
  }
}

// Empty maps (most of them) are skipped before their paths are built.
void check_maps(const catalog::StackRole& role, const std::string& p, Violations& out) {
  const auto labels = [&](const catalog::StringMap& map, std::string_view field, bool reserved) {
    if (map.empty()) return;
    const std::string path = child_path(p, field);
    validate_labels(map, path, out);
    if (reserved) validate_no_reserved_keys(map, path, out);
  };
  labels(role.pod_labels, "podLabels", true);
  labels(role.service_labels, "serviceLabels", true);
  labels(role.node_selector, "nodeSelector", false);
  if (!role.pod_annotations.empty()) {
    validate_annotations(role.pod_annotations, child_path(p, "podAnnotations"), out);
  }
  if (!role.service_annotations.empty()) {
    validate_annotations(role.service_annotations, child_path(p, "serviceAnnotations"), out);
  }
}

// Kubernetes' IsEnvVarName: [-._a-zA-Z][-._a-zA-Z0-9]*
void check_env(const catalog::StackRole& role, const std::string& p, Violations& out) {
  const auto* env = role.env->if_array();
  if (env == nullptr) return;
  for (std::size_t i = 0; i < env->size(); ++i) {
    const auto name_path = [&] { return child_path(index_path(child_path(p, "env"), i), "name"); };
    const auto* o = (*env)[i].if_object();
    const auto* name = o ? kube::member(*o, "name") : nullptr;
    if (name == nullptr || !name->is_string() || name->get_string().empty()) {
      out.push_back({name_path(), "is required"});
      continue;
    }
    std::string_view n = name->get_string();
    bool ok = !(n[0] >= '0' && n[0] <= '9');
    for (char c : n) {
      ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.' || c == '_');
    }
    if (!ok) {
      out.push_back({name_path(),
                     "must consist of alphabetic characters, digits, '_', '-' or '.', and must "
                     "not start with a digit"});
    }
  }
}

// The names the Stack's naming scheme really produces, at the highest ordinal.
void check_role_names(const catalog::ObjectNames& names, const catalog::StackRole& role,
                      std::int64_t members, const std::string& p, Violations& out) {
  std::string sts = names.statefulset(role.id);
  if (sts.size() > catalog::kMaxStatefulSetName) {
    out.push_back({child_path(p, "id"),
                   fmt::format("StatefulSet name \"{}\" must be no more than {} characters (the "
                               "limit for StatefulSet names: controller-revision-hash label)",
                               sts, catalog::kMaxStatefulSetName)});
  }
  std::int64_t highest = members > 0 ? members - 1 : 0;
  std::string member = names.member(role.id, highest);
  if (member.size() > catalog::kMaxDnsLabel) {
    out.push_back({child_path(p, "id"),
                   fmt::format("pod and Service name \"{}\" must be no more than {} characters "
                               "(DNS-1035 label limit)",
                               member, catalog::kMaxDnsLabel)});
  }
  std::string pvc = names.pvc(role.id, highest);
  if (role.storage && pvc.size() > catalog::kMaxDnsSubdomain) {
    out.push_back({child_path(p, "id"),
                   fmt::format("PVC name \"{}\" must be no more than {} characters (DNS-1123 "
                               "subdomain limit)",
                               pvc, catalog::kMaxDnsSubdomain)});
  }
}

// The Stack's name is the value of the kstack.io/stack label on every object it owns (the
// operator finds them by it), and under CrNameRole also the headless Service's name. False
// when the name cannot serve, so the derived names are not checked as well.
bool check_stack_name(const catalog::Stack& stack, bool crname, Violations& out) {
  const auto& name = stack.metadata.name;
  if (name.empty()) return false;  // the decoder reported it
  std::size_t before = out.size();
  if (crname) {
    for (const auto& e : dns1035_label_errors(name)) {
      out.push_back({"metadata.name", fmt::format("names the headless Service: {}", e)});
    }
  } else {
    for (const auto& e : label_value_errors(name)) {
      out.push_back(
          {"metadata.name", fmt::format("is the value of the label kstack.io/stack on every owned "
                                        "object: {}",
                                        e)});
    }
  }
  return out.size() == before;
}

// Where the app is looked up: appCatalog when it is valid; when it is not (reported as such),
// local then system, so that every problem that depends on the app is still reported.
std::optional<catalog::FoundAppRef> find_app(const catalog::Stack& stack,
                                             const catalog::Catalog& catalog, bool bad_catalog) {
  if (!bad_catalog) return catalog.find_app_ref(stack);
  return catalog.find_app_ref(stack.metadata.namespace_name, stack.spec.app, std::nullopt);
}

std::string not_found_message(const catalog::Stack& stack, const catalog::Catalog& catalog,
                              bool bad_catalog) {
  const auto& ns = stack.metadata.namespace_name;
  const auto& where = stack.spec.app_catalog;
  if (where && !where->empty() && !bad_catalog) {
    return fmt::format("AppType \"{}\" not found in namespace \"{}\" (appCatalog {})",
                       stack.spec.app, catalog.catalog_namespace(ns, *where), *where);
  }
  return fmt::format("AppType \"{}\" not found in namespace \"{}\" (local) nor \"{}\" (system)",
                     stack.spec.app, ns, catalog.system_namespace());
}

}  // namespace

Violations validate_stack(const catalog::Stack& stack, const catalog::Catalog& catalog) {
  Violations out;
  const auto& spec = stack.spec;
  auto config = catalog.config_ref();
  check_enum(spec.app_catalog, "spec.appCatalog", {catalog::kCatalogLocal, catalog::kCatalogSystem},
             out);
  check_enum(spec.service_type, "spec.serviceType",
             {catalog::kServiceTypeClusterIP, catalog::kServiceTypeNodePort,
              catalog::kServiceTypeLoadBalancer},
             out);
  check_enum(spec.naming_scheme, "spec.namingScheme",
             {catalog::kNamingCrNameRole, catalog::kNamingUID}, out);
  check_enum(spec.pvc_retention.when_scaled, "spec.persistentVolumeClaimRetentionPolicy.whenScaled",
             {catalog::kRetentionDelete, catalog::kRetentionRetain}, out);
  check_enum(spec.pvc_retention.when_deleted,
             "spec.persistentVolumeClaimRetentionPolicy.whenDeleted",
             {catalog::kRetentionDelete, catalog::kRetentionRetain}, out);
  bool bad_catalog = !out.empty() && out.front().field == "spec.appCatalog";

  std::optional<catalog::FoundAppRef> found;
  if (!spec.app.empty()) {
    found = find_app(stack, catalog, bad_catalog);
    if (!found) out.push_back({"spec.app", not_found_message(stack, catalog, bad_catalog)});
  }
  const catalog::AppType* app = found ? found->app.get() : nullptr;

  const catalog::KStackConfig* cfg = config.get();
  const std::string scheme = catalog::effective_naming_scheme(stack, cfg);
  const bool known_scheme = scheme == catalog::kNamingCrNameRole || scheme == catalog::kNamingUID;
  const auto names = catalog::ObjectNames::of(stack, cfg);
  // An unknown scheme is reported above; the name must still serve as the stack label.
  const bool name_ok = check_stack_name(stack, scheme == catalog::kNamingCrNameRole, out);

  std::set<std::string> seen;
  std::int64_t total = 0;
  for (std::size_t i = 0; i < spec.roles.size(); ++i) {
    const auto& role = spec.roles[i];
    std::string p = index_path("spec.roles", i);
    if (role.id.empty()) continue;  // the decoder reported it
    const catalog::AppRole* app_role = app ? catalog::find_role(*app, role.id) : nullptr;
    if (!seen.insert(role.id).second) {
      out.push_back({child_path(p, "id"), fmt::format("duplicate role id \"{}\"", role.id)});
    }
    if (app != nullptr && app_role == nullptr) {
      out.push_back({child_path(p, "id"), fmt::format("role \"{}\" is not defined by AppType "
                                                      "\"{}\"",
                                                      role.id, spec.app)});
    } else if (app == nullptr) {
      add_errors(out, child_path(p, "id"), dns1123_label_errors(role.id));
    }
    std::int64_t members = catalog::effective_members(app_role, role);
    if (members < 0) {
      out.push_back({child_path(p, "members"), "must be greater than or equal to 0"});
      members = 0;
    } else if (app_role != nullptr) {
      if (auto c = catalog::parse_cardinality(app_role->cardinality); c && !c->allows(members)) {
        out.push_back({child_path(p, "members"), fmt::format("must be {} {} for cardinality \"{}\"",
                                                             c->at_least ? "at least" : "exactly",
                                                             c->min, app_role->cardinality)});
      }
    }
    total += members;
    if (role.max_unavailable && *role.max_unavailable < 1) {
      out.push_back({child_path(p, "maxUnavailable"), "must be greater than or equal to 1"});
    }
    if (const auto& mr = role.member_recovery;
        mr.policy || mr.node_lost_grace_seconds || mr.local_storage) {
      validate_member_recovery(mr, child_path(p, "memberRecovery"), out);
    }
    check_resources(role, app_role, p, out);
    check_storage(role, app_role, catalog, p, out);
    check_maps(role, p, out);
    check_env(role, p, out);
    if (!role.service_account_name.empty()) {
      add_errors(out, child_path(p, "serviceAccountName"),
                 dns1123_subdomain_errors(role.service_account_name));
    }
    if (known_scheme && name_ok) check_role_names(names, role, members, p, out);
  }
  if (total > catalog::kMaxStackMembers) {
    out.push_back({"spec.roles", fmt::format("total members {} exceed the limit of {} per stack",
                                             total, catalog::kMaxStackMembers)});
  }
  if (app != nullptr) {
    for (const auto& selected : app->spec.config.selected_roles) {
      const auto* ar = catalog::find_role(*app, selected);
      if (ar == nullptr || seen.count(selected)) continue;
      if (auto c = catalog::parse_cardinality(ar->cardinality); c && c->min > 0) {
        out.push_back({"spec.roles", fmt::format("must include role \"{}\" (selected by the "
                                                 "app, cardinality \"{}\")",
                                                 selected, ar->cardinality)});
      }
    }
  }
  return out;
}

Violations validate_stack_object(const boost::json::value& object,
                                 const catalog::Catalog& catalog) {
  Violations out;
  auto stack = catalog::decode_stack(object, out);
  auto more = validate_stack(stack, catalog);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

}  // namespace kstack::validator
