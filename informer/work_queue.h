// The controller's rate-limited work queue and its worker pool, after client-go's workqueue
// (Type + DelayingQueue + RateLimitingQueue) and controller-runtime's worker loop.
//
// - A key ("namespace/name") waiting in the queue is held once, however often it is added.
// - A key is handed to one worker at a time: re-added while in flight, it is queued again
//   only when that worker calls done().
// - A key has at most one pending time: the earliest request wins (add() cancels a pending
//   add_after(); a later add_after() of a key already due sooner is dropped), as kube-rs's
//   scheduler.
// - add_rate_limited() delays by max(per-key exponential backoff, overall token bucket), as
//   client-go's DefaultControllerRateLimiter.
// - Delays need no timer thread: idle getters wait on the Clock until the earliest delayed key
//   is due, and every queue operation moves due keys to the ready queue.
//
// Shutdown (see WorkQueue::shut_down): new adds are ignored, keys not yet handed out are
// dropped, in-flight keys finish and their done() is honoured.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "informer/clock.h"
#include "kube/rate_limiter.h"

namespace kstack::informer {

// Defaults of client-go's workqueue.DefaultControllerRateLimiter(), which controller-runtime
// uses: ItemExponentialFailureRateLimiter(5ms, 1000s) ...
inline constexpr std::chrono::nanoseconds kQueueBaseDelay = std::chrono::milliseconds(5);
inline constexpr std::chrono::nanoseconds kQueueMaxDelay = std::chrono::seconds(1000);
// ... combined by MaxOf with BucketRateLimiter{rate.NewLimiter(10, 100)}.
inline constexpr double kQueueQps = 10;
inline constexpr int kQueueBurst = 100;

// Metric names, as client-go's workqueue/controller-runtime's metrics (label `name`).
inline constexpr std::string_view kMetricDepth = "workqueue_depth";
inline constexpr std::string_view kMetricAdds = "workqueue_adds_total";
inline constexpr std::string_view kMetricRetries = "workqueue_retries_total";
inline constexpr std::string_view kMetricQueueDuration = "workqueue_queue_duration_seconds";
inline constexpr std::string_view kMetricWorkDuration = "workqueue_work_duration_seconds";

// Observer of a queue's activity. Called with the queue's lock held: implementations must be
// cheap and thread-safe, and must not call back into the queue. Defaults do nothing.
class WorkQueueMetrics {
 public:
  virtual ~WorkQueueMetrics() = default;
  // A key became due for processing (adds of a key already waiting are not counted).
  virtual void on_add() {}
  // add_after() or add_rate_limited() was called (as client-go, every delayed add counts).
  virtual void on_retry() {}
  // The number of keys ready to be handed out changed.
  virtual void on_depth(std::size_t /*depth*/) {}
  // A key was handed out `queue_latency` after it became due.
  virtual void on_get(std::chrono::nanoseconds /*queue_latency*/) {}
  // A worker finished a key `work_duration` after it was handed out.
  virtual void on_done(std::chrono::nanoseconds /*work_duration*/) {}
};

// Records everything, for tests.
class CountingWorkQueueMetrics final : public WorkQueueMetrics {
 public:
  struct Counts {
    std::uint64_t adds = 0;
    std::uint64_t retries = 0;
    std::size_t depth = 0;  // the last reported value
    std::vector<std::chrono::nanoseconds> queue_latencies;
    std::vector<std::chrono::nanoseconds> work_durations;
  };

  void on_add() override;
  void on_retry() override;
  void on_depth(std::size_t depth) override;
  void on_get(std::chrono::nanoseconds queue_latency) override;
  void on_done(std::chrono::nanoseconds work_duration) override;

  Counts counts() const;

 private:
  mutable std::mutex mu_;
  Counts counts_;
};

struct WorkQueueOptions {
  std::chrono::nanoseconds base_delay = kQueueBaseDelay;  // first backoff of a failing key
  std::chrono::nanoseconds max_delay = kQueueMaxDelay;    // cap of the per-key backoff
  double qps = kQueueQps;                     // token bucket refill; <= 0 disables the bucket
  int burst = kQueueBurst;                    // token bucket capacity
  std::shared_ptr<Clock> clock;               // null: real_clock()
  std::shared_ptr<WorkQueueMetrics> metrics;  // null: no metrics
  std::string name;                           // metrics label and log field
};

class WorkQueue {
 public:
  explicit WorkQueue(WorkQueueOptions options = {});
  // Shuts the queue down. Every thread using the queue must be done with it first.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Makes `key` due now.
  void add(const std::string& key);
  // Makes `key` due after `delay` (now if <= 0), unless it is due sooner already.
  void add_after(const std::string& key, std::chrono::nanoseconds delay);
  // Counts a failure of `key` and makes it due after max(base_delay * 2^(failures - 1) capped
  // at max_delay, the token bucket's wait).
  void add_rate_limited(const std::string& key);
  // Resets the failure count of `key` (its next backoff is base_delay again).
  void forget(const std::string& key);
  // Failures counted for `key` since it was last forgotten.
  int num_requeues(const std::string& key) const;

  // Blocks until a key is due and hands it to the caller, who must call done(key) when
  // finished; std::nullopt once the queue is shut down.
  std::optional<std::string> get();
  // Ends the processing of a key returned by get(); requeues it if it was added meanwhile.
  // Keys not in flight are ignored.
  void done(const std::string& key);

  // Keys due and not in flight, i.e. what get() could hand out now.
  std::size_t len() const;
  // Keys handed out and not yet done().
  std::size_t in_flight() const;

  // Stops the queue, without waiting: later adds are ignored, keys not yet handed out
  // (queued or delayed) are dropped, blocked and later get() calls return std::nullopt.
  // In-flight keys may finish; their done() is honoured but does not requeue them. Dropping
  // is safe for level-triggered controllers, whose next start (or the next leader) lists and
  // enqueues every object; draining could hold a lease past its renewal deadline.
  void shut_down();
  // shut_down(), then waits until every in-flight key is done() (client-go's
  // ShutDownWithDrain). Must not be called by a thread holding an in-flight key.
  void shut_down_with_drain();
  bool shutting_down() const;

  const std::string& name() const { return name_; }

 private:
  using time_point = Clock::time_point;
  using Delayed = std::multimap<time_point, std::string>;

  void add_after_locked(const std::string& key, std::chrono::nanoseconds delay);
  void make_due_locked(const std::string& key, time_point now);
  void cancel_delayed_locked(const std::string& key);
  void promote_due_locked(time_point now);
  std::chrono::nanoseconds backoff_locked(const std::string& key);

  const std::string name_;
  const std::chrono::nanoseconds base_delay_;
  const std::chrono::nanoseconds max_delay_;
  const std::shared_ptr<Clock> clock_;
  const std::shared_ptr<WorkQueueMetrics> metrics_;
  kube::RateLimiter bucket_;

  mutable std::mutex mu_;
  std::condition_variable ready_cv_;  // a key is ready, the earliest delay moved, or shut down
  std::condition_variable idle_cv_;   // nothing in flight any more
  bool shutting_down_ = false;
  std::deque<std::string> queue_;  // ready keys, FIFO
  // Keys due for processing (queued, or re-added while in flight) -> when they became due.
  std::unordered_map<std::string, time_point> dirty_;
  std::unordered_map<std::string, time_point> in_flight_;  // handed out -> when
  Delayed delayed_;  // keys waiting for their time, earliest first; never also dirty
  std::unordered_map<std::string, Delayed::iterator> delayed_index_;
  std::unordered_map<std::string, int> failures_;
};

// What a reconcile asks the worker to do with its key, as controller-runtime's
// reconcile.Result plus error.
struct WorkResult {
  enum class Kind {
    kSuccess,        // forget the key's failures
    kRequeue,        // requeue with backoff, no error (Result{Requeue: true})
    kRequeueAfter,   // forget, then requeue after `delay` (Result{RequeueAfter: delay})
    kError,          // transient error: requeue with backoff
    kTerminalError,  // not retried (reconcile.TerminalError); the failure count is kept
  };

  Kind kind = Kind::kSuccess;
  std::chrono::nanoseconds delay{0};  // kRequeueAfter
  std::string error;                  // kError, kTerminalError: what failed

  static WorkResult success() { return {}; }
  static WorkResult requeue() { return {Kind::kRequeue, {}, {}}; }
  static WorkResult requeue_after(std::chrono::nanoseconds d) {
    return {Kind::kRequeueAfter, d, {}};
  }
  static WorkResult retry(std::string e) { return {Kind::kError, {}, std::move(e)}; }
  static WorkResult terminal(std::string e) { return {Kind::kTerminalError, {}, std::move(e)}; }
};

using ReconcileFn = std::function<WorkResult(const std::string& key)>;

// One iteration of a worker (controller-runtime's processNextWorkItem): get() a key,
// reconcile it, apply the result, done(). A reconcile that throws is treated as a transient
// error. Returns false, without reconciling, once the queue is shut down.
bool process_next_work_item(WorkQueue& queue, const ReconcileFn& reconcile);

// N threads running process_next_work_item() until the queue shuts down.
class Workers {
 public:
  // Starts max(count, 1) workers. `queue` must outlive this object.
  Workers(WorkQueue& queue, int count, ReconcileFn reconcile);
  // stop()
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // Shuts the queue down and returns once the in-flight reconciles have finished and every
  // worker has exited. Idempotent; must not be called from a reconcile.
  void stop();

 private:
  WorkQueue& queue_;
  const ReconcileFn reconcile_;
  std::vector<std::thread> threads_;
  std::once_flag stopped_;
};

}  // namespace kstack::informer
