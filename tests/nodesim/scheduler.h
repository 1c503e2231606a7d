// The scheduler role: binds pending pods (no spec.nodeName, schedulerName default-scheduler)
// to this node through pods/binding when they fit (fit.h): it watches its own Node, so a
// cordoned or tainted node takes no pod that does not tolerate it. Every simulator schedules for
// itself; when several could take a pod, the least loaded one tries first (a delay per pod it
// already runs) and the API server lets exactly one binding succeed (409 for the others).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "informer/work_queue.h"
#include "tests/nodesim/context.h"

namespace kstack::nodesim {

// Spreading: a node running N pods waits N times this (capped) before binding a new pod.
inline constexpr std::chrono::milliseconds kBindDelayPerPod{100};
inline constexpr std::chrono::milliseconds kMaxBindDelay{1000};

class Scheduler {
 public:
  explicit Scheduler(Context& ctx);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  informer::EventHandler pod_handler();
  informer::EventHandler volume_handler();

  void start();
  void stop();
  void enqueue_all();  // every pending pod

 private:
  informer::WorkResult reconcile(const std::string& key);
  kube::Result<bool> bind(const boost::json::value& pod);  // false: another node won

  Context& ctx_;
  // This node only (field selector metadata.name): spec.unschedulable and spec.taints. Until
  // it is cached nothing is bound.
  std::unique_ptr<informer::Informer> node_;
  informer::WorkQueue queue_;
  std::unique_ptr<informer::Workers> workers_;
  std::mutex mu_;
  // Pods bound here that the cache does not show on this node yet (kube-scheduler's assume
  // cache): uid -> {key, requests}.
  std::map<std::string, std::pair<std::string, Resources>> assumed_;
  std::set<std::string> delayed_;  // uids already given their spreading delay
};

}  // namespace kstack::nodesim
