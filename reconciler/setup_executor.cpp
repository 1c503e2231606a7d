#include "reconciler/setup_executor.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace kstack::reconciler {

SetupKey setup_key(const executor::SetupStep& step) {
  return SetupKey{step.target.pod, step.target.container_id, step.kind, step.generation};
}

SetupExecutor::SetupExecutor(executor::SetupSteps& steps,
                             std::function<void(const std::string&)> on_done,
                             SetupExecutorOptions options)
    : steps_(steps),
      on_done_(std::move(on_done)),
      pool_(options.threads, [this](Job& job) { run(job); }) {}

SetupExecutor::~SetupExecutor() { stop(); }

void SetupExecutor::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  pool_.stop();
}

void SetupExecutor::start(const std::string& stack_key, const executor::SetupStep& step) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    auto [it, inserted] = outcomes_[stack_key].try_emplace(setup_key(step));
    if (!inserted) return;  // in flight, or done and not yet consumed
  }
  pool_.post(Job{stack_key, step});
}

void SetupExecutor::forget(const std::string& stack_key, const std::vector<SetupKey>& keys) {
  std::lock_guard lock(mu_);
  auto stack = outcomes_.find(stack_key);
  if (stack == outcomes_.end()) return;
  for (const auto& key : keys) {
    auto it = stack->second.find(key);
    if (it != stack->second.end() && it->second.done) stack->second.erase(it);
  }
  if (stack->second.empty()) outcomes_.erase(stack);
}

void SetupExecutor::forget_stack(const std::string& stack_key) {
  std::lock_guard lock(mu_);
  outcomes_.erase(stack_key);
}

SetupOutcomes SetupExecutor::outcomes_of(const std::string& stack_key) const {
  std::lock_guard lock(mu_);
  auto it = outcomes_.find(stack_key);
  return it == outcomes_.end() ? SetupOutcomes{} : it->second;
}

std::size_t SetupExecutor::queued() const { return pool_.queued(); }

void SetupExecutor::run(Job& job) {
  auto outcome = steps_.run(job.step);
  if (outcome.kind == executor::SetupOutcome::Kind::kConfigError) {
    spdlog::warn("stack {}: member {} config_error: {}", job.stack_key, job.step.target.pod,
                 outcome.message);
  } else if (outcome.kind == executor::SetupOutcome::Kind::kRetry) {
    spdlog::info("stack {}: member {}: {}", job.stack_key, job.step.target.pod, outcome.message);
  }
  {
    std::lock_guard lock(mu_);
    // Only where the step is still expected: forget_stack() may have dropped it meanwhile.
    auto stack = outcomes_.find(job.stack_key);
    if (stack == outcomes_.end()) return;
    auto it = stack->second.find(setup_key(job.step));
    if (it == stack->second.end()) return;
    it->second.done = true;
    it->second.outcome = std::move(outcome);
  }
  if (on_done_) on_done_(job.stack_key);
}

}  // namespace kstack::reconciler
