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

namespace kstack::validator {

// "spec.connections: not yet supported by kstack; ignored"
std::vector<std::string> field_warnings(std::string_view kind, const boost::json::value& object);

}  // namespace kstack::validator
