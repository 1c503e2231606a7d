// Builds typed errors from the API server's responses (metav1.Status).
#include "kube/error.h"

#include <algorithm>

#include <boost/json.hpp>
#include <fmt/format.h>

namespace kstack::kube {
namespace {

constexpr std::size_t kMaxMessageFromBody = 1024;

ErrorKind kind_from_status(int http_status, std::string_view reason) {
  // The Status reason is more specific than the HTTP code (409 is AlreadyExists or Conflict,
  // 410 or an in-stream ERROR event is Expired/Gone, 504 or 500 may be Timeout).
  if (reason == "AlreadyExists") return ErrorKind::kAlreadyExists;
  if (reason == "Conflict") return ErrorKind::kConflict;
  if (reason == "Expired" || reason == "Gone") return ErrorKind::kGone;
  if (reason == "Invalid") return ErrorKind::kInvalid;
  if (reason == "NotFound") return ErrorKind::kNotFound;
  if (reason == "Forbidden") return ErrorKind::kForbidden;
  if (reason == "Unauthorized") return ErrorKind::kUnauthorized;
  if (reason == "TooManyRequests") return ErrorKind::kTooManyRequests;
  if (reason == "Timeout") return ErrorKind::kServerTimeout;
  if (reason == "MethodNotAllowed") return ErrorKind::kMethodNotAllowed;
  if (reason == "RequestEntityTooLarge") return ErrorKind::kPayloadTooLarge;
  if (reason == "UnsupportedMediaType") return ErrorKind::kUnsupportedMedia;
  if (reason == "ServiceUnavailable") return ErrorKind::kServiceUnavailable;
  switch (http_status) {
    case 400:
      return ErrorKind::kBadRequest;
    case 401:
      return ErrorKind::kUnauthorized;
    case 403:
      return ErrorKind::kForbidden;
    case 404:
      return ErrorKind::kNotFound;
    case 405:
      return ErrorKind::kMethodNotAllowed;
    case 409:
      return ErrorKind::kConflict;
    case 410:
      return ErrorKind::kGone;
    case 413:
      return ErrorKind::kPayloadTooLarge;
    case 415:
      return ErrorKind::kUnsupportedMedia;
    case 422:
      return ErrorKind::kInvalid;
    case 429:
      return ErrorKind::kTooManyRequests;
    case 500:
      return ErrorKind::kInternal;
    case 503:
      return ErrorKind::kServiceUnavailable;
    case 504:
      return ErrorKind::kServerTimeout;
    default:
      return ErrorKind::kUnexpectedStatus;
  }
}

std::string string_field(const boost::json::object& o, std::string_view key) {
  if (const auto* v = o.if_contains(key); v != nullptr && v->is_string()) {
    return std::string(v->get_string());
  }
  return {};
}

}  // namespace

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kBadRequest:
      return "BadRequest";
    case ErrorKind::kUnauthorized:
      return "Unauthorized";
    case ErrorKind::kForbidden:
      return "Forbidden";
    case ErrorKind::kNotFound:
      return "NotFound";
    case ErrorKind::kMethodNotAllowed:
      return "MethodNotAllowed";
    case ErrorKind::kAlreadyExists:
      return "AlreadyExists";
    case ErrorKind::kConflict:
      return "Conflict";
    case ErrorKind::kGone:
      return "Gone";
    case ErrorKind::kPayloadTooLarge:
      return "PayloadTooLarge";
    case ErrorKind::kUnsupportedMedia:
      return "UnsupportedMediaType";
    case ErrorKind::kInvalid:
      return "Invalid";
    case ErrorKind::kTooManyRequests:
      return "TooManyRequests";
    case ErrorKind::kInternal:
      return "InternalError";
    case ErrorKind::kServiceUnavailable:
      return "ServiceUnavailable";
    case ErrorKind::kServerTimeout:
      return "ServerTimeout";
    case ErrorKind::kUnexpectedStatus:
      return "UnexpectedStatus";
    case ErrorKind::kTimeout:
      return "Timeout";
    case ErrorKind::kTransport:
      return "TransportError";
    case ErrorKind::kTls:
      return "TLSError";
    case ErrorKind::kResponseTooLarge:
      return "ResponseTooLarge";
    case ErrorKind::kDecode:
      return "DecodeError";
    case ErrorKind::kCancelled:
      return "Cancelled";
    case ErrorKind::kConfig:
      return "ConfigError";
    case ErrorKind::kInvalidArgument:
      return "InvalidArgument";
  }
  return "Unknown";
}

std::string Error::to_string() const {
  std::string out(kube::to_string(kind));
  if (http_status != 0) out += fmt::format(" ({})", http_status);
  out += ": ";
  out += message;
  for (const auto& c : causes) {
    out += fmt::format("; {}: {}", c.field.empty() ? c.reason : c.field, c.message);
  }
  return out;
}

bool Error::namespace_terminating() const {
  if (kind != ErrorKind::kForbidden) return false;
  for (const auto& c : causes) {
    if (c.reason == "NamespaceTerminating") return true;
  }
  return message.find("because it is being terminated") != std::string::npos;
}

bool Error::retryable() const {
  switch (kind) {
    case ErrorKind::kTimeout:
    case ErrorKind::kTransport:
    case ErrorKind::kTooManyRequests:
    case ErrorKind::kInternal:
    case ErrorKind::kServiceUnavailable:
    case ErrorKind::kServerTimeout:
      return true;
    default:
      return false;
  }
}

Error error_from_response(int http_status, std::string_view body,
                          std::optional<std::chrono::seconds> retry_after) {
  Error e;
  e.http_status = http_status;
  e.retry_after = retry_after;

  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  const boost::json::object* status = nullptr;
  if (!ec && v.is_object() && string_field(v.get_object(), "kind") == "Status") {
    status = &v.get_object();
  }
  if (status == nullptr) {
    e.kind = kind_from_status(http_status, {});
    std::string_view shown = body.substr(0, kMaxMessageFromBody);
    e.message = shown.empty() ? fmt::format("HTTP status {}", http_status) : std::string(shown);
    return e;
  }

  e.reason = string_field(*status, "reason");
  e.message = string_field(*status, "message");
  if (const auto* code = status->if_contains("code"); code != nullptr && code->is_int64()) {
    const auto c = code->get_int64();
    // Only a plausible HTTP status: a wild number must not truncate into, say, 404.
    if (http_status == 0 && c >= 100 && c <= 599) e.http_status = static_cast<int>(c);
  }
  e.kind = kind_from_status(e.http_status, e.reason);
  if (const auto* details = status->if_contains("details"); details && details->is_object()) {
    const auto& d = details->get_object();
    if (const auto* causes = d.if_contains("causes"); causes && causes->is_array()) {
      for (const auto& c : causes->get_array()) {
        if (!c.is_object()) continue;
        e.causes.push_back(StatusCause{string_field(c.get_object(), "reason"),
                                       string_field(c.get_object(), "message"),
                                       string_field(c.get_object(), "field")});
      }
    }
    if (const auto* ras = d.if_contains("retryAfterSeconds");
        ras && ras->is_int64() && !e.retry_after) {
      // Bounded like the Retry-After header: never negative, at most a day.
      const auto secs = ras->get_int64();
      if (secs >= 0) e.retry_after = std::chrono::seconds(std::min<std::int64_t>(secs, 86400));
    }
  }
  if (e.message.empty()) e.message = fmt::format("HTTP status {}", e.http_status);
  return e;
}

}  // namespace kstack::kube
