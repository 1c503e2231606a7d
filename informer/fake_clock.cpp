#include "informer/fake_clock.h"

#include <cassert>
#include <vector>

namespace kstack::informer {

// Lock order: a waiter's own mutex, then mu_ (registration). advance() never holds both: it
// collects due waiters under mu_, then notifies each under that waiter's mutex alone. A waiter
// therefore unregisters without its mutex held, and does not return (so its mutex and
// condition variable may be destroyed) while an advance() is still about to notify it.

FakeClock::FakeClock(time_point start) : now_(start) {}

FakeClock::~FakeClock() { assert(waiters_.empty()); }

Clock::time_point FakeClock::now() const {
  std::lock_guard guard(mu_);
  return now_;
}

std::cv_status FakeClock::wait_until(std::unique_lock<std::mutex>& lock,
                                     std::condition_variable& cv, time_point deadline) {
  assert(lock.owns_lock());
  Waiter self{lock.mutex(), &cv, deadline};
  std::list<Waiter*>::iterator pos;
  {
    std::lock_guard guard(mu_);
    if (now_ >= deadline) return std::cv_status::timeout;
    pos = waiters_.insert(waiters_.end(), &self);
  }
  changed_.notify_all();

  cv.wait(lock);

  // The caller sees this unlocked stretch as part of a spurious wake-up: it re-checks its
  // predicate under the lock once we return.
  lock.unlock();
  bool reached = false;
  {
    std::unique_lock guard(mu_);
    waiters_.erase(pos);
    changed_.wait(guard, [&] { return self.notifying == 0; });
    reached = now_ >= deadline;
  }
  changed_.notify_all();
  lock.lock();
  return reached ? std::cv_status::timeout : std::cv_status::no_timeout;
}

void FakeClock::advance(duration d) {
  assert(d >= duration::zero());
  std::vector<Waiter*> due;
  {
    std::lock_guard guard(mu_);
    now_ += d;
    for (Waiter* w : waiters_) {
      if (w->deadline <= now_) {
        ++w->notifying;
        due.push_back(w);
      }
    }
  }
  for (Waiter* w : due) {
    // A registered waiter holds its mutex until it is inside cv.wait(), so taking the mutex
    // here guarantees the notification is not lost.
    std::lock_guard guard(*w->mutex);
    w->cv->notify_all();
  }
  {
    std::lock_guard guard(mu_);
    for (Waiter* w : due) --w->notifying;
  }
  changed_.notify_all();
}

std::size_t FakeClock::waiters() const {
  std::lock_guard guard(mu_);
  return waiters_.size();
}

bool FakeClock::await_waiters(std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock guard(mu_);
  return changed_.wait_for(guard, timeout, [&] { return waiters_.size() >= n; });
}

}  // namespace kstack::informer
