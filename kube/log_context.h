// Structured log fields (stack, namespace, role, member, reconcile_id) for the lines one thread
// logs while it works for one Stack. A LogScope sets them for the duration of a reconcile pass,
// a member's setup or a notification; the JSON log formatter (cmd/logging.cpp) adds the
// non-empty ones to every line. Thread-local, because a pass runs on one worker thread from
// start to end and spdlog formats a line on the thread that logs it (synchronous loggers), so
// nothing is locked or passed through the call chain.
#pragma once

#include <string>
#include <utility>

namespace kstack::kube {

struct LogFields {
  std::string stack;
  std::string ns;
  std::string role;
  std::string member;
  std::string reconcile_id;
};

namespace detail {
inline LogFields& thread_log_fields() {
  thread_local LogFields fields;
  return fields;
}
}  // namespace detail

// The fields of the scope the calling thread is in (all empty outside any scope).
inline const LogFields& log_fields() { return detail::thread_log_fields(); }

// The current fields narrowed to one member of `role`.
inline LogFields with_member(std::string role, std::string member) {
  LogFields fields = log_fields();
  fields.role = std::move(role);
  fields.member = std::move(member);
  return fields;
}

// Sets the calling thread's fields until it goes out of scope, then restores the previous ones
// (scopes nest: a member's scope inside its pass's).
class LogScope {
 public:
  explicit LogScope(LogFields fields)
      : saved_(std::exchange(detail::thread_log_fields(), std::move(fields))) {}
  ~LogScope() { detail::thread_log_fields() = std::move(saved_); }
  LogScope(const LogScope&) = delete;
  LogScope& operator=(const LogScope&) = delete;

 private:
  LogFields saved_;
};

}  // namespace kstack::kube
