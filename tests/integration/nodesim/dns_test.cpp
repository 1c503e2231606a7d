// Cluster DNS (tests/nodesim/testing/cluster_dns.h): from inside a pod, `getent` resolves a
// peer's FQDN <hostname>.<subdomain>.<ns>.svc.cluster.local and a headless Service's name to
// its ready pods (plus the not-ready ones when it publishes them), and the answers follow a pod
// becoming not ready.
#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/integration/nodesim/one_node_suite.h"
#include "tests/nodesim/testing/e2e.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// Ready while /tmp/ready exists (an exec readiness probe, every second).
json::value peer(const std::string& name) {
  json::object container{
      {"name", "app"},
      {"image", "busybox"},
      {"command", json::array{"sh", "-c", "touch /tmp/ready; exec sleep infinity"}},
      {"readinessProbe",
       json::object{{"exec", json::object{{"command", json::array{"cat", "/tmp/ready"}}}},
                    {"periodSeconds", 1},
                    {"failureThreshold", 1}}}};
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", json::object{{"name", name}, {"labels", {{"app", "peer"}}}}},
                      {"spec", json::object{{"hostname", name},
                                            {"subdomain", "peers"},
                                            {"containers", json::array{container}}}}};
}

json::value headless(const std::string& name, bool publish_not_ready) {
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Service"},
                      {"metadata", json::object{{"name", name}}},
                      {"spec", json::object{{"clusterIP", "None"},
                                            {"publishNotReadyAddresses", publish_not_ready},
                                            {"selector", {{"app", "peer"}}},
                                            {"ports", json::array{json::object{{"port", 80}}}}}}};
}

inline constexpr char kDnsNode[] = "dns-node";

class ClusterDnsTest : public OneNodeSuite<kDnsNode> {
 protected:
  // The IPv4 addresses `name` resolves to in pod `pod` (getent ahostsv4: every address).
  std::set<std::string> resolve(const std::string& pod, const std::string& name) {
    auto r = kubectl_exec(control_plane(), ns_, pod, "app", {"getent", "ahostsv4", name});
    std::set<std::string> ips;
    std::istringstream lines(r.out);
    for (std::string ip, rest; lines >> ip && std::getline(lines, rest);) ips.insert(ip);
    return ips;
  }
  // Resolves until the answer is `expected`; DNS follows the Endpoints within a second or so,
  // so a 15 s deadline. Returns the last answer.
  std::set<std::string> resolve_until(const std::string& pod, const std::string& name,
                                      const std::set<std::string>& expected) {
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    auto got = resolve(pod, name);
    while (got != expected && std::chrono::steady_clock::now() < deadline) {
      got = resolve(pod, name);
    }
    return got;
  }

  std::shared_ptr<kube::Client> client_ = admin();
  std::string ns_ = make_namespace(*client_, "dns");
};

TEST_F(ClusterDnsTest, PodsResolvePeersAndHeadlessServicesAndAnswersFollowReadiness) {
  ASSERT_TRUE(client_->create(kube::resources::kServices, ns_, headless("peers", false)));
  ASSERT_TRUE(client_->create(kube::resources::kServices, ns_, headless("all-peers", true)));
  std::map<std::string, std::string> ip;
  for (const char* name : {"peer-0", "peer-1"}) {
    ASSERT_TRUE(client_->create(kube::resources::kPods, ns_, peer(name)));
  }
  for (const char* name : {"peer-0", "peer-1"}) {
    auto pod = wait_for_object(*client_, kube::resources::kPods, ns_, name, running_and_ready, 60s);
    ASSERT_TRUE(pod) << pod.error();
    ip[name] = str_at(*pod, "/status/podIP");
  }
  const std::string domain = ns_ + ".svc.cluster.local";
  const std::set<std::string> both = {ip["peer-0"], ip["peer-1"]};
  EXPECT_EQ(resolve_until("peer-0", "peer-1.peers." + domain, {ip["peer-1"]}),
            std::set<std::string>{ip["peer-1"]});
  EXPECT_EQ(resolve_until("peer-0", "peers." + domain, both), both);
  // The search path of the pods' resolv.conf: the short name works too.
  EXPECT_EQ(resolve_until("peer-1", "peers", both), both);
  EXPECT_EQ(resolve_until("peer-1", "all-peers", both), both);

  // peer-1 becomes not ready: gone from the Service's name and its FQDN (pod FQDNs live
  // under the Service named by spec.subdomain), kept by the Service that publishes not-ready
  // addresses.
  ASSERT_EQ(kubectl_exec(control_plane(), ns_, "peer-1", "app", {"rm", "/tmp/ready"}).exit_code, 0);
  auto unready = wait_for_object(
      *client_, kube::resources::kPods, ns_, "peer-1",
      [](const json::value& p) { return condition(p, "Ready") == "False"; }, 30s);
  ASSERT_TRUE(unready) << unready.error();
  EXPECT_EQ(resolve_until("peer-0", "peers." + domain, {ip["peer-0"]}),
            std::set<std::string>{ip["peer-0"]});
  EXPECT_EQ(resolve_until("peer-0", "peer-1.peers." + domain, {}), std::set<std::string>{});
  EXPECT_EQ(resolve_until("peer-0", "all-peers." + domain, both), both);
  // Ready again: back in the answers.
  ASSERT_EQ(kubectl_exec(control_plane(), ns_, "peer-1", "app", {"touch", "/tmp/ready"}).exit_code,
            0);
  EXPECT_EQ(resolve_until("peer-0", "peer-1.peers." + domain, {ip["peer-1"]}),
            std::set<std::string>{ip["peer-1"]});
  EXPECT_EQ(resolve_until("peer-0", "peers." + domain, both), both);
}

}  // namespace
}  // namespace kstack::testenv::e2e
