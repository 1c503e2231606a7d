#include "executor/setup_error.h"

#include <utility>

#include <fmt/format.h>

namespace kstack::executor {

std::string_view to_string(SetupErrorKind kind) {
  switch (kind) {
    case SetupErrorKind::kConfig:
      return "config error";
    case SetupErrorKind::kContainerChanged:
      return "container changed";
    case SetupErrorKind::kTransport:
      return "transport";
    case SetupErrorKind::kTimeout:
      return "timeout";
    case SetupErrorKind::kApi:
      return "API error";
  }
  return "unknown";
}

std::string SetupError::to_string() const {
  std::string out(executor::to_string(kind));
  out += ": ";
  out += message;
  return out;
}

tl::unexpected<SetupError> setup_error(SetupErrorKind kind, std::string message) {
  return tl::unexpected<SetupError>(SetupError{kind, std::move(message), std::nullopt});
}

SetupError classify(kube::Error error) {
  SetupError out;
  out.message = error.message;
  if (error.http_status == 0 && error.is(kube::ErrorKind::kConflict) &&
      error.reason == "ContainerChanged") {
    out.kind = SetupErrorKind::kContainerChanged;
  } else if (error.is(kube::ErrorKind::kTimeout)) {
    out.kind = SetupErrorKind::kTimeout;
  } else if (error.is(kube::ErrorKind::kTransport) || error.is(kube::ErrorKind::kTls)) {
    out.kind = SetupErrorKind::kTransport;
  } else {
    out.kind = SetupErrorKind::kApi;
  }
  out.api = std::move(error);
  return out;
}

std::optional<SetupError> killed_before_reporting(std::string_view step, int exit_code,
                                                  bool reported) {
  constexpr int kSignalBase = 128;
  constexpr int kLastSignal = 64;
  if (reported || exit_code <= kSignalBase || exit_code > kSignalBase + kLastSignal) {
    return std::nullopt;
  }
  SetupError out;
  out.kind = SetupErrorKind::kTransport;
  out.message = fmt::format("{} was killed by signal {} (exit {}) before it reported its end", step,
                            exit_code - kSignalBase, exit_code);
  return out;
}

}  // namespace kstack::executor
