// The storage role: a StorageClass (default, provisioner kstack.io/nodesim, Immediate) and a
// local PersistentVolume per pending claim, pre-bound to the claim (claimRef with uid) so that
// kube-controller-manager's PV binder binds them. A PV's data is a directory under
// <state>/volumes/pvc-<claim uid>, and the PV's node affinity pins it (and its pods) to this
// node. Released volumes are deleted, directory included, when the reclaim policy is Delete.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include <boost/json/value.hpp>

#include "informer/work_queue.h"
#include "tests/nodesim/context.h"
#include "tests/nodesim/dom.h"
#include "tests/nodesim/placement.h"

namespace kstack::nodesim {

// How often a simulator looks again at a pending claim placed on another node (that node may
// be lost, or its simulator gone, before it provisions the claim).
inline constexpr std::chrono::milliseconds kPlacementRecheck{2000};

class Provisioner {
 public:
  explicit Provisioner(Context& ctx);
  ~Provisioner();
  Provisioner(const Provisioner&) = delete;
  Provisioner& operator=(const Provisioner&) = delete;

  // Creates options.storage_class if no StorageClass of that name exists.
  kube::Result<void> ensure_storage_class();

  informer::EventHandler claim_handler();
  informer::EventHandler volume_handler();
  informer::EventHandler pod_handler();  // a pod bound here may need its claims provisioned

  informer::EventHandler node_handler();  // Ready changes: placements change

  void start();
  void stop();
  // Every claim and volume (the node is back from being lost: releases to reclaim).
  void enqueue_all();

 private:
  informer::WorkResult reconcile(const std::string& key);
  informer::WorkResult reconcile_claim(const std::string& key);
  informer::WorkResult reconcile_volume(const std::string& name);
  // The node of a pod using the claim ("" if no pod using it is bound).
  std::string claim_user_node(const std::string& ns, const std::string& claim) const;
  bool ours(const boost::json::value& pv) const;
  void remove_volume_dir(const boost::json::value& pv);

  Context& ctx_;
  informer::WorkQueue queue_;
  std::unique_ptr<informer::Workers> workers_;
  std::mutex mu_;
  std::map<std::string, DomPtr> deleted_;  // PVs deleted, awaiting cleanup
};

}  // namespace kstack::nodesim
