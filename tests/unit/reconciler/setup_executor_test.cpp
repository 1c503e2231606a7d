// The setup executor (reconciler/setup_executor.h): a bounded pool that runs members' setup steps
// off the reconcile workers, keeps each outcome by (pod, container, step, config generation) and
// wakes the Stack's next pass when a step finishes.
#include "reconciler/setup_executor.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace kstack::reconciler {
namespace {
using executor::SetupOutcome;
using executor::SetupStep;
using executor::SetupStepKind;
constexpr auto kDeadline = std::chrono::seconds(30);

// Steps that block until the test lets them finish, recording what ran and how many at once.
class GatedSteps : public executor::SetupSteps {
 public:
  SetupOutcome run(const SetupStep& step) override {
    std::unique_lock lock(mu_);
    ran_.push_back(step.target.pod);
    max_running_ = std::max(max_running_, ++running_);
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_ || releases_ > 0; });
    if (!open_) --releases_;
    --running_;
    SetupOutcome out;
    out.message = "ran in " + step.target.container_id;
    return out;
  }
  void release_one() {
    std::lock_guard lock(mu_);
    ++releases_;
    cv_.notify_all();
  }
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool wait_started(std::size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kDeadline, [&] { return ran_.size() >= n; });
  }
  std::vector<std::string> ran() const {
    std::lock_guard lock(mu_);
    return ran_;
  }
  int max_running() const {
    std::lock_guard lock(mu_);
    return max_running_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> ran_;
  int running_ = 0, max_running_ = 0, releases_ = 0;
  bool open_ = false;
};

// The Stack keys the executor woke, in order.
class Wakes {
 public:
  std::function<void(const std::string&)> callback() {
    return [this](const std::string& key) {
      std::lock_guard lock(mu_);
      keys_.push_back(key);
      cv_.notify_all();
    };
  }
  bool wait(std::size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kDeadline, [&] { return keys_.size() >= n; });
  }
  std::vector<std::string> keys() const {
    std::lock_guard lock(mu_);
    return keys_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> keys_;
};

SetupStep step(const std::string& pod, const std::string& container = "c1",
               std::int64_t generation = 1, SetupStepKind kind = SetupStepKind::kInstallPackage) {
  SetupStep s;
  s.kind = kind;
  s.role = "worker";
  s.target = {"apps", pod, container};
  s.generation = generation;
  return s;
}

TEST(SetupExecutor, RunsNoMoreStepsAtOnceThanItHasThreads) {
  GatedSteps steps;
  Wakes wakes;
  SetupExecutor ex(steps, wakes.callback(), {.threads = 2});
  for (int i = 0; i < 5; ++i) ex.start("apps/db", step("db-" + std::to_string(i)));
  ASSERT_TRUE(steps.wait_started(2));
  EXPECT_EQ(ex.queued(), 3u) << "two threads: the other three steps wait";
  for (std::size_t done = 1; done <= 5; ++done) {
    steps.release_one();
    ASSERT_TRUE(wakes.wait(done));
  }
  EXPECT_EQ(steps.ran().size(), 5u);
  EXPECT_EQ(steps.max_running(), 2);
}

TEST(SetupExecutor, AFinishedStepWakesItsStackAndKeepsTheOutcomeUntilForgotten) {
  GatedSteps steps;
  steps.open();
  Wakes wakes;
  SetupExecutor ex(steps, wakes.callback(), {.threads = 1});
  const auto s = step("db-0");
  ex.start("apps/db", s);
  ASSERT_TRUE(wakes.wait(1));
  EXPECT_EQ(wakes.keys(), std::vector<std::string>{"apps/db"});
  auto outcomes = ex.outcomes_of("apps/db");
  ASSERT_EQ(outcomes.count(setup_key(s)), 1u);
  EXPECT_TRUE(outcomes.at(setup_key(s)).done);
  EXPECT_EQ(outcomes.at(setup_key(s)).outcome.message, "ran in c1");
  EXPECT_TRUE(ex.outcomes_of("apps/other").empty());

  // Kept: starting it again runs nothing (one thread, in order: the marker step runs next).
  ex.start("apps/db", s);
  ex.start("apps/db", step("marker"));
  ASSERT_TRUE(wakes.wait(2));
  EXPECT_EQ(steps.ran(), (std::vector<std::string>{"db-0", "marker"}));

  ex.forget("apps/db", {setup_key(s)});
  EXPECT_EQ(ex.outcomes_of("apps/db").count(setup_key(s)), 0u);
  ex.start("apps/db", s);
  ASSERT_TRUE(wakes.wait(3));
  EXPECT_EQ(steps.ran(), (std::vector<std::string>{"db-0", "marker", "db-0"}));
}

TEST(SetupExecutor, ARestartedContainerOrANewGenerationFindsNoOldOutcomeAndRunsTheStepAgain) {
  GatedSteps steps;
  steps.open();
  Wakes wakes;
  SetupExecutor ex(steps, wakes.callback(), {.threads = 1});
  ex.start("apps/db", step("db-0", "c1", 1));
  ASSERT_TRUE(wakes.wait(1));
  const auto restarted = step("db-0", "c2", 1);
  const auto reconfigured = step("db-0", "c1", 2);
  EXPECT_EQ(ex.outcomes_of("apps/db").count(setup_key(restarted)), 0u);
  EXPECT_EQ(ex.outcomes_of("apps/db").count(setup_key(reconfigured)), 0u);
  ex.start("apps/db", restarted);
  ex.start("apps/db", reconfigured);
  ASSERT_TRUE(wakes.wait(3));
  EXPECT_EQ(steps.ran().size(), 3u);
  EXPECT_EQ(ex.outcomes_of("apps/db").at(setup_key(restarted)).outcome.message, "ran in c2");
}

TEST(SetupExecutor, StopWaitsForTheRunningStepDropsTheQueuedOnesAndTakesNoMore) {
  GatedSteps steps;
  Wakes wakes;
  SetupExecutor ex(steps, wakes.callback(), {.threads = 1});
  ex.start("apps/db", step("running"));
  ex.start("apps/db", step("queued-1"));
  ex.start("apps/db", step("queued-2"));
  ASSERT_TRUE(steps.wait_started(1));
  std::thread stopper([&] { ex.stop(); });
  // stop() drops the queue before it joins; then the running step may finish.
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (ex.queued() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_EQ(ex.queued(), 0u);
  steps.release_one();
  stopper.join();  // returns only once the running step's thread has ended
  EXPECT_EQ(steps.ran(), std::vector<std::string>{"running"});
  ex.start("apps/db", step("after-stop"));
  EXPECT_EQ(ex.outcomes_of("apps/db").count(setup_key(step("after-stop"))), 0u);
  EXPECT_EQ(steps.ran(), std::vector<std::string>{"running"});
}

}  // namespace
}  // namespace kstack::reconciler
