// Scheduling predicates: selectors, affinity, capacity and volume node affinity.
#include "tests/nodesim/fit.h"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace kstack::nodesim {
namespace {

namespace json = boost::json;

json::value pod(std::string_view spec) {
  return json::parse(std::string(R"({"metadata":{"name":"p","namespace":"ns"},"spec":)") +
                     std::string(spec) + "}");
}

NodeInfo node() {
  return NodeInfo{"n1",
                  {{"kubernetes.io/hostname", "n1"}, {"disk", "ssd"}, {"cores", "8"}},
                  {2000, 4LL << 30},
                  3};
}

TEST(PodRequests, SumsContainersTakesTheLargestInitContainerAndOverhead) {
  auto p = pod(R"({"containers":[
      {"name":"a","resources":{"requests":{"cpu":"250m","memory":"1Gi"}}},
      {"name":"b","resources":{"requests":{"cpu":"0.5"}}}],
    "initContainers":[{"name":"i","resources":{"requests":{"cpu":"1","memory":"64Mi"}}}],
    "overhead":{"cpu":"10m"}})");
  auto r = pod_requests(p);
  EXPECT_EQ(r.milli_cpu, 1010);
  EXPECT_EQ(r.memory, 1LL << 30);
}

TEST(Fit, HonoursNodeSelector) {
  auto n = node();
  FitInput in{n, {}, 0, {}, {}};
  EXPECT_TRUE(
      check_fit(pod(R"({"nodeSelector":{"disk":"ssd"},"containers":[{"name":"a"}]})"), in).fits());
  auto r = check_fit(pod(R"({"nodeSelector":{"disk":"hdd"},"containers":[{"name":"a"}]})"), in);
  EXPECT_EQ(r.kind, FitResult::Kind::kDoesNotFit);
  EXPECT_NE(r.reason.find("disk=hdd"), std::string::npos);
}

TEST(Fit, HonoursRequiredNodeAffinity) {
  auto n = node();
  FitInput in{n, {}, 0, {}, {}};
  auto affinity = [](std::string_view expr) {
    return pod(
        std::string(R"({"containers":[{"name":"a"}],"affinity":{"nodeAffinity":{)"
                    R"("requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[)") +
        std::string(expr) + "]}}}}");
  };
  EXPECT_TRUE(
      check_fit(
          affinity(
              R"({"matchExpressions":[{"key":"disk","operator":"In","values":["ssd","nvme"]}]})"),
          in)
          .fits());
  EXPECT_FALSE(
      check_fit(
          affinity(R"({"matchExpressions":[{"key":"disk","operator":"NotIn","values":["ssd"]}]})"),
          in)
          .fits());
  EXPECT_TRUE(
      check_fit(
          affinity(R"({"matchExpressions":[{"key":"cores","operator":"Gt","values":["4"]}]})"), in)
          .fits());
  EXPECT_FALSE(
      check_fit(affinity(R"({"matchExpressions":[{"key":"gpu","operator":"Exists"}]})"), in)
          .fits());
  EXPECT_TRUE(
      check_fit(
          affinity(R"({"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]})"),
          in)
          .fits());
  // Terms are ORed; an empty term matches nothing.
  EXPECT_TRUE(
      check_fit(affinity(R"({},{"matchExpressions":[{"key":"disk","operator":"Exists"}]})"), in)
          .fits());
  EXPECT_FALSE(check_fit(affinity(R"({})"), in).fits());
}

TEST(Fit, CountsCpuMemoryAndPods) {
  auto n = node();
  auto p = pod(
      R"({"containers":[{"name":"a","resources":{"requests":{"cpu":"500m","memory":"1Gi"}}}]})");
  EXPECT_TRUE(check_fit(p, FitInput{n, {1500, 3LL << 30}, 2, {}, {}}).fits());
  EXPECT_FALSE(check_fit(p, FitInput{n, {1501, 0}, 0, {}, {}}).fits());
  EXPECT_FALSE(check_fit(p, FitInput{n, {0, (3LL << 30) + 1}, 0, {}, {}}).fits());
  EXPECT_FALSE(check_fit(p, FitInput{n, {}, 3, {}, {}}).fits());
}

TEST(Fit, WaitsForUnboundClaimsAndFollowsTheVolumesNode) {
  auto n = node();
  auto p = pod(R"({"containers":[{"name":"a"}],
                   "volumes":[{"name":"d","persistentVolumeClaim":{"claimName":"data"}}]})");
  json::value pending =
      json::parse(R"({"metadata":{"name":"data"},"spec":{},"status":{"phase":"Pending"}})");
  json::value bound = json::parse(
      R"({"metadata":{"name":"data"},"spec":{"volumeName":"pv1"},"status":{"phase":"Bound"}})");
  auto pv_on = [](const char* node_name) {
    return std::make_shared<const json::value>(json::parse(
        std::string(
            R"({"metadata":{"name":"pv1"},"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[)"
            R"({"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":[")") +
        node_name + R"("]}]}]}}}})"));
  };
  informer::ObjectPtr claim;
  informer::ObjectPtr volume;
  FitInput in{n,
              {},
              0,
              [&](const std::string& k) { return k == "ns/data" ? claim : nullptr; },
              [&](const std::string& k) { return k == "pv1" ? volume : nullptr; }};
  EXPECT_EQ(check_fit(p, in).kind, FitResult::Kind::kWaitForVolumes);  // no claim
  claim = std::make_shared<const json::value>(pending);
  EXPECT_EQ(check_fit(p, in).kind, FitResult::Kind::kWaitForVolumes);
  claim = std::make_shared<const json::value>(bound);
  volume = pv_on("n1");
  EXPECT_TRUE(check_fit(p, in).fits());
  volume = pv_on("n2");
  EXPECT_EQ(check_fit(p, in).kind, FitResult::Kind::kDoesNotFit);
}

}  // namespace
}  // namespace kstack::nodesim
