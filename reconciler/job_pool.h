// A fixed set of threads running queued jobs first in, first out: the pool behind the setup
// steps (SetupExecutor) and the notifications (Notifier), which keep their own outcomes.
// Each job runs under the log fields of the pass that queued it.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "kube/log_context.h"

namespace kstack::reconciler {

template <typename Job>
class JobPool {
 public:
  // `run` is called on a pool thread for each job; at least one thread runs.
  JobPool(int threads, std::function<void(Job&)> run) : run_(std::move(run)) {
    for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { loop(); });
  }
  ~JobPool() { stop(); }
  JobPool(const JobPool&) = delete;
  JobPool& operator=(const JobPool&) = delete;

  // Queues the job with the caller's log fields; false (and dropped) once stopping.
  bool post(Job job) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return false;
      jobs_.push_back(Queued{std::move(job), kube::log_fields()});
    }
    cv_.notify_one();
    return true;
  }

  // Jobs waiting for a thread.
  std::size_t queued() const {
    std::lock_guard lock(mu_);
    return jobs_.size();
  }

  // Takes no more jobs, drops the queued ones and waits for the running ones. Idempotent.
  void stop() {
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

 private:
  struct Queued {
    Job job;
    kube::LogFields log_fields;
  };

  void loop() {
    for (;;) {
      Queued next;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (stopping_) return;
        next = std::move(jobs_.front());
        jobs_.pop_front();
      }
      const kube::LogScope log_scope(next.log_fields);
      run_(next.job);
    }
  }

  std::function<void(Job&)> run_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // last: joined before the rest is destroyed
};

}  // namespace kstack::reconciler
