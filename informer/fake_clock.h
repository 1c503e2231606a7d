// A manually advanced Clock for tests: time moves only in advance(), which wakes every thread
// blocked in wait_until() whose deadline it reaches. Tests never sleep: they advance time, and
// await_waiters() lets them first make sure the code under test is blocked on the clock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <list>
#include <mutex>

#include "informer/clock.h"

namespace kstack::informer {

// A fixed, arbitrary start well after the steady epoch, so `now() - some_delay` stays valid.
inline constexpr Clock::time_point kFakeClockStart = Clock::time_point{} + std::chrono::hours(1);

class FakeClock final : public Clock {
 public:
  explicit FakeClock(time_point start = kFakeClockStart);
  ~FakeClock() override;
  FakeClock(const FakeClock&) = delete;
  FakeClock& operator=(const FakeClock&) = delete;

  time_point now() const override;
  std::cv_status wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            time_point deadline) override;

  // Moves time forward by `d` (>= 0) and notifies the condition variable of every waiter whose
  // deadline is now reached, under that waiter's mutex. When it returns each such waiter has
  // been notified (it may not have run yet).
  void advance(duration d);

  // Threads currently blocked in wait_until().
  std::size_t waiters() const;

  // Blocks, for at most `timeout` of real time, until at least `n` threads are blocked in
  // wait_until(). False on timeout.
  bool await_waiters(std::size_t n, std::chrono::milliseconds timeout) const;

 private:
  struct Waiter {
    std::mutex* mutex;
    std::condition_variable* cv;
    time_point deadline;
    int notifying = 0;  // advance() calls about to notify this waiter (guarded by mu_)
  };

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;  // waiters_ or a `notifying` count changed
  time_point now_;
  std::list<Waiter*> waiters_;  // entries live on the waiting threads' stacks
};

}  // namespace kstack::informer
