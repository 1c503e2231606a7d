// Conversion of KubeDirector objects (kubedirector.hpe.com/v1beta1) into kstack's kinds, for
// `kstack import`: KubeDirectorApp → AppType, KubeDirectorCluster → Stack, KubeDirectorConfig →
// KStackConfig. Pure: JSON in, JSON out, plus one ImportIssue for every source field that is
// not carried over unchanged, so nothing is lost silently.
//
// Every field of the source is looked up in a table of the fields KubeDirector documents
// (docs/spec.md §2 and KubeDirector's API types, bluek8s/kubedirector
// pkg/apis/kubedirector/v1beta1/*_types.go; the tables are in kubedirector_fields.cpp): it is
// copied (same name and meaning), dropped with a reason (no kstack equivalent: connections,
// secrets, block storage, log-dump sizes, ...), or — when it is not a KubeDirector field at
// all — dropped as unknown. Only bookkeeping that the API server owns is dropped without a
// word: metadata.uid, resourceVersion, generation, creationTimestamp, managedFields, selfLink
// and the kubectl last-applied annotation.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

namespace kstack::catalog {

inline constexpr std::string_view kKubeDirectorApiVersion = "kubedirector.hpe.com/v1beta1";
inline constexpr std::string_view kKubeDirectorAppKind = "KubeDirectorApp";
inline constexpr std::string_view kKubeDirectorClusterKind = "KubeDirectorCluster";
inline constexpr std::string_view kKubeDirectorConfigKind = "KubeDirectorConfig";
inline constexpr std::string_view kKubeDirectorStatusBackupKind = "KubeDirectorStatusBackup";

struct ImportIssue {
  enum class Severity {
    kDropped,  // the field is not carried over
    kChanged,  // carried over with another value (a role id that is no DNS label)
    kWarning,  // carried over, but placed or laid out differently: adapt what relies on it
    kNote,     // carried over or left out by design, worth knowing (status, defaults)
  };
  Severity severity = Severity::kDropped;
  std::string field;  // path in the source object, e.g. spec.roles[1].maxLogSizeDump
  std::string message;
};

struct ImportOptions {
  // Namespace for every AppType and Stack (`kstack import -n`); unset keeps the source's.
  std::optional<std::string> namespace_override;
  // Where the KStackConfig goes: kstack reads it only from the operator's namespace.
  std::string operator_namespace = "kstack-system";
};

struct ImportResult {
  std::string source_kind;  // as written, e.g. KubeDirectorApp
  std::string source_name;  // "namespace/name" or "name"
  // The converted object; null when the document was not converted (see error/skipped).
  boost::json::value object;
  std::vector<ImportIssue> issues;
  // Non-empty when the document is unusable: not an object, not KubeDirector, unknown kind.
  std::string error;
  // A KubeDirector kind with no kstack counterpart (KubeDirectorStatusBackup): not converted,
  // with an issue saying why; not an error.
  bool skipped = false;
};

// A KubeDirectorCluster whose name has '.' or '_' becomes a Stack named as KubeDirector named
// its objects ('-' in their place; a kChanged issue). Roles whose ids rename to the same id
// ("data_node" and "data-node") make the document unusable (error set, nothing emitted).
ImportResult import_kubedirector(const boost::json::value& object,
                                 const ImportOptions& options = {});

// A role id as kstack accepts it (DNS label): lower case, anything outside [a-z0-9-] becomes
// '-', no leading/trailing '-', at most 63 characters. KubeDirector allows ids such as
// "vanilla_centos" or "RESTServer"; apps and clusters are renamed with this same function so
// they still match. Valid ids come back unchanged.
std::string kubedirector_role_id(std::string_view id);

// "KubeDirectorApp example/spark: spec.roles[1].maxLogSizeDump: not carried over: ..."
std::string format_issue(const ImportResult& result, const ImportIssue& issue);

std::string_view to_string(ImportIssue::Severity severity);  // dropped, changed, warning, note

}  // namespace kstack::catalog
