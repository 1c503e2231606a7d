// The operator process standing in for a pod of deploy/deployment.yaml: what a kubelet and a
// container runtime would give the pod's container, taken from the pod's spec.
//  - argv: the image's ENTRYPOINT (the kstack binary) + the container's args, exactly;
//  - env: the container's env, fieldRef metadata.name/namespace resolved from the pod, plus
//    what the kubelet adds (HOSTNAME, KUBERNETES_SERVICE_HOST/PORT of the API server);
//  - identity: the container's volumeMounts, which must be secret volumes: on 1.20 the
//    ServiceAccount admission plugin adds the token Secret of the pod's serviceAccountName at
//    /var/run/secrets/kubernetes.io/serviceaccount (token, ca.crt, namespace), where the
//    in-cluster loader (kube/config.cpp) reads it;
//  - user: securityContext runAsUser/runAsGroup (a user namespace maps them);
//  - filesystem: readOnlyRootFilesystem: the host's, read-only, with no writable directory
//    but for the read-only mounts (the Deployment declares no volumes of its own);
//  - network: the host's (there is no network namespace), the pod's IP standing for the pod's
//    own interface: KSTACK_BIND_ADDRESS=<podIP> replaces the default 0.0.0.0, so each replica
//    listens on its container ports at its own loopback address.
// The sandbox is bubblewrap, as the node simulator's. Probes are run by the node simulator
// (--http-probes), which owns the pod's status.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <boost/json/value.hpp>
#include <tl/expected.hpp>

#include "tests/testenv/control_plane.h"
#include "tests/testenv/process.h"

namespace kstack::testenv::e2e {

// What the pod's one container gets, derived from the pod (pure; errors name the field the
// stand-in cannot honour, so that a manifest change it does not model fails loudly).
struct StandInSpec {
  std::string pod;        // namespace/name
  std::string pod_ip;     // status.podIP
  std::string container;  // its name
  std::vector<std::string> args;
  EnvVars env;  // the container's env, resolved
  std::string service_account;
  std::string ns;
  long uid = 0;
  long gid = 0;
  bool read_only_root = false;
};
tl::expected<StandInSpec, std::string> stand_in_spec(const boost::json::value& pod);

struct StandInRuntime {
  std::filesystem::path binary;    // the image's ENTRYPOINT
  std::string api_host;            // KUBERNETES_SERVICE_HOST
  std::string api_port;            // KUBERNETES_SERVICE_PORT
  std::filesystem::path work_dir;  // for the mounts' files and the logs
};

// Starts the stand-in; its stdout/stderr go to <work_dir>/<pod name>.log.
tl::expected<ChildProcess, std::string> start_stand_in(const StandInSpec& spec,
                                                       const StandInRuntime& runtime);

}  // namespace kstack::testenv::e2e
