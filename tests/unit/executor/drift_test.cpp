#include "executor/drift.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace kstack::executor {
namespace {
namespace json = boost::json;

TEST(Covers, ServerDefaultsInTheLiveObjectAreNotDrift) {
  const auto desired = json::parse(R"({"spec":{"replicas":3,"template":{"spec":{"containers":[
      {"name":"app","image":"x:1"}]}}}})");
  const auto live = json::parse(R"({"metadata":{"uid":"u","resourceVersion":"9"},
      "spec":{"replicas":3,"revisionHistoryLimit":10,"updateStrategy":{"type":"RollingUpdate"},
      "template":{"spec":{"restartPolicy":"Always","containers":[{"name":"app","image":"x:1",
      "terminationMessagePath":"/dev/termination-log","imagePullPolicy":"IfNotPresent"}]}}},
      "status":{"replicas":3}})");
  EXPECT_TRUE(covers(live, desired));
  EXPECT_EQ(first_difference(live, desired), "");
}

TEST(Covers, AChangedOwnedFieldIsDriftAtItsPath) {
  const auto desired = json::parse(R"({"spec":{"replicas":3}})");
  const auto live = json::parse(R"({"spec":{"replicas":1}})");
  EXPECT_FALSE(covers(live, desired));
  EXPECT_EQ(first_difference(live, desired), "/spec/replicas");
}

TEST(Covers, AMissingOwnedLabelIsDrift) {
  const auto desired = json::parse(R"({"metadata":{"labels":{"kstack.io/stack":"s"}}})");
  EXPECT_FALSE(covers(json::parse(R"({"metadata":{"labels":{}}})"), desired));
  EXPECT_FALSE(covers(json::parse(R"({"metadata":{}})"), desired));
  EXPECT_TRUE(covers(json::parse(R"({"metadata":{"labels":{"kstack.io/stack":"s","x":"y"}}})"),
                     desired));
}

TEST(Covers, ListsMustMatchElementByElementAndInLength) {
  const auto desired = json::parse(R"({"ports":[{"port":80},{"port":81}]})");
  EXPECT_FALSE(covers(json::parse(R"({"ports":[{"port":80}]})"), desired));
  EXPECT_FALSE(covers(json::parse(R"({"ports":[{"port":81},{"port":80}]})"), desired));
  EXPECT_TRUE(covers(json::parse(R"({"ports":[{"port":80,"protocol":"TCP"},{"port":81}]})"),
                     desired));
}

TEST(Covers, QuantitiesCanonicalisedByTheServerAreEqual) {
  const auto desired =
      json::parse(R"({"resources":{"requests":{"cpu":"0.5","memory":"1024Mi"}}})");
  const auto live = json::parse(R"({"resources":{"requests":{"cpu":"500m","memory":"1Gi"}}})");
  EXPECT_TRUE(covers(live, desired));
  const auto bigger = json::parse(R"({"resources":{"requests":{"cpu":"600m","memory":"1Gi"}}})");
  EXPECT_FALSE(covers(bigger, desired));
}

TEST(Covers, QuantityComparisonIsOnlyForResourceFields) {
  EXPECT_FALSE(covers(json::parse(R"({"labels":{"v":"1000m"}})"),
                      json::parse(R"({"labels":{"v":"1"}})")));
}

TEST(Covers, EmptyDesiredCollectionsMatchAbsentOnes) {
  EXPECT_TRUE(covers(json::parse(R"({"spec":{}})"),
                     json::parse(R"({"spec":{"nodeSelector":{},"tolerations":[]}})")));
}

TEST(Covers, NumbersCompareByValueWhateverTheirJsonType) {
  json::value live = json::object{{"port", std::uint64_t{8080}}};
  EXPECT_TRUE(covers(live, json::parse(R"({"port":8080})")));
  EXPECT_FALSE(covers(live, json::parse(R"({"port":"8080"})")));
}

}  // namespace
}  // namespace kstack::executor
