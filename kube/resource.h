// Resource types (group/version/plural) and the REST paths and query strings built from them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/error.h"

namespace kstack::kube {

struct ResourceType {
  std::string group;    // "" for the core group
  std::string version;  // "v1"
  std::string plural;   // "configmaps"
  std::string kind;     // "ConfigMap"
  bool namespaced = true;

  // "v1" for core, "apps/v1" otherwise: the apiVersion of objects of this type.
  std::string api_version() const;
  bool operator==(const ResourceType&) const = default;
};

// The built-in types kstack uses.
namespace resources {
extern const ResourceType kNamespaces;
extern const ResourceType kConfigMaps;
extern const ResourceType kSecrets;
extern const ResourceType kPods;
extern const ResourceType kServices;
extern const ResourceType kServiceAccounts;
extern const ResourceType kPersistentVolumeClaims;
extern const ResourceType kPersistentVolumes;
extern const ResourceType kNodes;
extern const ResourceType kStatefulSets;
extern const ResourceType kLeases;
extern const ResourceType kEvents;  // events.k8s.io/v1
extern const ResourceType kCustomResourceDefinitions;
}  // namespace resources

// /api/v1/namespaces/ns/configmaps/name/status ; namespace ignored for cluster-scoped types,
// and an empty namespace on a namespaced type means "all namespaces" (list/watch only).
std::string resource_path(const ResourceType& type, std::string_view ns, std::string_view name = {},
                          std::string_view subresource = {});

// Builds "?a=b&c=d" with percent-encoding; empty values are skipped; empty when no params.
class Query {
 public:
  Query& add(std::string_view key, std::string_view value);
  Query& add(std::string_view key, std::int64_t value);
  Query& add_flag(std::string_view key, bool value);  // "key=true" only when value is true
  std::string str() const;

 private:
  std::vector<std::pair<std::string, std::string>> params_;
};

// Checks a name/namespace before it is put into a path (no '/', not "." or "..", not empty).
Result<void> check_path_segment(std::string_view what, std::string_view value);

}  // namespace kstack::kube
