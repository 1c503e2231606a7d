// The deploy/ e2e test's own network namespace, in which pod IPs are real local addresses.
// The API server refuses loopback addresses (127.0.0.0/8) in Endpoints, so pods on 127.0.0.x
// can never back a Service; in a fresh network namespace the test puts kPodNetwork on the
// loopback interface (all of a prefix given to `lo` is local), so the node simulator's pod IPs
// (--pod-cidr) are both valid Endpoints and addresses the stand-ins can listen on. The whole
// test binary runs there with its control plane and node simulator; the host's network is not
// touched.
#pragma once

#include <string>

namespace kstack::testenv::e2e {

inline constexpr const char* kPodNetwork = "10.244.0.1/16";  // on lo: 10.244.0.0/16 is local
inline constexpr const char* kPodCidr = "10.244.0.0/24";     // the node simulator's pod IPs

// Re-executes this binary (same arguments) under `unshare --net` (plus a user namespace
// mapping the caller to root when not root, for the capability to configure it), with
// loopback up and carrying kPodNetwork. Call from a static initializer, while the process has
// one thread. Returns "" once running inside, else why it could not re-execute (it only
// returns in the new process or on failure).
std::string enter_pod_network();

}  // namespace kstack::testenv::e2e
