// One probe of one container as the kubelet's probe worker runs it (pure; time is passed in, so
// unit tests need no clock): first due initialDelaySeconds after the container started, then
// every periodSeconds; the verdict turns to success after successThreshold successes in a row
// and to failure after failureThreshold failures in a row. Readiness and startup start as
// failure (not ready, not started), liveness as success.
#pragma once

#include <chrono>

namespace kstack::nodesim {

enum class ProbeType { kReadiness, kLiveness, kStartup };

const char* probe_type_name(ProbeType type);  // "readiness", "liveness", "startup"

struct ProbeTiming {
  std::chrono::seconds initial_delay{0};
  std::chrono::seconds period{10};
  int success_threshold = 1;
  int failure_threshold = 3;
};

class ProbeTracker {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  ProbeTracker(ProbeType type, ProbeTiming timing, TimePoint container_started);

  bool due(TimePoint now) const { return now >= next_; }
  TimePoint next() const { return next_; }
  // Counts one probe run at `now`; returns true when the verdict changed.
  bool record(bool success, TimePoint now);
  bool verdict() const { return verdict_; }
  int failures() const { return failures_; }

 private:
  ProbeTiming timing_;
  TimePoint next_;
  bool verdict_;
  int successes_ = 0;
  int failures_ = 0;
};

}  // namespace kstack::nodesim
