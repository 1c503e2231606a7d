// The e2e binaries' own network namespace, in which pod IPs are real local addresses.
// The API server refuses loopback addresses (127.0.0.0/8) in Endpoints, so pods on 127.0.0.x
// can never back a Service; in a fresh network namespace the binary puts kPodNetwork on the
// loopback interface (all of a prefix given to `lo` is local), so the node simulators' pod IPs
// (--pod-cidr) are both valid Endpoints and addresses containers can listen on. The whole test
// binary runs there with its control plane and node simulators; the host's network is not
// touched. Every binary linking kstack_nodesim_gtest enters it first thing in main().
#pragma once

#include <string>

namespace kstack::testenv::e2e {

inline constexpr const char* kPodNetwork = "10.244.0.1/16";  // on lo: 10.244.0.0/16 is local
// The cluster DNS server (cluster_dns.h) listens on the pod network's own address.
inline constexpr const char* kClusterDnsAddress = "10.244.0.1";

// Re-executes this binary (same arguments) under `unshare --net` (plus a user namespace
// mapping the caller to root when not root, for the capability to configure it), with
// loopback up and carrying kPodNetwork. Call while the process has one thread (first thing in
// main()). Returns "" once running inside, else why it could not re-execute (it only returns
// in the new process or on failure).
std::string enter_pod_network();

// True in a process (or a child of one) that entered the pod network.
bool in_pod_network();

}  // namespace kstack::testenv::e2e
