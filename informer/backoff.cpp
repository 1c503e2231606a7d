#include "informer/backoff.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

namespace kstack::informer {

Backoff::Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max,
                 std::chrono::milliseconds reset_after, double jitter)
    : initial_(initial),
      max_(max),
      reset_after_(reset_after),
      jitter_(jitter),
      rng_(std::random_device{}()) {}

std::chrono::milliseconds Backoff::next(std::chrono::steady_clock::time_point now) {
  if (current_.count() == 0 || now - last_failure_ > reset_after_) {
    current_ = initial_;
  } else {
    current_ = std::min(max_, current_ * 2);
  }
  last_failure_ = now;
  std::uniform_real_distribution<double> dist(1.0, 1.0 + jitter_);
  const auto jittered = std::chrono::milliseconds(
      static_cast<std::int64_t>(static_cast<double>(current_.count()) * dist(rng_)));
  return std::min(jittered, std::chrono::milliseconds(static_cast<std::int64_t>(
                                static_cast<double>(max_.count()) * (1.0 + jitter_))));
}

void Backoff::reset() { current_ = std::chrono::milliseconds(0); }

bool sleep_for(std::chrono::milliseconds d, const kube::CancelToken& cancel) {
  std::mutex mu;
  std::condition_variable cv;
  // The action runs under the token's lock: it only touches our mutex briefly, and we never
  // call into the token while holding our mutex, so the two locks cannot deadlock.
  const auto id = cancel.add_action([&] {
    { std::lock_guard lock(mu); }
    cv.notify_all();
  });
  {
    std::unique_lock lock(mu);
    cv.wait_for(lock, d, [&] { return cancel.cancelled(); });
  }
  cancel.remove_action(id);
  return !cancel.cancelled();
}

}  // namespace kstack::informer
