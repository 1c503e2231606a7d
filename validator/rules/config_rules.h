// KStackConfig admission rules (docs/spec.md §2.3): the one object `kstack-config` in the
// operator's namespace, holding defaults for Stacks and labels/annotations for generated objects.
#pragma once

#include <string>

#include <boost/json/value.hpp>

#include "catalog/catalog.h"
#include "catalog/model.h"
#include "validator/rules/syntax.h"

namespace kstack::validator {

//  - metadata.name is kstack-config and metadata.namespace the operator's (catalog's system)
//  - defaultServiceType / defaultNamingScheme enums
//  - clusterSvcDomainBase starts with '.' followed by a DNS subdomain
//  - defaultStorageClassName names an existing StorageClass (when StorageClasses are known)
//  - pod/service labels valid and without the kstack.io/ prefix; annotations valid
//  - memberRecovery values (validate_member_recovery)
Violations validate_kstack_config(const catalog::KStackConfig& config,
                                  const catalog::Catalog& catalog);

// memberRecovery of a Stack role or of the KStackConfig (docs/api.md "Lost nodes"), `path`
// naming it (spec.roles[i].memberRecovery, spec.memberRecovery): policy Reschedule|Off,
// nodeLostGraceSeconds 0..86400, localStorage Keep|Recreate.
void validate_member_recovery(const catalog::MemberRecovery& recovery, const std::string& path,
                              Violations& out);

// Decoding problems plus validate_kstack_config().
Violations validate_kstack_config_object(const boost::json::value& object,
                                         const catalog::Catalog& catalog);

}  // namespace kstack::validator
