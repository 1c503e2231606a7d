#include "catalog/kubedirector_fields.h"

#include <algorithm>
#include <span>

#include <boost/json.hpp>

#include "catalog/field_error.h"
#include "catalog/model.h"
#include "catalog/quantity.h"

namespace kstack::catalog::kubedirector_detail {
namespace json = boost::json;

namespace {

constexpr std::string_view kKubeDirectorPrefix = "kubedirector.hpe.com/";

using Handler = void (*)(Context&, std::string_view key, const json::value& value,
                         const std::string& path, json::object& out);

enum class Action {
  kCopy,      // same name, same meaning
  kWalk,      // an object whose fields have their own table
  kWalkEach,  // an array of such objects
  kDrop,      // no kstack equivalent: dropped, with `reason` (a kDropped issue)
  kNote,      // not carried over by design (status): a kNote issue with `reason`
  kSilent,    // API-server bookkeeping: dropped without a word
  kCustom,    // `handler` decides
};

struct Shape;

struct Rule {
  std::string_view name;
  Action action = Action::kCopy;
  const Shape* shape = nullptr;
  std::string_view reason = {};
  Handler handler = nullptr;
};

struct Shape {
  std::string_view what;  // for unknown fields: "not a field of a KubeDirectorApp role"
  std::span<const Rule> rules;
};

json::object walk(Context& c, const json::object& in, const Shape& shape, const std::string& path);

void apply(Context& c, const Rule& rule, std::string_view key, const json::value& value,
           const std::string& path, json::object& out) {
  switch (rule.action) {
    case Action::kCopy:
      out[key] = value;
      return;
    case Action::kWalk:
      if (const auto* o = value.if_object()) {
        out[key] = walk(c, *o, *rule.shape, path);
      } else {
        out[key] = value;  // null, or a type error kstack's validation will name
      }
      return;
    case Action::kWalkEach:
      if (const auto* a = value.if_array()) {
        json::array items;
        for (std::size_t i = 0; i < a->size(); ++i) {
          const auto* o = (*a)[i].if_object();
          items.push_back(o ? json::value(walk(c, *o, *rule.shape, index_path(path, i))) : (*a)[i]);
        }
        out[key] = std::move(items);
      } else {
        out[key] = value;
      }
      return;
    case Action::kDrop:
      c.dropped(path, rule.reason);
      return;
    case Action::kNote:
      c.add(Severity::kNote, path, std::string(rule.reason));
      return;
    case Action::kSilent:
      return;
    case Action::kCustom:
      rule.handler(c, key, value, path, out);
      return;
  }
}

// Output fields come in the table's order (the documented one), whatever the source's order;
// fields the table does not know are reported after the known ones.
json::object walk(Context& c, const json::object& in, const Shape& shape, const std::string& path) {
  json::object out;
  for (const auto& rule : shape.rules) {
    if (const auto* value = in.if_contains(rule.name)) {
      apply(c, rule, rule.name, *value, child_path(path, rule.name), out);
    }
  }
  for (const auto& field : in) {
    std::string_view key = field.key();
    bool known = std::any_of(shape.rules.begin(), shape.rules.end(),
                             [key](const Rule& r) { return r.name == key; });
    if (!known) {
      c.dropped(child_path(path, key),
                fmt::format("unknown field (not a field of a {})", shape.what));
    }
  }
  return out;
}

// ---- custom handlers ----

void role_id(Context& c, std::string_view key, const json::value& value, const std::string& path,
             json::object& out) {
  const auto* s = value.if_string();
  std::string renamed = s ? kubedirector_role_id(*s) : std::string();
  if (s == nullptr || renamed.empty() || renamed == *s) {
    out[key] = value;
    return;
  }
  out[key] = renamed;
  c.add(Severity::kChanged, path,
        c.kind == kKubeDirectorAppKind
            ? fmt::format("role id \"{}\" renamed to \"{}\" (kstack role ids are DNS labels); "
                          "spec.config and imported Stacks use the new id, and so do configmeta "
                          "and /etc/kstack/env: adapt setup scripts that match on the old one",
                          std::string_view(*s), renamed)
            : fmt::format("role id \"{}\" renamed to \"{}\", as in the imported AppType (kstack "
                          "role ids are DNS labels)",
                          std::string_view(*s), renamed));
}

// References to role ids (roleServices[].roleID, selectedRoles[]) follow the renaming of the
// roles themselves, which is where the issue is reported.
json::value renamed_ref(const json::value& value) {
  const auto* s = value.if_string();
  if (s == nullptr) return value;
  std::string renamed = kubedirector_role_id(*s);
  return renamed.empty() ? value : json::value(renamed);
}

void role_ref(Context&, std::string_view key, const json::value& value, const std::string&,
              json::object& out) {
  out[key] = renamed_ref(value);
}

void role_refs(Context&, std::string_view key, const json::value& value, const std::string&,
               json::object& out) {
  const auto* a = value.if_array();
  if (a == nullptr) {
    out[key] = value;
    return;
  }
  json::array refs;
  for (const auto& v : *a) refs.push_back(renamed_ref(v));
  out[key] = std::move(refs);
}

// KubeDirector's quantity pattern (^([0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$) lets through text
// Kubernetes cannot parse ("1.2.3", "5kM"); such a minimum would make the AppType invalid.
bool usable_quantity(Context& c, const json::value& value, const std::string& path) {
  const auto* s = value.if_string();
  if (s == nullptr) return true;  // numbers are quantities; other types: validation says
  auto q = Quantity::parse(*s);
  if (q && q->sign() >= 0) return true;
  c.dropped(path, fmt::format("\"{}\" is not a Kubernetes quantity", std::string_view(*s)));
  return false;
}

void quantity(Context& c, std::string_view key, const json::value& value, const std::string& path,
              json::object& out) {
  if (usable_quantity(c, value, path)) out[key] = value;
}

void quantity_map(Context& c, std::string_view key, const json::value& value,
                  const std::string& path, json::object& out) {
  const auto* o = value.if_object();
  if (o == nullptr) {
    out[key] = value;
    return;
  }
  json::object kept;
  for (const auto& [name, q] : *o) {
    if (usable_quantity(c, q, key_path(path, name))) kept[name] = q;
  }
  out[key] = std::move(kept);
}

void package_url(Context& c, std::string_view key, const json::value& value,
                 const std::string& path, json::object& out) {
  out[key] = value;
  const auto* s = value.if_string();
  if (s == nullptr || !c.packages_seen.insert(std::string(*s)).second) return;
  c.add(Severity::kWarning, path,
        "setup package: kstack unpacks it in /opt/kstack/setup and runs ./startscript from "
        "there (KubeDirector: /opt/guestconfig/*/startscript), writes configmeta to "
        "/etc/kstack/configmeta.json (KubeDirector: /etc/guestconfig/configmeta.json) and "
        "installs no configcli/bdvcli: repack the archive with startscript at its top and adapt "
        "scripts that read /etc/guestconfig or call bdvcli");
}

void app_catalog(Context& c, std::string_view key, const json::value& value,
                 const std::string& path, json::object& out) {
  out[key] = value;
  if (value.is_string() && value.get_string() == kCatalogSystem) {
    c.add(Severity::kNote, path,
          "kstack's system catalog is the operator's namespace: import the KubeDirectorApp "
          "there (kstack import -n <operator namespace>)");
  }
}

bool mentions_kubedirector(const json::value& v) {
  if (const auto* s = v.if_string()) return std::string_view(*s).starts_with(kKubeDirectorPrefix);
  if (const auto* a = v.if_array()) {
    for (const auto& e : *a) {
      if (mentions_kubedirector(e)) return true;
    }
  }
  if (const auto* o = v.if_object()) {
    for (const auto& [k, e] : *o) {
      if (std::string_view(k).starts_with(kKubeDirectorPrefix) || mentions_kubedirector(e)) {
        return true;
      }
    }
  }
  return false;
}

// Copied as is, but a selector on KubeDirector's pod labels no longer matches anything.
void affinity(Context& c, std::string_view key, const json::value& value, const std::string& path,
              json::object& out) {
  out[key] = value;
  if (mentions_kubedirector(value)) {
    c.add(Severity::kWarning, path,
          "refers to KubeDirector's labels (kubedirector.hpe.com/...), which kstack's pods do "
          "not carry: select on kstack.io/stack and kstack.io/role instead");
  }
}

// labels/annotations: KubeDirector's own keys (restoring, connUpdateCounter, ...) mean nothing
// to kstack; the last-applied annotation describes the KubeDirector object, not this one.
void metadata_map(Context& c, std::string_view key, const json::value& value,
                  const std::string& path, json::object& out) {
  const auto* o = value.if_object();
  if (o == nullptr) {
    out[key] = value;
    return;
  }
  json::object kept;
  for (const auto& [k, v] : *o) {
    if (k == kLastAppliedAnnotation) continue;
    if (std::string_view(k).starts_with(kKubeDirectorPrefix)) {
      c.dropped(key_path(path, k), "KubeDirector bookkeeping; kstack does not use it");
      continue;
    }
    kept[k] = v;
  }
  if (!kept.empty()) out[key] = std::move(kept);
}

void finalizers(Context& c, std::string_view, const json::value& value, const std::string& path,
                json::object&) {
  const auto* a = value.if_array();
  if (a != nullptr && a->empty()) return;
  c.dropped(path, "finalizers belong to the controller that set them (kstack adds its own)");
}

// ---- tables (KubeDirector pkg/apis/kubedirector/v1beta1/*_types.go) ----

constexpr std::string_view kNotSupported = "not yet supported by kstack";

constexpr Rule kLabelRules[] = {{"name"}, {"description"}};
constexpr Shape kLabel{"label", kLabelRules};

constexpr Rule kPackageRules[] = {
    {"packageURL", Action::kCustom, nullptr, {}, package_url},
    {"useNewSetupLayout", Action::kDrop, nullptr,
     "kstack has a single setup layout (/opt/kstack/setup, /etc/kstack)"},
};
constexpr Shape kPackage{"KubeDirectorApp configPackage", kPackageRules};

constexpr Rule kEndpointRules[] = {
    {"port"}, {"urlScheme"}, {"path"}, {"isDashboard"}, {"hasAuthToken"}};
constexpr Shape kEndpoint{"KubeDirectorApp service endpoint", kEndpointRules};

constexpr Rule kServiceRules[] = {
    {"id"},
    {"label", Action::kWalk, &kLabel},
    {"endpoint", Action::kWalk, &kEndpoint},
    {"exported_service"},
};
constexpr Shape kService{"KubeDirectorApp service", kServiceRules};

constexpr Rule kMinStorageRules[] = {
    {"size", Action::kCustom, nullptr, {}, quantity},
    {"ephemeralModeSupported"},
};
constexpr Shape kMinStorage{"KubeDirectorApp minStorage", kMinStorageRules};

constexpr Rule kContainerSpecRules[] = {{"stdin"}, {"tty"}};
constexpr Shape kContainerSpec{"KubeDirectorApp containerSpec", kContainerSpecRules};

constexpr std::string_view kNoLogDump =
    "kstack keeps a fixed-size tail of the setup script's output in the member status";

constexpr Rule kAppRoleRules[] = {
    {"id", Action::kCustom, nullptr, {}, role_id},
    {"cardinality"},
    {"imageRepoTag"},
    {"configPackage", Action::kWalk, &kPackage},
    {"persistDirs"},
    {"eventList"},
    {"minResources", Action::kCustom, nullptr, {}, quantity_map},
    {"minStorage", Action::kWalk, &kMinStorage},
    {"containerSpec", Action::kWalk, &kContainerSpec},
    {"maxLogSizeDump", Action::kDrop, nullptr, kNoLogDump},
};
constexpr Shape kAppRole{"KubeDirectorApp role", kAppRoleRules};

constexpr Rule kRoleServicesRules[] = {
    {"roleID", Action::kCustom, nullptr, {}, role_ref},
    {"serviceIDs"},
};
constexpr Shape kRoleServices{"KubeDirectorApp config.roleServices entry", kRoleServicesRules};

constexpr Rule kAppConfigRules[] = {
    {"roleServices", Action::kWalkEach, &kRoleServices},
    {"selectedRoles", Action::kCustom, nullptr, {}, role_refs},
    {"configMeta"},
};
constexpr Shape kAppConfig{"KubeDirectorApp config", kAppConfigRules};

constexpr Rule kAppSpecRules[] = {
    {"label", Action::kWalk, &kLabel},
    {"distroID"},
    {"version"},
    {"configSchemaVersion"},
    {"defaultImageRepoTag"},
    {"defaultConfigPackage", Action::kWalk, &kPackage},
    {"services", Action::kWalkEach, &kService},
    {"roles", Action::kWalkEach, &kAppRole},
    {"config", Action::kWalk, &kAppConfig},
    {"defaultPersistDirs"},
    {"defaultEventList"},
    {"capabilities"},
    {"systemdRequired"},
    {"logoURL"},
    {"defaultMaxLogSizeDump", Action::kDrop, nullptr, kNoLogDump},
};
constexpr Shape kAppSpec{"KubeDirectorApp spec", kAppSpecRules};

constexpr Rule kResourcesRules[] = {{"limits"}, {"requests"}};
constexpr Shape kResources{"KubeDirectorCluster role resources", kResourcesRules};

constexpr Rule kStorageRules[] = {{"size"}, {"storageClassName"}};
constexpr Shape kStorage{"KubeDirectorCluster role storage", kStorageRules};

constexpr Rule kClusterRoleRules[] = {
    {"id", Action::kCustom, nullptr, {}, role_id},
    {"members"},
    {"resources", Action::kWalk, &kResources},
    {"affinity", Action::kCustom, nullptr, {}, affinity},
    {"storage", Action::kWalk, &kStorage},
    {"env"},
    {"serviceAccountName"},
    {"podLabels"},
    {"podAnnotations"},
    {"serviceLabels"},
    {"serviceAnnotations"},
    {"blockStorage", Action::kDrop, nullptr, "raw block devices are not supported by kstack"},
    {"sharedMemory", Action::kDrop, nullptr,
     "a memory-backed /dev/shm of a given size is not supported by kstack"},
    {"fileInjections", Action::kDrop, nullptr,
     "file injections are not supported by kstack; have the setup package fetch the files"},
    {"secret", Action::kDrop, nullptr, "Secret mounts are not yet supported by kstack"},
    {"secretKeys", Action::kDrop, nullptr,
     "secretKeys are not yet supported by kstack (values not shown)"},
    {"volumeProjections", Action::kDrop, nullptr,
     "mounting existing PVCs is not supported by kstack"},
};
constexpr Shape kClusterRole{"KubeDirectorCluster role", kClusterRoleRules};

constexpr Rule kClusterSpecRules[] = {
    {"app"},
    {"appCatalog", Action::kCustom, nullptr, {}, app_catalog},
    {"serviceType"},
    {"namingScheme"},
    {"roles", Action::kWalkEach, &kClusterRole},
    {"connections", Action::kDrop, nullptr, "connections are not yet supported by kstack"},
    {"defaultSecret", Action::kDrop, nullptr, "Secret mounts are not yet supported by kstack"},
};
constexpr Shape kClusterSpec{"KubeDirectorCluster spec", kClusterSpecRules};

constexpr Rule kConfigSpecRules[] = {
    {"defaultStorageClassName"},
    {"defaultServiceType"},
    {"defaultNamingScheme"},
    {"clusterSvcDomainBase"},
    {"podLabels"},
    {"podAnnotations"},
    {"serviceLabels"},
    {"serviceAnnotations"},
    {"nativeSystemdSupport", Action::kDrop, nullptr,
     "kstack has no setting for hosts with native systemd support"},
    {"requiredSecretPrefix", Action::kDrop, nullptr, "kstack mounts no Secrets yet"},
    {"masterEncryptionKey", Action::kDrop, nullptr,
     "kstack has no encrypted secretKeys (value not shown)"},
    {"backupClusterStatus", Action::kDrop, nullptr,
     "kstack rebuilds Stack status from the cluster and keeps no status backups"},
    {"allowRestoreWithoutConnections", Action::kDrop, nullptr,
     "kstack has no restore mode and no connections"},
    {"forceSharedMemorySizeSupport", Action::kDrop, nullptr,
     "kstack does not support sharedMemory"},
};
constexpr Shape kConfigSpec{"KubeDirectorConfig spec", kConfigSpecRules};

constexpr Rule kMetadataRules[] = {
    {"name"},
    {"namespace"},
    {"generateName"},
    {"labels", Action::kCustom, nullptr, {}, metadata_map},
    {"annotations", Action::kCustom, nullptr, {}, metadata_map},
    {"finalizers", Action::kCustom, nullptr, {}, finalizers},
    {"ownerReferences", Action::kDrop, nullptr,
     "owner references name objects by UID, which the new object cannot inherit"},
    {"uid", Action::kSilent},
    {"resourceVersion", Action::kSilent},
    {"generation", Action::kSilent},
    {"creationTimestamp", Action::kSilent},
    {"deletionTimestamp", Action::kSilent},
    {"deletionGracePeriodSeconds", Action::kSilent},
    {"managedFields", Action::kSilent},
    {"selfLink", Action::kSilent},
};
constexpr Shape kMetadata{"metadata", kMetadataRules};

constexpr std::string_view kStatusNote =
    "status is not carried over: the operator rebuilds it from the cluster";

constexpr Rule kAppRules[] = {
    {"apiVersion", Action::kSilent},
    {"kind", Action::kSilent},
    {"metadata", Action::kWalk, &kMetadata},
    {"spec", Action::kWalk, &kAppSpec},
    {"status", Action::kNote, nullptr, kStatusNote},
};
constexpr Rule kClusterRules[] = {
    {"apiVersion", Action::kSilent},
    {"kind", Action::kSilent},
    {"metadata", Action::kWalk, &kMetadata},
    {"spec", Action::kWalk, &kClusterSpec},
    {"status", Action::kNote, nullptr, kStatusNote},
};
constexpr Rule kConfigRules[] = {
    {"apiVersion", Action::kSilent},
    {"kind", Action::kSilent},
    {"metadata", Action::kWalk, &kMetadata},
    {"spec", Action::kWalk, &kConfigSpec},
    {"status", Action::kNote, nullptr, kStatusNote},
};
constexpr Shape kApp{"KubeDirectorApp", kAppRules};
constexpr Shape kCluster{"KubeDirectorCluster", kClusterRules};
constexpr Shape kConfig{"KubeDirectorConfig", kConfigRules};

}  // namespace

json::object convert_fields(Context& c, const json::object& source) {
  const Shape* shape = c.kind == kKubeDirectorAppKind       ? &kApp
                       : c.kind == kKubeDirectorClusterKind ? &kCluster
                                                            : &kConfig;
  return walk(c, source, *shape, "");
}

}  // namespace kstack::catalog::kubedirector_detail
