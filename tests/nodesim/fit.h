// The scheduler's predicates, pure over JSON objects: does a pod fit this node? (nodeSelector,
// required node affinity, a cordoned node, taints and tolerations, CPU/memory/pod-count
// capacity, and its claims: present, not terminating, bound, their PV's node affinity.)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "informer/store.h"
#include "tests/nodesim/dom.h"

namespace kstack::nodesim {

using Labels = std::map<std::string, std::string>;

struct Resources {
  std::int64_t milli_cpu = 0;
  std::int64_t memory = 0;  // bytes
  Resources& operator+=(const Resources& o) {
    milli_cpu += o.milli_cpu;
    memory += o.memory;
    return *this;
  }
};

struct NodeInfo {
  std::string name;
  Labels labels;
  Resources allocatable;
  std::int64_t max_pods = 110;
};

// What the pod asks for, as the scheduler counts it: the sum over containers, at least the
// largest init container, plus spec.overhead.
Resources pod_requests(const boost::json::value& pod);

// nodeSelectorTerms: ORed terms of ANDed matchExpressions/matchFields (an empty term matches
// nothing), operators In, NotIn, Exists, DoesNotExist, Gt, Lt.
bool match_node_selector_terms(const boost::json::value& terms, const std::string& node_name,
                               const Labels& labels);

// The claim names of a pod's persistentVolumeClaim volumes.
std::vector<std::string> claim_names(const boost::json::value& pod);

// A PV without node affinity is usable anywhere.
bool pv_allows_node(const boost::json::value& pv, const NodeInfo& node);
bool pv_allows_node(const boost::json::value& pv, const std::string& node_name,
                    const Labels& labels);

bool pod_terminated(const boost::json::value& pod);  // phase Succeeded or Failed

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
};
inline constexpr const char* kTaintUnschedulable = "node.kubernetes.io/unschedulable";

// A Node's spec.taints.
std::vector<Taint> node_taints(const boost::json::value& node);
// Whether one of the pod's spec.tolerations tolerates `taint` (core/v1 ToleratesTaint: an
// empty effect matches every effect, an empty key with operator Exists every key; operator
// Equal, the default, also compares the value).
bool tolerates(const boost::json::value& pod, const Taint& taint);

using Lookup = std::function<DomPtr(const std::string& key)>;

struct FitInput {
  const NodeInfo& node;
  Resources used;  // requests of the pods already on the node
  std::int64_t pods_used = 0;
  Lookup pvc;  // "ns/name" -> claim
  Lookup pv;   // "name" -> volume
  // The Node object as last seen: its labels (instead of node.labels), spec.unschedulable and
  // spec.taints; null = node.labels, and no cordon or taints.
  DomPtr node_object;
};

struct FitResult {
  enum class Kind {
    kFits,
    kWaitForVolumes,  // a claim is missing, terminating or unbound: try again when it changes
    kDoesNotFit,
  };
  Kind kind = Kind::kFits;
  std::string reason;
  bool fits() const { return kind == Kind::kFits; }
};

FitResult check_fit(const boost::json::value& pod, const FitInput& input);

}  // namespace kstack::nodesim
