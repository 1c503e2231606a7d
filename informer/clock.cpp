#include "informer/clock.h"

namespace kstack::informer {

Clock::time_point RealClock::now() const { return std::chrono::steady_clock::now(); }

std::cv_status RealClock::wait_until(std::unique_lock<std::mutex>& lock,
                                     std::condition_variable& cv, time_point deadline) {
  return cv.wait_until(lock, deadline);
}

std::shared_ptr<Clock> real_clock() {
  static const auto clock = std::make_shared<RealClock>();
  return clock;
}

}  // namespace kstack::informer
