#include "validator/rules/config_rules.h"

#include <optional>

#include <fmt/format.h>

#include "catalog/parse.h"

namespace kstack::validator {

namespace {

// One day: a node away longer than that is not coming back in any sense the grace is for.
constexpr std::int64_t kMaxNodeLostGraceSeconds = 86400;

// "\"A\", \"B\"" when `value` is none of `allowed`, nullopt when it is one (or absent).
std::optional<std::string> outside(const std::optional<std::string>& value,
                                   std::initializer_list<std::string_view> allowed) {
  if (!value) return std::nullopt;
  std::string list;
  for (auto a : allowed) {
    if (*value == a) return std::nullopt;
    list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", a);
  }
  return list;
}

void check_enum(const std::optional<std::string>& value, const std::string& path,
                std::initializer_list<std::string_view> allowed, Violations& out) {
  if (auto list = outside(value, allowed)) {
    out.push_back(
        {path, fmt::format("unsupported value \"{}\": supported values: {}", *value, *list)});
  }
}

// The wording of memberRecovery's refusals: `must be one of "A", "B" (not "x")`.
void check_one_of(const std::optional<std::string>& value, const std::string& path,
                  std::initializer_list<std::string_view> allowed, Violations& out) {
  if (auto list = outside(value, allowed)) {
    out.push_back({path, fmt::format("must be one of {} (not \"{}\")", *list, *value)});
  }
}

}  // namespace

void validate_member_recovery(const catalog::MemberRecovery& recovery, const std::string& path,
                              Violations& out) {
  check_one_of(recovery.policy, catalog::child_path(path, "policy"),
               {catalog::kRecoveryReschedule, catalog::kRecoveryOff}, out);
  if (const auto& grace = recovery.node_lost_grace_seconds;
      grace && (*grace < 0 || *grace > kMaxNodeLostGraceSeconds)) {
    out.push_back({catalog::child_path(path, "nodeLostGraceSeconds"),
                   fmt::format("must be between 0 and {} (seconds), not {}",
                               kMaxNodeLostGraceSeconds, *grace)});
  }
  check_one_of(recovery.local_storage, catalog::child_path(path, "localStorage"),
               {catalog::kLocalStorageKeep, catalog::kLocalStorageRecreate}, out);
}

Violations validate_kstack_config(const catalog::KStackConfig& config,
                                  const catalog::Catalog& catalog) {
  Violations out;
  const auto& md = config.metadata;
  if (!md.name.empty() && md.name != catalog::kConfigName) {
    out.push_back({"metadata.name", fmt::format("must be \"{}\": the operator reads only that "
                                                "object",
                                                catalog::kConfigName)});
  }
  if (md.namespace_name != catalog.system_namespace()) {
    out.push_back({"metadata.namespace", fmt::format("must be the operator's namespace \"{}\"",
                                                     catalog.system_namespace())});
  }
  const auto& s = config.spec;
  check_enum(s.default_service_type, "spec.defaultServiceType",
             {catalog::kServiceTypeClusterIP, catalog::kServiceTypeNodePort,
              catalog::kServiceTypeLoadBalancer},
             out);
  check_enum(s.default_naming_scheme, "spec.defaultNamingScheme",
             {catalog::kNamingCrNameRole, catalog::kNamingUID}, out);
  if (const auto& base = s.cluster_svc_domain_base) {
    if (base->size() < 2 || base->front() != '.') {
      out.push_back({"spec.clusterSvcDomainBase",
                     "must start with '.' followed by a DNS domain (e.g. .svc.cluster.local)"});
    } else {
      add_errors(out, "spec.clusterSvcDomainBase", dns1123_subdomain_errors(base->substr(1)));
    }
  }
  if (const auto& cls = s.default_storage_class_name; cls && !cls->empty()) {
    add_errors(out, "spec.defaultStorageClassName", dns1123_subdomain_errors(*cls));
    if (catalog.knows_storage_classes() && !catalog.storage_class_exists(*cls)) {
      out.push_back(
          {"spec.defaultStorageClassName", fmt::format("StorageClass \"{}\" not found", *cls)});
    }
  }
  validate_labels(s.pod_labels, "spec.podLabels", out);
  validate_no_reserved_keys(s.pod_labels, "spec.podLabels", out);
  validate_labels(s.service_labels, "spec.serviceLabels", out);
  validate_no_reserved_keys(s.service_labels, "spec.serviceLabels", out);
  validate_annotations(s.pod_annotations, "spec.podAnnotations", out);
  validate_annotations(s.service_annotations, "spec.serviceAnnotations", out);
  validate_member_recovery(s.member_recovery, "spec.memberRecovery", out);
  return out;
}

Violations validate_kstack_config_object(const boost::json::value& object,
                                         const catalog::Catalog& catalog) {
  Violations out;
  auto config = catalog::decode_kstack_config(object, out);
  auto more = validate_kstack_config(config, catalog);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

}  // namespace kstack::validator
