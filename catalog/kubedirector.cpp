#include "catalog/kubedirector.h"

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/field_error.h"
#include "catalog/kubedirector_fields.h"
#include "catalog/model.h"

namespace kstack::catalog {
namespace json = boost::json;
using kubedirector_detail::Context;
using Severity = ImportIssue::Severity;

namespace {

constexpr std::string_view kLegacyApiVersion = "kubedirector.bluedata.io/v1alpha1";
constexpr std::size_t kMaxRoleId = 63;

std::string string_field(const json::object* o, std::string_view key) {
  const auto* v = o ? o->if_contains(key) : nullptr;
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

bool is_set(const json::object* o, std::string_view key) {
  const auto* v = o ? o->if_contains(key) : nullptr;
  return v != nullptr && !v->is_null();
}

// Unset fields whose default differs between KubeDirector and kstack: the object would behave
// differently once imported, so say so (and how to keep the old behaviour).
void note_defaults(Context& c, const json::object* spec) {
  bool cluster = c.kind == kKubeDirectorClusterKind;
  std::string_view service_type = cluster ? "serviceType" : "defaultServiceType";
  std::string_view naming = cluster ? "namingScheme" : "defaultNamingScheme";
  if (!is_set(spec, service_type)) {
    c.add(Severity::kNote, child_path("spec", service_type),
          cluster ? "not set: KubeDirector used its config's defaultServiceType, else "
                    "LoadBalancer; kstack uses the KStackConfig's, else ClusterIP (set "
                    "LoadBalancer to keep the old behaviour)"
                  : "not set: KubeDirector's default is LoadBalancer, kstack's ClusterIP (set "
                    "LoadBalancer to keep the old behaviour)");
  }
  if (!is_set(spec, naming)) {
    c.add(Severity::kNote, child_path("spec", naming),
          cluster ? "not set: KubeDirector used its config's defaultNamingScheme, else UID; "
                    "kstack uses the KStackConfig's, else CrNameRole (<stack>-<role>-<n>)"
                  : "not set: KubeDirector's default is UID, kstack's CrNameRole "
                    "(<stack>-<role>-<n>)");
  }
}

// The KStackConfig is a singleton with a fixed name in the operator's namespace.
void place_config(Context& c, json::object& md, const json::object* source_md,
                  const ImportOptions& options) {
  std::string name = string_field(source_md, "name");
  if (!name.empty() && name != kConfigName) {
    c.add(Severity::kWarning, "metadata.name",
          fmt::format("renamed to \"{}\" (was \"{}\"): kstack reads only the KStackConfig of "
                      "that name",
                      kConfigName, name));
  }
  md["name"] = kConfigName;
  std::string ns = string_field(source_md, "namespace");
  if (!ns.empty() && ns != options.operator_namespace) {
    c.add(Severity::kWarning, "metadata.namespace",
          fmt::format("moved to the operator's namespace \"{}\" (was \"{}\"): kstack reads its "
                      "KStackConfig only there",
                      options.operator_namespace, ns));
  }
  md["namespace"] = options.operator_namespace;
}

// KubeDirector names a cluster's objects after it with '.' and '_' rewritten to '-'; a Stack's
// name is a DNS label (it names the headless Service), so the Stack takes that same form.
void rename_stack(Context& c, json::object& md) {
  const auto* name = md.if_contains("name");
  if (name == nullptr || !name->is_string()) return;
  std::string was(name->get_string());
  std::string renamed = kubedirector_role_id(was);
  if (renamed.empty() || renamed == was) return;
  md["name"] = renamed;
  c.add(Severity::kChanged, "metadata.name",
        fmt::format("renamed to \"{}\" (was \"{}\"): a Stack's name is a DNS label; "
                    "KubeDirector named the cluster's objects with '-' in place of '.' and '_' "
                    "too",
                    renamed, was));
}

// Two source roles whose ids rename to the same id ("data_node" and "data-node") would make
// one role out of two: the object is refused (nothing emitted) with both names.
std::string role_collision(const json::object* source_spec, const json::object& spec) {
  const auto* in = source_spec ? source_spec->if_contains("roles") : nullptr;
  const auto* out = spec.if_contains("roles");
  if (in == nullptr || out == nullptr || !in->is_array() || !out->is_array()) return {};
  const auto& src = in->get_array();
  const auto& dst = out->get_array();
  auto id_at = [](const json::array& a, std::size_t i) -> std::string {
    const auto* o = i < a.size() ? a[i].if_object() : nullptr;
    const auto* id = o ? o->if_contains("id") : nullptr;
    return id && id->is_string() ? std::string(id->get_string()) : std::string();
  };
  for (std::size_t j = 1; j < dst.size(); ++j) {
    for (std::size_t i = 0; i < j; ++i) {
      std::string id = id_at(dst, j);
      if (id.empty() || id != id_at(dst, i)) continue;
      std::string a = id_at(src, i), b = id_at(src, j);
      if (a == b) continue;  // a plain duplicate: kstack's validation names it
      return fmt::format(
          "spec.roles[{}].id \"{}\" and spec.roles[{}].id \"{}\" would both become role id "
          "\"{}\" (kstack role ids are DNS labels): rename one of them in the source",
          i, a, j, b, id);
    }
  }
  return {};
}

bool is_kubedirector_kind(std::string_view kind) {
  return kind == kKubeDirectorAppKind || kind == kKubeDirectorClusterKind ||
         kind == kKubeDirectorConfigKind || kind == kKubeDirectorStatusBackupKind;
}

}  // namespace

ImportResult import_kubedirector(const json::value& object, const ImportOptions& options) {
  ImportResult r;
  const auto* o = object.if_object();
  if (o == nullptr) {
    r.error = "not an object";
    return r;
  }
  std::string api_version = string_field(o, "apiVersion");
  r.source_kind = string_field(o, "kind");
  const auto* md_value = o->if_contains("metadata");
  const auto* source_md = md_value ? md_value->if_object() : nullptr;
  std::string name = string_field(source_md, "name"), ns = string_field(source_md, "namespace");
  r.source_name = ns.empty() ? name : ns + "/" + name;

  if (api_version != kKubeDirectorApiVersion) {
    if (api_version == kLegacyApiVersion) {
      r.error = fmt::format(
          "apiVersion {} (KubeDirector before v0.4.0) cannot be imported: convert it to {} first",
          kLegacyApiVersion, kKubeDirectorApiVersion);
    } else if (is_kubedirector_kind(r.source_kind)) {
      r.error = fmt::format("apiVersion \"{}\" cannot be imported: expected {}", api_version,
                            kKubeDirectorApiVersion);
    } else {
      r.error = fmt::format("not a KubeDirector object (apiVersion \"{}\", kind \"{}\")",
                            api_version, r.source_kind);
    }
    return r;
  }
  std::string_view target;
  if (r.source_kind == kKubeDirectorAppKind) {
    target = kAppTypeKind;
  } else if (r.source_kind == kKubeDirectorClusterKind) {
    target = kStackKind;
  } else if (r.source_kind == kKubeDirectorConfigKind) {
    target = kKStackConfigKind;
  } else if (r.source_kind == kKubeDirectorStatusBackupKind) {
    r.skipped = true;
    r.issues.push_back({Severity::kDropped, "",
                        "not carried over: kstack has no status backups (the operator rebuilds "
                        "Stack status from the cluster)"});
    return r;
  } else {
    r.error = fmt::format(
        "unknown kind \"{}\": KubeDirectorApp, KubeDirectorCluster and KubeDirectorConfig can be "
        "imported",
        r.source_kind);
    return r;
  }

  Context c{r.source_kind, r.issues, {}};
  json::object body = kubedirector_detail::convert_fields(c, *o);
  json::object out;
  out["apiVersion"] = kApiVersion;
  out["kind"] = target;
  json::value md = body.contains("metadata") ? body["metadata"] : json::value(json::object{});
  if (auto* m = md.if_object()) {
    if (target == kKStackConfigKind) {
      place_config(c, *m, source_md, options);
    } else if (options.namespace_override) {
      (*m)["namespace"] = *options.namespace_override;
    }
    if (target == kStackKind) rename_stack(c, *m);
  }
  if (const auto* spec = body.if_contains("spec"); spec && spec->is_object()) {
    const auto* source_spec = o->if_contains("spec");
    r.error = role_collision(source_spec ? source_spec->if_object() : nullptr, spec->get_object());
    if (!r.error.empty()) return r;
  }
  out["metadata"] = std::move(md);
  if (body.contains("spec")) out["spec"] = std::move(body["spec"]);
  if (target != kAppTypeKind) {
    const auto* spec = o->if_contains("spec");
    note_defaults(c, spec ? spec->if_object() : nullptr);
  }
  r.object = std::move(out);
  return r;
}

std::string kubedirector_role_id(std::string_view id) {
  std::string out;
  for (char ch : id) {
    char lower = (ch >= 'A' && ch <= 'Z') ? static_cast<char>(ch - 'A' + 'a') : ch;
    bool ok = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') || lower == '-';
    out.push_back(ok ? lower : '-');
  }
  auto trim = [](std::string& s) {
    while (!s.empty() && s.back() == '-') s.pop_back();
    std::size_t first = s.find_first_not_of('-');
    s.erase(0, first == std::string::npos ? s.size() : first);
  };
  trim(out);
  if (out.size() > kMaxRoleId) {
    out.resize(kMaxRoleId);
    trim(out);
  }
  return out;
}

std::string_view to_string(ImportIssue::Severity severity) {
  switch (severity) {
    case Severity::kDropped:
      return "dropped";
    case Severity::kChanged:
      return "changed";
    case Severity::kWarning:
      return "warning";
    case Severity::kNote:
      return "note";
  }
  return "unknown";
}

std::string format_issue(const ImportResult& result, const ImportIssue& issue) {
  std::string what = result.source_kind.empty() ? "<no kind>" : result.source_kind;
  if (!result.source_name.empty()) what += " " + result.source_name;
  if (issue.field.empty()) return fmt::format("{}: {}", what, issue.message);
  return fmt::format("{}: {}: {}", what, issue.field, issue.message);
}

}  // namespace kstack::catalog
