// AppType admission rules (docs/spec.md §3). Pure functions: each returns every violation it finds,
// each naming the field path.
#pragma once

#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "catalog/model.h"
#include "validator/rules/syntax.h"

namespace kstack::validator {

// Rules on the content of one AppType (decoded tolerantly: shape problems are the decoder's).
//  - ids: role ids DNS labels, unique; service ids IANA service names (DNS label ≤ 15), unique
//  - cardinality "N"/"N+", N ≤ 1000; every role resolves to an image
//  - roleServices/selectedRoles name existing roles/services, each role at most once
//  - containerSpec.tty needs stdin; minResources/minStorage quantities parse and are ≥ 0
//  - persist dirs absolute and normalised; eventList ⊆ {configure, addnodes, delnodes,
//    preupgrade, upgradenodes}, each once
//  - upgradeFrom: DNS-1123 subdomain names, unique, not the AppType's own name
//  - setup packages: scheme file://, http(s)://, configmap://<name>/<key>; sha256 64 hex
//  - endpoint port 1–65535, isDashboard needs urlScheme; configSchemaVersion ≥ 1
//  - minAvailable: an integer 1..1000 or "N%" with N 1..100
//  - distroID usable as a label value (kstack labels members app.kubernetes.io/name=<distroID>)
Violations validate_apptype(const catalog::AppType& app);

// Decoding problems plus validate_apptype().
Violations validate_apptype_object(const boost::json::value& object);

// An AppType in use may not change its spec nor be deleted: one violation per changed
// top-level spec field (UPDATE, `new_object` non-null) or one for the DELETE (naming the
// AppType, from old_object's metadata), each listing the referencing stacks ("ns/name"). No
// violation when nothing references it or the spec is unchanged (re-applying the same manifest is
// fine; metadata may change).
Violations validate_apptype_in_use(const boost::json::value& old_object,
                                   const boost::json::value* new_object,
                                   const std::vector<std::string>& referencing_stacks);

}  // namespace kstack::validator
