// The AdmissionReview envelope's reading of numbers (validator/admission.cpp); the rest of the
// envelope is covered by tests/integration/admission/admission_review_test.cpp.
#include "validator/admission.h"

#include <string>

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

}  // namespace
}  // namespace kstack::validator
