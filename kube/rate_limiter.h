// Client-side rate limiting: a token bucket (QPS refill, burst capacity), as client-go's
// flowcontrol limiter. Reservations may drive the bucket negative so that waiting callers
// are served in arrival order at exactly the configured rate.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>

namespace kstack::kube {

class RateLimiter {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  // qps <= 0 disables limiting. burst < 1 is treated as 1. The bucket starts full.
  RateLimiter(double qps, int burst, Clock clock = {});

  // Takes one token and returns how long the caller must wait before using it (zero when a
  // token was available). Never blocks.
  std::chrono::nanoseconds reserve();

  // Takes a token only if one is available now.
  bool try_acquire();

  // Blocks the calling thread until its reserved token is due.
  void acquire();

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  void refill_locked(std::chrono::steady_clock::time_point now);

  const double qps_;
  const int burst_;
  Clock clock_;
  std::mutex mu_;
  double tokens_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace kstack::kube
