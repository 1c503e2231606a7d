// Starts kstack-nodesim (tests/nodesim, docs/nodesim.md) as a child of the test process
// against a test control plane, waits until its Node is Ready, and drives its test controls:
// restart or fail a pod's containers, stop and resume the node's heartbeats.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <tl/expected.hpp>

#include "tests/testenv/control_plane.h"
#include "tests/testenv/process.h"

namespace kstack::testenv {

// Faster than a kubelet's 10 s, so that a shortened --node-monitor-grace-period is safe.
inline constexpr std::chrono::milliseconds kNodeSimHeartbeatInterval{2000};

struct NodeSimulatorOptions {
  std::string node_name;  // default: nodesim-<n>, unique in this process
  std::map<std::string, std::string> labels;
  std::string cpu = "8";
  std::string memory = "16Gi";
  int pods = 110;
  std::chrono::milliseconds heartbeat_interval = kNodeSimHeartbeatInterval;
  std::string storage_class = "standard";  // created (default class) if absent; "" = none
  // Default: $KSTACK_NODESIM, else the kstack-nodesim built with the tests.
  std::filesystem::path binary;
  // Default: <control plane work dir>/nodesim-<node>; reusing it keeps volumes across runs.
  std::filesystem::path state_dir;
  std::chrono::seconds ready_timeout{60};
  std::string log_level = "info";
  // Exec subprotocols the node serves (--exec-protocols), e.g. "v4.channel.k8s.io" as a kubelet
  // before 1.30. Default: $KSTACK_NODESIM_EXEC_PROTOCOLS (so one test binary runs against each
  // from ctest), else every one the simulator knows (v5 first choice).
  std::string exec_protocols;
  // The node's pod IPs (--pod-cidr, an IPv4 /24). Default: a /24 of its own, the same for every
  // simulator of this name in the process (default_pod_cidr), so that pod IPs are unique across
  // all the simulated nodes of a test binary.
  std::string pod_cidr;
  // Container images the node runs (--image=<ref>=<dir>): reference -> build context
  // directory holding a Dockerfile (docs/nodesim.md, "Images"). The e2e environment's nodes
  // default to every appdefs image (testing/e2e.h, appdef_images()).
  std::map<std::string, std::filesystem::path> images;
  std::vector<std::string> extra_args;
};

// The /24 of pod IPs a simulator named `node_name` gets by default: in the pod network
// (tests/nodesim/testing/pod_network.h) 10.244.<n>.0/24, else 127.0.<n>.0/24 (loopback: local,
// but never valid in Endpoints), with n = 1, 2, ... in order of first use of each name.
std::string default_pod_cidr(const std::string& node_name);

// The exec subprotocols a simulator started with default options serves ("" = all).
std::string default_exec_protocols();

class NodeSimulator {
 public:
  // Starts the simulator with the control plane's admin kubeconfig and returns once its Node
  // is Ready (the simulator registers it only when every role runs). Children die with the
  // calling thread (PR_SET_PDEATHSIG), as the control plane's do.
  static tl::expected<std::unique_ptr<NodeSimulator>, std::string> start(
      const ControlPlane& control_plane, NodeSimulatorOptions options = {});

  NodeSimulator(const NodeSimulator&) = delete;
  NodeSimulator& operator=(const NodeSimulator&) = delete;
  ~NodeSimulator();  // stop()

  // SIGTERM (the simulator kills its sandboxes), SIGKILL after 10 s. The Node object stays
  // and goes NotReady. Idempotent.
  void stop();
  bool running() { return process_.running(); }

  const std::string& node_name() const { return options_.node_name; }
  int exec_port() const { return exec_port_; }
  int control_port() const { return control_port_; }
  const std::filesystem::path& state_dir() const { return options_.state_dir; }
  const std::filesystem::path& log() const { return process_.log(); }
  // "" when it serves every subprotocol.
  const std::string& exec_protocols() const { return options_.exec_protocols; }
  const std::string& pod_cidr() const { return options_.pod_cidr; }

  // Test controls. Restart: new container ID(s), restartCount + 1, private directories wiped
  // (PVC data kept), lastState.terminated.exitCode = exit_code. Fail: containers terminated
  // with exit_code, phase Failed. Both return the simulator's JSON answer at once (new
  // container IDs); the pod's API status follows within moments — wait for it with a watch.
  tl::expected<std::string, std::string> restart_pod(const std::string& ns, const std::string& pod,
                                                     const std::string& container = {},
                                                     int exit_code = 137);
  tl::expected<std::string, std::string> fail_pod(const std::string& ns, const std::string& pod,
                                                  int exit_code = 1);
  // {"uid", "dir", "containers": {name: {"id", "restartCount", "root"}}}: where the pod's
  // sandboxes are on this host.
  tl::expected<std::string, std::string> describe_pod(const std::string& ns,
                                                      const std::string& pod);
  tl::expected<void, std::string> stop_heartbeats();
  tl::expected<void, std::string> resume_heartbeats();

  // Any control request; returns the body of a 2xx answer.
  tl::expected<std::string, std::string> control(const std::string& method,
                                                 const std::string& path_and_query);

 private:
  explicit NodeSimulator(NodeSimulatorOptions options) : options_(std::move(options)) {}
  tl::expected<void, std::string> wait_ready(const ControlPlane& control_plane,
                                             const std::string& instance_id);

  NodeSimulatorOptions options_;
  ChildProcess process_;
  int exec_port_ = 0;
  int control_port_ = 0;
  bool stopped_ = false;
};

}  // namespace kstack::testenv
