// Defaulting for the mutating endpoint, as an RFC 6902 JSON patch. Only fields the Stack
// leaves unset are added; nothing the user wrote is changed. Defaults (docs/spec.md §2.2):
//  - spec.appCatalog: where the app was found (local, else system); on UPDATE the old value
//  - spec.serviceType: KStackConfig defaultServiceType, else ClusterIP
//  - spec.namingScheme: on UPDATE the old value; else KStackConfig defaultNamingScheme, else
//    CrNameRole
//  - spec.roles[i].members: on UPDATE the role's old members (a `kubectl replace` without
//    members must not scale down); else the cardinality minimum
//  - spec.roles[i].storage.storageClassName (storage requested without one): on UPDATE of a
//    role that had storage, exactly the old value (nothing if it had none: storage is frozen
//    on running roles); else KStackConfig defaultStorageClassName, else the cluster default
//  - metadata.finalizers: on CREATE, kstack.io/cleanup is appended when missing (the operator
//    would otherwise add it with a write of its own; owned_fields.h lets it through on CREATE)
// What cannot be resolved (app not found, no default class) is left out: validation, which
// runs after mutation, reports it.
#pragma once

#include <string>
#include <string_view>

#include <boost/json/array.hpp>

#include "catalog/catalog.h"
#include "catalog/model.h"

namespace kstack::validator {

// One RFC 6901 reference token: '~' -> "~0", '/' -> "~1".
std::string json_pointer_escape(std::string_view segment);

// The patch for `stack` (its raw JSON decides what is missing); old_stack on UPDATE, of which
// it reads no more than catalog::decode_stack_outline decodes.
// `add_finalizer`: false where no controller of this operator reconciles the Stack.
boost::json::array default_stack(const catalog::Stack& stack, const catalog::Stack* old_stack,
                                 const catalog::Catalog& catalog, bool add_finalizer = true);

}  // namespace kstack::validator
