// The pod stand-in (see standin.h).
#include "tests/e2e/deploy/standin.h"

#include <fstream>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "tests/nodesim/testing/e2e.h"
#include "validator/certs.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

const json::array* array_at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* found = v.find_pointer(pointer, ec);
  return found != nullptr && found->is_array() ? &found->get_array() : nullptr;
}

std::optional<long> long_at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* found = v.find_pointer(pointer, ec);
  if (found == nullptr || !found->is_int64()) return std::nullopt;
  return static_cast<long>(found->get_int64());
}

bool true_at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* found = v.find_pointer(pointer, ec);
  return found != nullptr && found->is_bool() && found->get_bool();
}

// The downward API fields a kubelet resolves for env valueFrom.fieldRef that this stand-in
// knows; anything else is refused by name.
tl::expected<std::string, std::string> field_ref(const json::value& pod, const std::string& path) {
  if (path == "metadata.name") return str_at(pod, "/metadata/name");
  if (path == "metadata.namespace") return str_at(pod, "/metadata/namespace");
  if (path == "spec.serviceAccountName") return str_at(pod, "/spec/serviceAccountName");
  if (path == "status.podIP") return str_at(pod, "/status/podIP");
  return tl::unexpected("fieldRef.fieldPath " + path + " is not resolved by the stand-in");
}

tl::expected<EnvVars, std::string> resolve_env(const json::value& pod, const json::value& c) {
  if (array_at(c, "/envFrom") != nullptr) return tl::unexpected(std::string("envFrom"));
  EnvVars env;
  const auto* items = array_at(c, "/env");
  for (std::size_t i = 0; items != nullptr && i < items->size(); ++i) {
    const auto& e = (*items)[i];
    const std::string name = str_at(e, "/name");
    const std::string where = fmt::format("env[{}] ({})", i, name);
    if (e.is_object() && e.as_object().contains("valueFrom")) {
      const auto path = str_at(e, "/valueFrom/fieldRef/fieldPath");
      if (path.empty()) {
        return tl::unexpected(where + ": only valueFrom.fieldRef is resolved by the stand-in");
      }
      auto value = field_ref(pod, path);
      if (!value) return tl::unexpected(where + ": " + value.error());
      env.emplace_back(name, *value);
    } else {
      const std::string value = str_at(e, "/value");
      if (value.find("$(") != std::string::npos) {
        return tl::unexpected(where + ": $(VAR) references are not expanded by the stand-in");
      }
      env.emplace_back(name, value);
    }
  }
  return env;
}

// The mounts of the container, each a secret volume (the service-account token volume the
// ServiceAccount admission plugin adds): its keys written to a host directory.
struct Mount {
  fs::path source;
  fs::path target;
};

tl::expected<std::vector<Mount>, std::string> project_mounts(const json::value& pod,
                                                             const json::value& c,
                                                             const fs::path& dir) {
  std::vector<Mount> mounts;
  const auto* items = array_at(c, "/volumeMounts");
  for (std::size_t i = 0; items != nullptr && i < items->size(); ++i) {
    const auto& m = (*items)[i];
    const std::string volume = str_at(m, "/name");
    const std::string where = fmt::format("volumeMounts[{}] ({})", i, volume);
    if (!true_at(m, "/readOnly") || !str_at(m, "/subPath").empty()) {
      return tl::unexpected(where + ": only whole, readOnly mounts are made by the stand-in");
    }
    std::string secret_name;
    const auto* volumes = array_at(pod, "/spec/volumes");
    for (std::size_t j = 0; volumes != nullptr && j < volumes->size(); ++j) {
      if (str_at((*volumes)[j], "/name") == volume) {
        secret_name = str_at((*volumes)[j], "/secret/secretName");
      }
    }
    if (secret_name.empty()) {
      return tl::unexpected(where + ": only secret volumes are mounted by the stand-in");
    }
    auto secret =
        admin()->get(kube::resources::kSecrets, str_at(pod, "/metadata/namespace"), secret_name);
    if (!secret) return tl::unexpected(where + ": " + secret.error().to_string());
    const fs::path source = dir / volume;
    std::error_code created;
    fs::create_directories(source, created);
    if (created) return tl::unexpected(where + ": " + source.string() + ": " + created.message());
    boost::system::error_code ec;
    const auto* data = secret->find_pointer("/data", ec);
    for (const auto& [key, value] :
         data != nullptr && data->is_object() ? data->get_object() : json::object{}) {
      auto decoded = validator::base64_decode(
          value.is_string() ? std::string_view(value.get_string()) : std::string_view());
      if (!decoded) return tl::unexpected(where + ": Secret key " + std::string(key));
      std::ofstream(source / std::string(key), std::ios::binary) << *decoded;
    }
    mounts.push_back({source, str_at(m, "/mountPath")});
  }
  return mounts;
}

}  // namespace

tl::expected<StandInSpec, std::string> stand_in_spec(const json::value& pod) {
  StandInSpec s;
  s.ns = str_at(pod, "/metadata/namespace");
  s.pod = s.ns + "/" + str_at(pod, "/metadata/name");
  auto fail = [&](const std::string& what) {
    return tl::unexpected(fmt::format("pod {}: {}", s.pod, what));
  };
  const auto* containers = array_at(pod, "/spec/containers");
  if (containers == nullptr || containers->size() != 1 ||
      array_at(pod, "/spec/initContainers") != nullptr) {
    return fail("the stand-in runs pods of exactly one container and no init containers");
  }
  const auto& c = containers->front();
  s.container = str_at(c, "/name");
  s.pod_ip = str_at(pod, "/status/podIP");
  if (s.pod_ip.empty()) return fail("no status.podIP yet");
  if (array_at(c, "/command") != nullptr) {
    return fail("spec.containers[0].command: the stand-in runs the image's ENTRYPOINT (kstack)");
  }
  if (const auto* args = array_at(c, "/args")) {
    for (const auto& a : *args) s.args.emplace_back(a.is_string() ? a.get_string() : "");
  }
  auto env = resolve_env(pod, c);
  if (!env) return fail("spec.containers[0]." + env.error());
  s.env = std::move(*env);
  s.service_account = str_at(pod, "/spec/serviceAccountName");
  // The container's securityContext wins over the pod's, as in the kubelet.
  auto uid = long_at(c, "/securityContext/runAsUser");
  if (!uid) uid = long_at(pod, "/spec/securityContext/runAsUser");
  auto gid = long_at(c, "/securityContext/runAsGroup");
  if (!gid) gid = long_at(pod, "/spec/securityContext/runAsGroup");
  if (!uid || !gid) return fail("runAsUser and runAsGroup must be set (the image is not read)");
  const bool non_root = true_at(pod, "/spec/securityContext/runAsNonRoot") ||
                        true_at(c, "/securityContext/runAsNonRoot");
  if (non_root && *uid == 0) return fail("runAsNonRoot with runAsUser 0");
  s.uid = *uid;
  s.gid = *gid;
  s.read_only_root = true_at(c, "/securityContext/readOnlyRootFilesystem");
  return s;
}

tl::expected<ChildProcess, std::string> start_stand_in(const StandInSpec& spec,
                                                       const StandInRuntime& runtime) {
  const std::string pod_name = spec.pod.substr(spec.pod.find('/') + 1);
  const fs::path dir = runtime.work_dir / ("standin-" + pod_name);
  auto pod = admin()->get(kube::resources::kPods, spec.ns, pod_name);
  if (!pod) return tl::unexpected("pod " + spec.pod + ": " + pod.error().to_string());
  const auto* containers = array_at(*pod, "/spec/containers");
  if (containers == nullptr || containers->empty()) return tl::unexpected("pod " + spec.pod);
  auto mounts = project_mounts(*pod, containers->front(), dir / "volumes");
  if (!mounts) return tl::unexpected("pod " + spec.pod + ": " + mounts.error());

  std::vector<std::string> argv = {"/usr/bin/bwrap",
                                   "--unshare-user",
                                   "--uid",
                                   std::to_string(spec.uid),
                                   "--gid",
                                   std::to_string(spec.gid),
                                   "--unshare-pid",
                                   "--unshare-ipc",
                                   "--die-with-parent",
                                   "--ro-bind",
                                   "/",
                                   "/",
                                   "--dev",
                                   "/dev",
                                   "--proc",
                                   "/proc"};
  // A mount point missing from the (read-only) host root: the directory that would hold it
  // becomes an empty tmpfs, made read-only again once the mounts are in (e.g. /run for
  // /var/run/secrets/kubernetes.io/serviceaccount).
  std::vector<std::string> remount;
  for (const auto& m : *mounts) {
    const fs::path target = fs::weakly_canonical(m.target);
    fs::path existing = target;
    while (!fs::exists(existing) && existing.has_parent_path()) existing = existing.parent_path();
    if (existing != target) {
      argv.insert(argv.end(), {"--tmpfs", existing.string()});
      remount.push_back(existing.string());
    }
    argv.insert(argv.end(), {"--ro-bind", m.source.string(), target.string()});
  }
  for (const auto& r : remount) argv.insert(argv.end(), {"--remount-ro", r});
  // A writable root filesystem would be the container's own layer: a private /tmp stands
  // for it. readOnlyRootFilesystem: nothing is writable.
  if (!spec.read_only_root) argv.insert(argv.end(), {"--tmpfs", "/tmp"});
  argv.insert(argv.end(), {"--clearenv", "--chdir", "/"});
  EnvVars env = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
                 {"HOSTNAME", pod_name},
                 {"KUBERNETES_SERVICE_HOST", runtime.api_host},
                 {"KUBERNETES_SERVICE_PORT", runtime.api_port},
                 // The pod's network namespace: its 0.0.0.0 is its own IP.
                 {"KSTACK_BIND_ADDRESS", spec.pod_ip}};
  env.insert(env.end(), spec.env.begin(), spec.env.end());
  for (const auto& [k, v] : env) argv.insert(argv.end(), {"--setenv", k, v});
  argv.push_back(runtime.binary.string());
  argv.insert(argv.end(), spec.args.begin(), spec.args.end());
  return spawn("standin-" + pod_name, argv, dir.string() + ".log");
}

}  // namespace kstack::testenv::e2e
