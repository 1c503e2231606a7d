// Admission reviews: the decoded request kstack's rules look at, the response they give, and
// the handler interface the HTTPS server dispatches to. The AdmissionReview envelope
// (admission.k8s.io/v1 and v1beta1) is decoded and encoded in admission.cpp.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/value.hpp>

#include "kube/error.h"

namespace kstack::validator {

struct AdmissionRequest {
  std::string api_version;  // of the review: admission.k8s.io/v1 or admission.k8s.io/v1beta1
  std::string uid;
  std::string group;         // request.kind.group, e.g. kstack.io
  std::string version;       // request.kind.version, e.g. v1beta1
  std::string kind;          // request.kind.kind: AppType | Stack | KStackConfig
  std::string resource;      // request.resource.resource, e.g. stacks
  std::string sub_resource;  // request.subResource, e.g. status ("" for the main resource)
  std::string operation;     // CREATE | UPDATE | DELETE | CONNECT
  std::string name;
  std::string namespace_name;
  std::string username;  // request.userInfo.username (no rule reads its groups, uid or extra)
  bool dry_run = false;
  // The memory of `object` and `old_object` when decode_review made them (null otherwise);
  // declared first so that it outlives them. Copies of the request share it.
  std::shared_ptr<boost::json::monotonic_resource> arena;
  boost::json::value object;      // null when absent (DELETE)
  boost::json::value old_object;  // null when absent (CREATE)
};

struct AdmissionResponse {
  bool allowed = true;
  int code = 0;         // status.code for a denial (403 Forbidden, 422 Invalid, 400)
  std::string reason;   // status.reason, e.g. Invalid, Forbidden
  std::string message;  // status.message: every problem, each naming its field path
  std::vector<std::string> warnings;
  std::optional<boost::json::array> patch;  // RFC 6902 JSON patch (mutating endpoint only)

  static AdmissionResponse allow() { return {}; }
  static AdmissionResponse deny(int code, std::string reason, std::string message);
};

// What the server dispatches to. Implementations must be thread-safe (many connections) and
// must not throw; they read state (the catalog) from the operator's watch caches.
class AdmissionHandler {
 public:
  virtual ~AdmissionHandler() = default;
  virtual AdmissionResponse validate(const AdmissionRequest& request) = 0;
  virtual AdmissionResponse mutate(const AdmissionRequest& request) = 0;
};

// Decodes an AdmissionReview body. Errors (kind kBadRequest) say what is wrong and where:
// not JSON, wrong apiVersion/kind, missing `request`, missing `request.uid`, ...
// `object` and `old_object` live in the request's `arena`, which their values do not own
// (no reference count per value, nothing to free one by one): a copy of either made with
// the copy constructor uses the same arena and must not outlive the request; copy into
// another storage (`json::value(v, json::storage_ptr())`) to keep one. Both come without
// metadata.managedFields, which no rule reads (it is parsed and checked, not kept).
kube::Result<AdmissionRequest> decode_review(std::string_view body);

// Encodes the AdmissionReview answer for `request` (same apiVersion, echoed uid).
std::string encode_review(const AdmissionRequest& request, const AdmissionResponse& response);

}  // namespace kstack::validator
