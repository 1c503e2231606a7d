// The objects a Stack should own (docs/spec.md §4), computed purely from the Stack, its AppType and
// the KStackConfig: the headless Service, one StatefulSet per role, a Service per member of a
// role with ports, and the PVC names the StatefulSet controller will create. No I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "catalog/model.h"
#include "kube/error.h"

namespace kstack::reconciler {

// Labels on everything kstack owns (docs/spec.md §4).
inline constexpr std::string_view kLabelManagedBy = "app.kubernetes.io/managed-by";
inline constexpr std::string_view kManagedByValue = "kstack";
inline constexpr std::string_view kLabelName = "app.kubernetes.io/name";
inline constexpr std::string_view kLabelStack = "kstack.io/stack";
inline constexpr std::string_view kLabelRole = "kstack.io/role";
// Set by the StatefulSet controller on each pod; member Services select on it.
inline constexpr std::string_view kLabelPodName = "statefulset.kubernetes.io/pod-name";
// Set by the StatefulSet controller on each pod: the revision of the template it was made from.
inline constexpr std::string_view kLabelRevision = "controller-revision-hash";
// On the pod template: the AppType the template was made from, and the role's setup package
// (URL, "@sha256" when pinned). A new AppType or package alone changes the template, so the
// members roll to it (docs/api.md "Upgrades").
inline constexpr std::string_view kAnnotationApp = "kstack.io/app";
inline constexpr std::string_view kAnnotationSetupPackage = "kstack.io/setup-package";
// On the pod template: a digest of the rest of the template. A field the Stack no longer sets
// (an env list removed) changes it, so the StatefulSet is written even though its live template
// still covers the smaller one, and server-side apply removes the field.
inline constexpr std::string_view kAnnotationTemplateHash = "kstack.io/template-hash";
// The single container of every member pod.
inline constexpr std::string_view kContainerName = "app";
// Writable emptyDirs every member container gets, so that any image, root or not, can be set
// up (docs/setup-packages.md): configmeta and env in /etc/kstack, the package in /opt/kstack.
// They survive container restarts, not the pod's re-creation. A role that persists one of
// these directories (or a parent) keeps it on its volume instead.
struct KStackDir {
  std::string_view volume;
  std::string_view path;
};
inline constexpr KStackDir kKStackDirs[] = {{"kstack-etc", "/etc/kstack"},
                                            {"kstack-opt", "/opt/kstack"}};

struct DesiredMember {
  std::string role;
  std::int64_t ordinal = 0;
  std::string pod;      // also the member Service's name, when the role has ports
  std::string service;  // empty when the role has no ports
  std::string pvc;      // empty when the role has no storage
  std::string fqdn;     // <pod>.<headless>.<namespace><clusterSvcDomainBase>
};

struct DesiredRole {
  std::string id;
  std::string stateful_set_name;
  std::int64_t replicas = 0;
  bool has_storage = false;
  // /opt/kstack/setup is on the member's volume: it outlives the pod, so a later container
  // finds the earlier one's configure.status (docs/setup-packages.md, Lifecycle).
  bool setup_dir_persisted = false;
  bool has_ports = false;
  boost::json::value stateful_set;  // the full object kstack would create
  std::vector<DesiredMember> members;
};

struct DesiredState {
  std::string headless_service_name;
  std::string member_domain;  // <headless>.<namespace><clusterSvcDomainBase>
  // A member's FQDN, for members in the spec and those leaving it alike.
  std::string fqdn(std::string_view pod) const { return std::string(pod) + "." + member_domain; }
  boost::json::value headless_service;
  std::vector<DesiredRole> roles;
  std::vector<boost::json::value> member_services;  // in role, ordinal order
};

// Fails (kInvalid, naming the field) only on what admission should have refused already:
// a role missing from the AppType, a role with no image, an unparsable cardinality.
kube::Result<DesiredState> desired_state(const catalog::Stack& stack, const catalog::AppType& app,
                                         const catalog::KStackConfig* config);

// A setup package as the pod template's kstack.io/setup-package names it: "<url>[@<sha256>]",
// and back (nullopt for text that is not of that form).
std::string package_annotation(const catalog::SetupPackage& package);
std::optional<catalog::SetupPackage> package_from_annotation(std::string_view text);

// The controller ownerReference to the Stack, and the labels common to all owned objects.
boost::json::object owner_reference(const catalog::Stack& stack);
// `text` made into a valid label value ("example/kv" -> "example.kv"; ≤ 63 characters).
std::string label_value(std::string_view text);
boost::json::object common_labels(const catalog::Stack& stack, const catalog::AppType& app,
                                  std::string_view role);

}  // namespace kstack::reconciler
