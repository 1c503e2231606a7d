// Fuzzes the AdmissionReview envelope (validator/admission.cpp): decode_review on any body,
// and for every review it accepts, encode_review of an allow and of a denial with a patch and
// warnings must be JSON that echoes the uid and apiVersion, with the patch in base64.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "validator/admission.h"

namespace {

namespace json = boost::json;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  (void)std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

std::string decode_base64(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (in.size() % 4 != 0) fail("patch is not base64", std::string(in));
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 4) {
    std::uint32_t n = 0;
    int pad = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      const char c = in[i + j];
      int v = 0;
      if (c == '=' && i + 4 == in.size() && j >= 2) {
        ++pad;
      } else if (pad != 0 || (v = value(c)) < 0) {
        fail("patch is not base64", std::string(in));
      }
      n = n << 6 | static_cast<std::uint32_t>(v);
    }
    out += static_cast<char>(n >> 16 & 0xff);
    if (pad < 2) out += static_cast<char>(n >> 8 & 0xff);
    if (pad < 1) out += static_cast<char>(n & 0xff);
  }
  return out;
}

// Boost.JSON 1.81 parses numbers beyond double's range (1e400) as infinity and serializes
// that as `Infinity`, which is not JSON. decode_review accepts such numbers (the API server
// never sends them: Go's decoder refuses them), so a patch echoing them cannot round-trip;
// such inputs skip the patch check (reported to the validator's owner).
bool has_non_finite(const json::value& v) {
  if (v.is_double()) return !std::isfinite(v.get_double());
  if (v.is_array()) {
    for (const auto& item : v.get_array()) {
      if (has_non_finite(item)) return true;
    }
  }
  if (v.is_object()) {
    for (const auto& member : v.get_object()) {
      if (has_non_finite(member.value())) return true;
    }
  }
  return false;
}

// The encoded answer must parse and carry the request's apiVersion and uid.
json::object check_envelope(const std::string& encoded,
                            const kstack::validator::AdmissionRequest& request) {
  boost::system::error_code ec;
  json::value v = json::parse(encoded, ec);
  if (ec || !v.is_object()) fail("encode_review is not a JSON object", encoded);
  const json::object& review = v.get_object();
  const json::value* api_version = review.if_contains("apiVersion");
  const json::value* response = review.if_contains("response");
  if (api_version == nullptr || !api_version->is_string() ||
      api_version->get_string() != request.api_version) {
    fail("apiVersion not echoed", encoded);
  }
  if (response == nullptr || !response->is_object()) fail("no response object", encoded);
  const json::value* uid = response->get_object().if_contains("uid");
  if (uid == nullptr || !uid->is_string() || uid->get_string() != request.uid) {
    fail("uid not echoed", encoded);
  }
  return response->get_object();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto request = kstack::validator::decode_review(body);
  if (!request) {
    if (request.error().kind != kstack::kube::ErrorKind::kBadRequest ||
        request.error().message.empty()) {
      fail("decode_review failed without a BadRequest message", request.error().to_string());
    }
    return 0;
  }
  // decode_review's contract: a non-empty uid. (request.kind.kind and request.operation are
  // required to be present, but may be empty strings.)
  if (request->uid.empty()) fail("accepted a review without uid", std::string(body));

  check_envelope(
      kstack::validator::encode_review(*request, kstack::validator::AdmissionResponse::allow()),
      *request);

  // A denial that quotes the request back (messages often do), with a patch and a warning.
  auto denial =
      kstack::validator::AdmissionResponse::deny(422, "Invalid", "spec.app: " + request->name);
  json::array patch;
  patch.push_back(
      json::object{{"op", "add"}, {"path", "/metadata/labels/x"}, {"value", request->object}});
  denial.patch = patch;
  denial.warnings = {request->username, request->namespace_name};
  const json::object response =
      check_envelope(kstack::validator::encode_review(*request, denial), *request);
  if (has_non_finite(request->object)) return 0;
  const json::value* encoded_patch = response.if_contains("patch");
  if (encoded_patch == nullptr || !encoded_patch->is_string()) fail("no patch", "");
  const std::string decoded = decode_base64(encoded_patch->get_string());
  boost::system::error_code ec;
  if (json::parse(decoded, ec) != json::value(patch) || ec) {
    fail("patch does not round-trip", decoded);
  }
  return 0;
}
