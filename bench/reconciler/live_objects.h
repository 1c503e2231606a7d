// Synthetic cache content for the resync benchmark: what the informers of a converged cluster
// hold for one Stack — its desired objects as the API server stores them (uid,
// resourceVersion and the server's defaults added, StatefulSet status), the pods the
// StatefulSet controller made (Running, Ready, scheduled, container "app" started) and the
// claims of its members (Bound, adopted by the Stack). No cluster involved.
#pragma once

#include <cstdint>
#include <vector>

#include <boost/json/value.hpp>

#include "catalog/model.h"
#include "reconciler/desired_state.h"

namespace kstack::bench {

struct LiveObjects {
  std::vector<boost::json::value> stateful_sets;
  std::vector<boost::json::value> services;
  std::vector<boost::json::value> pvcs;
  std::vector<boost::json::value> pods;
};

// `serial` numbers the uids and resourceVersions handed out; it is advanced.
LiveObjects live_objects(const catalog::Stack& stack, const catalog::AppType& app,
                         const reconciler::DesiredState& desired, std::uint64_t& serial);

}  // namespace kstack::bench
