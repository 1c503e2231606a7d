// Pod IPs across several simulated nodes: each node has its own /24 of the pod network, so pod
// IPs are unique across nodes, and a container's process listens on its pod's IP and is
// reached from a pod on another node.
#include "tests/nodesim/testing/pod_network.h"

#include <set>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/nodesim/testing/e2e.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

json::value pod_on(const std::string& name, const std::string& node) {
  json::object container{{"name", "app"}, {"image", "busybox"}};
  return json::object{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", json::object{{"name", name}}},
      {"spec", json::object{{"nodeName", node}, {"containers", json::array{container}}}}};
}

// "10.244.3.0/24" -> "10.244.3."
std::string prefix_of(const std::string& cidr) { return cidr.substr(0, cidr.rfind('.') + 1); }

class PodNetwork : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* name : {"net-a", "net-b"}) {
      NodeSimulatorOptions options;
      options.node_name = name;
      auto sim = NodeSimulator::start(control_plane(), options);
      ASSERT_TRUE(sim) << sim.error();
      simulators().push_back(std::move(*sim));
    }
  }
  static void TearDownTestSuite() { simulators().clear(); }
  static std::vector<std::unique_ptr<NodeSimulator>>& simulators() {
    static std::vector<std::unique_ptr<NodeSimulator>> sims;
    return sims;
  }

  json::value run(const std::string& ns, const json::value& manifest) {
    auto created = client_->create(kube::resources::kPods, ns, manifest);
    EXPECT_TRUE(created) << created.error().to_string();
    auto ready = wait_for_object(*client_, kube::resources::kPods, ns,
                                 str_at(manifest, "/metadata/name"), running_and_ready, 120s);
    EXPECT_TRUE(ready) << ready.error();
    return ready ? *ready : json::value();
  }

  std::shared_ptr<kube::Client> client_ = admin();
};

TEST_F(PodNetwork, PodsOnDifferentNodesGetIpsFromEachNodesOwnSubnet) {
  ASSERT_TRUE(in_pod_network());
  const std::string ns = make_namespace(*client_, "podnet");
  auto& a = *simulators()[0];
  auto& b = *simulators()[1];
  ASSERT_NE(a.pod_cidr(), b.pod_cidr());
  std::set<std::string> ips;
  for (int i = 0; i < 3; ++i) {
    for (auto* sim : {&a, &b}) {
      auto name = fmt::format("{}-{}", sim->node_name(), i);
      auto pod = run(ns, pod_on(name, sim->node_name()));
      const auto ip = str_at(pod, "/status/podIP");
      EXPECT_EQ(ip.rfind(prefix_of(sim->pod_cidr()), 0), 0u)
          << name << " has IP " << ip << ", outside its node's " << sim->pod_cidr();
      EXPECT_TRUE(ips.insert(ip).second) << "two pods have IP " << ip;
    }
  }
}

TEST_F(PodNetwork, AProcessListeningOnItsPodIpIsReachedFromAPodOnAnotherNode) {
  const std::string ns = make_namespace(*client_, "podnet");
  auto server = run(ns, pod_on("server", simulators()[0]->node_name()));
  run(ns, pod_on("client", simulators()[1]->node_name()));
  const auto ip = str_at(server, "/status/podIP");
  ASSERT_FALSE(ip.empty());

  // The server binds the pod IP itself (not 0.0.0.0): only a local address can be bound.
  CommandResult served;
  std::thread listener([&] {
    served = kubectl_exec(
        control_plane(), ns, "server", "app",
        {"perl", "-MIO::Socket::INET", "-e",
         "my $l = IO::Socket::INET->new(LocalAddr => $ARGV[0], LocalPort => 7070, Listen => 1, "
         "ReuseAddr => 1) or die qq(bind $ARGV[0]: $!\\n); my $c = $l->accept; print scalar <$c>;",
         ip});
  });
  // The client retries until the listener is up (connection refused before), 20 s at most.
  auto sent = kubectl_exec(
      control_plane(), ns, "client", "app",
      {"perl", "-MIO::Socket::INET", "-e",
       "for (1 .. 200) { $s = IO::Socket::INET->new(PeerAddr => $ARGV[0], PeerPort => 7070) "
       "and last; select(undef, undef, undef, 0.1) } $s or die qq(connect: $!\\n); "
       "print $s qq(hello from the other node\\n);",
       ip});
  listener.join();
  EXPECT_EQ(sent.exit_code, 0) << sent.err;
  EXPECT_EQ(served.exit_code, 0) << served.err;
  EXPECT_EQ(served.out, "hello from the other node\n");
}

}  // namespace
}  // namespace kstack::testenv::e2e
