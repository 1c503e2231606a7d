// The AdmissionReview envelope's reading of numbers and of the members no rule reads
// (validator/admission.cpp); the rest of the envelope is covered by
// tests/integration/admission/admission_review_test.cpp.
#include "validator/admission.h"

#include <string>
#include <vector>

#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

namespace kstack::validator {
namespace {

std::string review_with_members(std::string_view members) {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",)"
         R"("kind":{"group":"kstack.io","version":"v1beta1","kind":"Stack"},"operation":"CREATE",)"
         R"("object":{"spec":{"roles":[{"id":"worker","members":)" +
         std::string(members) + "}]}}}}";
}

TEST(AdmissionReviewNumbers, AreReadExactlySoAPatchQuotingOneGivesTheApiServerItsOwnNumber) {
  // Found by fuzz_admission_review: Boost.JSON's parser read 1.2E85 as 1.2000000000000002E85,
  // so a patch echoing the object changed the user's number.
  auto r = decode_review(review_with_members("1.2E85"));
  ASSERT_TRUE(r) << r.error().message;
  const boost::json::value& members = r->object.at("spec").at("roles").at(0).at("members");
  EXPECT_EQ(members, boost::json::value(1.2E85));
  EXPECT_EQ(boost::json::serialize(members), "1.2E85");
}

TEST(AdmissionReviewNumbers, ANumberBeyondTheRangeOfADoubleIsABadRequestSayingWhere) {
  // Boost.JSON would read it as infinity and a patch would echo it as `Infinity`, not JSON.
  const std::string body = review_with_members("1e400");
  auto r = decode_review(body);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, kube::ErrorKind::kBadRequest);
  const std::size_t end = body.find("1e400") + 5;
  EXPECT_EQ(r.error().message, "AdmissionReview: the number ending at byte " + std::to_string(end) +
                                   " is beyond the range of a double");
}

std::string update_review(std::string_view managed_fields) {
  const std::string object_metadata = R"({"name":"s","labels":{"team":"data"},"managedFields":)" +
                                      std::string(managed_fields) + "}";
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",)"
         R"("kind":{"group":"kstack.io","version":"v1beta1","kind":"Stack"},)"
         R"("requestKind":{"group":"kstack.io","version":"v1beta1","kind":"Stack"},)"
         R"("operation":"UPDATE","options":{"kind":"UpdateOptions","fieldManager":"kubectl"},)"
         R"("userInfo":{"username":"alice","groups":["dev"],"extra":{"scopes":["openid"]}},)"
         R"("object":{"metadata":)" +
         object_metadata + R"(,"spec":{"app":"a"}},"oldObject":{"metadata":)" + object_metadata +
         R"(,"spec":{"app":"b"}}}})";
}

TEST(AdmissionReviewUnreadMembers, ManagedFieldsAreLeftOutOfTheObjectsAndTheRestIsKept) {
  auto r = decode_review(update_review(
      R"([{"manager":"kubectl","operation":"Update","fieldsType":"FieldsV1",)"
      R"("fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:team":{}}},"f:spec":{"f:app":{}}}}])"));
  ASSERT_TRUE(r) << r.error().message;
  for (const boost::json::value* o : {&r->object, &r->old_object}) {
    const auto& metadata = o->at("metadata").as_object();
    EXPECT_FALSE(metadata.contains("managedFields")) << boost::json::serialize(*o);
    EXPECT_EQ(metadata.at("name"), "s");
    EXPECT_EQ(metadata.at("labels").at("team"), "data");
  }
  EXPECT_EQ(r->object.at("spec").at("app"), "a");
  EXPECT_EQ(r->old_object.at("spec").at("app"), "b");
  EXPECT_EQ(r->username, "alice");
  EXPECT_EQ(r->operation, "UPDATE");
  EXPECT_EQ(r->kind, "Stack");
}

TEST(AdmissionReviewUnreadMembers, AreStillRefusedWhenTheyAreNotJson) {
  // Left out of the DOM is not left unchecked: the same refusal, at the same byte.
  const std::string body = update_review(R"([{"manager":"kubectl","n":1e400}])");
  auto r = decode_review(body);
  ASSERT_FALSE(r);
  const std::size_t end = body.find("1e400") + 5;
  EXPECT_EQ(r.error().message, "AdmissionReview: the number ending at byte " + std::to_string(end) +
                                   " is beyond the range of a double");
  r = decode_review(update_review(R"([{"manager":"kubectl"]})"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("body is not JSON at byte"), std::string::npos)
      << r.error().message;
}

// No rule reads who the user is beyond the name: userInfo's groups, uid and extra are parsed as
// strictly as the rest but not kept, so their shape does not decide the review.
TEST(AdmissionReviewUnreadMembers, UserInfoIsTheUsernameAlone) {
  std::string body = update_review("[]");
  const std::string groups = R"("groups":["dev"])";
  body.replace(body.find(groups), groups.size(), R"("groups":[1,{"a":null}],"uid":7)");
  auto r = decode_review(body);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->username, "alice");
  body.replace(body.find(R"("uid":7)"), 7, R"("uid":7.)");
  r = decode_review(body);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("body is not JSON at byte"), std::string::npos)
      << r.error().message;
}

// kubectl apply's last-applied-configuration is the object again as escaped JSON (the bench's
// Stack reviews: 1.4 KB of 3.5 KB an object). No rule reads it: it is checked as strictly as the
// rest and left out; the other annotations, kstack.io/ ones included, are kept.
TEST(AdmissionReviewUnreadMembers, LastAppliedConfigurationIsLeftOutOfTheObjects) {
  const std::string annotations =
      R"("annotations":{"kubectl.kubernetes.io/last-applied-configuration":)"
      R"("{\"apiVersion\":\"kstack.io/v1beta1\",\"kind\":\"Stack\"}\n",)"
      R"("kstack.io/note":"n","team":"data"},)";
  std::string body = update_review("[]");
  for (std::size_t at = 0; (at = body.find(R"("labels":)", at)) != std::string::npos;
       at += annotations.size() + 1) {
    body.insert(at, annotations);
  }
  auto r = decode_review(body);
  ASSERT_TRUE(r) << r.error().message;
  for (const boost::json::value* o : {&r->object, &r->old_object}) {
    const auto& kept = o->at("metadata").at("annotations").as_object();
    EXPECT_FALSE(kept.contains("kubectl.kubernetes.io/last-applied-configuration"))
        << boost::json::serialize(*o);
    EXPECT_EQ(kept.at("kstack.io/note"), "n");
    EXPECT_EQ(kept.at("team"), "data");
    EXPECT_EQ(kept.size(), 2u);
  }
  // Left out, still checked: an escape JSON does not have is refused there as anywhere.
  body.replace(body.find(R"(\n")"), 2, R"(\q)");
  r = decode_review(body);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("body is not JSON at byte"), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace kstack::validator
