// Where a claim that no pod has pinned to a node yet is provisioned (the provisioner role,
// provisioner.h). Pure, unit tested.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "informer/store.h"
#include "tests/nodesim/dom.h"

namespace kstack::nodesim {

// Ready condition True.
bool node_ready(const boost::json::value& node);
// No volume yet, phase Pending, not being deleted.
bool claim_pending(const boost::json::value& claim);

// What placement_node() looks at: the caches of every simulator hold the same objects.
struct PlacementInput {
  std::vector<DomPtr> nodes;
  std::vector<DomPtr> claims;
  std::vector<DomPtr> volumes;
  // The claim's StorageClass is provisioned by kstack.io/nodesim.
  std::function<bool(const boost::json::value& claim)> served;
  // The node a pending claim is pinned to (volume.kubernetes.io/selected-node, or the node of
  // a bound pod using it); "" when none.
  std::function<std::string(const boost::json::value& claim)> pinned;
};

// The node that provisions `claim`, a pending claim no pod has pinned to a node yet: among the
// simulated nodes (label kstack.io/nodesim=true) that are Ready, the one with the fewest
// volumes (PVs provisioned by kstack.io/nodesim, plus the pending claims pinned to it), ties
// by name, the pending unpinned claims being placed one after the other by creation time and
// name. Every simulator computes the same answer from its caches, so claims made together
// (a StatefulSet's) spread over the nodes deterministically, and a lost node (NotReady) gets
// none. "" when no node qualifies.
std::string placement_node(const boost::json::value& claim, const PlacementInput& in);

}  // namespace kstack::nodesim
