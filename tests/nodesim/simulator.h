// kstack-nodesim: one simulated Kubernetes node (the kubelet role with bubblewrap sandboxes
// and the exec endpoint, plus scheduler and volume-provisioner roles), wired together. See
// docs/nodesim.md.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include <tl/expected.hpp>

#include "tests/nodesim/context.h"

namespace kstack::nodesim {

class ControlServer;
class ExecServer;
class Kubelet;
class NodeAgent;
class Provisioner;
class Scheduler;
struct ControlRequest;
struct ControlResponse;

class Simulator {
 public:
  // Starts everything and returns once the Node is registered Ready and every role runs.
  static tl::expected<std::unique_ptr<Simulator>, std::string> start(Options options);
  ~Simulator();  // stop()
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Stops serving and kills every sandbox; the Node is left as it is (it goes NotReady, as a
  // stopped kubelet's would).
  void stop();

  const std::string& node_name() const { return ctx_.node.name; }
  int exec_port() const;
  int control_port() const;

 private:
  Simulator() = default;
  tl::expected<void, std::string> init(Options options);
  ControlResponse handle(const ControlRequest& request);

  Context ctx_;
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<informer::Informer> pods_, claims_, volumes_, classes_, nodes_;
  std::unique_ptr<Kubelet> kubelet_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Provisioner> provisioner_;
  std::unique_ptr<NodeAgent> agent_;
  std::unique_ptr<ExecServer> exec_;
  std::unique_ptr<ControlServer> control_;
  std::atomic<bool> ready_{false};
  bool stopped_ = false;
};

}  // namespace kstack::nodesim
