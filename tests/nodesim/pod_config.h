// From a pod object to what the runtime starts (pure, given a volume resolver): hostname and
// FQDN, each container's environment, working directory and volume mounts.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <boost/json/value.hpp>
#include <tl/expected.hpp>

#include "tests/nodesim/runtime.h"

namespace kstack::nodesim {

// The environment every container starts with, before the pod spec's env (as a container
// runtime sets from the image config).
inline constexpr const char* kDefaultPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Where one of spec.volumes lives on the host. An error means "not ready yet" (the pod stays
// Pending with that message).
struct ResolvedVolume {
  std::filesystem::path path;
  bool read_only = false;
};
using VolumeResolver =
    std::function<tl::expected<ResolvedVolume, std::string>(const boost::json::value& volume)>;

// Builds the runtime's config; `notes` collects what was skipped (valueFrom, envFrom,
// subPathExpr...), for the log.
tl::expected<PodConfig, std::string> build_pod_config(const boost::json::value& pod,
                                                      const VolumeResolver& resolve,
                                                      std::vector<std::string>& notes);

// KEY=VALUE list: PATH, HOSTNAME, HOME, then env[] (plain values, $(VAR) references expanded
// as the kubelet does; valueFrom.fieldRef for metadata.name/namespace/uid, spec.nodeName and
// spec.serviceAccountName; other valueFrom sources skipped with a note). Later names win.
std::vector<std::string> container_env(const boost::json::value& pod,
                                       const boost::json::value& container,
                                       const std::string& hostname,
                                       std::vector<std::string>& notes);

// command + args of a container, with $(VAR) references to `env` (KEY=VALUE, as
// container_env) expanded as the kubelet does; empty when the container has no command (the
// image's entrypoint, unknown here).
std::vector<std::string> container_command(const boost::json::value& container,
                                           const std::vector<std::string>& env);

}  // namespace kstack::nodesim
