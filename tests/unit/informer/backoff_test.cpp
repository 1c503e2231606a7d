#include "informer/backoff.h"

#include <future>

#include <gtest/gtest.h>

namespace kstack::informer {
namespace {

using namespace std::chrono_literals;

TEST(Backoff, DoublesFromInitialUpToMaxWithoutJitter) {
  Backoff b(800ms, 30s, 120s, 0.0);
  auto t = std::chrono::steady_clock::time_point{} + 1h;
  std::vector<std::int64_t> seen;
  for (int i = 0; i < 8; ++i) seen.push_back(b.next(t += 1s).count());
  EXPECT_EQ(seen, (std::vector<std::int64_t>{800, 1600, 3200, 6400, 12800, 25600, 30000, 30000}));
}

TEST(Backoff, JitterStaysWithinOneToTwiceTheDelay) {
  Backoff b(800ms, 30s, 120s, 1.0);
  auto t = std::chrono::steady_clock::time_point{} + 1h;
  for (int i = 0; i < 200; ++i) {
    Backoff fresh(800ms, 30s, 120s, 1.0);
    const auto d = fresh.next(t);
    EXPECT_GE(d, 800ms);
    EXPECT_LT(d, 1600ms);
  }
  for (int i = 0; i < 20; ++i) EXPECT_LE(b.next(t += 1s), 60s);
}

TEST(Backoff, ResetsAfterAQuietPeriodAndOnReset) {
  Backoff b(100ms, 10s, 120s, 0.0);
  auto t = std::chrono::steady_clock::time_point{} + 1h;
  b.next(t);
  EXPECT_EQ(b.next(t += 1s), 200ms);
  EXPECT_EQ(b.next(t += 121s), 100ms);  // healthy for longer than reset_after
  EXPECT_EQ(b.next(t += 1s), 200ms);
  b.reset();
  EXPECT_EQ(b.next(t += 1s), 100ms);
}

TEST(SleepFor, ReturnsFalseAtOnceWhenCancelledFromAnotherThread) {
  kube::CancelToken cancel;
  auto fut =
      std::async(std::launch::async, [&] { return sleep_for(std::chrono::hours(1), cancel); });
  cancel.cancel();
  ASSERT_EQ(fut.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(fut.get());
}

TEST(SleepFor, ReturnsTrueWhenTheTimeElapses) {
  kube::CancelToken cancel;
  EXPECT_TRUE(sleep_for(1ms, cancel));
  cancel.cancel();
  EXPECT_FALSE(sleep_for(1h, cancel));  // already cancelled: no wait at all
}

}  // namespace
}  // namespace kstack::informer
