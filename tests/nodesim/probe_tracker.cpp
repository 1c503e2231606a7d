// The per-probe state machine (see probe_tracker.h).
#include "tests/nodesim/probe_tracker.h"

#include <algorithm>

namespace kstack::nodesim {

const char* probe_type_name(ProbeType type) {
  switch (type) {
    case ProbeType::kReadiness:
      return "readiness";
    case ProbeType::kLiveness:
      return "liveness";
    case ProbeType::kStartup:
      return "startup";
  }
  return "?";
}

ProbeTracker::ProbeTracker(ProbeType type, ProbeTiming timing, TimePoint container_started)
    : timing_(timing),
      next_(container_started + timing.initial_delay),
      verdict_(type == ProbeType::kLiveness) {
  // The API server refuses thresholds below 1; be as forgiving as its defaults.
  timing_.success_threshold = std::max(1, timing_.success_threshold);
  timing_.failure_threshold = std::max(1, timing_.failure_threshold);
  timing_.period = std::max(std::chrono::seconds(1), timing_.period);
}

bool ProbeTracker::record(bool success, TimePoint now) {
  const bool before = verdict_;
  if (success) {
    ++successes_;
    failures_ = 0;
    if (successes_ >= timing_.success_threshold) verdict_ = true;
  } else {
    ++failures_;
    successes_ = 0;
    if (failures_ >= timing_.failure_threshold) verdict_ = false;
  }
  next_ = now + timing_.period;
  return verdict_ != before;
}

}  // namespace kstack::nodesim
