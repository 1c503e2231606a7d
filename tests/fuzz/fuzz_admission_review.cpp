// Fuzzes the AdmissionReview envelope (validator/admission.cpp): decode_review on any body,
// and for every review it accepts, encode_review of an allow and of a denial with a patch and
// warnings must be JSON that echoes the uid and apiVersion, with the patch in base64.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "kube/json_parser.h"
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

// request.object as the API server meant it: the body read with exact numbers (Go's
// decoder, kube::parse_json), as deep as decode_review allows; null when it is not an object.
json::value sent_object(std::string_view body) {
  json::parse_options options;
  options.max_depth = 128;
  boost::system::error_code ec;
  json::value review = kstack::kube::parse_json(body, ec, {}, options);
  if (ec) fail("decode_review accepted what an exact JSON parser refuses", ec.message());
  const json::value* object = review.at("request").get_object().if_contains("object");
  return object != nullptr && object->is_object() ? *object : json::value();
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
  // The answer is written without a DOM: the strings quoted back must read back as they were.
  const json::value* status = response.if_contains("status");
  if (status == nullptr || !status->is_object() ||
      status->get_object().if_contains("message") == nullptr ||
      status->get_object().at("message") != json::value("spec.app: " + request->name)) {
    fail("status.message does not read back", json::serialize(response));
  }
  if (response.if_contains("warnings") == nullptr ||
      response.at("warnings") != json::value(json::array{json::string(request->username),
                                                         json::string(request->namespace_name)})) {
    fail("warnings do not read back", json::serialize(response));
  }
  const json::value* encoded_patch = response.if_contains("patch");
  if (encoded_patch == nullptr || !encoded_patch->is_string()) fail("no patch", "");
  const std::string decoded = decode_base64(encoded_patch->get_string());
  // The API server reads the patch as exactly as it wrote the review (Go's decoder; modelled
  // by kube::parse_json, as Boost.JSON's json::parse misreads some doubles): the value it
  // gets back must be the object it sent, every number included.
  json::array expected = patch;
  expected[0].get_object()["value"] = sent_object(body);
  boost::system::error_code ec;
  if (kstack::kube::parse_json(decoded, ec) != json::value(expected) || ec) {
    fail("patch does not round-trip", decoded);
  }
  return 0;
}
