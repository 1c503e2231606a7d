// Pod spec to runtime config (see pod_config.h).
#include "tests/nodesim/pod_config.h"

#include <map>

#include <fmt/format.h>

#include "tests/nodesim/json_util.h"

namespace kstack::nodesim {

namespace json = boost::json;

namespace {

// The kubelet's expansion of $(VAR) in env values: defined names are replaced, $$ is a
// literal $, and unknown references stay as written.
std::string expand(const std::string& value,
                   const std::vector<std::pair<std::string, std::string>>& env) {
  std::string out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '$' && i + 1 < value.size() && value[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (value[i] == '$' && i + 1 < value.size() && value[i + 1] == '(') {
      auto close = value.find(')', i + 2);
      if (close != std::string::npos) {
        std::string name = value.substr(i + 2, close - i - 2);
        const std::string* found = nullptr;
        for (const auto& [k, v] : env) {
          if (k == name) found = &v;
        }
        if (found != nullptr) {
          out += *found;
          i = close;
          continue;
        }
      }
    }
    out += value[i];
  }
  return out;
}

std::string field_ref(const json::value& pod, const std::string& path) {
  if (path == "metadata.name") return str(pod, "/metadata/name");
  if (path == "metadata.namespace") return str(pod, "/metadata/namespace");
  if (path == "metadata.uid") return str(pod, "/metadata/uid");
  if (path == "spec.nodeName") return str(pod, "/spec/nodeName");
  if (path == "spec.serviceAccountName") return str(pod, "/spec/serviceAccountName");
  if (path == "status.hostIP") return "127.0.0.1";
  return {};
}

std::vector<std::pair<std::string, std::string>> split_env(const std::vector<std::string>& env) {
  std::vector<std::pair<std::string, std::string>> vars;
  for (const auto& kv : env) {
    const auto eq = kv.find('=');
    vars.emplace_back(kv.substr(0, eq), eq == std::string::npos ? "" : kv.substr(eq + 1));
  }
  return vars;
}

// container.command or .args with $(VAR) references to `env` expanded.
std::vector<std::string> expanded_list(const json::value& container, std::string_view field,
                                       const std::vector<std::string>& env) {
  std::vector<std::string> out;
  if (const auto* list = arr(container, field)) {
    const auto vars = split_env(env);
    for (const auto& a : *list) {
      out.push_back(expand(a.is_string() ? std::string(a.get_string()) : "", vars));
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> container_env(
    const json::value& pod, const json::value& container, const std::string& hostname,
    std::vector<std::string>& notes,
    const std::vector<std::pair<std::string, std::string>>& image_env, const std::string& home) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"PATH", kDefaultPath}, {"HOSTNAME", hostname}, {"HOME", home}};
  auto set = [&](const std::string& k, std::string v) {
    for (auto& [name, value] : env) {
      if (name == k) {
        value = std::move(v);
        return;
      }
    }
    env.emplace_back(k, std::move(v));
  };
  for (const auto& [k, v] : image_env) set(k, v);
  if (arr(container, "/envFrom") != nullptr) {
    notes.push_back("envFrom is not supported; skipped");
  }
  if (const auto* list = arr(container, "/env")) {
    for (const auto& e : *list) {
      std::string name = str(e, "/name");
      if (name.empty()) continue;
      if (find(e, "/valueFrom") != nullptr) {
        std::string path = str(e, "/valueFrom/fieldRef/fieldPath");
        std::string value = path.empty() ? std::string() : field_ref(pod, path);
        if (value.empty()) {
          notes.push_back(fmt::format("env {}: valueFrom is not supported here; skipped", name));
          continue;
        }
        set(name, value);
        continue;
      }
      set(name, expand(str(e, "/value"), env));
    }
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

tl::expected<UserIds, std::string> container_user(const json::value& pod,
                                                  const json::value& container, const Image& image,
                                                  const std::filesystem::path& etc) {
  auto ids = resolve_user(image.user, etc);
  if (!ids) return tl::unexpected("USER " + image.user + ": " + ids.error());
  auto setting = [&](std::string_view field) -> std::optional<std::int64_t> {
    for (const auto* v : {find(container, fmt::format("/securityContext/{}", field)),
                          find(pod, fmt::format("/spec/securityContext/{}", field))}) {
      if (v != nullptr && v->is_int64()) return v->get_int64();
    }
    return std::nullopt;
  };
  if (auto uid = setting("runAsUser")) {
    // As containerd: the uid's passwd entry (if any) gives the group and home.
    auto by_uid = resolve_user(std::to_string(*uid), etc);
    if (!by_uid) return tl::unexpected("runAsUser: " + by_uid.error());
    ids = by_uid;
  }
  if (auto gid = setting("runAsGroup")) ids->gid = static_cast<unsigned>(*gid);
  return ids;
}

namespace {

// A registered image's container: its process, environment, working directory and user.
tl::expected<void, std::string> apply_image(const json::value& pod, const json::value& c,
                                            const ImageContext& images, const std::string& hostname,
                                            ContainerConfig& cc) {
  auto image = images.images != nullptr ? images.images->find(cc.image) : nullptr;
  if (!image) return {};
  auto user = container_user(pod, c, *image, images.etc);
  if (!user) return tl::unexpected(fmt::format("container {}: {}", cc.name, user.error()));
  std::vector<std::string> noted_already;  // the first container_env call's notes stand
  cc.env = container_env(pod, c, hostname, noted_already, image->env, user->home);
  cc.command = image_process(*image, expanded_list(c, "/command", cc.env),
                             expanded_list(c, "/args", cc.env));
  if (cc.command.empty()) {
    return tl::unexpected(
        fmt::format("container {}: image {} has no ENTRYPOINT or CMD and the container no command",
                    cc.name, cc.image));
  }
  if (cc.working_dir.empty()) cc.working_dir = image->working_dir;
  cc.image_def = image;
  cc.user = *user;
  return {};
}

}  // namespace

tl::expected<PodConfig, std::string> build_pod_config(const json::value& pod,
                                                      const VolumeResolver& resolve,
                                                      std::vector<std::string>& notes,
                                                      const ImageContext& images) {
  PodConfig config;
  config.namespace_name = str(pod, "/metadata/namespace");
  config.name = str(pod, "/metadata/name");
  config.uid = str(pod, "/metadata/uid");
  config.hostname = str(pod, "/spec/hostname");
  if (config.hostname.empty()) config.hostname = config.name.substr(0, 63);
  if (auto sub = str(pod, "/spec/subdomain"); !sub.empty()) {
    config.fqdn =
        fmt::format("{}.{}.{}.svc.cluster.local", config.hostname, sub, config.namespace_name);
  }

  std::map<std::string, ResolvedVolume> volumes;
  if (const auto* list = arr(pod, "/spec/volumes")) {
    for (const auto& v : *list) {
      auto resolved = resolve(v);
      if (!resolved) return tl::unexpected(resolved.error());
      volumes.emplace(str(v, "/name"), std::move(*resolved));
    }
  }
  if (const auto* inits = arr(pod, "/spec/initContainers")) {
    for (const auto& c : *inits) {
      config.init_containers.emplace_back(str(c, "/name"), str(c, "/image"));
    }
  }
  if (const auto* containers = arr(pod, "/spec/containers")) {
    for (const auto& c : *containers) {
      ContainerConfig cc;
      cc.name = str(c, "/name");
      cc.image = str(c, "/image");
      cc.working_dir = str(c, "/workingDir");
      cc.env = container_env(pod, c, config.hostname, notes);
      cc.command = container_command(c, cc.env);
      if (auto r = apply_image(pod, c, images, config.hostname, cc); !r) {
        return tl::unexpected(r.error());
      }
      if (cc.command.empty() && arr(c, "/args") != nullptr) {
        notes.push_back(
            fmt::format("container {}: args without a command (the image's "
                        "entrypoint is unknown); the container idles",
                        cc.name));
      }
      if (const auto* mounts = arr(c, "/volumeMounts")) {
        for (const auto& m : *mounts) {
          std::string name = str(m, "/name");
          std::string target = str(m, "/mountPath");
          auto it = volumes.find(name);
          if (it == volumes.end() || target.empty() || target[0] != '/') {
            notes.push_back(fmt::format("container {}: mount of volume {} at \"{}\" skipped",
                                        cc.name, name, target));
            continue;
          }
          if (!str(m, "/subPathExpr").empty()) {
            notes.push_back(fmt::format("container {}: subPathExpr is not supported", cc.name));
          }
          std::string sub = str(m, "/subPath");
          if (!safe_relative_path(sub)) {
            return tl::unexpected(fmt::format("invalid subPath \"{}\" of volume {}", sub, name));
          }
          BindMount bind;
          bind.source = sub.empty() ? it->second.path : it->second.path / sub;
          bind.target = target;
          bind.read_only = flag(m, "/readOnly") || it->second.read_only;
          cc.mounts.push_back(std::move(bind));
        }
      }
      config.containers.push_back(std::move(cc));
    }
  }
  if (config.containers.empty()) return tl::unexpected(std::string("pod has no containers"));
  if (auto policy = str(pod, "/spec/restartPolicy"); !policy.empty()) {
    config.restart_policy = policy;
  }
  return config;
}

std::vector<std::string> container_command(const json::value& container,
                                           const std::vector<std::string>& env) {
  const auto* command = arr(container, "/command");
  if (command == nullptr || command->empty()) return {};
  std::vector<std::string> argv = expanded_list(container, "/command", env);
  const auto args = expanded_list(container, "/args", env);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace kstack::nodesim
