#include "kube/rate_limiter.h"

#include <gtest/gtest.h>

namespace kstack::kube {
namespace {

using namespace std::chrono_literals;

struct FakeClock {
  std::chrono::steady_clock::time_point now{std::chrono::steady_clock::time_point{} + 1h};
  RateLimiter::Clock fn() {
    return [this] { return now; };
  }
};

TEST(RateLimiter, BurstIsAvailableAtOnceThenRequestsAreSpacedAtQps) {
  FakeClock clock;
  RateLimiter limiter(10, 3, clock.fn());
  EXPECT_EQ(limiter.reserve(), 0ns);
  EXPECT_EQ(limiter.reserve(), 0ns);
  EXPECT_EQ(limiter.reserve(), 0ns);
  EXPECT_EQ(std::chrono::round<std::chrono::milliseconds>(limiter.reserve()), 100ms);
  EXPECT_EQ(std::chrono::round<std::chrono::milliseconds>(limiter.reserve()), 200ms);
}

TEST(RateLimiter, TokensRefillWithTimeButNeverBeyondBurst) {
  FakeClock clock;
  RateLimiter limiter(10, 2, clock.fn());
  EXPECT_TRUE(limiter.try_acquire());
  EXPECT_TRUE(limiter.try_acquire());
  EXPECT_FALSE(limiter.try_acquire());
  clock.now += 100ms;
  EXPECT_TRUE(limiter.try_acquire());
  EXPECT_FALSE(limiter.try_acquire());
  clock.now += 1h;  // long idle: only `burst` tokens accumulate
  EXPECT_TRUE(limiter.try_acquire());
  EXPECT_TRUE(limiter.try_acquire());
  EXPECT_FALSE(limiter.try_acquire());
}

TEST(RateLimiter, ReservationsInDebtAreRepaidBeforeNewTokens) {
  FakeClock clock;
  RateLimiter limiter(2, 1, clock.fn());
  EXPECT_EQ(limiter.reserve(), 0ns);
  EXPECT_EQ(std::chrono::round<std::chrono::milliseconds>(limiter.reserve()), 500ms);
  clock.now += 500ms;  // the debt is paid off, nothing accumulated
  EXPECT_FALSE(limiter.try_acquire());
  clock.now += 500ms;
  EXPECT_TRUE(limiter.try_acquire());
}

TEST(RateLimiter, NonPositiveQpsDisablesLimiting) {
  FakeClock clock;
  RateLimiter limiter(0, 1, clock.fn());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(limiter.reserve(), 0ns);
  EXPECT_TRUE(limiter.try_acquire());
}

TEST(RateLimiter, BurstBelowOneIsTreatedAsOne) {
  FakeClock clock;
  RateLimiter limiter(1, 0, clock.fn());
  EXPECT_EQ(limiter.burst(), 1);
  EXPECT_TRUE(limiter.try_acquire());
  EXPECT_FALSE(limiter.try_acquire());
}

TEST(RateLimiter, AcquireBlocksForTheReservedDelayWithRealClock) {
  RateLimiter limiter(50, 1);
  limiter.acquire();  // the burst token
  const auto start = std::chrono::steady_clock::now();
  limiter.acquire();  // must wait ~20 ms for the next token
  EXPECT_GE(std::chrono::steady_clock::now() - start, 15ms);
}

}  // namespace
}  // namespace kstack::kube
