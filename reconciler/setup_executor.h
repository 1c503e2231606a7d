// Runs members' setup steps off the reconcile workers (docs/reconciler.md): a pass plans "start
// step X for member M" and returns; a bounded pool runs the step (an exec into the container,
// which for an http(s) package includes a download of up to SetupOptions::fetch_timeout) and
// keeps its outcome until a later pass of the same Stack picks it up, waking that pass through
// `on_done`. Outcomes are keyed by the member's container and the Stack's config generation,
// so a restarted container or a new configuration never reads an old answer.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "executor/actuators.h"
#include "reconciler/job_pool.h"

namespace kstack::reconciler {

struct SetupExecutorOptions {
  // Shared by all Stacks; a stalled package download holds one thread until fetch_timeout.
  int threads = 4;
};

// One step's identity within a Stack.
struct SetupKey {
  std::string pod;
  std::string container;  // the container the step runs in
  executor::SetupStepKind kind = executor::SetupStepKind::kWriteConfig;
  std::int64_t generation = 0;  // the Stack's status.configGeneration the step was planned at
  auto operator<=>(const SetupKey&) const = default;
};
SetupKey setup_key(const executor::SetupStep& step);

// What a pass knows of a step it started: in flight, or its outcome.
struct SetupState {
  bool done = false;
  executor::SetupOutcome outcome;  // when done
};
// One Stack's steps, as a pass copies them when it observes.
using SetupOutcomes = std::map<SetupKey, SetupState>;

// Where a pass starts steps and drops the outcomes it consumed (SetupExecutor; a fake in tests).
class SetupQueue {
 public:
  virtual ~SetupQueue() = default;
  // Starts the step; no-op while it is in flight or its outcome is kept.
  virtual void start(const std::string& stack_key, const executor::SetupStep& step) = 0;
  // Drops kept outcomes (in-flight steps stay).
  virtual void forget(const std::string& stack_key, const std::vector<SetupKey>& keys) = 0;
};

class SetupExecutor : public SetupQueue {
 public:
  SetupExecutor(executor::SetupSteps& steps, std::function<void(const std::string&)> on_done,
                SetupExecutorOptions options = {});
  ~SetupExecutor() override;  // stop()
  SetupExecutor(const SetupExecutor&) = delete;
  SetupExecutor& operator=(const SetupExecutor&) = delete;

  void start(const std::string& stack_key, const executor::SetupStep& step) override;
  void forget(const std::string& stack_key, const std::vector<SetupKey>& keys) override;
  // Drops everything kept for a Stack that is gone (its in-flight steps' outcomes too, as they
  // finish).
  void forget_stack(const std::string& stack_key);
  // A copy of the Stack's steps (a pass plans from it).
  SetupOutcomes outcomes_of(const std::string& stack_key) const;
  // Steps waiting for a thread.
  std::size_t queued() const;

  // Takes no more steps, drops the queued ones and waits for the running ones. Idempotent.
  void stop();

 private:
  struct Job {
    std::string stack_key;
    executor::SetupStep step;
  };
  void run(Job& job);

  executor::SetupSteps& steps_;
  std::function<void(const std::string&)> on_done_;
  mutable std::mutex mu_;
  std::map<std::string, SetupOutcomes> outcomes_;  // by Stack key
  bool stopping_ = false;
  JobPool<Job> pool_;  // last: its threads stop before the rest is destroyed
};

}  // namespace kstack::reconciler
