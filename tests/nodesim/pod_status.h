// The pod status a kubelet would report, computed from the pod and the runtime's state (pure).
#pragma once

#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "tests/nodesim/pod_state.h"

namespace kstack::nodesim {

// Running (or Failed, when state.failed) with conditions Initialized/ContainersReady/Ready/
// PodScheduled. Conditions the kubelet does not own (readiness gates) are kept, and unchanged
// conditions keep their lastTransitionTime.
boost::json::object running_status(const boost::json::value& pod, const PodState& state,
                                   std::string_view now);

// Pending: containers waiting with `reason` (e.g. ContainerCreating) and `message` (why).
boost::json::object pending_status(const boost::json::value& pod, std::string_view reason,
                                   std::string_view message, std::string_view now);

// True when the pod's current status differs from `desired` in any field `desired` sets
// (nulls ignored), i.e. when a status patch is needed.
bool status_needs_update(const boost::json::value& pod, const boost::json::object& desired);

}  // namespace kstack::nodesim
