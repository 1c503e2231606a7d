// Typed errors of the Kubernetes client. Every failure on the request path is a kube::Error
// carried in a Result<T>; built from the server's `Status` object when there is one.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

namespace kstack::kube {

enum class ErrorKind {
  // From the API server (HTTP status + Status.reason).
  kBadRequest,          // 400 BadRequest
  kUnauthorized,        // 401
  kForbidden,           // 403
  kNotFound,            // 404
  kMethodNotAllowed,    // 405
  kAlreadyExists,       // 409 AlreadyExists
  kConflict,            // 409 Conflict (stale resourceVersion)
  kGone,                // 410 Gone / Expired (resourceVersion too old)
  kPayloadTooLarge,     // 413
  kUnsupportedMedia,    // 415
  kInvalid,             // 422 Invalid, with field causes
  kTooManyRequests,     // 429, with Retry-After
  kInternal,            // 500
  kServiceUnavailable,  // 503
  kServerTimeout,       // 504 / Status reason Timeout
  kUnexpectedStatus,    // any other HTTP status
  // From this side of the wire.
  kTimeout,           // a client-side deadline passed (connect, read, whole request)
  kTransport,         // connection refused, reset, DNS, short read
  kTls,               // handshake or certificate verification failed
  kResponseTooLarge,  // response exceeded the configured bound
  kDecode,            // a response body that is not the JSON we expect
  kCancelled,         // cancelled by the caller
  kConfig,            // kubeconfig / credentials problems
  kInvalidArgument,   // a caller passed something unusable
};

std::string_view to_string(ErrorKind kind);

// One entry of Status.details.causes (field-level reasons for Invalid).
struct StatusCause {
  std::string reason;  // e.g. FieldValueRequired
  std::string message;
  std::string field;  // e.g. metadata.name
};

struct Error {
  ErrorKind kind = ErrorKind::kUnexpectedStatus;
  int http_status = 0;  // 0 when no HTTP response was received
  std::string reason;   // Status.reason as sent by the server (empty otherwise)
  std::string message;  // human-readable, names what failed and where
  std::vector<StatusCause> causes;
  std::optional<std::chrono::seconds> retry_after;  // 429 / 503 Retry-After

  // "Conflict (409): Operation cannot be fulfilled on configmaps \"x\": ..."
  std::string to_string() const;

  bool is(ErrorKind k) const { return kind == k; }
  // 403 because the namespace is being deleted: nothing can be created in it any more, Events
  // included (the API server's NamespaceLifecycle admission; the cause NamespaceTerminating
  // since Kubernetes 1.17, the message alone before).
  bool namespace_terminating() const;
  // True for errors worth retrying with backoff (transport, timeouts, 429, 5xx).
  bool retryable() const;
};

template <typename T>
using Result = tl::expected<T, Error>;

inline tl::unexpected<Error> make_error(ErrorKind kind, std::string message) {
  Error e;
  e.kind = kind;
  e.message = std::move(message);
  return tl::unexpected<Error>(std::move(e));
}

// Maps an HTTP status and (optional) Status JSON body to a typed Error.
// `body` may be anything; a non-Status body becomes the message (truncated).
Error error_from_response(int http_status, std::string_view body,
                          std::optional<std::chrono::seconds> retry_after = std::nullopt);

}  // namespace kstack::kube
