// Delivers --addnodes/--delnodes notifications off the reconcile workers: a pass asks for a
// command to be sent to a member and returns; a small pool runs the startscript over exec and
// keeps the outcome until a later pass of the same Stack picks it up (and wakes that pass
// through `on_done`). Retries are scheduled by the pass with exponential backoff, bounded by
// NotifierOptions::max_attempts, so one dead member cannot hold a Stack forever.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "executor/setup.h"
#include "reconciler/job_pool.h"

namespace kstack::reconciler {

struct NotifierOptions {
  int threads = 4;  // shared by all Stacks; a hung script holds one until notify_timeout
  int max_attempts = 5;
  std::chrono::milliseconds first_retry{1000};
  std::chrono::milliseconds max_retry{30'000};
};

// What a pass knows of its notifications: a copy of their outcomes, taken when it observes.
struct NotifyOutcome {
  using Clock = std::chrono::steady_clock;
  enum class State { kInFlight, kSucceeded, kFailed } state = State::kInFlight;
  int attempts = 0;            // finished attempts
  std::string error;           // of the last failed attempt
  Clock::time_point retry_at;  // kFailed: not before
};
// Keyed by notify_id(member, arguments).
using NotifyOutcomes = std::map<std::string, NotifyOutcome>;
std::string notify_id(const executor::MemberTarget& member,
                      const std::vector<std::string>& arguments);

// Where a pass queues notifications and drops the ones whose outcome it consumed (Notifier; a
// fake in tests).
class NotifyQueue {
 public:
  virtual ~NotifyQueue() = default;
  virtual void send(const std::string& stack_key, const executor::MemberTarget& member,
                    const std::vector<std::string>& arguments) = 0;
  virtual void forget(const executor::MemberTarget& member,
                      const std::vector<std::string>& arguments) = 0;
};

class Notifier : public NotifyQueue {
 public:
  using Clock = NotifyOutcome::Clock;
  using Outcome = NotifyOutcome;

  Notifier(executor::SetupRunner& runner, std::function<void(const std::string&)> on_done,
           NotifierOptions options = {});
  ~Notifier();
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  const NotifierOptions& options() const { return options_; }

  // The outcome so far of sending `arguments` to `member` (nullopt: never asked).
  std::optional<Outcome> outcome(const executor::MemberTarget& member,
                                 const std::vector<std::string>& arguments) const;
  // Starts (or restarts, after a failure) delivery; no-op while one is in flight.
  void send(const std::string& stack_key, const executor::MemberTarget& member,
            const std::vector<std::string>& arguments) override;
  // Drops what is known about this command (after the pass consumed the outcome).
  void forget(const executor::MemberTarget& member,
              const std::vector<std::string>& arguments) override;
  // The outcomes known for members in namespace `ns` (a copy: a pass plans from it).
  NotifyOutcomes outcomes_in(std::string_view ns) const;

  void stop();

 private:
  struct Job {
    std::string stack_key;
    executor::MemberTarget member;
    std::vector<std::string> arguments;
    std::string id;
  };
  void run(Job& job);

  executor::SetupRunner& runner_;
  std::function<void(const std::string&)> on_done_;
  NotifierOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, Outcome> outcomes_;
  bool stopping_ = false;
  JobPool<Job> pool_;  // last: its threads stop before the rest is destroyed
};

}  // namespace kstack::reconciler
