// The simulated container runtime: one bubblewrap sandbox per container, grouped by pod, with
// container IDs, restart counts and exit codes, and the lookup the exec endpoint uses.
// Thread-safe. Directory layout (docs/nodesim.md):
//   <state>/pods/<namespace>_<name>_<uid>/containers/<container>/{etc,opt,var,tmp,...}
//   <state>/pods/<namespace>_<name>_<uid>/containers/<container>.log   (bwrap's stderr)
//   <state>/pods/<namespace>_<name>_<uid>/volumes/<volume>             (emptyDir, projections)
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tl/expected.hpp>

#include "tests/nodesim/image.h"
#include "tests/nodesim/pod_state.h"
#include "tests/nodesim/process.h"
#include "tests/nodesim/sandbox.h"

namespace kstack::nodesim {

struct ContainerConfig {
  std::string name;
  std::string image;
  std::vector<BindMount> mounts;  // volumes (PVC directories, emptyDirs, projections)
  std::vector<std::string> env;   // KEY=VALUE
  std::string working_dir;
  // The process: command + args ($(VAR) expanded), or for a registered image its ENTRYPOINT
  // and CMD by Kubernetes' rules; empty: the sandbox idles (`sleep infinity`), as an
  // unregistered image's entrypoint is unknown.
  std::vector<std::string> command;
  // The registered image (its files are placed at each start); null when not registered.
  std::shared_ptr<const Image> image_def;
  // The identity of the process and of every exec (USER, securityContext); nullopt: the
  // simulator's own (root), for unregistered images.
  std::optional<UserIds> user;
};

struct PodConfig {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string hostname;  // spec.hostname or the pod name
  std::string fqdn;      // hostname.subdomain.ns.svc.cluster.local when spec.subdomain is set
  std::vector<std::pair<std::string, std::string>> init_containers;  // name, image
  std::vector<ContainerConfig> containers;
  std::string restart_policy = "Always";  // Always, OnFailure, Never
};

// The kubelet's crash-loop back-off: the first restart at once, then 10 s doubling up to 5 min;
// a container that ran 10 min starts over.
struct RestartBackoff {
  std::chrono::seconds initial{10};
  std::chrono::seconds max{300};
  std::chrono::seconds reset_after{600};
};

struct RuntimeOptions {
  std::filesystem::path state_dir;
  std::string bwrap = "/usr/bin/bwrap";
  std::string host_ip = "127.0.0.1";
  // Pod IPs are <prefix>2 .. <prefix>254 (the /24 of --pod-cidr).
  std::string pod_ip_prefix = "127.0.0.";
  std::chrono::milliseconds start_timeout{20'000};
  RestartBackoff backoff;
  std::string cluster_dns;  // resolv.conf's nameserver; "" = the host's resolv.conf
};

struct LookupFailure {
  int http_status = 404;
  std::string message;
};

class Runtime {
 public:
  explicit Runtime(RuntimeOptions options);
  ~Runtime();  // kills every sandbox (directories are kept)
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const RuntimeOptions& options() const { return options_; }
  std::filesystem::path pods_dir() const { return options_.state_dir / "pods"; }
  std::filesystem::path pod_dir(const std::string& ns, const std::string& name,
                                const std::string& uid) const;

  // Starts every container of a pod not running yet. `previous` (a pod this node ran before
  // the simulator restarted) carries restart counts, start time and pod IP forward.
  tl::expected<PodState, std::string> run_pod(PodConfig config, const PodState* previous);
  bool has_pod(const std::string& uid) const;
  std::optional<PodState> pod_state(const std::string& uid) const;
  std::optional<std::string> uid_of(const std::string& ns, const std::string& name) const;
  std::vector<std::string> pod_uids() const;
  // "<namespace>/<name>" of every pod that has sandboxes here (running or not).
  std::vector<std::string> pod_keys() const;
  // Whether a sandbox here mounts `path` (a volume's directory) or something inside it.
  bool uses_path(const std::filesystem::path& path) const;

  // Kills and starts the container(s) again with fresh private dirs ("" = every container):
  // new container ID, restartCount + 1, lastState terminated with `exit_code`.
  tl::expected<PodState, std::string> restart(const std::string& uid, const std::string& container,
                                              int exit_code);
  // Kills every container and marks them terminated with `exit_code`; the pod is Failed.
  tl::expected<PodState, std::string> fail(const std::string& uid, int exit_code);
  // Notices containers whose process ended (reaping them): each is terminated with its exit
  // code, or, when spec.restartPolicy restarts it, waits out its back-off. Returns the
  // "<ns>/<name>" keys of the pods that changed. Cheap: the kubelet calls it every 200 ms.
  std::vector<std::string> reap_exited();
  // Starts the containers whose back-off is over. Returns when to look again (the next
  // back-off ending), nullopt when none waits.
  std::optional<std::chrono::milliseconds> restart_due(const std::string& uid);
  // Kills a container whose liveness or startup probe failed: it exits with 137 and is
  // restarted (or not) by restartPolicy, as if it had died.
  void kill_container(const std::string& uid, const std::string& container);
  // Kills the pod's sandboxes and deletes its directory.
  void remove_pod(const std::string& uid);
  void kill_all();

  // What an exec into ns/name/container runs in: 404 unknown pod or container (or a different
  // uid when one is given), 400 when the container is not running.
  tl::expected<ExecTarget, LookupFailure> exec_target(const std::string& ns,
                                                      const std::string& name,
                                                      const std::string& uid,
                                                      const std::string& container) const;
  // Host directory of a container's private tree (for the test controls).
  std::optional<std::filesystem::path> container_dir(const std::string& uid,
                                                     const std::string& container) const;

 private:
  struct Container {
    ContainerConfig config;
    ContainerState state;
    SandboxProcess process;
    std::chrono::steady_clock::time_point restart_at;  // while state.waiting_reason is set
    std::chrono::steady_clock::time_point running_since;
    std::chrono::seconds backoff{0};  // the next restart's delay
  };
  struct Pod {
    PodConfig config;
    std::filesystem::path dir;
    PodState state;  // containers are filled in by snapshot()
    std::vector<Container> containers;
  };

  tl::expected<void, std::string> start_container(Pod& pod, Container& c);
  // After the container's process ended with `exit_code`: terminated, or waiting to restart.
  void container_exited(const Pod& pod, Container& c, int exit_code);
  std::string allocate_ip_locked(const std::string& uid) const;
  static PodState snapshot(const Pod& pod);

  RuntimeOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, Pod> pods_;  // by uid
};

}  // namespace kstack::nodesim
