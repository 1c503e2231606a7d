#include "reconciler/notifier.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace kstack::reconciler {

Notifier::Notifier(executor::SetupRunner& runner, std::function<void(const std::string&)> on_done,
                   NotifierOptions options)
    : runner_(runner),
      on_done_(std::move(on_done)),
      options_(options),
      pool_(options.threads, [this](Job& job) { run(job); }) {}

Notifier::~Notifier() { stop(); }

void Notifier::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  pool_.stop();
}

std::string notify_id(const executor::MemberTarget& member,
                      const std::vector<std::string>& arguments) {
  // NUL cannot occur in pod names or in argv elements, so the id is unambiguous.
  std::string id = member.namespace_name + '\0' + member.pod;
  for (const auto& a : arguments) id += '\0' + a;
  return id;
}

std::optional<Notifier::Outcome> Notifier::outcome(
    const executor::MemberTarget& member, const std::vector<std::string>& arguments) const {
  std::lock_guard lock(mu_);
  auto it = outcomes_.find(notify_id(member, arguments));
  if (it == outcomes_.end()) return std::nullopt;
  return it->second;
}

void Notifier::send(const std::string& stack_key, const executor::MemberTarget& member,
                    const std::vector<std::string>& arguments) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    const auto id = notify_id(member, arguments);
    auto [it, inserted] = outcomes_.try_emplace(id);
    // In flight or delivered: nothing to do. Failed: the pass decided it is time to retry.
    if (!inserted && it->second.state != Outcome::State::kFailed) return;
    it->second.state = Outcome::State::kInFlight;
  }
  pool_.post(Job{stack_key, member, arguments, notify_id(member, arguments)});
}

void Notifier::forget(const executor::MemberTarget& member,
                      const std::vector<std::string>& arguments) {
  std::lock_guard lock(mu_);
  outcomes_.erase(notify_id(member, arguments));
}

NotifyOutcomes Notifier::outcomes_in(std::string_view ns) const {
  // Ids start with "<namespace>\0" (notify_id).
  const std::string prefix = std::string(ns) + '\0';
  NotifyOutcomes out;
  std::lock_guard lock(mu_);
  for (auto it = outcomes_.lower_bound(prefix);
       it != outcomes_.end() && it->first.starts_with(prefix); ++it) {
    out.insert(*it);
  }
  return out;
}

void Notifier::run(Job& job) {
  auto result = runner_.run_startscript(job.member, job.arguments);
  std::string error;
  if (!result) {
    error = result.error().message;
  } else if (result->exit_code != 0) {
    error = fmt::format("startscript exited {}{}{}", result->exit_code,
                        result->stderr_tail.empty() ? "" : ": ", result->stderr_tail);
  }
  {
    std::lock_guard lock(mu_);
    auto& o = outcomes_[job.id];
    o.attempts += 1;
    if (error.empty()) {
      o.state = Outcome::State::kSucceeded;
      o.error.clear();
    } else {
      o.state = Outcome::State::kFailed;
      o.error = error;
      auto delay = options_.first_retry * (1LL << std::min(o.attempts - 1, 16));
      o.retry_at = Clock::now() + std::min<std::chrono::milliseconds>(delay, options_.max_retry);
      spdlog::warn("notify {}/{} {}: attempt {}: {}", job.member.namespace_name, job.member.pod,
                   fmt::join(job.arguments, " "), o.attempts, error);
    }
  }
  if (on_done_) on_done_(job.stack_key);
}

}  // namespace kstack::reconciler
