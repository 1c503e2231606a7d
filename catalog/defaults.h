// Defaults resolved at use (docs/spec.md §2.1: "the AppType object is never rewritten by kstack"):
// a role's image, setup package, persisted directories and events come from the role when it
// names them and from the AppType's defaults otherwise. Also the cardinality grammar and the
// Stack-level defaults (serviceType, namingScheme, members) that both the defaulting webhook
// and the reconciler need.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/model.h"
#include "kube/error.h"

namespace kstack::catalog {

// "N" = exactly N members, "N+" = at least N.
struct Cardinality {
  std::int64_t min = 0;
  bool at_least = false;

  bool allows(std::int64_t members) const { return at_least ? members >= min : members == min; }
  std::string to_string() const;  // back to "N" / "N+"
};

// Digits (at most 6), optionally followed by '+'. Errors are kInvalid with the reason.
kube::Result<Cardinality> parse_cardinality(std::string_view text);

const AppRole* find_role(const AppType& app, std::string_view role_id);
const AppService* find_service(const AppType& app, std::string_view service_id);
const StackRole* find_role(const Stack& stack, std::string_view role_id);

// role.imageRepoTag, else spec.defaultImageRepoTag; nullopt when neither is set.
std::optional<std::string> role_image(const AppType& app, const AppRole& role);
// role.configPackage, else spec.defaultConfigPackage. nullopt = no package: either one is
// explicitly null, or neither is set.
std::optional<SetupPackage> role_package(const AppType& app, const AppRole& role);
// role.persistDirs, else spec.defaultPersistDirs, else none.
std::vector<std::string> role_persist_dirs(const AppType& app, const AppRole& role);
// Whether `dir` is one of `persist_dirs` or lies under one (then it is on the member's volume
// when the Stack role has storage).
bool persisted(const std::vector<std::string>& persist_dirs, std::string_view dir);
// role.eventList, else spec.defaultEventList, else all of configure, addnodes, delnodes.
std::vector<std::string> role_event_list(const AppType& app, const AppRole& role);
bool role_handles_event(const AppType& app, const AppRole& role, std::string_view event);
// The services config.roleServices lists for the role, in that order (unknown ids skipped).
std::vector<const AppService*> role_services(const AppType& app, std::string_view role_id);

// Members a Stack role gets when it does not say: the cardinality minimum (0 if unparsable).
std::int64_t default_members(const AppRole& role);
// A Stack role's members, defaulted as above when absent.
std::int64_t effective_members(const AppRole* app_role, const StackRole& role);

// serviceType / namingScheme / cluster domain after defaults (config may be null).
std::string effective_service_type(const Stack& stack, const KStackConfig* config);
std::string effective_naming_scheme(const Stack& stack, const KStackConfig* config);
std::string cluster_svc_domain_base(const KStackConfig* config);

// memberRecovery after defaults (docs/api.md "Lost nodes"), resolved per field: the Stack
// role's, else the KStackConfig's (config may be null), else kRecoveryReschedule /
// kDefaultNodeLostGraceSeconds / kLocalStorageKeep.
struct EffectiveRecovery {
  std::string policy;
  std::int64_t node_lost_grace_seconds = kDefaultNodeLostGraceSeconds;
  std::string local_storage;
};
EffectiveRecovery effective_recovery(const StackRole& role, const KStackConfig* config);

}  // namespace kstack::catalog
