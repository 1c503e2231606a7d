// The scheduler's predicates, pure over JSON objects: does a pod fit this node? (nodeSelector,
// required node affinity, CPU/memory/pod-count capacity, and its volumes' PV node affinity.)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "informer/store.h"

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

bool pod_terminated(const boost::json::value& pod);  // phase Succeeded or Failed

using Lookup = std::function<informer::ObjectPtr(const std::string& key)>;

struct FitInput {
  const NodeInfo& node;
  Resources used;  // requests of the pods already on the node
  std::int64_t pods_used = 0;
  Lookup pvc;  // "ns/name" -> claim
  Lookup pv;   // "name" -> volume
};

struct FitResult {
  enum class Kind {
    kFits,
    kWaitForVolumes,  // a claim is missing or unbound: try again when it changes
    kDoesNotFit,
  };
  Kind kind = Kind::kFits;
  std::string reason;
  bool fits() const { return kind == Kind::kFits; }
};

FitResult check_fit(const boost::json::value& pod, const FitInput& input);

}  // namespace kstack::nodesim
