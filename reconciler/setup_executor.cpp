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
    : steps_(steps), on_done_(std::move(on_done)) {
  for (int i = 0; i < std::max(1, options.threads); ++i) threads_.emplace_back([this] { loop(); });
}

SetupExecutor::~SetupExecutor() { stop(); }

void SetupExecutor::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    jobs_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void SetupExecutor::start(const std::string& stack_key, const executor::SetupStep& step) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    auto [it, inserted] = outcomes_[stack_key].try_emplace(setup_key(step));
    if (!inserted) return;  // in flight, or done and not yet consumed
    jobs_.push_back(Job{stack_key, step, kube::log_fields()});
  }
  cv_.notify_one();
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

std::size_t SetupExecutor::queued() const {
  std::lock_guard lock(mu_);
  return jobs_.size();
}

void SetupExecutor::loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    const kube::LogScope log_scope(job.log_fields);
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
      if (stack == outcomes_.end()) continue;
      auto it = stack->second.find(setup_key(job.step));
      if (it == stack->second.end()) continue;
      it->second.done = true;
      it->second.outcome = std::move(outcome);
    }
    if (on_done_) on_done_(job.stack_key);
  }
}

}  // namespace kstack::reconciler
