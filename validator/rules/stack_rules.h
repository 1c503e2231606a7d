// Stack admission rules (docs/spec.md §3). Pure functions over the Stack and the catalog (the
// operator's watch caches, or a MemoryCatalog); each returns every violation it finds.
#pragma once

#include <boost/json/value.hpp>

#include "catalog/catalog.h"
#include "catalog/model.h"
#include "validator/rules/syntax.h"

namespace kstack::validator {

// CREATE and UPDATE (the new object). Accepts objects not yet defaulted (kstack validate
// reads manifests): a missing members means the cardinality minimum, a missing
// storageClassName means "a default must resolve".
//  - spec.app resolves (local, then system; appCatalog, when given, is where it must be; an
//    invalid appCatalog is reported and the app looked up as if it were unset, so that the
//    rules that need the app still run)
//  - serviceType, namingScheme, appCatalog enums
//  - role ids exist in the app and are unique; members ≥ 0 and fits the cardinality;
//    the app's selected roles with minimum > 0 are present; total members ≤ 1000;
//    maxUnavailable ≥ 1; memberRecovery values (validate_member_recovery)
//  - resources: quantities parse, requests ≤ limits, requests (or limits) meet minResources
//  - storage: size > 0 and ≥ minStorage; no storage only if the role allows ephemeral mode;
//    the storage class exists or a default resolves (when the catalog knows StorageClasses)
//  - podLabels/serviceLabels/nodeSelector valid label maps without the kstack.io/ prefix,
//    podAnnotations/serviceAnnotations valid annotation maps; env names; serviceAccountName
//  - the names the effective naming scheme produces (catalog::ObjectNames): StatefulSet
//    (≤ 52), pods and member Services at the highest ordinal (≤ 63), PVCs (≤ 253); the Stack's
//    name is a label value (kstack.io/stack) and, under CrNameRole, the headless Service's
//    name (DNS-1035 label)
Violations validate_stack(const catalog::Stack& stack, const catalog::Catalog& catalog);

// Decoding problems plus validate_stack().
Violations validate_stack_object(const boost::json::value& object, const catalog::Catalog& catalog);

// UPDATE only (docs/api.md "Upgrades"):
//  - spec.app may change only to an AppType, found where the Stack finds its app, of the
//    current one's namespace and distroID that lists the current one in its upgradeFrom; the
//    refusal names the allowed targets
//  - appCatalog and namingScheme are immutable once set
//  - a role that has members may change every field except storage (volumeClaimTemplates)
//  - when the old or the new object has spec.stopped true, nothing else in spec may change:
//    the first changed field is named (docs/api.md "Stop and resume")
Violations validate_stack_update(const catalog::Stack& old_stack, const catalog::Stack& new_stack,
                                 const catalog::Catalog& catalog);
// The same for the stored object as the review carries it: decodes of it only what the rules
// read (catalog::decode_stack_outline), the whole Stack when the update changes spec.app. Its
// namespace defaults to the new Stack's.
Violations validate_stack_update(const boost::json::value& old_object,
                                 const catalog::Stack& new_stack, const catalog::Catalog& catalog);

}  // namespace kstack::validator
