#include "executor/drift.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

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
  EXPECT_TRUE(
      covers(json::parse(R"({"metadata":{"labels":{"kstack.io/stack":"s","x":"y"}}})"), desired));
}

TEST(Covers, ListsMustMatchElementByElementAndInLength) {
  const auto desired = json::parse(R"({"ports":[{"port":80},{"port":81}]})");
  EXPECT_FALSE(covers(json::parse(R"({"ports":[{"port":80}]})"), desired));
  EXPECT_FALSE(covers(json::parse(R"({"ports":[{"port":81},{"port":80}]})"), desired));
  EXPECT_TRUE(
      covers(json::parse(R"({"ports":[{"port":80,"protocol":"TCP"},{"port":81}]})"), desired));
}

TEST(Covers, QuantitiesCanonicalisedByTheServerAreEqual) {
  const auto desired = json::parse(R"({"resources":{"requests":{"cpu":"0.5","memory":"1024Mi"}}})");
  const auto live = json::parse(R"({"resources":{"requests":{"cpu":"500m","memory":"1Gi"}}})");
  EXPECT_TRUE(covers(live, desired));
  const auto bigger = json::parse(R"({"resources":{"requests":{"cpu":"600m","memory":"1Gi"}}})");
  EXPECT_FALSE(covers(bigger, desired));
}

TEST(Covers, QuantityComparisonIsOnlyForResourceFields) {
  EXPECT_FALSE(
      covers(json::parse(R"({"labels":{"v":"1000m"}})"), json::parse(R"({"labels":{"v":"1"}})")));
}

TEST(Covers, EmptyDesiredCollectionsMatchAbsentOnes) {
  EXPECT_TRUE(covers(json::parse(R"({"spec":{}})"),
                     json::parse(R"({"spec":{"nodeSelector":{},"tolerations":[]}})")));
}

TEST(Covers, SelectorMapsMustMatchExactlyOtherMapsMayHoldMore) {
  const auto desired = json::parse(R"({"spec":{"selector":{"kstack.io/stack":"s"},
      "template":{"metadata":{"labels":{"kstack.io/stack":"s"}},
                  "spec":{"nodeSelector":{"disk":"ssd"}}}}})");
  EXPECT_TRUE(covers(desired, desired));
  auto extra_label = desired;
  extra_label.at_pointer("/spec/template/metadata/labels").as_object()["other"] = "x";
  EXPECT_TRUE(covers(extra_label, desired)) << "labels other managers add are theirs";
  auto extra_selector = desired;
  extra_selector.at_pointer("/spec/selector").as_object()["app"] = "somebody-else";
  EXPECT_FALSE(covers(extra_selector, desired));
  EXPECT_EQ(first_difference(extra_selector, desired), "/spec/selector/app");
  auto extra_node_selector = desired;
  extra_node_selector.at_pointer("/spec/template/spec/nodeSelector").as_object()["zone"] = "b";
  EXPECT_FALSE(covers(extra_node_selector, desired));
  auto stateful_set = json::parse(R"({"spec":{"selector":{"matchLabels":{"a":"1"}}}})");
  auto more_match_labels = stateful_set;
  more_match_labels.at_pointer("/spec/selector/matchLabels").as_object()["b"] = "2";
  EXPECT_FALSE(covers(more_match_labels, stateful_set));
}

TEST(DifferingList, IsTheInnermostListOrSelectorMapHoldingTheFirstDifference) {
  const auto desired = json::parse(R"({"spec":{"selector":{"s":"1"},
      "ports":[{"port":80}],"template":{"metadata":{"labels":{"s":"1"}}}}})");
  EXPECT_EQ(differing_list(desired, desired), std::nullopt);
  auto selector = desired;
  selector.at_pointer("/spec/selector").as_object()["app"] = "x";
  EXPECT_EQ(differing_list(selector, desired), "/spec/selector");
  selector.at_pointer("/spec/selector").as_object().erase("app");
  selector.at_pointer("/spec/selector").as_object()["s"] = "2";
  EXPECT_EQ(differing_list(selector, desired), "/spec/selector");
  auto port = desired;
  port.at_pointer("/spec/ports/0").as_object()["port"] = 81;
  EXPECT_EQ(differing_list(port, desired), "/spec/ports");
  auto label = desired;
  label.at_pointer("/spec/template/metadata/labels").as_object()["s"] = "2";
  EXPECT_EQ(differing_list(label, desired), "") << "a plain map is not replaced whole";
}

TEST(Covers, NumbersCompareByValueWhateverTheirJsonType) {
  json::value live = json::object{{"port", std::uint64_t{8080}}};
  EXPECT_TRUE(covers(live, json::parse(R"({"port":8080})")));
  EXPECT_FALSE(covers(live, json::parse(R"({"port":"8080"})")));
}

}  // namespace
}  // namespace kstack::executor
