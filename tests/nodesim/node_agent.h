// The node's life in the API: registers the Node (addresses, kubelet endpoint port, capacity,
// nodeInfo, labels), keeps its Lease in kube-node-lease renewed and its NodeReady condition's
// lastHeartbeatTime fresh, and can stop doing so to simulate losing the node.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <boost/json/value.hpp>

#include "tests/nodesim/context.h"

namespace kstack::nodesim {

class NodeAgent {
 public:
  NodeAgent(Context& ctx, int exec_port, int control_port);
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  // Creates or updates the Node (status Ready) and its Lease. Called once, before start().
  kube::Result<void> register_node();
  // Heartbeats every options.heartbeat_interval on a thread of its own.
  void start();
  void stop();

  // "Losing" the node: no heartbeats or lease renewals (and ctx.lost for the other roles).
  void stop_heartbeats();
  // Back: an immediate heartbeat, then `on_resume` (the roles re-examine everything).
  void resume_heartbeats(std::function<void()> on_resume);

 private:
  // The status this agent reports; conditions have been true since `ready_since`.
  boost::json::object node_status(const std::string& ready_since) const;
  void loop();
  kube::Result<void> heartbeat();
  kube::Result<void> renew_lease();

  Context& ctx_;
  const int exec_port_;
  const int control_port_;
  std::string ready_since_;
  std::string node_uid_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool wake_ = false;
  std::thread thread_;
};

}  // namespace kstack::nodesim
