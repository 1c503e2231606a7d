// Decoding of Stack objects (docs/spec.md §2.2 spec) and of KStackConfig (§2.3).
#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/decode_detail.h"
#include "catalog/parse.h"

namespace kstack::catalog {
namespace json = boost::json;
using detail::Decoder;

namespace {

// memberRecovery of a Stack role or of a KStackConfig (the same shape); values are checked by
// the admission rules.
MemberRecovery decode_member_recovery(const json::object& parent, std::string_view path,
                                      Decoder& d) {
  MemberRecovery m;
  const auto* o = d.object(parent, "memberRecovery", path);
  if (o == nullptr) return m;
  const ChildPath p(path, "memberRecovery");
  m.policy = d.string(*o, "policy", p);
  m.node_lost_grace_seconds = d.integer(*o, "nodeLostGraceSeconds", p);
  m.local_storage = d.string(*o, "localStorage", p);
  return m;
}

enum class Depth { kWhole, kOutline };

StackRole decode_role(const json::object& o, const std::string& p, Decoder& d, Depth depth) {
  StackRole r;
  r.id = d.string(o, "id", p, /*required=*/true).value_or("");
  r.members = d.integer(o, "members", p);
  if (depth == Depth::kWhole) {
    if (const auto* res = d.object(o, "resources", p)) {
      const ChildPath rp(p, "resources");
      r.resources.requests = d.quantity_map(*res, "requests", rp);
      r.resources.limits = d.quantity_map(*res, "limits", rp);
    }
  }
  if (const auto* st = d.object(o, "storage", p)) {
    const ChildPath sp(p, "storage");
    StorageSpec s;
    if (const auto* size = detail::present(*st, "size"); size && size->is_number()) {
      s.size = detail::number_text(*size);
    } else {
      s.size = d.string(*st, "size", sp, /*required=*/true).value_or("");
    }
    s.storage_class_name = d.string(*st, "storageClassName", sp);
    r.storage = std::move(s);
  }
  if (depth == Depth::kOutline) return r;
  d.opaque(r.env, o, "env", p, json::kind::array);
  d.opaque(r.affinity, o, "affinity", p, json::kind::object);
  r.node_selector = d.string_map(o, "nodeSelector", p);
  d.opaque(r.tolerations, o, "tolerations", p, json::kind::array);
  r.pod_labels = d.string_map(o, "podLabels", p);
  r.pod_annotations = d.string_map(o, "podAnnotations", p);
  r.service_labels = d.string_map(o, "serviceLabels", p);
  r.service_annotations = d.string_map(o, "serviceAnnotations", p);
  r.service_account_name = d.string(o, "serviceAccountName", p).value_or("");
  r.max_unavailable = d.integer(o, "maxUnavailable", p);
  r.member_recovery = decode_member_recovery(o, p, d);
  return r;
}

Stack decode(const json::value& object, FieldErrors& errors, DecodeSource source, Depth depth) {
  Stack s;
  if (source == DecodeSource::kBorrow) {
    s.borrowed = &object;
  } else {
    s.raw = object;
  }
  // Borrowing, the model's opaque values (env, affinity, tolerations) are views of the
  // object's members: they live as long as the object does, no longer.
  Decoder d(errors, source == DecodeSource::kBorrow ? &object : nullptr);
  const auto* o = object.if_object();
  if (o == nullptr) {
    d.error("", "a Stack must be a JSON object");
    return s;
  }
  detail::check_kind(*o, kStackKind, d);
  const bool whole = depth == Depth::kWhole;
  s.metadata = whole ? detail::decode_metadata(object, d) : detail::decode_name(object, d);
  if (const auto* spec = d.object(*o, "spec", "", /*required=*/true)) {
    s.spec.app = d.string(*spec, "app", "spec", /*required=*/true).value_or("");
    s.spec.app_catalog = d.string(*spec, "appCatalog", "spec");
    if (whole) s.spec.service_type = d.string(*spec, "serviceType", "spec");
    s.spec.naming_scheme = d.string(*spec, "namingScheme", "spec");
    s.spec.paused = d.boolean(*spec, "paused", "spec").value_or(false);
    s.spec.stopped = d.boolean(*spec, "stopped", "spec").value_or(false);
    if (const auto* pr =
            whole ? d.object(*spec, "persistentVolumeClaimRetentionPolicy", "spec") : nullptr) {
      const std::string pp = "spec.persistentVolumeClaimRetentionPolicy";
      s.spec.pvc_retention.when_scaled = d.string(*pr, "whenScaled", pp);
      s.spec.pvc_retention.when_deleted = d.string(*pr, "whenDeleted", pp);
    }
    if (const auto* roles = d.array(*spec, "roles", "spec", /*required=*/true)) {
      s.spec.roles.reserve(roles->size());
      for (std::size_t i = 0; i < roles->size(); ++i) {
        std::string ip = index_path("spec.roles", i);
        const auto* item = (*roles)[i].if_object();
        if (item == nullptr) {
          d.error(ip, "must be an object");
          s.spec.roles.emplace_back();  // keeps indexes aligned with the JSON
          continue;
        }
        s.spec.roles.push_back(decode_role(*item, ip, d, depth));
      }
    }
  }
  if (const auto* status = whole ? detail::present(*o, "status") : nullptr) {
    s.status = decode_stack_status(*status, errors, "status");
  }
  return s;
}

}  // namespace

Stack decode_stack(const json::value& object, FieldErrors& errors) {
  return decode(object, errors, DecodeSource::kCopy, Depth::kWhole);
}

Stack decode_stack(const json::value& object, FieldErrors& errors, DecodeSource source) {
  return decode(object, errors, source, Depth::kWhole);
}

Stack decode_stack_outline(const json::value& object, FieldErrors& errors) {
  return decode(object, errors, DecodeSource::kBorrow, Depth::kOutline);
}

KStackConfig decode_kstack_config(const json::value& object, FieldErrors& errors) {
  KStackConfig c;
  c.raw = object;
  Decoder d(errors);
  const auto* o = object.if_object();
  if (o == nullptr) {
    d.error("", "a KStackConfig must be a JSON object");
    return c;
  }
  detail::check_kind(*o, kKStackConfigKind, d);
  c.metadata = detail::decode_metadata(object, d);
  // An empty KStackConfig (no spec) is valid: every setting has a default.
  const auto* spec = d.object(*o, "spec", "");
  if (spec == nullptr) return c;
  auto& s = c.spec;
  s.default_storage_class_name = d.string(*spec, "defaultStorageClassName", "spec");
  s.default_service_type = d.string(*spec, "defaultServiceType", "spec");
  s.default_naming_scheme = d.string(*spec, "defaultNamingScheme", "spec");
  s.cluster_svc_domain_base = d.string(*spec, "clusterSvcDomainBase", "spec");
  s.pod_labels = d.string_map(*spec, "podLabels", "spec");
  s.pod_annotations = d.string_map(*spec, "podAnnotations", "spec");
  s.service_labels = d.string_map(*spec, "serviceLabels", "spec");
  s.service_annotations = d.string_map(*spec, "serviceAnnotations", "spec");
  s.member_recovery = decode_member_recovery(*spec, "spec", d);
  return c;
}

kube::Result<Stack> parse_stack(const json::value& object) {
  FieldErrors errors;
  Stack s = decode_stack(object, errors);
  if (!errors.empty()) return tl::unexpected(invalid_error("invalid Stack", errors));
  return s;
}

kube::Result<KStackConfig> parse_kstack_config(const json::value& object) {
  FieldErrors errors;
  KStackConfig c = decode_kstack_config(object, errors);
  if (!errors.empty()) return tl::unexpected(invalid_error("invalid KStackConfig", errors));
  return c;
}

}  // namespace kstack::catalog
