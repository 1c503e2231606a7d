// From a pod object to what the runtime starts (pure, given a volume resolver): hostname and
// FQDN, each container's environment, working directory and volume mounts.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <boost/json/value.hpp>
#include <tl/expected.hpp>

#include "tests/nodesim/image.h"
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

// The node's registered images, and where user names resolve (the host's /etc, which every
// sandbox's /etc copies).
struct ImageContext {
  const ImageSet* images = nullptr;
  std::filesystem::path etc = "/etc";
};

// Builds the runtime's config; `notes` collects what was skipped (valueFrom, envFrom,
// subPathExpr...), for the log. A container whose image is registered gets the image's
// process, environment, working directory and user (an error names the container when its
// user does not exist or there is nothing to run).
tl::expected<PodConfig, std::string> build_pod_config(const boost::json::value& pod,
                                                      const VolumeResolver& resolve,
                                                      std::vector<std::string>& notes,
                                                      const ImageContext& images = {});

// KEY=VALUE list: PATH, HOSTNAME, HOME (`home`), then the image's ENV, then env[] (plain
// values, $(VAR) references expanded as the kubelet does; valueFrom.fieldRef for
// metadata.name/namespace/uid, spec.nodeName and spec.serviceAccountName; other valueFrom
// sources skipped with a note). Later names win.
std::vector<std::string> container_env(
    const boost::json::value& pod, const boost::json::value& container, const std::string& hostname,
    std::vector<std::string>& notes,
    const std::vector<std::pair<std::string, std::string>>& image_env = {},
    const std::string& home = "/root");

// The uid/gid of a registered image's container: USER, then securityContext.runAsUser and
// runAsGroup (the container's over the pod's) win, as a container runtime applies them.
tl::expected<UserIds, std::string> container_user(const boost::json::value& pod,
                                                  const boost::json::value& container,
                                                  const Image& image,
                                                  const std::filesystem::path& etc);

// command + args of a container, with $(VAR) references to `env` (KEY=VALUE, as
// container_env) expanded as the kubelet does; empty when the container has no command (the
// image's entrypoint, unknown here).
std::vector<std::string> container_command(const boost::json::value& container,
                                           const std::vector<std::string>& env);

}  // namespace kstack::nodesim
