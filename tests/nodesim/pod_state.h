// What the simulated container runtime knows about a pod: container IDs, restarts, exit codes.
// The kubelet turns it into the pod's status (pod_status.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kstack::nodesim {

// The "sim://" runtime's container IDs, as containerStatuses[].containerID shows them.
inline constexpr const char* kContainerIdPrefix = "sim://";

struct Termination {
  int exit_code = 0;
  std::string reason;  // Completed, Error
  std::string started_at;
  std::string finished_at;
  std::string container_id;
};

struct ContainerState {
  std::string name;
  std::string image;
  std::string id;  // sim://<uuid>
  int restart_count = 0;
  std::string started_at;
  std::optional<Termination> terminated;        // the container is not running
  std::optional<Termination> last_termination;  // lastState after a restart
  // Not running, to be restarted after a back-off (state.waiting: CrashLoopBackOff).
  std::string waiting_reason;
  std::string waiting_message;
  // The readiness probe's verdict (--http-probes); nullopt: not probed, ready while running.
  std::optional<bool> readiness;
  // The startup probe's verdict; nullopt: none, started once running.
  std::optional<bool> started;

  bool running() const { return !terminated && waiting_reason.empty(); }
};

struct PodState {
  std::string uid;
  std::string pod_ip;
  std::string host_ip;
  std::string start_time;
  bool failed = false;                          // POST /pods/../fail: phase Failed
  std::vector<ContainerState> init_containers;  // always terminated (Completed)
  std::vector<ContainerState> containers;       // spec order
};

}  // namespace kstack::nodesim
