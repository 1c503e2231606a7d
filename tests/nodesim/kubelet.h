// The kubelet role: runs the pods bound to this node in sandboxes once their claims are bound,
// reports their status (pods/status), restarts containers that die, and finishes the deletion
// of pods being deleted (DELETE with grace period 0 and a uid precondition) so that
// controllers can recreate them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <boost/json/value.hpp>
#include <tl/expected.hpp>

#include "informer/work_queue.h"
#include "tests/nodesim/context.h"
#include "tests/nodesim/pod_config.h"
#include "tests/nodesim/pod_state.h"
#include "tests/nodesim/probe.h"

namespace kstack::nodesim {

// An answer for the control API: HTTP status and a message, or a JSON body.
struct ControlError {
  int http_status = 500;
  std::string message;
};

class Kubelet {
 public:
  explicit Kubelet(Context& ctx);
  ~Kubelet();
  Kubelet(const Kubelet&) = delete;
  Kubelet& operator=(const Kubelet&) = delete;

  informer::EventHandler pod_handler();
  informer::EventHandler volume_handler();  // claims and volumes: retry waiting pods

  void start();
  void stop();
  // Every pod of this node and every sandbox (its pod may be gone from the API).
  void enqueue_all();

  // Test controls; they update the API status before returning it.
  tl::expected<boost::json::value, ControlError> restart(const std::string& ns,
                                                         const std::string& name,
                                                         const std::string& container,
                                                         int exit_code);
  tl::expected<boost::json::value, ControlError> fail(const std::string& ns,
                                                      const std::string& name, int exit_code);
  // Where the pod's sandboxes live: {"uid", "dir", "containers": {name: {"id", "root"}}}.
  tl::expected<boost::json::value, ControlError> describe(const std::string& ns,
                                                          const std::string& name);

 private:
  informer::WorkResult reconcile(const std::string& key);
  informer::WorkResult finish_deletion(const boost::json::value& pod);
  // While the node is lost (ctx.lost): restarts and probes, nothing written to the API.
  informer::WorkResult run_while_lost(const boost::json::value& pod);
  informer::WorkResult start_pod(const boost::json::value& pod);
  tl::expected<ResolvedVolume, std::string> resolve_volume(const boost::json::value& pod,
                                                           const boost::json::value& volume);
  kube::Result<void> patch_status(const boost::json::value& pod,
                                  const boost::json::object& desired);
  tl::expected<boost::json::value, ControlError> report(const boost::json::value& pod,
                                                        const PodState& state);
  bool mine(const boost::json::value& pod) const;
  // Runs the pod's probes that are due (Prober): verdicts into `state`, containers whose
  // liveness or startup probe failed killed; when to look again.
  std::optional<std::chrono::milliseconds> run_probes(const boost::json::value& pod,
                                                      PodState& state);

  // Every 200 ms: containers whose process ended (Runtime::reap_exited) get their pod queued.
  void watch_exits();

  Context& ctx_;
  informer::WorkQueue queue_;
  std::thread exit_watcher_;
  std::mutex exit_mu_;
  std::condition_variable exit_cv_;
  bool stopping_ = false;
  std::unique_ptr<informer::Workers> workers_;
  Prober prober_;
};

}  // namespace kstack::nodesim
