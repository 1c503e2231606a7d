// The time source of informer/ components (work queue delays, backoff, leases): a steady now()
// plus a timed condition-variable wait that a FakeClock (informer/fake_clock.h) drives, so
// tests advance time instead of sleeping.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace kstack::informer {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;

  virtual ~Clock() = default;

  virtual time_point now() const = 0;

  // As std::condition_variable::wait_until, on this clock's time: `lock` (locking the mutex
  // that guards the caller's predicate) is held on entry and on return; returns when `cv` is
  // notified, on a spurious wake-up, or once now() >= deadline. Returns cv_status::timeout
  // exactly when the deadline has been reached, so callers loop on their predicate as with
  // any condition variable.
  virtual std::cv_status wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                                    time_point deadline) = 0;
};

// std::chrono::steady_clock.
class RealClock final : public Clock {
 public:
  time_point now() const override;
  std::cv_status wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            time_point deadline) override;
};

// The process-wide RealClock, the default wherever a clock is optional.
std::shared_ptr<Clock> real_clock();

}  // namespace kstack::informer
