#include "informer/fake_clock.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace kstack::informer {
namespace {

using namespace std::chrono_literals;

constexpr auto kTestTimeout = 10s;  // real time; only reached when a test is broken

// A thread blocked in clock.wait_until(deadline) until its deadline passes or it is released.
class Sleeper {
 public:
  Sleeper(FakeClock& clock, Clock::time_point deadline)
      : thread_([this, &clock, deadline] {
          std::unique_lock lock(mu_);
          while (!released_) {
            if (clock.wait_until(lock, cv_, deadline) == std::cv_status::timeout) {
              woke_by_time_ = true;
              return;
            }
          }
        }) {}
  ~Sleeper() { release(); }

  void release() {
    {
      std::lock_guard guard(mu_);
      released_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // Joins; true when the thread returned because its deadline was reached.
  bool join_woke_by_time() {
    thread_.join();
    return woke_by_time_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  bool woke_by_time_ = false;
  std::thread thread_;
};

TEST(FakeClock, TimeMovesOnlyWhenAdvanced) {
  FakeClock clock;
  const auto start = clock.now();
  EXPECT_EQ(start, kFakeClockStart);
  EXPECT_EQ(clock.now(), start);
  clock.advance(1500ms);
  EXPECT_EQ(clock.now(), start + 1500ms);
}

TEST(FakeClock, WaitUntilAReachedDeadlineReturnsTimeoutAtOnce) {
  FakeClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lock(mu);
  EXPECT_EQ(clock.wait_until(lock, cv, clock.now()), std::cv_status::timeout);
  EXPECT_TRUE(lock.owns_lock());
  EXPECT_EQ(clock.waiters(), 0u);
}

TEST(FakeClock, AdvancingToTheDeadlineWakesTheWaiter) {
  FakeClock clock;
  Sleeper sleeper(clock, clock.now() + 10s);
  ASSERT_TRUE(clock.await_waiters(1, kTestTimeout));
  clock.advance(10s);
  EXPECT_TRUE(sleeper.join_woke_by_time());
  EXPECT_EQ(clock.waiters(), 0u);
}

TEST(FakeClock, AdvancingShortOfTheDeadlineKeepsTheWaiterBlocked) {
  FakeClock clock;
  Sleeper sleeper(clock, clock.now() + 10s);
  ASSERT_TRUE(clock.await_waiters(1, kTestTimeout));
  clock.advance(9s);
  clock.advance(999ms);
  EXPECT_EQ(clock.waiters(), 1u);  // it cannot have returned: its deadline is not reached
  clock.advance(1ms);
  EXPECT_TRUE(sleeper.join_woke_by_time());
}

TEST(FakeClock, ANotificationOfTheConditionVariableEndsTheWaitEarly) {
  FakeClock clock;
  Sleeper sleeper(clock, clock.now() + 1h);
  ASSERT_TRUE(clock.await_waiters(1, kTestTimeout));
  sleeper.release();
  EXPECT_EQ(clock.waiters(), 0u);
  EXPECT_EQ(clock.now(), kFakeClockStart);
}

TEST(FakeClock, AwaitWaitersTimesOutWhenNobodyWaits) {
  FakeClock clock;
  EXPECT_FALSE(clock.await_waiters(1, 1ms));
}

// Waiters come and go (their mutexes and condition variables are destroyed on return) while
// another thread advances time: exercised under ThreadSanitizer/AddressSanitizer.
TEST(FakeClock, WaitersMayReturnAndBeDestroyedWhileTimeAdvances) {
  FakeClock clock;
  constexpr int kThreads = 4;
  constexpr int kWaitsPerThread = 200;
  std::atomic<int> finished{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&clock, &finished, t] {
      for (int i = 0; i < kWaitsPerThread; ++i) {
        std::mutex mu;
        std::condition_variable cv;
        std::unique_lock lock(mu);
        const auto deadline = clock.now() + std::chrono::milliseconds(1 + (i + t) % 3);
        while (clock.wait_until(lock, cv, deadline) != std::cv_status::timeout) {
        }
      }
      ++finished;
    });
  }
  while (finished.load() < kThreads) clock.advance(1ms);
  for (auto& t : threads) t.join();
  EXPECT_EQ(clock.waiters(), 0u);
}

}  // namespace
}  // namespace kstack::informer
