// The errors of a setup step (executor/setup.h), typed for what the reconciler does next: a
// setup that is wrong puts the member in config_error; a changed container starts setup over;
// the rest is retried on a later pass. The API server's own refusals (a 422, a 409, a 403...)
// stay API errors carrying the kube::Error: they say nothing about the AppType's setup, so a
// genuine 422 from the server is never mistaken for a config error.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

#include "kube/error.h"

namespace kstack::executor {

enum class SetupErrorKind {
  kConfig,            // the setup is wrong: no curl/wget, sha256 mismatch, no startscript, ...
  kContainerChanged,  // the container being set up is not the running one any more (restart)
  kTransport,         // the exec connection failed or returned output the step cannot read
  kTimeout,           // a step ran out of time
  kApi,               // the API server refused a request; `api` holds its answer
};

std::string_view to_string(SetupErrorKind kind);

struct SetupError {
  SetupErrorKind kind = SetupErrorKind::kApi;
  std::string message;             // names the step and the member
  std::optional<kube::Error> api;  // the client's error underneath (always set for kApi)

  bool is(SetupErrorKind k) const { return kind == k; }
  // "config error: install_package in pod ns/p: sha256 mismatch ..."
  std::string to_string() const;
};

template <typename T>
using SetupResult = tl::expected<T, SetupError>;

tl::unexpected<SetupError> setup_error(SetupErrorKind kind, std::string message);

// What a kube client error met during a setup step means for the setup. kube::exec refuses a
// changed container itself, with no HTTP answer (http_status 0, reason ContainerChanged); a
// Conflict the server sent is an API error like any other.
SetupError classify(kube::Error error);

// What a step's exit code means when its shell died by a signal before it reported how the
// step's script ended (`reported` false, exit code 129-192): kstack's own script never ran to
// its end — the container stopping, an OOM kill — which says nothing about the setup, so it is
// a kTransport error (retried on a later pass, where a restarted container is noticed) naming
// `step` and the signal. Nothing for any other exit.
std::optional<SetupError> killed_before_reporting(std::string_view step, int exit_code,
                                                  bool reported);

}  // namespace kstack::executor
