// Placement of unpinned claims (see placement.h).
#include "tests/nodesim/placement.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "tests/nodesim/context.h"
#include "tests/nodesim/json_util.h"

namespace kstack::nodesim {

namespace json = boost::json;

bool node_ready(const json::value& node) {
  if (const auto* conditions = arr(node, "/status/conditions")) {
    for (const auto& c : *conditions) {
      if (str(c, "/type") == "Ready") return str(c, "/status") == "True";
    }
  }
  return false;
}

bool claim_pending(const json::value& pvc) {
  return str(pvc, "/spec/volumeName").empty() && str(pvc, "/status/phase") == "Pending" &&
         find(pvc, "/metadata/deletionTimestamp") == nullptr;
}

std::string placement_node(const json::value& claim, const PlacementInput& in) {
  std::map<std::string, std::int64_t> volumes;  // candidate node -> volumes
  for (const auto& node : in.nodes) {
    if (str(*node, "/metadata/labels/kstack.io~1nodesim") != "true" ||
        find(*node, "/metadata/deletionTimestamp") != nullptr || !node_ready(*node)) {
      continue;
    }
    volumes[str(*node, "/metadata/name")] = 0;
  }
  if (volumes.empty()) return {};
  std::set<std::string> provisioned;  // claim uids that have a volume
  for (const auto& pv : in.volumes) {
    if (auto uid = str(*pv, "/spec/claimRef/uid"); !uid.empty()) provisioned.insert(uid);
    if (str(*pv, "/metadata/annotations/pv.kubernetes.io~1provisioned-by") != kProvisionerName) {
      continue;
    }
    auto it = volumes.find(str(*pv, "/metadata/annotations/kstack.io~1nodesim-node"));
    if (it != volumes.end()) ++it->second;
  }
  const std::string uid = str(claim, "/metadata/uid");
  // The pending claims to place, by creation time then namespace and name (creation times
  // have a resolution of a second).
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  std::set<Key> unpinned{{str(claim, "/metadata/creationTimestamp"),
                          str(claim, "/metadata/namespace"), str(claim, "/metadata/name"), uid}};
  for (const auto& pvc : in.claims) {
    const std::string other = str(*pvc, "/metadata/uid");
    if (other == uid || !claim_pending(*pvc) || provisioned.count(other) != 0) continue;
    if (auto node = in.pinned ? in.pinned(*pvc) : std::string(); !node.empty()) {
      auto it = volumes.find(node);
      if (it != volumes.end()) ++it->second;
    } else if (!in.served || in.served(*pvc)) {
      unpinned.emplace(str(*pvc, "/metadata/creationTimestamp"), str(*pvc, "/metadata/namespace"),
                       str(*pvc, "/metadata/name"), other);
    }
  }
  for (const auto& key : unpinned) {
    auto fewest =
        std::min_element(volumes.begin(), volumes.end(), [](const auto& a, const auto& b) {
          return a.second < b.second;  // the first (by name) of equals
        });
    if (std::get<3>(key) == uid) return fewest->first;
    ++fewest->second;
  }
  return {};
}

}  // namespace kstack::nodesim
