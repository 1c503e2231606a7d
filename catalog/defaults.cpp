#include "catalog/defaults.h"

#include <algorithm>

#include <fmt/format.h>

namespace kstack::catalog {

std::string Cardinality::to_string() const {
  return at_least ? fmt::format("{}+", min) : fmt::format("{}", min);
}

kube::Result<Cardinality> parse_cardinality(std::string_view text) {
  Cardinality c;
  std::string_view digits = text;
  if (!digits.empty() && digits.back() == '+') {
    c.at_least = true;
    digits.remove_suffix(1);
  }
  // Six digits are far beyond kMaxStackMembers and keep the arithmetic trivially safe.
  if (digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    return kube::make_error(kube::ErrorKind::kInvalid,
                            fmt::format("cardinality \"{}\" must be \"N\" or \"N+\" with N a "
                                        "non-negative integer",
                                        text));
  }
  for (char ch : digits) c.min = c.min * 10 + (ch - '0');
  return c;
}

const AppRole* find_role(const AppType& app, std::string_view role_id) {
  for (const auto& r : app.spec.roles) {
    if (r.id == role_id) return &r;
  }
  return nullptr;
}

const AppService* find_service(const AppType& app, std::string_view service_id) {
  for (const auto& s : app.spec.services) {
    if (s.id == service_id) return &s;
  }
  return nullptr;
}

const StackRole* find_role(const Stack& stack, std::string_view role_id) {
  for (const auto& r : stack.spec.roles) {
    if (r.id == role_id) return &r;
  }
  return nullptr;
}

std::optional<std::string> role_image(const AppType& app, const AppRole& role) {
  if (role.image_repo_tag && !role.image_repo_tag->empty()) return role.image_repo_tag;
  if (app.spec.default_image_repo_tag && !app.spec.default_image_repo_tag->empty()) {
    return app.spec.default_image_repo_tag;
  }
  return std::nullopt;
}

std::optional<SetupPackage> role_package(const AppType& app, const AppRole& role) {
  const PackageField* field = &role.config_package;
  if (field->state == PackageField::State::kAbsent) field = &app.spec.default_config_package;
  if (field->state == PackageField::State::kPackage) return field->package;
  return std::nullopt;
}

std::vector<std::string> role_persist_dirs(const AppType& app, const AppRole& role) {
  if (role.persist_dirs) return *role.persist_dirs;
  if (app.spec.default_persist_dirs) return *app.spec.default_persist_dirs;
  return {};
}

bool persisted(const std::vector<std::string>& persist_dirs, std::string_view dir) {
  for (const auto& p : persist_dirs) {
    if (dir == p) return true;
    if (dir.size() > p.size() && dir.starts_with(p) && dir[p.size()] == '/') return true;
  }
  return false;
}

std::vector<std::string> role_event_list(const AppType& app, const AppRole& role) {
  if (role.event_list) return *role.event_list;
  if (app.spec.default_event_list) return *app.spec.default_event_list;
  return {std::string(kEventConfigure), std::string(kEventAddNodes), std::string(kEventDelNodes)};
}

bool role_handles_event(const AppType& app, const AppRole& role, std::string_view event) {
  auto events = role_event_list(app, role);
  return std::find(events.begin(), events.end(), event) != events.end();
}

std::vector<const AppService*> role_services(const AppType& app, std::string_view role_id) {
  std::vector<const AppService*> out;
  for (const auto& rs : app.spec.config.role_services) {
    if (rs.role_id != role_id) continue;
    for (const auto& id : rs.service_ids) {
      if (const auto* s = find_service(app, id)) out.push_back(s);
    }
  }
  return out;
}

std::int64_t default_members(const AppRole& role) {
  auto c = parse_cardinality(role.cardinality);
  return c ? c->min : 0;
}

std::int64_t effective_members(const AppRole* app_role, const StackRole& role) {
  if (role.members) return *role.members;
  return app_role ? default_members(*app_role) : 0;
}

std::string effective_service_type(const Stack& stack, const KStackConfig* config) {
  if (stack.spec.service_type && !stack.spec.service_type->empty()) return *stack.spec.service_type;
  if (config && config->spec.default_service_type && !config->spec.default_service_type->empty()) {
    return *config->spec.default_service_type;
  }
  return std::string(kServiceTypeClusterIP);
}

std::string effective_naming_scheme(const Stack& stack, const KStackConfig* config) {
  if (stack.spec.naming_scheme && !stack.spec.naming_scheme->empty()) {
    return *stack.spec.naming_scheme;
  }
  if (config && config->spec.default_naming_scheme &&
      !config->spec.default_naming_scheme->empty()) {
    return *config->spec.default_naming_scheme;
  }
  return std::string(kNamingCrNameRole);
}

std::string cluster_svc_domain_base(const KStackConfig* config) {
  if (config && config->spec.cluster_svc_domain_base &&
      !config->spec.cluster_svc_domain_base->empty()) {
    return *config->spec.cluster_svc_domain_base;
  }
  return std::string(kDefaultClusterSvcDomainBase);
}

EffectiveRecovery effective_recovery(const StackRole& role, const KStackConfig* config) {
  const MemberRecovery* fallback = config ? &config->spec.member_recovery : nullptr;
  auto pick = [&](auto field, auto builtin) {
    const auto& own = role.member_recovery.*field;
    if (own) return *own;
    if (fallback && fallback->*field) return *(fallback->*field);
    return builtin;
  };
  EffectiveRecovery r;
  r.policy = pick(&MemberRecovery::policy, std::string(kRecoveryReschedule));
  r.node_lost_grace_seconds =
      pick(&MemberRecovery::node_lost_grace_seconds, kDefaultNodeLostGraceSeconds);
  r.local_storage = pick(&MemberRecovery::local_storage, std::string(kLocalStorageKeep));
  return r;
}

}  // namespace kstack::catalog
