#include "executor/drift.h"

#include <array>
#include <string_view>
#include <utility>
#include <vector>

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

// covers() walks without building paths; first_difference() and differing_list() build them.
// They must decide alike on every kind of difference.
TEST(Covers, AgreesWithFirstDifferenceAndDifferingList) {
  const std::vector<std::pair<const char*, const char*>> cases{
      {R"({"a":1})", R"({"a":1})"},
      {R"({"a":1})", R"({"a":2})"},
      {R"({"a":[1]})", R"({"a":{"b":1}})"},
      {R"({"a":{"b":1}})", R"({"a":[1]})"},
      {R"({"l":[1,2]})", R"({"l":[1,2]})"},
      {R"({"l":[1,2]})", R"({"l":[1]})"},
      {R"({"l":[{"a":1}]})", R"({"l":[{"a":2}]})"},
      {R"({})", R"({"a":{},"b":[]})"},
      {R"({})", R"({"a":{"b":1}})"},
      {R"({"a":null})", R"({"a":{}})"},
      {R"({"requests":{"cpu":"1"}})", R"({"requests":{"cpu":"1000m"}})"},
      {R"({"requests":{"cpu":"x"}})", R"({"requests":{"cpu":"x"}})"},
      {R"({"requests":{"cpu":"x"}})", R"({"requests":{"cpu":"y"}})"},
      {R"({"limits":{"cpu":1}})", R"({"limits":{"cpu":"1"}})"},
      {R"({"selector":{"a":"1","b":"2"}})", R"({"selector":{"a":"1"}})"},
      {R"({"selector":{"a":"1"}})", R"({"selector":{"a":"1"}})"},
      {R"({"x":{"matchLabels":{}}})", R"({"x":{"matchLabels":{}}})"},
      {R"({"x":{"matchLabels":{"a":"1"}}})", R"({"x":{"matchLabels":{}}})"},
      {R"({"n":1.5})", R"({"n":1.5})"},
      {R"({"n":1})", R"({"n":1.0})"},
      {R"({"s":"a"})", R"({"s":true})"},
      {R"("a")", R"({"a":1})"},
  };
  for (const auto& [l, d] : cases) {
    const auto live = json::parse(l);
    const auto desired = json::parse(d);
    const bool covered = covers(live, desired);
    EXPECT_EQ(covered, first_difference(live, desired).empty()) << l << " / " << d;
    EXPECT_EQ(covered, !differing_list(live, desired).has_value()) << l << " / " << d;
  }
}

TEST(Covers, WithOverridesComparesAsIfTheDesiredObjectHeldThem) {
  const auto desired = json::parse(R"({"spec":{"replicas":3,"selector":{"a":"1"},
      "updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":0}}}})");
  static constexpr std::array<std::string_view, 2> kReplicas{"spec", "replicas"};
  static constexpr std::array<std::string_view, 4> kPartition{"spec", "updateStrategy",
                                                              "rollingUpdate", "partition"};
  const json::value two(2), one(1);
  const std::array<Override, 2> overrides{Override{kReplicas, &two}, Override{kPartition, &one}};
  // What the caller would otherwise build and compare whole.
  auto wanted = desired;
  wanted.at_pointer("/spec/replicas") = 2;
  wanted.at_pointer("/spec/updateStrategy/rollingUpdate/partition") = 1;
  for (
      const char* live : {
          R"({"spec":{"replicas":2,"selector":{"a":"1"},"x":1,
               "updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":1}}}})",
          R"({"spec":{"replicas":3,"selector":{"a":"1"},
               "updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":1}}}})",
          R"({"spec":{"replicas":2,"selector":{"a":"1"},
               "updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":0}}}})",
          R"({"spec":{"replicas":2,"selector":{"a":"1","b":"2"},
               "updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":1}}}})",
          R"({"spec":{"replicas":2,"selector":{"a":"1"},
               "updateStrategy":{"type":"OnDelete","rollingUpdate":{"partition":1}}}})",
          R"({"spec":{"replicas":2,"selector":{"a":"1"},"updateStrategy":{"type":"RollingUpdate"}}})",
          R"({"spec":{"selector":{"a":"1"},
               "updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":1}}}})",
      }) {
    const auto l = json::parse(live);
    EXPECT_EQ(covers(l, desired, overrides), covers(l, wanted)) << live;
  }
  EXPECT_TRUE(covers(wanted, desired, overrides));
  EXPECT_FALSE(covers(desired, desired, overrides)) << "the overrides' values are compared";
  static constexpr std::array<std::string_view, 2> kAbsent{"spec", "minReadySeconds"};
  const std::array<Override, 1> absent{Override{kAbsent, &one}};
  EXPECT_FALSE(covers(desired, desired, absent)) << "a path desired lacks: compare whole";
}

}  // namespace
}  // namespace kstack::executor
