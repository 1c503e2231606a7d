#include "kube/resource.h"

#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <fmt/format.h>

namespace kstack::kube {

namespace resources {
const ResourceType kNamespaces{"", "v1", "namespaces", "Namespace", false};
const ResourceType kConfigMaps{"", "v1", "configmaps", "ConfigMap", true};
const ResourceType kSecrets{"", "v1", "secrets", "Secret", true};
const ResourceType kPods{"", "v1", "pods", "Pod", true};
const ResourceType kServices{"", "v1", "services", "Service", true};
const ResourceType kServiceAccounts{"", "v1", "serviceaccounts", "ServiceAccount", true};
const ResourceType kPersistentVolumeClaims{"", "v1", "persistentvolumeclaims",
                                           "PersistentVolumeClaim", true};
const ResourceType kPersistentVolumes{"", "v1", "persistentvolumes", "PersistentVolume", false};
const ResourceType kNodes{"", "v1", "nodes", "Node", false};
const ResourceType kStatefulSets{"apps", "v1", "statefulsets", "StatefulSet", true};
const ResourceType kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true};
const ResourceType kEvents{"events.k8s.io", "v1", "events", "Event", true};
const ResourceType kCustomResourceDefinitions{
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false};
}  // namespace resources

std::string ResourceType::api_version() const {
  return group.empty() ? version : group + "/" + version;
}

std::string resource_path(const ResourceType& type, std::string_view ns, std::string_view name,
                          std::string_view subresource) {
  std::string path = type.group.empty() ? fmt::format("/api/{}", type.version)
                                        : fmt::format("/apis/{}/{}", type.group, type.version);
  if (type.namespaced && !ns.empty()) {
    path += "/namespaces/";
    path += ns;
  }
  path += '/';
  path += type.plural;
  if (!name.empty()) {
    path += '/';
    path += name;
    if (!subresource.empty()) {
      path += '/';
      path += subresource;
    }
  }
  return path;
}

Query& Query::add(std::string_view key, std::string_view value) {
  if (!value.empty()) params_.emplace_back(std::string(key), std::string(value));
  return *this;
}

Query& Query::add(std::string_view key, std::int64_t value) {
  params_.emplace_back(std::string(key), std::to_string(value));
  return *this;
}

Query& Query::add_flag(std::string_view key, bool value) {
  if (value) params_.emplace_back(std::string(key), "true");
  return *this;
}

std::string Query::str() const {
  std::string out;
  for (const auto& [k, v] : params_) {
    out += out.empty() ? '?' : '&';
    out += boost::urls::encode(k, boost::urls::unreserved_chars);
    out += '=';
    out += boost::urls::encode(v, boost::urls::unreserved_chars);
  }
  return out;
}

Result<void> check_path_segment(std::string_view what, std::string_view value) {
  if (value.empty())
    return make_error(ErrorKind::kInvalidArgument, fmt::format("{} is empty", what));
  if (value == "." || value == ".." || value.find_first_of("/%?#") != std::string_view::npos) {
    return make_error(ErrorKind::kInvalidArgument,
                      fmt::format("{} \"{}\" may not contain '/', '%', '?', '#' or be \".\"/\"..\"",
                                  what, value));
  }
  return {};
}

}  // namespace kstack::kube
