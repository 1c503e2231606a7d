#include "informer/work_queue.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <exception>
#include <limits>

#include <spdlog/spdlog.h>

namespace kstack::informer {

namespace {

using std::chrono::nanoseconds;

// client-go's ItemExponentialFailureRateLimiter.When: base * 2^failures, capped at max
// (computed in floating point so that the doubling never overflows).
nanoseconds exponential_backoff(nanoseconds base, nanoseconds max, int failures) {
  const double backoff =
      static_cast<double>(base.count()) * std::ldexp(1.0, std::min(failures, 1024));
  if (!(backoff < static_cast<double>(max.count()))) return max;
  return nanoseconds(static_cast<nanoseconds::rep>(backoff));
}

Clock::time_point saturating_add(Clock::time_point t, nanoseconds d) {
  const auto room = Clock::time_point::max() - t;
  if (d >= room) return Clock::time_point::max();
  return t + std::chrono::duration_cast<Clock::duration>(d);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// CountingWorkQueueMetrics

void CountingWorkQueueMetrics::on_add() {
  std::lock_guard lock(mu_);
  ++counts_.adds;
}

void CountingWorkQueueMetrics::on_retry() {
  std::lock_guard lock(mu_);
  ++counts_.retries;
}

void CountingWorkQueueMetrics::on_depth(std::size_t depth) {
  std::lock_guard lock(mu_);
  counts_.depth = depth;
}

void CountingWorkQueueMetrics::on_get(nanoseconds queue_latency) {
  std::lock_guard lock(mu_);
  counts_.queue_latencies.push_back(queue_latency);
}

void CountingWorkQueueMetrics::on_done(nanoseconds work_duration) {
  std::lock_guard lock(mu_);
  counts_.work_durations.push_back(work_duration);
}

CountingWorkQueueMetrics::Counts CountingWorkQueueMetrics::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

// ---------------------------------------------------------------------------------------------
// WorkQueue
//
// Lock order: mu_, then the bucket's mutex, then the clock's (FakeClock::advance takes mu_
// without holding its own).
//
// Invariants (under mu_): a key is in at most one of queue_ and delayed_; every key in queue_
// is in dirty_ and not in in_flight_; a key in dirty_ and in_flight_ is queued by done(); no
// key in delayed_ is in dirty_.

WorkQueue::WorkQueue(WorkQueueOptions options)
    : name_(std::move(options.name)),
      base_delay_(options.base_delay),
      max_delay_(options.max_delay),
      clock_(options.clock ? std::move(options.clock) : real_clock()),
      metrics_(options.metrics ? std::move(options.metrics) : std::make_shared<WorkQueueMetrics>()),
      bucket_(options.qps, options.burst, [clock = clock_] { return clock->now(); }) {}

WorkQueue::~WorkQueue() { shut_down(); }

void WorkQueue::add(const std::string& key) {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  const auto now = clock_->now();
  promote_due_locked(now);
  cancel_delayed_locked(key);
  make_due_locked(key, now);
}

void WorkQueue::add_after(const std::string& key, nanoseconds delay) {
  std::lock_guard lock(mu_);
  add_after_locked(key, delay);
}

void WorkQueue::add_rate_limited(const std::string& key) {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  // As client-go's MaxOfRateLimiter, both limiters are consulted (a token is taken) every time.
  const auto backoff = backoff_locked(key);
  add_after_locked(key, std::max(backoff, bucket_.reserve()));
}

void WorkQueue::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

int WorkQueue::num_requeues(const std::string& key) const {
  std::lock_guard lock(mu_);
  const auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (shutting_down_) return std::nullopt;
    promote_due_locked(clock_->now());
    if (!queue_.empty()) break;
    if (delayed_.empty()) {
      ready_cv_.wait(lock);
    } else {
      clock_->wait_until(lock, ready_cv_, delayed_.begin()->first);
    }
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  const auto now = clock_->now();
  const auto due = dirty_.extract(key);
  assert(!due.empty());
  in_flight_.emplace(key, now);
  metrics_->on_depth(queue_.size());
  metrics_->on_get(now - due.mapped());
  return key;
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard lock(mu_);
  const auto it = in_flight_.find(key);
  if (it == in_flight_.end()) return;
  const auto now = clock_->now();
  metrics_->on_done(now - it->second);
  in_flight_.erase(it);
  if (in_flight_.empty()) idle_cv_.notify_all();
  if (shutting_down_) return;
  if (dirty_.contains(key)) {
    queue_.push_back(key);
    metrics_->on_depth(queue_.size());
    ready_cv_.notify_one();
  }
  promote_due_locked(now);
}

std::size_t WorkQueue::len() const {
  std::lock_guard lock(mu_);
  // Also counts delayed keys that are due but not yet moved to queue_ (that happens on the
  // next non-const operation), so that len() is exact without mutating.
  std::size_t n = queue_.size();
  const auto now = clock_->now();
  for (auto it = delayed_.begin(); it != delayed_.end() && it->first <= now; ++it) {
    if (!in_flight_.contains(it->second)) ++n;
  }
  return n;
}

std::size_t WorkQueue::in_flight() const {
  std::lock_guard lock(mu_);
  return in_flight_.size();
}

void WorkQueue::shut_down() {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  shutting_down_ = true;
  const bool had_ready = !queue_.empty();
  queue_.clear();
  dirty_.clear();
  delayed_.clear();
  delayed_index_.clear();
  if (had_ready) metrics_->on_depth(0);
  ready_cv_.notify_all();
}

void WorkQueue::shut_down_with_drain() {
  shut_down();
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return in_flight_.empty(); });
}

bool WorkQueue::shutting_down() const {
  std::lock_guard lock(mu_);
  return shutting_down_;
}

void WorkQueue::add_after_locked(const std::string& key, nanoseconds delay) {
  if (shutting_down_) return;
  metrics_->on_retry();
  const auto now = clock_->now();
  promote_due_locked(now);
  if (delay <= nanoseconds::zero()) {
    cancel_delayed_locked(key);
    make_due_locked(key, now);
    return;
  }
  if (dirty_.contains(key)) return;  // due already
  const auto ready_at = saturating_add(now, delay);
  if (const auto it = delayed_index_.find(key); it != delayed_index_.end()) {
    if (it->second->first <= ready_at) return;  // the earlier request wins
    delayed_.erase(it->second);
    it->second = delayed_.emplace(ready_at, key);
  } else {
    delayed_index_.emplace(key, delayed_.emplace(ready_at, key));
  }
  // Getters waiting on the clock must re-aim at the new earliest deadline.
  if (delayed_.begin()->second == key) ready_cv_.notify_all();
}

// Marks `key` (not delayed) as due. A key already due is deduplicated; a key in flight is
// queued by done().
void WorkQueue::make_due_locked(const std::string& key, time_point now) {
  assert(!delayed_index_.contains(key));
  if (!dirty_.try_emplace(key, now).second) return;
  metrics_->on_add();
  if (in_flight_.contains(key)) return;
  queue_.push_back(key);
  metrics_->on_depth(queue_.size());
  ready_cv_.notify_one();
}

void WorkQueue::cancel_delayed_locked(const std::string& key) {
  const auto it = delayed_index_.find(key);
  if (it == delayed_index_.end()) return;
  delayed_.erase(it->second);
  delayed_index_.erase(it);
}

void WorkQueue::promote_due_locked(time_point now) {
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    auto node = delayed_.extract(delayed_.begin());
    delayed_index_.erase(node.mapped());
    make_due_locked(node.mapped(), now);
  }
}

nanoseconds WorkQueue::backoff_locked(const std::string& key) {
  int& failures = failures_[key];
  const auto backoff = exponential_backoff(base_delay_, max_delay_, failures);
  if (failures < std::numeric_limits<int>::max()) ++failures;
  return backoff;
}

// ---------------------------------------------------------------------------------------------
// Workers

namespace {

WorkResult reconcile_catching(const ReconcileFn& reconcile, const std::string& key) {
  try {
    return reconcile(key);
  } catch (const std::exception& e) {
    return WorkResult::retry(std::string("reconcile threw: ") + e.what());
  } catch (...) {
    return WorkResult::retry("reconcile threw a non-standard exception");
  }
}

// controller-runtime's reconcileHandler: what each result does to the key.
void apply(WorkQueue& queue, const std::string& key, const WorkResult& result) {
  switch (result.kind) {
    case WorkResult::Kind::kSuccess:
      queue.forget(key);
      return;
    case WorkResult::Kind::kRequeue:
      queue.add_rate_limited(key);
      return;
    case WorkResult::Kind::kRequeueAfter:
      queue.forget(key);
      queue.add_after(key, result.delay);
      return;
    case WorkResult::Kind::kError:
      queue.add_rate_limited(key);
      spdlog::warn("workqueue {}: reconcile {} failed (retry {}): {}", queue.name(), key,
                   queue.num_requeues(key), result.error);
      return;
    case WorkResult::Kind::kTerminalError:
      spdlog::error("workqueue {}: reconcile {} failed, not retried: {}", queue.name(), key,
                    result.error);
      return;
  }
}

}  // namespace

bool process_next_work_item(WorkQueue& queue, const ReconcileFn& reconcile) {
  const auto key = queue.get();
  if (!key) return false;
  apply(queue, *key, reconcile_catching(reconcile, *key));
  queue.done(*key);
  return true;
}

Workers::Workers(WorkQueue& queue, int count, ReconcileFn reconcile)
    : queue_(queue), reconcile_(std::move(reconcile)) {
  const int n = std::max(count, 1);
  threads_.reserve(static_cast<std::size_t>(n));
  try {
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this] {
        while (process_next_work_item(queue_, reconcile_)) {
        }
      });
    }
  } catch (...) {  // out of threads: do not leave joinable ones behind
    stop();
    throw;
  }
}

Workers::~Workers() { stop(); }

void Workers::stop() {
  std::call_once(stopped_, [this] {
    queue_.shut_down();
    for (auto& t : threads_) t.join();
  });
}

}  // namespace kstack::informer
