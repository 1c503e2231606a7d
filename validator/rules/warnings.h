// Admission warnings (response.warnings, shown by kubectl): fields kstack accepts but ignores.
// Mostly KubeDirector fields that `kstack import` or a hand-converted manifest may carry:
//
//   Stack        spec.connections, spec.defaultSecret                    not yet supported
//                spec.roles[i].secret, secretKeys, blockStorage,         not yet supported
//                fileInjections, volumeProjections, sharedMemory
//   AppType      spec.defaultMaxLogSizeDump, spec.roles[i].maxLogSizeDump  ignored
//                *.configPackage.useNewSetupLayout (and the default's)      ignored (one layout)
//   KStackConfig spec.nativeSystemdSupport, requiredSecretPrefix,          ignored
//                masterEncryptionKey, backupClusterStatus,
//                allowRestoreWithoutConnections, forceSharedMemorySizeSupport
//
// A CRD schema without x-kubernetes-preserve-unknown-fields prunes these before admission;
// the warnings then show in `kstack validate`, which reads the manifests as written.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "catalog/catalog.h"
#include "catalog/model.h"

namespace kstack::validator {

// "spec.connections: not yet supported by kstack; ignored"
std::vector<std::string> field_warnings(std::string_view kind, const boost::json::value& object);

// Warnings that need the Stack's AppType (looked up as the Stack resolves it; none when it is
// not found, which validation reports):
//  - a role with no more members than the integer minAvailable of its AppType role: the
//    PodDisruptionBudget can never allow an eviction (docs/api.md "Disruption budgets")
std::vector<std::string> stack_warnings(const catalog::Stack& stack,
                                        const catalog::Catalog& catalog);

}  // namespace kstack::validator
