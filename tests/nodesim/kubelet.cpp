// The kubelet role (see kubelet.h). One work queue of pod keys: a key is reconciled by one
// worker at a time, and only workers write pod status, so status patches never race.
#include "tests/nodesim/kubelet.h"

#include <algorithm>
#include <fstream>
#include <set>

#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "tests/nodesim/dom.h"
#include "tests/nodesim/json_util.h"
#include "tests/nodesim/pod_config.h"
#include "tests/nodesim/pod_status.h"
#include "tests/nodesim/probe.h"
#include "tests/nodesim/probe_exec.h"

namespace kstack::nodesim {

namespace json = boost::json;
namespace fs = std::filesystem;
using ObjectPtr = DomPtr;
using informer::WorkResult;

namespace {

constexpr auto kRetryPending = std::chrono::seconds(2);

std::optional<std::string> base64_decode(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r') continue;
    int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

// Writes a ConfigMap's or Secret's keys as files (all keys, or `items` key -> path).
tl::expected<void, std::string> project(const json::value& object, bool base64_values,
                                        const json::array* items, const fs::path& dir) {
  std::map<std::string, std::string> data;
  auto take = [&](std::string_view pointer, bool encoded) -> tl::expected<void, std::string> {
    if (const auto* o = obj(object, pointer)) {
      for (const auto& [k, v] : *o) {
        if (!v.is_string()) continue;
        if (encoded) {
          auto decoded = base64_decode(v.get_string());
          if (!decoded) return tl::unexpected(fmt::format("key {} is not base64", std::string(k)));
          data[std::string(k)] = std::move(*decoded);
        } else {
          data[std::string(k)] = std::string(v.get_string());
        }
      }
    }
    return {};
  };
  if (auto r = take("/data", base64_values); !r) return r;
  if (auto r = take("/binaryData", true); !r) return r;
  std::vector<std::pair<std::string, std::string>> files;  // relative path, content
  if (items != nullptr && !items->empty()) {
    for (const auto& item : *items) {
      auto it = data.find(str(item, "/key"));
      std::string path = str(item, "/path");
      if (it == data.end() || !safe_relative_path(path) || path.empty()) continue;
      files.emplace_back(path, it->second);
    }
  } else {
    for (const auto& [k, v] : data) files.emplace_back(k, v);
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  for (const auto& [path, content] : files) {
    fs::create_directories((dir / path).parent_path(), ec);
    std::ofstream out(dir / path, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) return tl::unexpected("cannot write " + (dir / path).string());
  }
  return {};
}

// The state a previous run of this node left in the API (the simulator restarted).
std::optional<PodState> previous_state(const json::value& pod) {
  const auto* statuses = arr(pod, "/status/containerStatuses");
  if (statuses == nullptr) return std::nullopt;
  PodState prev;
  prev.pod_ip = str(pod, "/status/podIP");
  prev.start_time = str(pod, "/status/startTime");
  for (const auto& s : *statuses) {
    std::string id = str(s, "/containerID");
    if (id.rfind(kContainerIdPrefix, 0) != 0) continue;
    ContainerState c;
    c.name = str(s, "/name");
    c.id = id;
    c.started_at = str(s, "/state/running/startedAt");
    if (const auto* n = find(s, "/restartCount"); n != nullptr && n->is_int64()) {
      c.restart_count = static_cast<int>(n->get_int64());
    }
    prev.containers.push_back(std::move(c));
  }
  if (prev.containers.empty()) return std::nullopt;
  return prev;
}

json::value state_json(const PodState& state) {
  json::array containers;
  for (const auto& c : state.containers) {
    containers.emplace_back(json::object{{"name", c.name},
                                         {"containerID", c.id},
                                         {"restartCount", c.restart_count},
                                         {"running", !c.terminated.has_value()}});
  }
  return json::object{{"uid", state.uid},
                      {"podIP", state.pod_ip},
                      {"failed", state.failed},
                      {"containers", std::move(containers)}};
}

}  // namespace

Kubelet::Kubelet(Context& ctx)
    : ctx_(ctx),
      queue_(queue_options("kubelet")),
      // Containers that run a process (a command, or a registered image's entrypoint) get
      // every probe; idle ones (nothing of theirs would answer) only their httpGet readiness
      // probe, with --http-probes.
      prober_(
          [&ctx](const json::value& container) {
            return arr(container, "/command") != nullptr ||
                   ctx.images.find(str(container, "/image")) != nullptr;
          },
          ctx.options.http_probes) {}

Kubelet::~Kubelet() { stop(); }

bool Kubelet::mine(const json::value& pod) const {
  return str(pod, "/spec/nodeName") == ctx_.node.name;
}

informer::EventHandler Kubelet::pod_handler() {
  auto relevant = [this](const ObjectPtr& o) {
    if (mine(*o)) return true;
    return ctx_.runtime->uid_of(str(*o, "/metadata/namespace"), str(*o, "/metadata/name"))
        .has_value();
  };
  DomEventHandler h;
  h.on_add = [this, relevant](const ObjectPtr& o) {
    if (relevant(o)) queue_.add(informer::object_key(*o));
  };
  h.on_update = [this, relevant](const ObjectPtr&, const ObjectPtr& o) {
    if (relevant(o)) queue_.add(informer::object_key(*o));
  };
  h.on_resync = h.on_add;  // a periodic look at every sandbox (containers that died)
  h.on_delete = [this](const ObjectPtr& o, bool) { queue_.add(informer::object_key(*o)); };
  return packed_handler(std::move(h));
}

informer::EventHandler Kubelet::volume_handler() {
  auto retry_waiting = [this](const ObjectPtr&) {
    for (const auto& pod : doms_of(ctx_.pods->store().list())) {
      if (mine(*pod) && !ctx_.runtime->has_pod(str(*pod, "/metadata/uid"))) {
        queue_.add(informer::object_key(*pod));
      }
    }
  };
  DomEventHandler h;
  h.on_add = retry_waiting;
  h.on_update = [retry_waiting](const ObjectPtr&, const ObjectPtr& o) { retry_waiting(o); };
  return packed_handler(std::move(h));
}

void Kubelet::start() {
  // Sandboxes of pods this node no longer has (a previous run's leftovers).
  std::set<std::string> uids;
  for (const auto& pod : doms_of(ctx_.pods->store().list())) {
    if (mine(*pod)) uids.insert(str(*pod, "/metadata/uid"));
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(ctx_.runtime->pods_dir(), ec)) {
    auto name = entry.path().filename().string();
    auto uid = name.substr(name.rfind('_') + 1);
    if (uids.count(uid) == 0) {
      spdlog::info("removing the sandbox directory of a pod gone while we were away: {}", name);
      (void)remove_inside(ctx_.runtime->pods_dir(), entry.path());
    }
  }
  workers_ = std::make_unique<informer::Workers>(
      queue_, ctx_.options.kubelet_workers,
      [this](const std::string& key) { return reconcile(key); });
  exit_watcher_ = std::thread([this] { watch_exits(); });
  enqueue_all();
}

void Kubelet::stop() {
  {
    std::lock_guard lock(exit_mu_);
    stopping_ = true;
  }
  exit_cv_.notify_all();
  if (exit_watcher_.joinable()) exit_watcher_.join();
  if (workers_) workers_->stop();
}

void Kubelet::watch_exits() {
  constexpr auto kExitPollInterval = std::chrono::milliseconds(200);
  std::unique_lock lock(exit_mu_);
  while (!exit_cv_.wait_for(lock, kExitPollInterval, [this] { return stopping_; })) {
    for (const auto& key : ctx_.runtime->reap_exited()) queue_.add(key);
  }
}

WorkResult Kubelet::reconcile(const std::string& key) {
  ObjectPtr pod = dom_of(ctx_.pods->store().get(key));
  auto slash = key.find('/');
  std::string ns = key.substr(0, slash);
  std::string name = key.substr(slash + 1);
  const bool lost = ctx_.lost.load();
  if (auto uid = ctx_.runtime->uid_of(ns, name);
      uid && (!pod || str(*pod, "/metadata/uid") != *uid)) {
    // A kubelet cut off from the API server does not learn that a pod was deleted (force
    // deleted, as for a lost node): its containers keep running until the node is back.
    if (lost) return WorkResult::success();  // resume_heartbeats() queues it again
    spdlog::info("pod {} is gone; removing its sandbox (uid {})", key, *uid);
    ctx_.runtime->remove_pod(*uid);
    prober_.forget(*uid);
  }
  if (!pod || !mine(*pod)) return WorkResult::success();
  if (lost) return run_while_lost(*pod);
  if (find(*pod, "/metadata/deletionTimestamp") != nullptr) return finish_deletion(*pod);

  const std::string uid = str(*pod, "/metadata/uid");
  if (ctx_.runtime->has_pod(uid)) {
    const auto next_restart = ctx_.runtime->restart_due(uid);
    auto state = ctx_.runtime->pod_state(uid);
    if (!state) return WorkResult::success();
    auto next = run_probes(*pod, *state);
    if (next_restart) next = next ? std::min(*next, *next_restart) : *next_restart;
    auto desired = running_status(*pod, *state, now_time());
    if (status_needs_update(*pod, desired)) {
      if (auto r = patch_status(*pod, desired); !r) return WorkResult::retry(r.error().to_string());
    }
    return next ? WorkResult::requeue_after(*next) : WorkResult::success();
  }
  if (pod_terminated(*pod)) return WorkResult::success();
  return start_pod(*pod);
}

WorkResult Kubelet::run_while_lost(const json::value& pod) {
  // The node goes on without the API: its containers are restarted and probed as usual, but
  // nothing is written (the status is reported again by resume_heartbeats()), no new pod is
  // started and a deletion is not seen.
  const std::string uid = str(pod, "/metadata/uid");
  if (!ctx_.runtime->has_pod(uid)) return WorkResult::success();
  const auto next_restart = ctx_.runtime->restart_due(uid);
  auto state = ctx_.runtime->pod_state(uid);
  if (!state) return WorkResult::success();
  auto next = run_probes(pod, *state);
  if (next_restart) next = next ? std::min(*next, *next_restart) : *next_restart;
  return next ? WorkResult::requeue_after(*next) : WorkResult::success();
}

void Kubelet::enqueue_all() {
  for (const auto& pod : doms_of(ctx_.pods->store().list())) {
    if (mine(*pod)) queue_.add(informer::object_key(*pod));
  }
  // Sandboxes whose pod is gone from the API (deleted while the node was lost).
  for (const auto& key : ctx_.runtime->pod_keys()) queue_.add(key);
}

WorkResult Kubelet::finish_deletion(const json::value& pod) {
  const std::string uid = str(pod, "/metadata/uid");
  const std::string ns = str(pod, "/metadata/namespace");
  const std::string name = str(pod, "/metadata/name");
  ctx_.runtime->remove_pod(uid);
  prober_.forget(uid);
  kube::DeleteOptions options;
  options.precondition_uid = uid;
  options.grace_period_seconds = 0;
  auto r = ctx_.client->remove(kube::resources::kPods, ns, name, options);
  if (r) {
    spdlog::info("pod {}/{} terminated and deleted (uid {})", ns, name, uid);
  } else if (!r.error().is(kube::ErrorKind::kNotFound) &&
             !r.error().is(kube::ErrorKind::kConflict)) {
    return WorkResult::retry("delete pod: " + r.error().to_string());
  }
  return WorkResult::success();
}

tl::expected<ResolvedVolume, std::string> Kubelet::resolve_volume(const json::value& pod,
                                                                  const json::value& volume) {
  const std::string ns = str(pod, "/metadata/namespace");
  const std::string vol = str(volume, "/name");
  const fs::path dir =
      ctx_.runtime->pod_dir(ns, str(pod, "/metadata/name"), str(pod, "/metadata/uid")) / "volumes" /
      vol;
  std::error_code ec;
  if (auto claim = str(volume, "/persistentVolumeClaim/claimName"); !claim.empty()) {
    auto pvc = dom_of(ctx_.claims->store().get(informer::object_key(ns, claim)));
    if (!pvc) return tl::unexpected(fmt::format("persistentvolumeclaim \"{}\" not found", claim));
    std::string pv_name = str(*pvc, "/spec/volumeName");
    if (pv_name.empty() || str(*pvc, "/status/phase") != "Bound") {
      return tl::unexpected(
          fmt::format("waiting for PersistentVolumeClaim \"{}\" to be bound", claim));
    }
    auto pv = dom_of(ctx_.volumes->store().get(pv_name));
    if (!pv) return tl::unexpected(fmt::format("persistentvolume \"{}\" not found", pv_name));
    if (!pv_allows_node(*pv, ctx_.node)) {
      return tl::unexpected(fmt::format("volume {} is bound to another node", pv_name));
    }
    fs::path path = str(*pv, "/spec/local/path");
    if (path.empty()) path = str(*pv, "/spec/hostPath/path");
    if (path.empty()) {
      return tl::unexpected(fmt::format("volume {} has no local or hostPath source", pv_name));
    }
    if (!fs::exists(path, ec)) fs::create_directories(path, ec);
    if (!fs::is_directory(path, ec)) {
      return tl::unexpected(
          fmt::format("volume {}: {} is not a directory", pv_name, path.string()));
    }
    return ResolvedVolume{path, flag(volume, "/persistentVolumeClaim/readOnly")};
  }
  if (auto host = str(volume, "/hostPath/path"); !host.empty()) {
    std::string type = str(volume, "/hostPath/type");
    if ((type.empty() || type == "DirectoryOrCreate") && !fs::exists(host, ec)) {
      fs::create_directories(host, ec);
    }
    return ResolvedVolume{host, false};
  }
  fs::create_directories(dir, ec);
  if (ec) return tl::unexpected("create " + dir.string() + ": " + ec.message());
  auto project_from = [&](const kube::ResourceType& type, const std::string& object_name,
                          bool optional, bool secret,
                          const json::array* items) -> tl::expected<void, std::string> {
    auto object = ctx_.client->get(type, ns, object_name);
    if (!object) {
      if (object.error().is(kube::ErrorKind::kNotFound) && optional) return {};
      return tl::unexpected(fmt::format("{} \"{}\": {}", secret ? "secret" : "configmap",
                                        object_name, object.error().to_string()));
    }
    return project(*object, secret, items, dir);
  };
  if (find(volume, "/configMap") != nullptr) {
    auto r =
        project_from(kube::resources::kConfigMaps, str(volume, "/configMap/name"),
                     flag(volume, "/configMap/optional"), false, arr(volume, "/configMap/items"));
    if (!r) return tl::unexpected(r.error());
  } else if (find(volume, "/secret") != nullptr) {
    auto r = project_from(kube::resources::kSecrets, str(volume, "/secret/secretName"),
                          flag(volume, "/secret/optional"), true, arr(volume, "/secret/items"));
    if (!r) return tl::unexpected(r.error());
  } else if (const auto* sources = arr(volume, "/projected/sources")) {
    for (const auto& s : *sources) {
      tl::expected<void, std::string> r;
      if (find(s, "/configMap") != nullptr) {
        r = project_from(kube::resources::kConfigMaps, str(s, "/configMap/name"),
                         flag(s, "/configMap/optional"), false, arr(s, "/configMap/items"));
      } else if (find(s, "/secret") != nullptr) {
        r = project_from(kube::resources::kSecrets, str(s, "/secret/name"),
                         flag(s, "/secret/optional"), true, arr(s, "/secret/items"));
      }
      if (!r) return tl::unexpected(r.error());
    }
  } else if (find(volume, "/emptyDir") != nullptr) {
    // As the kubelet makes them: writable by any user the container runs as.
    fs::permissions(dir, fs::perms::all, ec);
  } else {
    spdlog::info("pod {}/{}: volume {} is of an unsupported type; mounting an empty directory", ns,
                 str(pod, "/metadata/name"), vol);
  }
  return ResolvedVolume{dir, find(volume, "/emptyDir") == nullptr};
}

WorkResult Kubelet::start_pod(const json::value& pod) {
  const std::string key = informer::object_key(pod);
  std::vector<std::string> notes;
  auto config = build_pod_config(
      pod, [&](const json::value& v) { return resolve_volume(pod, v); }, notes,
      ImageContext{&ctx_.images});
  // Waiting for volumes is cheap to re-check; a sandbox that failed to start is retried with
  // the queue's exponential backoff.
  auto pending = [&](std::string_view reason, const std::string& message, WorkResult then) {
    auto desired = pending_status(pod, reason, message, now_time());
    if (status_needs_update(pod, desired)) {
      spdlog::info("pod {} pending: {}", key, message);
      if (auto r = patch_status(pod, desired); !r) return WorkResult::retry(r.error().to_string());
    }
    return then;
  };
  if (!config) {
    return pending("ContainerCreating", config.error(), WorkResult::requeue_after(kRetryPending));
  }
  for (const auto& note : notes) spdlog::info("pod {}: {}", key, note);
  for (const auto& c : config->containers) {
    for (const auto& m : c.mounts) {
      if (auto made = make_mount_source(m.source); !made) {  // a subPath
        return pending("CreateContainerConfigError", "subPath: " + made.error(),
                       WorkResult::requeue_after(kRetryPending));
      }
    }
  }
  auto previous = previous_state(pod);
  auto state = ctx_.runtime->run_pod(std::move(*config), previous ? &*previous : nullptr);
  if (!state) {
    return pending("CreateContainerError", state.error(), WorkResult::retry(state.error()));
  }
  const auto next_probe = run_probes(pod, *state);
  auto desired = running_status(pod, *state, now_time());
  if (auto r = patch_status(pod, desired); !r) return WorkResult::retry(r.error().to_string());
  spdlog::info("pod {} running (ip {})", key, state->pod_ip);
  return next_probe ? WorkResult::requeue_after(*next_probe) : WorkResult::success();
}

kube::Result<void> Kubelet::patch_status(const json::value& pod, const json::object& desired) {
  // The uid makes the patch fail (Conflict/Invalid) instead of touching a pod that was
  // deleted and recreated under the same name.
  json::object body{{"metadata", json::object{{"uid", str(pod, "/metadata/uid")}}},
                    {"status", desired}};
  auto r = ctx_.client->patch(kube::resources::kPods, str(pod, "/metadata/namespace"),
                              str(pod, "/metadata/name"), kube::PatchType::kMerge,
                              json::serialize(body), {}, "status");
  if (!r) {
    const auto& e = r.error();
    if (e.is(kube::ErrorKind::kNotFound) || e.is(kube::ErrorKind::kConflict)) return {};
    if (e.is(kube::ErrorKind::kInvalid)) {
      spdlog::warn("status of pod {} refused: {}", informer::object_key(pod), e.to_string());
      return {};
    }
    return tl::unexpected(e);
  }
  return {};
}

std::optional<std::chrono::milliseconds> Kubelet::run_probes(const json::value& pod,
                                                             PodState& state) {
  const std::string ns = str(pod, "/metadata/namespace");
  const std::string name = str(pod, "/metadata/name");
  auto run = [&](const ProbeSpec& probe,
                 const std::string& container) -> tl::expected<void, std::string> {
    switch (probe.action) {
      case ProbeAction::kHttpGet:
        return run_http_get(probe);
      case ProbeAction::kTcpSocket:
        return run_tcp_socket(probe);
      case ProbeAction::kExec:
        break;
    }
    auto target = ctx_.runtime->exec_target(ns, name, state.uid, container);
    if (!target) return tl::unexpected(target.error().message);
    return run_exec_probe(*target, probe.command, probe.timeout);
  };
  auto outcome = prober_.probe(pod, state, std::chrono::steady_clock::now(), run);
  if (outcome.kill.empty()) return outcome.next;
  for (const auto& container : outcome.kill) {
    spdlog::info("pod {}/{}: container {} failed its probe; killing it", ns, name, container);
    ctx_.runtime->kill_container(state.uid, container);
  }
  if (auto after = ctx_.runtime->pod_state(state.uid)) {
    // The verdicts of the containers that were not killed stand.
    for (auto& c : after->containers) {
      for (const auto& before : state.containers) {
        if (before.id == c.id && c.running()) {
          c.readiness = before.readiness;
          c.started = before.started;
        }
      }
    }
    state = std::move(*after);
  }
  // At once: a restart without back-off is due now (Runtime::restart_due).
  return std::chrono::milliseconds(0);
}

tl::expected<json::value, ControlError> Kubelet::restart(const std::string& ns,
                                                         const std::string& name,
                                                         const std::string& container,
                                                         int exit_code) {
  auto uid = ctx_.runtime->uid_of(ns, name);
  if (!uid) return tl::unexpected(ControlError{404, "pod is not running on this node"});
  auto state = ctx_.runtime->restart(*uid, container, exit_code);
  if (!state) return tl::unexpected(ControlError{409, state.error()});
  spdlog::info("pod {}/{}: container(s) restarted by request", ns, name);
  queue_.add(informer::object_key(ns, name));
  return state_json(*state);
}

tl::expected<json::value, ControlError> Kubelet::fail(const std::string& ns,
                                                      const std::string& name, int exit_code) {
  auto uid = ctx_.runtime->uid_of(ns, name);
  if (!uid) return tl::unexpected(ControlError{404, "pod is not running on this node"});
  auto state = ctx_.runtime->fail(*uid, exit_code);
  if (!state) return tl::unexpected(ControlError{409, state.error()});
  spdlog::info("pod {}/{}: failed by request (exit code {})", ns, name, exit_code);
  queue_.add(informer::object_key(ns, name));
  return state_json(*state);
}

tl::expected<json::value, ControlError> Kubelet::describe(const std::string& ns,
                                                          const std::string& name) {
  auto uid = ctx_.runtime->uid_of(ns, name);
  if (!uid) return tl::unexpected(ControlError{404, "pod is not running on this node"});
  auto state = ctx_.runtime->pod_state(*uid);
  if (!state) return tl::unexpected(ControlError{404, "pod is not running on this node"});
  json::object containers;
  for (const auto& c : state->containers) {
    auto dir = ctx_.runtime->container_dir(*uid, c.name);
    containers[c.name] = json::object{{"id", c.id},
                                      {"restartCount", c.restart_count},
                                      {"root", dir ? dir->string() : std::string()}};
  }
  json::object out = state_json(*state).as_object();
  out["dir"] = ctx_.runtime->pod_dir(ns, name, *uid).string();
  out["containers"] = std::move(containers);
  return out;
}

}  // namespace kstack::nodesim
