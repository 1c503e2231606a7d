// The simulated container runtime (see runtime.h).
#include "tests/nodesim/runtime.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "tests/nodesim/image_layer.h"
#include "tests/nodesim/json_util.h"

namespace kstack::nodesim {

namespace fs = std::filesystem;

namespace {

std::string hosts_file(const PodConfig& config, const std::string& ip) {
  std::string names = config.fqdn.empty() ? config.hostname : config.fqdn + "\t" + config.hostname;
  return fmt::format(
      "# Kubernetes-managed hosts file (kstack-nodesim).\n"
      "127.0.0.1\tlocalhost\n"
      "::1\tlocalhost ip6-localhost ip6-loopback\n"
      "fe00::0\tip6-localnet\n"
      "fe00::0\tip6-mcastprefix\n"
      "fe00::1\tip6-allnodes\n"
      "fe00::2\tip6-allrouters\n"
      "{}\t{}\n",
      ip, names);
}

std::uint32_t fnv1a(const std::string& s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

}  // namespace

Runtime::Runtime(RuntimeOptions options) : options_(std::move(options)) {}

Runtime::~Runtime() { kill_all(); }

fs::path Runtime::pod_dir(const std::string& ns, const std::string& name,
                          const std::string& uid) const {
  return pods_dir() / fmt::format("{}_{}_{}", ns, name, uid);
}

std::string Runtime::allocate_ip_locked(const std::string& uid) const {
  std::set<std::string> used;
  for (const auto& [u, pod] : pods_) used.insert(pod.state.pod_ip);
  // <prefix>2 .. <prefix>254, starting at a place derived from the uid.
  const std::uint32_t start = fnv1a(uid) % 253;
  for (std::uint32_t i = 0; i < 253; ++i) {
    std::string ip = fmt::format("{}{}", options_.pod_ip_prefix, 2 + (start + i) % 253);
    if (used.count(ip) == 0) return ip;
  }
  return fmt::format("{}{}", options_.pod_ip_prefix, 2 + start);
}

PodState Runtime::snapshot(const Pod& pod) {
  PodState s = pod.state;
  s.containers.clear();
  for (const auto& c : pod.containers) s.containers.push_back(c.state);
  return s;
}

tl::expected<void, std::string> Runtime::start_container(Pod& pod, Container& c) {
  const fs::path root = pod.dir / "containers" / c.config.name;
  if (fs::exists(root)) {
    if (auto r = remove_inside(pod.dir, root); !r) return r;
  }
  SandboxSpec spec;
  spec.root = root;
  spec.hostname = pod.config.hostname;
  spec.hosts_file = hosts_file(pod.config, pod.state.pod_ip);
  if (!options_.cluster_dns.empty()) {
    // As the kubelet writes it for dnsPolicy ClusterFirst.
    spec.resolv_conf = fmt::format(
        "nameserver {}\nsearch {}.svc.cluster.local svc.cluster.local cluster.local\n"
        "options ndots:5\n",
        options_.cluster_dns, pod.config.namespace_name);
  }
  spec.mounts = c.config.mounts;
  if (auto r = prepare_root(spec); !r) return r;
  if (c.config.image_def) {
    // Copied again at every start: a restarted container gets the image's files afresh.
    auto placed = place_image_files(*c.config.image_def, root);
    if (!placed) return tl::unexpected("image " + c.config.image + ": " + placed.error());
    spec.image_args = std::move(*placed);
  }
  for (const auto& m : spec.mounts) {
    std::error_code ec;
    if (!fs::exists(m.source, ec))
      return tl::unexpected("volume source missing: " + m.source.string());
  }
  auto args = bwrap_args(spec);
  if (!c.config.command.empty()) {
    // The command runs with the container's environment and working directory, as exec does.
    args.emplace_back("--clearenv");
    for (const auto& kv : c.config.env) {
      const auto eq = kv.find('=');
      args.insert(args.end(), {"--setenv", kv.substr(0, eq), kv.substr(eq + 1)});
    }
    if (!c.config.working_dir.empty()) args.insert(args.end(), {"--chdir", c.config.working_dir});
  }
  std::vector<std::string> command = c.config.command;
  if (c.config.user && !command.empty()) {
    // The container's user: util-linux's setpriv, inside the sandbox, before the process.
    std::vector<std::string> as_user = {
        "/usr/bin/setpriv", fmt::format("--reuid={}", c.config.user->uid),
        fmt::format("--regid={}", c.config.user->gid), "--clear-groups", "--"};
    command.insert(command.begin(), as_user.begin(), as_user.end());
  }
  auto process =
      start_sandbox(options_.bwrap, args, command,
                    pod.dir / "containers" / (c.config.name + ".log"), options_.start_timeout);
  if (!process) return tl::unexpected(process.error());
  c.process = *process;
  c.state.id = std::string(kContainerIdPrefix) + random_uuid();
  c.state.started_at = now_time();
  c.state.terminated.reset();
  c.state.waiting_reason.clear();
  c.state.waiting_message.clear();
  c.running_since = std::chrono::steady_clock::now();
  spdlog::info("started container {}/{}/{} as {} (sandbox pid {})", pod.config.namespace_name,
               pod.config.name, c.config.name, c.state.id, c.process.init_pid);
  return {};
}

tl::expected<PodState, std::string> Runtime::run_pod(PodConfig config, const PodState* previous) {
  std::lock_guard lock(mu_);
  auto it = pods_.find(config.uid);
  if (it != pods_.end()) return snapshot(it->second);

  Pod pod;
  pod.dir = pod_dir(config.namespace_name, config.name, config.uid);
  pod.state.uid = config.uid;
  pod.state.host_ip = options_.host_ip;
  pod.state.pod_ip = previous != nullptr && !previous->pod_ip.empty()
                         ? previous->pod_ip
                         : allocate_ip_locked(config.uid);
  pod.state.start_time =
      previous != nullptr && !previous->start_time.empty() ? previous->start_time : now_time();
  std::error_code ec;
  fs::create_directories(pod.dir / "containers", ec);
  if (ec) return tl::unexpected("create " + pod.dir.string() + ": " + ec.message());
  for (const auto& [name, image] : config.init_containers) {
    ContainerState init;
    init.name = name;
    init.image = image;
    init.id = std::string(kContainerIdPrefix) + random_uuid();
    init.terminated =
        Termination{0, "Completed", pod.state.start_time, pod.state.start_time, init.id};
    pod.state.init_containers.push_back(std::move(init));
  }
  for (const auto& cc : config.containers) {
    Container c;
    c.config = cc;
    c.state.name = cc.name;
    c.state.image = cc.image;
    if (previous != nullptr) {
      auto prev = std::find_if(previous->containers.begin(), previous->containers.end(),
                               [&](const ContainerState& p) { return p.name == cc.name; });
      if (prev != previous->containers.end() && !prev->id.empty()) {
        // The simulator restarted: its sandboxes are gone, so this is a container restart.
        c.state.restart_count = prev->restart_count + 1;
        c.state.last_termination =
            Termination{137, "Error", prev->started_at, now_time(), prev->id};
      }
    }
    pod.containers.push_back(std::move(c));
  }
  pod.config = std::move(config);
  for (auto& c : pod.containers) {
    if (auto r = start_container(pod, c); !r) {
      for (auto& started : pod.containers) kill_sandbox(started.process);
      return tl::unexpected(r.error());
    }
  }
  auto state = snapshot(pod);
  pods_.emplace(pod.config.uid, std::move(pod));
  return state;
}

bool Runtime::has_pod(const std::string& uid) const {
  std::lock_guard lock(mu_);
  return pods_.count(uid) != 0;
}

std::optional<PodState> Runtime::pod_state(const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return std::nullopt;
  return snapshot(it->second);
}

std::optional<std::string> Runtime::uid_of(const std::string& ns, const std::string& name) const {
  std::lock_guard lock(mu_);
  for (const auto& [uid, pod] : pods_) {
    if (pod.config.namespace_name == ns && pod.config.name == name) return uid;
  }
  return std::nullopt;
}

std::vector<std::string> Runtime::pod_uids() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [uid, pod] : pods_) out.push_back(uid);
  return out;
}

std::vector<std::string> Runtime::pod_keys() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [uid, pod] : pods_) {
    out.push_back(pod.config.namespace_name + "/" + pod.config.name);
  }
  return out;
}

bool Runtime::uses_path(const fs::path& path) const {
  if (path.empty()) return false;
  const fs::path dir = path.lexically_normal();
  auto inside = [&](const fs::path& p) {
    auto [d, _] = std::mismatch(dir.begin(), dir.end(), p.begin(), p.end());
    return d == dir.end();
  };
  std::lock_guard lock(mu_);
  for (const auto& [uid, pod] : pods_) {
    for (const auto& c : pod.containers) {
      for (const auto& m : c.config.mounts) {
        if (inside(m.source.lexically_normal())) return true;
      }
    }
  }
  return false;
}

tl::expected<PodState, std::string> Runtime::restart(const std::string& uid,
                                                     const std::string& container, int exit_code) {
  std::lock_guard lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return tl::unexpected(std::string("pod not running on this node"));
  Pod& pod = it->second;
  if (pod.state.failed) return tl::unexpected(std::string("pod has failed; it is not restarted"));
  bool found = false;
  for (auto& c : pod.containers) {
    if (!container.empty() && c.config.name != container) continue;
    found = true;
    kill_sandbox(c.process);
    c.state.last_termination = Termination{exit_code, exit_code == 0 ? "Completed" : "Error",
                                           c.state.started_at, now_time(), c.state.id};
    c.state.restart_count += 1;
    c.backoff = {};
    if (auto r = start_container(pod, c); !r) return tl::unexpected(r.error());
  }
  if (!found) return tl::unexpected("no container \"" + container + "\" in the pod");
  return snapshot(pod);
}

tl::expected<PodState, std::string> Runtime::fail(const std::string& uid, int exit_code) {
  std::lock_guard lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return tl::unexpected(std::string("pod not running on this node"));
  Pod& pod = it->second;
  pod.state.failed = true;
  for (auto& c : pod.containers) {
    kill_sandbox(c.process);
    c.state.waiting_reason.clear();
    c.state.waiting_message.clear();
    if (!c.state.terminated) {
      c.state.terminated = Termination{exit_code, exit_code == 0 ? "Completed" : "Error",
                                       c.state.started_at, now_time(), c.state.id};
    }
  }
  return snapshot(pod);
}

void Runtime::container_exited(const Pod& pod, Container& c, int exit_code) {
  const Termination t{exit_code, exit_code == 0 ? "Completed" : "Error", c.state.started_at,
                      now_time(), c.state.id};
  const auto& policy = pod.config.restart_policy;
  const bool restart = policy == "Always" || (policy == "OnFailure" && exit_code != 0);
  spdlog::info("container {}/{}/{} ({}) exited with {}; restartPolicy {}: {}",
               pod.config.namespace_name, pod.config.name, c.config.name, c.state.id, exit_code,
               policy, restart ? "restarting it" : "it stays terminated");
  if (!restart) {
    c.state.terminated = t;
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now - c.running_since >= options_.backoff.reset_after) c.backoff = {};
  c.state.last_termination = t;
  c.state.waiting_reason = "CrashLoopBackOff";
  c.state.waiting_message =
      fmt::format("back-off {}s restarting failed container={} pod={}_{}", c.backoff.count(),
                  c.config.name, pod.config.name, pod.config.namespace_name);
  c.restart_at = now + c.backoff;
  c.backoff = c.backoff.count() == 0 ? options_.backoff.initial
                                     : std::min(c.backoff * 2, options_.backoff.max);
}

std::vector<std::string> Runtime::reap_exited() {
  std::lock_guard lock(mu_);
  std::vector<std::string> keys;
  for (auto& [uid, pod] : pods_) {
    if (pod.state.failed) continue;
    bool changed = false;
    for (auto& c : pod.containers) {
      if (c.process.bwrap_pid <= 0) continue;  // not running: terminated or backing off
      const auto code = sandbox_exit_code(c.process);
      if (!code) continue;
      container_exited(pod, c, *code);
      changed = true;
    }
    if (changed) keys.push_back(pod.config.namespace_name + "/" + pod.config.name);
  }
  return keys;
}

std::optional<std::chrono::milliseconds> Runtime::restart_due(const std::string& uid) {
  std::lock_guard lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end() || it->second.state.failed) return std::nullopt;
  Pod& pod = it->second;
  const auto now = std::chrono::steady_clock::now();
  std::optional<std::chrono::milliseconds> next;
  for (auto& c : pod.containers) {
    if (c.state.waiting_reason.empty()) continue;
    if (c.restart_at > now) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(c.restart_at - now);
      next = next ? std::min(*next, left) : left;
      continue;
    }
    c.state.restart_count += 1;
    if (auto r = start_container(pod, c); !r) {
      spdlog::error("restarting {}/{}/{}: {}", pod.config.namespace_name, pod.config.name,
                    c.config.name, r.error());
      container_exited(pod, c, 128);  // kubelet: StartError, exit code 128
    }
  }
  return next;
}

void Runtime::kill_container(const std::string& uid, const std::string& container) {
  std::lock_guard lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end() || it->second.state.failed) return;
  for (auto& c : it->second.containers) {
    if (c.config.name != container || c.process.bwrap_pid <= 0) continue;
    kill_sandbox(c.process);
    container_exited(it->second, c, 137);
  }
}

void Runtime::remove_pod(const std::string& uid) {
  std::lock_guard lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  for (auto& c : it->second.containers) kill_sandbox(c.process);
  if (auto r = remove_inside(pods_dir(), it->second.dir); !r) spdlog::warn("{}", r.error());
  pods_.erase(it);
}

void Runtime::kill_all() {
  std::lock_guard lock(mu_);
  for (auto& [uid, pod] : pods_) {
    for (auto& c : pod.containers) kill_sandbox(c.process);
  }
}

tl::expected<ExecTarget, LookupFailure> Runtime::exec_target(const std::string& ns,
                                                             const std::string& name,
                                                             const std::string& uid,
                                                             const std::string& container) const {
  std::lock_guard lock(mu_);
  for (const auto& [pod_uid, pod] : pods_) {
    if (pod.config.namespace_name != ns || pod.config.name != name) continue;
    if (!uid.empty() && uid != pod_uid) continue;
    for (const auto& c : pod.containers) {
      if (c.config.name != container) continue;
      if (!c.state.running() || c.process.init_pid <= 0) {
        return tl::unexpected(
            LookupFailure{400, fmt::format("container not running ({})", c.state.id)});
      }
      ExecTarget target{c.process.init_pid, c.state.id, c.config.env, c.config.working_dir};
      if (c.config.user) {
        target.uid = c.config.user->uid;
        target.gid = c.config.user->gid;
      }
      return target;
    }
    return tl::unexpected(
        LookupFailure{404, fmt::format("container not found (\"{}\")", container)});
  }
  return tl::unexpected(LookupFailure{404, "pod does not exist"});
}

std::optional<fs::path> Runtime::container_dir(const std::string& uid,
                                               const std::string& container) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return std::nullopt;
  for (const auto& c : it->second.containers) {
    if (c.config.name == container) return it->second.dir / "containers" / container;
  }
  return std::nullopt;
}

}  // namespace kstack::nodesim
