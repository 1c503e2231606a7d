#include "kube/error.h"

#include <gtest/gtest.h>

namespace kstack::kube {
namespace {

TEST(ErrorFromResponse, ConflictStatusBecomesTypedConflict) {
  const auto e = error_from_response(409, R"({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"Operation cannot be fulfilled on configmaps \"a\": the object has been modified",
    "reason":"Conflict","details":{"name":"a","kind":"configmaps"},"code":409})");
  EXPECT_EQ(e.kind, ErrorKind::kConflict);
  EXPECT_EQ(e.http_status, 409);
  EXPECT_EQ(e.reason, "Conflict");
  EXPECT_NE(e.message.find("has been modified"), std::string::npos);
}

TEST(ErrorFromResponse, AlreadyExistsIsDistinguishedFromConflictByReason) {
  const auto e = error_from_response(
      409, R"({"kind":"Status","reason":"AlreadyExists","message":"exists","code":409})");
  EXPECT_EQ(e.kind, ErrorKind::kAlreadyExists);
}

TEST(ErrorFromResponse, InvalidCarriesFieldCauses) {
  const auto e = error_from_response(422, R"({"kind":"Status","reason":"Invalid","code":422,
    "message":"ConfigMap \"A\" is invalid","details":{"causes":[
      {"reason":"FieldValueInvalid","message":"Invalid value: \"A\"","field":"metadata.name"}]}})");
  EXPECT_EQ(e.kind, ErrorKind::kInvalid);
  ASSERT_EQ(e.causes.size(), 1u);
  EXPECT_EQ(e.causes[0].field, "metadata.name");
  EXPECT_NE(e.to_string().find("metadata.name: Invalid value"), std::string::npos);
}

// What kube-apiserver 1.20 answers a create in a namespace being deleted (NamespaceLifecycle).
TEST(ErrorFromResponse, ANamespaceBeingDeletedIsToldFromOtherForbiddens) {
  const auto terminating = error_from_response(403, R"({"kind":"Status","status":"Failure",
    "message":"services \"db-0\" is forbidden: unable to create new content in namespace apps because it is being terminated",
    "reason":"Forbidden","details":{"name":"db-0","kind":"services","causes":[
      {"reason":"NamespaceTerminating","message":"namespace apps is being terminated",
       "field":"metadata.namespace"}]},"code":403})");
  EXPECT_EQ(terminating.kind, ErrorKind::kForbidden);
  EXPECT_TRUE(terminating.namespace_terminating());
  // An older server: the message alone.
  EXPECT_TRUE(error_from_response(403, R"({"kind":"Status","reason":"Forbidden","code":403,
    "message":"unable to create new content in namespace apps because it is being terminated"})")
                  .namespace_terminating());
  const auto rbac = error_from_response(403, R"({"kind":"Status","reason":"Forbidden","code":403,
    "message":"services is forbidden: User \"x\" cannot create resource \"services\""})");
  EXPECT_EQ(rbac.kind, ErrorKind::kForbidden);
  EXPECT_FALSE(rbac.namespace_terminating());
  // The same words from anything but a 403 are not this.
  EXPECT_FALSE(error_from_response(409, R"({"kind":"Status","reason":"Conflict","code":409,
    "message":"because it is being terminated"})")
                   .namespace_terminating());
}

TEST(ErrorFromResponse, ExpiredStatusInsideWatchIsGoneWithCodeFromBody) {
  const auto e = error_from_response(
      0, R"({"kind":"Status","reason":"Expired","message":"too old resource version","code":410})");
  EXPECT_EQ(e.kind, ErrorKind::kGone);
  EXPECT_EQ(e.http_status, 410);
}

TEST(ErrorFromResponse, TooManyRequestsKeepsRetryAfter) {
  const auto e = error_from_response(
      429, R"({"kind":"Status","reason":"TooManyRequests","code":429,"message":"slow down",
               "details":{"retryAfterSeconds":3}})");
  EXPECT_EQ(e.kind, ErrorKind::kTooManyRequests);
  ASSERT_TRUE(e.retry_after.has_value());
  EXPECT_EQ(e.retry_after->count(), 3);
  EXPECT_TRUE(e.retryable());
}

TEST(ErrorFromResponse, ImplausibleCodeAndRetryAfterInTheBodyAreIgnored) {
  const auto e = error_from_response(
      0, R"({"kind":"Status","code":4294967700,"details":{"retryAfterSeconds":-5}})");
  EXPECT_EQ(e.http_status, 0);
  EXPECT_FALSE(e.retry_after.has_value());
  const auto big = error_from_response(
      429, R"({"kind":"Status","code":429,"details":{"retryAfterSeconds":99999999}})");
  ASSERT_TRUE(big.retry_after.has_value());
  EXPECT_EQ(big.retry_after->count(), 86400);
}

TEST(ErrorFromResponse, HeaderRetryAfterWinsOverBody) {
  const auto e =
      error_from_response(429, R"({"kind":"Status","code":429,"details":{"retryAfterSeconds":3}})",
                          std::chrono::seconds(7));
  EXPECT_EQ(e.retry_after->count(), 7);
}

TEST(ErrorFromResponse, NonStatusBodyFallsBackToHttpCodeAndKeepsText) {
  const auto e = error_from_response(403, "forbidden: no");
  EXPECT_EQ(e.kind, ErrorKind::kForbidden);
  EXPECT_EQ(e.message, "forbidden: no");
  const auto u = error_from_response(401, "");
  EXPECT_EQ(u.kind, ErrorKind::kUnauthorized);
  EXPECT_EQ(u.message, "HTTP status 401");
  EXPECT_FALSE(u.retryable());
}

TEST(ErrorFromResponse, HugeNonStatusBodyIsTruncatedInMessage) {
  const auto e = error_from_response(500, std::string(100000, 'x'));
  EXPECT_EQ(e.kind, ErrorKind::kInternal);
  EXPECT_LE(e.message.size(), 1024u);
}

TEST(ErrorFromResponse, UnknownStatusCodeIsUnexpectedStatus) {
  EXPECT_EQ(error_from_response(418, "").kind, ErrorKind::kUnexpectedStatus);
  EXPECT_EQ(error_from_response(504, "").kind, ErrorKind::kServerTimeout);
}

}  // namespace
}  // namespace kstack::kube
