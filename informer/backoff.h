// Exponential backoff with jitter for the reflector's retries (client-go's reflector uses
// 800 ms doubling to 30 s, reset after 2 min without failures), and a sleep that a
// kube::CancelToken interrupts.
#pragma once

#include <chrono>
#include <random>

#include "kube/transport.h"

namespace kstack::informer {

inline constexpr std::chrono::milliseconds kBackoffInitial{800};
inline constexpr std::chrono::milliseconds kBackoffMax{30'000};
inline constexpr std::chrono::milliseconds kBackoffResetAfter{120'000};
inline constexpr double kBackoffJitter = 1.0;  // each delay is d * [1, 1 + jitter)

class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial = kBackoffInitial,
          std::chrono::milliseconds max = kBackoffMax,
          std::chrono::milliseconds reset_after = kBackoffResetAfter,
          double jitter = kBackoffJitter);

  // The next delay to wait after a failure at `now`. A failure after a quiet period longer
  // than reset_after starts again from `initial`.
  std::chrono::milliseconds next(
      std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
  void reset();

 private:
  std::chrono::milliseconds initial_, max_, reset_after_;
  double jitter_;
  std::chrono::milliseconds current_{0};
  std::chrono::steady_clock::time_point last_failure_{};
  std::mt19937_64 rng_;
};

// Sleeps for `d` unless `cancel` fires first; returns false when cancelled.
bool sleep_for(std::chrono::milliseconds d, const kube::CancelToken& cancel);

}  // namespace kstack::informer
