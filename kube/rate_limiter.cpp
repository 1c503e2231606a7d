#include "kube/rate_limiter.h"

#include <algorithm>
#include <thread>

namespace kstack::kube {

RateLimiter::RateLimiter(double qps, int burst, Clock clock)
    : qps_(qps),
      burst_(std::max(burst, 1)),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::steady_clock::now(); })),
      tokens_(static_cast<double>(burst_)),
      last_(clock_()) {}

void RateLimiter::refill_locked(std::chrono::steady_clock::time_point now) {
  if (now > last_) {
    const double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(static_cast<double>(burst_), tokens_ + elapsed * qps_);
    last_ = now;
  }
}

std::chrono::nanoseconds RateLimiter::reserve() {
  if (qps_ <= 0) return std::chrono::nanoseconds::zero();
  std::lock_guard lock(mu_);
  refill_locked(clock_());
  tokens_ -= 1.0;
  if (tokens_ >= 0) return std::chrono::nanoseconds::zero();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(-tokens_ / qps_));
}

bool RateLimiter::try_acquire() {
  if (qps_ <= 0) return true;
  std::lock_guard lock(mu_);
  refill_locked(clock_());
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

void RateLimiter::acquire() {
  const auto wait = reserve();
  if (wait > std::chrono::nanoseconds::zero()) std::this_thread::sleep_for(wait);
}

}  // namespace kstack::kube
