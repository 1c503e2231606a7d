#include "informer/clock.h"

#include <thread>

#include <gtest/gtest.h>

namespace kstack::informer {
namespace {

using namespace std::chrono_literals;

TEST(RealClock, WaitUntilAPassedDeadlineReportsTimeout) {
  RealClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lock(mu);
  EXPECT_EQ(clock.wait_until(lock, cv, clock.now() - 1s), std::cv_status::timeout);
  EXPECT_TRUE(lock.owns_lock());
}

TEST(RealClock, WaitUntilReturnsWhenNotified) {
  RealClock clock;
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;
  std::thread notifier([&] {
    std::lock_guard guard(mu);
    ready = true;
    cv.notify_all();
  });
  std::unique_lock lock(mu);
  const auto deadline = clock.now() + 60s;
  while (!ready) ASSERT_EQ(clock.wait_until(lock, cv, deadline), std::cv_status::no_timeout);
  lock.unlock();
  notifier.join();
}

TEST(RealClock, IsOneSharedInstance) {
  EXPECT_EQ(real_clock(), real_clock());
  EXPECT_NE(real_clock(), nullptr);
}

}  // namespace
}  // namespace kstack::informer
