// The AdmissionReview envelope (validator/admission.h): decoding v1 and v1beta1 reviews, the
// errors for malformed ones, and the encoded answer (apiVersion, uid, status, patch, warnings).
#include <gtest/gtest.h>

#include "tests/unit/validator/admission/support.h"
#include "validator/admission.h"

namespace kstack::validator {
namespace {

using testing::parse_json;
using testing::review_body;

std::string decode_error(std::string_view body) {
  auto decoded = decode_review(body);
  if (decoded) return "(decoded)";
  EXPECT_EQ(decoded.error().kind, kube::ErrorKind::kBadRequest);
  return decoded.error().message;
}

std::string base64_decode(std::string_view in) {
  std::string out;
  int bits = 0;
  std::uint32_t acc = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '+')
      v = 62;
    else if (c == '/')
      v = 63;
    else
      break;  // '='
    acc = acc << 6 | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>(acc >> bits & 0xff);
    }
  }
  return out;
}

TEST(AdmissionReview, DecodesEveryFieldOfAV1Review) {
  auto r = decode_review(review_body("admission.k8s.io/v1", "uid-1", "s1", "UPDATE"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->api_version, "admission.k8s.io/v1");
  EXPECT_EQ(r->uid, "uid-1");
  EXPECT_EQ(r->group, "kstack.io");
  EXPECT_EQ(r->version, "v1beta1");
  EXPECT_EQ(r->kind, "Stack");
  EXPECT_EQ(r->resource, "stacks");
  EXPECT_EQ(r->sub_resource, "");
  EXPECT_EQ(r->operation, "UPDATE");
  EXPECT_EQ(r->name, "s1");
  EXPECT_EQ(r->namespace_name, "default");
  EXPECT_EQ(r->username, "alice");
  EXPECT_FALSE(r->dry_run);
  ASSERT_TRUE(r->object.is_object());
  EXPECT_EQ(r->object.at("metadata").at("name"), "s1");
  EXPECT_TRUE(r->old_object.is_null());
}

TEST(AdmissionReview, DecodesAV1beta1ReviewWithSubresourceAndDryRun) {
  auto v = parse_json(review_body("admission.k8s.io/v1beta1", "uid-2", "s2"));
  auto& req = v.at("request").as_object();
  req["subResource"] = "status";
  req["dryRun"] = true;
  req["oldObject"] = req["object"];
  req.erase("object");
  auto r = decode_review(boost::json::serialize(v));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->api_version, "admission.k8s.io/v1beta1");
  EXPECT_EQ(r->sub_resource, "status");
  EXPECT_TRUE(r->dry_run);
  EXPECT_TRUE(r->object.is_null());
  EXPECT_TRUE(r->old_object.is_object());
}

TEST(AdmissionReview, NamesWhatIsWrongWithAMalformedReview) {
  const std::string good = review_body("admission.k8s.io/v1", "u", "s");
  EXPECT_EQ(decode_error(""), "AdmissionReview: body is not JSON at byte 0: empty body");
  EXPECT_EQ(
      decode_error(good.substr(0, 40)).rfind("AdmissionReview: body is not JSON at byte 40", 0), 0u)
      << decode_error(good.substr(0, 40));
  EXPECT_EQ(decode_error("{\"a\":1,}").rfind("AdmissionReview: body is not JSON at byte 7", 0), 0u);
  EXPECT_EQ(decode_error("{} x"),
            "AdmissionReview: unexpected data after the JSON value at byte 3");
  EXPECT_EQ(decode_error("[1]"), "AdmissionReview: body is an array, not an object");
  EXPECT_EQ(decode_error(R"({"kind":"AdmissionReview"})"), "AdmissionReview: missing apiVersion");
  EXPECT_EQ(decode_error(R"({"apiVersion":7})"),
            "AdmissionReview: apiVersion is a number, not a string");
  EXPECT_EQ(decode_error(R"({"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview"})"),
            "AdmissionReview: wrong apiVersion \"admission.k8s.io/v2\", expected "
            "admission.k8s.io/v1 or admission.k8s.io/v1beta1");
  EXPECT_EQ(decode_error(R"({"apiVersion":"admission.k8s.io/v1","kind":"Pod"})"),
            "AdmissionReview: kind must be AdmissionReview, not \"Pod\"");
  EXPECT_EQ(decode_error(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})"),
            "AdmissionReview: missing request");
  EXPECT_EQ(
      decode_error(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":[]})"),
      "AdmissionReview: request is an array, not an object");

  const auto with = [&](auto edit) {
    auto v = parse_json(good);
    edit(v.at("request").as_object());
    return decode_error(boost::json::serialize(v));
  };
  EXPECT_EQ(with([](auto& r) { r.erase("uid"); }), "AdmissionReview: missing request.uid");
  EXPECT_EQ(with([](auto& r) { r["uid"] = ""; }), "AdmissionReview: request.uid is empty");
  EXPECT_EQ(with([](auto& r) { r["operation"] = ""; }),
            "AdmissionReview: request.operation is empty");
  EXPECT_EQ(with([](auto& r) { r["kind"].as_object()["kind"] = ""; }),
            "AdmissionReview: request.kind.kind is empty");
  EXPECT_EQ(with([](auto& r) { r.erase("kind"); }), "AdmissionReview: missing request.kind");
  EXPECT_EQ(with([](auto& r) { r["kind"].as_object()["kind"] = 3; }),
            "AdmissionReview: request.kind.kind is a number, not a string");
  EXPECT_EQ(with([](auto& r) { r.erase("operation"); }),
            "AdmissionReview: missing request.operation");
  EXPECT_EQ(with([](auto& r) { r["userInfo"].as_object()["username"] = 1; }),
            "AdmissionReview: request.userInfo.username is a number, not a string");
  EXPECT_EQ(with([](auto& r) { r["dryRun"] = "yes"; }),
            "AdmissionReview: request.dryRun is a string, not a boolean");
  EXPECT_EQ(with([](auto& r) { r["object"] = "x"; }),
            "AdmissionReview: request.object is a string, not an object");
}

TEST(AdmissionReview, RejectsDeeplyNestedJsonWithoutCrashing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_NE(decode_error(deep).find("not JSON"), std::string::npos);
}

TEST(AdmissionReview, EncodesAnAllowWithTheRequestsApiVersionAndUid) {
  for (const char* version : {"admission.k8s.io/v1", "admission.k8s.io/v1beta1"}) {
    auto request = decode_review(review_body(version, "uid-echo", "s"));
    ASSERT_TRUE(request);
    auto out = parse_json(encode_review(*request, AdmissionResponse::allow()));
    EXPECT_EQ(out.at("apiVersion"), version);
    EXPECT_EQ(out.at("kind"), "AdmissionReview");
    EXPECT_EQ(out.at("response").at("uid"), "uid-echo");
    EXPECT_EQ(out.at("response").at("allowed"), true);
    EXPECT_FALSE(out.at("response").as_object().contains("status"));
    EXPECT_FALSE(out.at("response").as_object().contains("patch"));
    EXPECT_FALSE(out.at("response").as_object().contains("warnings"));
  }
}

TEST(AdmissionReview, EncodesADenialWithStatusAndWarnings) {
  auto request = decode_review(review_body("admission.k8s.io/v1", "u1", "s"));
  ASSERT_TRUE(request);
  AdmissionResponse deny =
      AdmissionResponse::deny(422, "Invalid", "spec.roles[0].members: must be >= 1");
  deny.warnings = {"spec.foo is deprecated", "second"};
  auto out = parse_json(encode_review(*request, deny));
  const auto& response = out.at("response");
  EXPECT_EQ(response.at("allowed"), false);
  EXPECT_EQ(response.at("status").at("code"), 422);
  EXPECT_EQ(response.at("status").at("reason"), "Invalid");
  EXPECT_EQ(response.at("status").at("message"), "spec.roles[0].members: must be >= 1");
  EXPECT_EQ(response.at("warnings"), (boost::json::array{"spec.foo is deprecated", "second"}));
}

// The answer is written without a DOM (validator/admission.cpp): its strings must be escaped
// exactly as Boost.JSON's serializer escapes them, every byte value included.
TEST(AdmissionReview, EscapesTheAnswersStringsAsTheJsonSerializerDoes) {
  auto request = decode_review(review_body("admission.k8s.io/v1", "u\"1\\", "s"));
  ASSERT_TRUE(request) << request.error().message;
  std::string every_byte;
  for (int c = 1; c < 256; ++c) every_byte += static_cast<char>(c);
  for (const std::string& text :
       {std::string("plain"), std::string("quote \" backslash \\ slash / tab \t nl \n"),
        std::string("\x01\x1f\x7f caf\xc3\xa9 \xe2\x82\xac"), every_byte, std::string()}) {
    AdmissionResponse r = AdmissionResponse::deny(422, text, text);
    r.warnings = {text, "w"};
    const std::string encoded = encode_review(*request, r);
    const std::string quoted = boost::json::serialize(boost::json::string(text));
    if (!text.empty()) {
      EXPECT_NE(encoded.find(R"("message":)" + quoted), std::string::npos) << encoded;
      EXPECT_NE(encoded.find(R"("reason":)" + quoted), std::string::npos) << encoded;
    }
    EXPECT_NE(encoded.find(R"("warnings":[)" + quoted + R"(,"w"])"), std::string::npos) << encoded;
    EXPECT_NE(encoded.find(R"("uid":)" + boost::json::serialize(boost::json::string("u\"1\\"))),
              std::string::npos)
        << encoded;
    if (text == every_byte) continue;  // not UTF-8: no JSON parser takes it back
    auto out = parse_json(encoded);
    EXPECT_EQ(out.at("response").at("warnings").at(0), text.c_str());
    if (!text.empty()) {
      EXPECT_EQ(out.at("response").at("status").at("message"), text.c_str());
    }
  }
}

TEST(AdmissionReview, EncodesAPatchAsBase64JsonPatch) {
  auto request = decode_review(review_body("admission.k8s.io/v1beta1", "u2", "s"));
  ASSERT_TRUE(request);
  AdmissionResponse r = AdmissionResponse::allow();
  boost::json::array patch;
  patch.push_back(
      boost::json::object{{"op", "add"}, {"path", "/spec/appCatalog"}, {"value", "local"}});
  patch.push_back(
      boost::json::object{{"op", "replace"}, {"path", "/spec/roles/0/members"}, {"value", 1}});
  r.patch = patch;
  auto out = parse_json(encode_review(*request, r));
  EXPECT_EQ(out.at("apiVersion"), "admission.k8s.io/v1beta1");
  EXPECT_EQ(out.at("response").at("patchType"), "JSONPatch");
  const std::string encoded(out.at("response").at("patch").as_string());
  EXPECT_EQ(encoded.size() % 4, 0u);
  EXPECT_EQ(parse_json(base64_decode(encoded)), patch);

  r.patch = boost::json::array{};  // an empty patch is no patch
  out = parse_json(encode_review(*request, r));
  EXPECT_FALSE(out.at("response").as_object().contains("patchType"));
}

}  // namespace
}  // namespace kstack::validator
