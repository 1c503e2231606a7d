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
  FitInput in{n, {}, 0, {}, {}, nullptr};
  EXPECT_TRUE(
      check_fit(pod(R"({"nodeSelector":{"disk":"ssd"},"containers":[{"name":"a"}]})"), in).fits());
  auto r = check_fit(pod(R"({"nodeSelector":{"disk":"hdd"},"containers":[{"name":"a"}]})"), in);
  EXPECT_EQ(r.kind, FitResult::Kind::kDoesNotFit);
  EXPECT_NE(r.reason.find("disk=hdd"), std::string::npos);
}

TEST(Fit, HonoursRequiredNodeAffinity) {
  auto n = node();
  FitInput in{n, {}, 0, {}, {}, nullptr};
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
  EXPECT_TRUE(check_fit(p, FitInput{n, {1500, 3LL << 30}, 2, {}, {}, nullptr}).fits());
  EXPECT_FALSE(check_fit(p, FitInput{n, {1501, 0}, 0, {}, {}, nullptr}).fits());
  EXPECT_FALSE(check_fit(p, FitInput{n, {0, (3LL << 30) + 1}, 0, {}, {}, nullptr}).fits());
  EXPECT_FALSE(check_fit(p, FitInput{n, {}, 3, {}, {}, nullptr}).fits());
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
  DomPtr claim;
  DomPtr volume;
  FitInput in{n,
              {},
              0,
              [&](const std::string& k) { return k == "ns/data" ? claim : nullptr; },
              [&](const std::string& k) { return k == "pv1" ? volume : nullptr; },
              nullptr};
  EXPECT_EQ(check_fit(p, in).kind, FitResult::Kind::kWaitForVolumes);  // no claim
  claim = std::make_shared<const json::value>(pending);
  EXPECT_EQ(check_fit(p, in).kind, FitResult::Kind::kWaitForVolumes);
  claim = std::make_shared<const json::value>(bound);
  volume = pv_on("n1");
  EXPECT_TRUE(check_fit(p, in).fits());
  volume = pv_on("n2");
  auto elsewhere = check_fit(p, in);
  EXPECT_EQ(elsewhere.kind, FitResult::Kind::kDoesNotFit);
  EXPECT_NE(elsewhere.reason.find("node affinity conflict"), std::string::npos) << elsewhere.reason;

  // A claim being deleted (kube-scheduler's VolumeBinding): the pod waits for its successor,
  // even though the old claim is still Bound to a volume of this node.
  volume = pv_on("n1");
  json::value terminating = bound;
  terminating.at("metadata").as_object()["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  claim = std::make_shared<const json::value>(terminating);
  auto deleting = check_fit(p, in);
  EXPECT_EQ(deleting.kind, FitResult::Kind::kWaitForVolumes);
  EXPECT_NE(deleting.reason.find("is being deleted"), std::string::npos) << deleting.reason;
}

DomPtr node_object(std::string_view spec) {
  return std::make_shared<const json::value>(
      json::parse(std::string(R"({"metadata":{"name":"n1"},"spec":)") + std::string(spec) + "}"));
}

TEST(Fit, ACordonedNodeTakesOnlyPodsToleratingUnschedulable) {
  auto n = node();
  FitInput in{n, {}, 0, {}, {}, node_object(R"({"unschedulable":true})")};
  auto plain = check_fit(pod(R"({"containers":[{"name":"a"}]})"), in);
  EXPECT_EQ(plain.kind, FitResult::Kind::kDoesNotFit);
  EXPECT_NE(plain.reason.find("unschedulable"), std::string::npos) << plain.reason;
  // As DaemonSet pods do.
  EXPECT_TRUE(check_fit(pod(R"({"containers":[{"name":"a"}],"tolerations":[
      {"key":"node.kubernetes.io/unschedulable","operator":"Exists","effect":"NoSchedule"}]})"),
                        in)
                  .fits());
  // A toleration of every taint (empty key, Exists) covers it too; another key does not.
  EXPECT_TRUE(
      check_fit(pod(R"({"containers":[{"name":"a"}],"tolerations":[{"operator":"Exists"}]})"), in)
          .fits());
  EXPECT_FALSE(check_fit(pod(R"({"containers":[{"name":"a"}],"tolerations":[
      {"key":"node.kubernetes.io/not-ready","operator":"Exists"}]})"),
                         in)
                   .fits());
  // Uncordoned (unschedulable false or absent): it fits again.
  in.node_object = node_object(R"({"unschedulable":false})");
  EXPECT_TRUE(check_fit(pod(R"({"containers":[{"name":"a"}]})"), in).fits());
  in.node_object = node_object("{}");
  EXPECT_TRUE(check_fit(pod(R"({"containers":[{"name":"a"}]})"), in).fits());
}

TEST(Fit, TheLiveNodesLabelsWinOverThoseItRegisteredWith) {
  auto n = node();  // registered with disk=ssd
  auto p = pod(R"({"nodeSelector":{"disk":"nvme"},"containers":[{"name":"a"}]})");
  FitInput in{n, {}, 0, {}, {}, nullptr};
  EXPECT_FALSE(check_fit(p, in).fits());
  // kubectl label node n1 disk=nvme --overwrite
  in.node_object = std::make_shared<const json::value>(json::parse(
      R"({"metadata":{"name":"n1","labels":{"kubernetes.io/hostname":"n1","disk":"nvme"}},
          "spec":{}})"));
  EXPECT_TRUE(check_fit(p, in).fits());
  EXPECT_FALSE(
      check_fit(pod(R"({"nodeSelector":{"disk":"ssd"},"containers":[{"name":"a"}]})"), in).fits());
}

TEST(Fit, NoScheduleAndNoExecuteTaintsNeedAToleration) {
  auto n = node();
  auto tainted = [&](std::string_view taint) {
    return FitInput{n,  {}, 0,
                    {}, {}, node_object(std::string(R"({"taints":[)") + std::string(taint) + "]}")};
  };
  auto plain = pod(R"({"containers":[{"name":"a"}]})");
  for (const char* t : {R"({"key":"node.kubernetes.io/unreachable","effect":"NoSchedule"})",
                        R"({"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"})",
                        R"({"key":"node.kubernetes.io/unschedulable","effect":"NoSchedule"})",
                        R"({"key":"node.kubernetes.io/unreachable","effect":"NoExecute"})",
                        R"({"key":"dedicated","value":"db","effect":"NoSchedule"})"}) {
    auto r = check_fit(plain, tainted(t));
    EXPECT_EQ(r.kind, FitResult::Kind::kDoesNotFit) << t;
    EXPECT_NE(r.reason.find("taint"), std::string::npos) << r.reason;
  }
  // PreferNoSchedule only weighs in scoring.
  EXPECT_TRUE(
      check_fit(plain, tainted(R"({"key":"dedicated","value":"db","effect":"PreferNoSchedule"})"))
          .fits());

  auto dedicated = tainted(R"({"key":"dedicated","value":"db","effect":"NoSchedule"})");
  auto with = [](std::string_view toleration) {
    return pod(std::string(R"({"containers":[{"name":"a"}],"tolerations":[)") +
               std::string(toleration) + "]}");
  };
  // Equal (the default operator) compares key and value; Exists only the key; an empty effect
  // matches every effect, a set one only its own.
  EXPECT_TRUE(check_fit(with(R"({"key":"dedicated","value":"db"})"), dedicated).fits());
  EXPECT_TRUE(
      check_fit(
          with(R"({"key":"dedicated","operator":"Equal","value":"db","effect":"NoSchedule"})"),
          dedicated)
          .fits());
  EXPECT_FALSE(check_fit(with(R"({"key":"dedicated","value":"web"})"), dedicated).fits());
  EXPECT_TRUE(check_fit(with(R"({"key":"dedicated","operator":"Exists"})"), dedicated).fits());
  EXPECT_FALSE(
      check_fit(with(R"({"key":"dedicated","operator":"Exists","effect":"NoExecute"})"), dedicated)
          .fits());
  EXPECT_FALSE(check_fit(with(R"({"key":"other","operator":"Exists"})"), dedicated).fits());
  // Every taint must be tolerated, not just one.
  auto two = tainted(R"({"key":"dedicated","value":"db","effect":"NoSchedule"},
                        {"key":"node.kubernetes.io/not-ready","effect":"NoExecute"})");
  EXPECT_FALSE(check_fit(with(R"({"key":"dedicated","value":"db"})"), two).fits());
  EXPECT_TRUE(check_fit(with(R"({"key":"dedicated","value":"db"},
                                {"key":"node.kubernetes.io/not-ready","operator":"Exists"})"),
                        two)
                  .fits());
}

}  // namespace
}  // namespace kstack::nodesim
