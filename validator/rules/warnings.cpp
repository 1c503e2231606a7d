#include "validator/rules/warnings.h"

#include <functional>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/defaults.h"
#include "catalog/field_error.h"
#include "catalog/model.h"
#include "kube/json_member.h"

namespace kstack::validator {
namespace json = boost::json;

namespace {

constexpr std::string_view kNotSupported = "not yet supported by kstack; ignored";
constexpr std::string_view kIgnored = "has no effect in kstack; ignored";

const json::object* child_object(const json::object* o, std::string_view key) {
  const auto* v = o ? kube::member(*o, key) : nullptr;
  return v ? v->if_object() : nullptr;
}

void warn_fields(const json::object* o, const std::string& path,
                 std::initializer_list<std::string_view> fields, std::string_view why,
                 std::vector<std::string>& out) {
  if (o == nullptr) return;
  for (auto f : fields) {
    if (kube::member(*o, f) != nullptr)
      out.push_back(fmt::format("{}: {}", catalog::child_path(path, f), why));
  }
}

void for_each_role(const json::object* spec,
                   const std::function<void(const json::object*, const std::string&)>& fn) {
  const auto* roles_v = spec ? kube::member(*spec, "roles") : nullptr;
  const auto* roles = roles_v ? roles_v->if_array() : nullptr;
  if (roles == nullptr) return;
  for (std::size_t i = 0; i < roles->size(); ++i) {
    fn((*roles)[i].if_object(), catalog::index_path("spec.roles", i));
  }
}

}  // namespace

std::vector<std::string> field_warnings(std::string_view kind, const json::value& object) {
  std::vector<std::string> out;
  const auto* spec = child_object(object.if_object(), "spec");
  if (spec == nullptr) return out;
  if (kind == catalog::kStackKind) {
    warn_fields(spec, "spec", {"connections", "defaultSecret"}, kNotSupported, out);
    for_each_role(spec, [&](const json::object* role, const std::string& p) {
      warn_fields(role, p,
                  {"secret", "secretKeys", "blockStorage", "fileInjections", "volumeProjections",
                   "sharedMemory"},
                  kNotSupported, out);
    });
  } else if (kind == catalog::kAppTypeKind) {
    warn_fields(spec, "spec", {"defaultMaxLogSizeDump"}, kIgnored, out);
    warn_fields(child_object(spec, "defaultConfigPackage"), "spec.defaultConfigPackage",
                {"useNewSetupLayout"}, kIgnored, out);
    for_each_role(spec, [&](const json::object* role, const std::string& p) {
      warn_fields(role, p, {"maxLogSizeDump"}, kIgnored, out);
      warn_fields(child_object(role, "configPackage"), catalog::child_path(p, "configPackage"),
                  {"useNewSetupLayout"}, kIgnored, out);
    });
  } else if (kind == catalog::kKStackConfigKind) {
    warn_fields(
        spec, "spec",
        {"nativeSystemdSupport", "requiredSecretPrefix", "masterEncryptionKey",
         "backupClusterStatus", "allowRestoreWithoutConnections", "forceSharedMemorySizeSupport"},
        kIgnored, out);
  }
  return out;
}

std::vector<std::string> stack_warnings(const catalog::Stack& stack,
                                        const catalog::Catalog& catalog) {
  std::vector<std::string> out;
  if (stack.spec.app.empty()) return out;
  auto found = catalog.find_app_ref(stack);
  if (!found) return out;
  for (std::size_t i = 0; i < stack.spec.roles.size(); ++i) {
    const auto& role = stack.spec.roles[i];
    const catalog::AppRole* app_role = catalog::find_role(*found->app, role.id);
    if (app_role == nullptr || !app_role->min_available.is_int64()) continue;
    const std::int64_t min = app_role->min_available.get_int64();
    const std::int64_t members = catalog::effective_members(app_role, role);
    if (members <= 0 || members > min) continue;
    out.push_back(fmt::format(
        "{}: {} member{} of role \"{}\", not more than minAvailable {} of AppType \"{}\": the "
        "PodDisruptionBudget allows no eviction, so no member of it can be evicted (node drains "
        "wait)",
        catalog::child_path(catalog::index_path("spec.roles", i), "members"), members,
        members == 1 ? "" : "s", role.id, min, found->app->metadata.name));
  }
  return out;
}

}  // namespace kstack::validator
