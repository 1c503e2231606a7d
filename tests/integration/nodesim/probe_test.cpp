// Probes as a kubelet runs them, one of each action: an exec readiness probe drives Ready both
// ways, a tcpSocket liveness probe restarts a container whose server stopped listening, an
// httpGet startup probe holds the container unstarted and unready until its server answers.
#include <functional>

#include <boost/json.hpp>
#include <gtest/gtest.h>
#include <tl/expected.hpp>

#include "tests/integration/nodesim/one_node_suite.h"
#include "tests/nodesim/testing/e2e.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// A server on the pod's IP (its hostname resolves there through /etc/hosts), port 7070,
// answering every request with HTTP 200.
constexpr const char* kServer =
    "use IO::Socket::INET; use Sys::Hostname; use Socket; "
    "my $ip = inet_ntoa(scalar gethostbyname(hostname())); "
    "my $l = IO::Socket::INET->new(LocalAddr => $ip, LocalPort => 7070, Listen => 5, "
    "ReuseAddr => 1) or die qq(bind $ip: $!); "
    "while (my $c = $l->accept) { my $request = <$c>; "
    "print $c qq(HTTP/1.0 200 OK\\r\\nContent-Length: 0\\r\\n\\r\\n); close $c; }";

json::value probed_pod(const std::string& name, const std::string& node, const std::string& script,
                       json::object probes) {
  json::object container{
      {"name", "app"},
      {"image", "busybox"},
      {"command", json::array{"sh", "-c", script}},
      {"env", json::array{json::object{{"name", "SERVER"}, {"value", kServer}}}}};
  for (auto& [k, v] : probes) container[k] = v;
  return json::object{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", json::object{{"name", name}}},
      {"spec", json::object{{"nodeName", node}, {"containers", json::array{container}}}}};
}

std::int64_t restarts(const json::value& pod) {
  boost::system::error_code ec;
  const auto* p = pod.find_pointer("/status/containerStatuses/0/restartCount", ec);
  return p != nullptr && p->is_int64() ? p->get_int64() : -1;
}

bool started(const json::value& pod) {
  boost::system::error_code ec;
  const auto* p = pod.find_pointer("/status/containerStatuses/0/started", ec);
  return p != nullptr && p->is_bool() && p->get_bool();
}

inline constexpr char kProbeNode[] = "probe-node";

class Probes : public OneNodeSuite<kProbeNode> {
 protected:
  tl::expected<json::value, std::string> wait(const std::string& name,
                                              const std::function<bool(const json::value&)>& done) {
    return wait_for_object(*client_, kube::resources::kPods, ns_, name, done, 60s);
  }
  CommandResult exec(const std::string& pod, const std::string& script) {
    return kubectl_exec(control_plane(), ns_, pod, "app", {"sh", "-c", script});
  }
  std::string node() const { return simulator()->node_name(); }

  std::shared_ptr<kube::Client> client_ = admin();
  std::string ns_ = make_namespace(*client_, "probes");
};

TEST_F(Probes, AnExecReadinessProbeMakesThePodReadyAndUnreadyAgain) {
  json::object probes{
      {"readinessProbe",
       json::object{{"exec", json::object{{"command", json::array{"cat", "/tmp/ready"}}}},
                    {"periodSeconds", 1},
                    {"failureThreshold", 1}}}};
  ASSERT_TRUE(client_->create(kube::resources::kPods, ns_,
                              probed_pod("gated", node(), "exec sleep infinity", probes)));
  auto running = wait("gated", [](const json::value& p) {
    return str_at(p, "/status/phase") == "Running" && condition(p, "Ready") == "False";
  });
  ASSERT_TRUE(running) << running.error();
  ASSERT_EQ(exec("gated", "touch /tmp/ready").exit_code, 0);
  auto ready = wait("gated", running_and_ready);
  ASSERT_TRUE(ready) << ready.error();
  ASSERT_EQ(exec("gated", "rm /tmp/ready").exit_code, 0);
  auto unready =
      wait("gated", [](const json::value& p) { return condition(p, "Ready") == "False"; });
  ASSERT_TRUE(unready) << unready.error();
  EXPECT_EQ(restarts(*unready), 0);  // readiness never restarts a container
}

TEST_F(Probes, ATcpSocketLivenessProbeRestartsAContainerThatStoppedListening) {
  json::object probes{{"livenessProbe", json::object{{"tcpSocket", json::object{{"port", 7070}}},
                                                     {"periodSeconds", 1},
                                                     {"failureThreshold", 2}}}};
  // The server runs in the background of a shell that stays: only liveness can notice it died.
  ASSERT_TRUE(
      client_->create(kube::resources::kPods, ns_,
                      probed_pod("alive", node(),
                                 "perl -e \"$SERVER\" & echo $! > /tmp/server.pid; exec sleep "
                                 "infinity",
                                 probes)));
  auto ready = wait("alive", running_and_ready);
  ASSERT_TRUE(ready) << ready.error();
  ASSERT_EQ(exec("alive", "kill $(cat /tmp/server.pid)").exit_code, 0);
  auto restarted =
      wait("alive", [](const json::value& p) { return restarts(p) == 1 && running_and_ready(p); });
  ASSERT_TRUE(restarted) << restarted.error();
  boost::system::error_code ec;
  const auto* code =
      restarted->find_pointer("/status/containerStatuses/0/lastState/terminated/exitCode", ec);
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(*code, 137);
  // The new container's server answers: the pod stays up.
  auto listening = exec("alive", "test -s /tmp/server.pid && kill -0 $(cat /tmp/server.pid)");
  EXPECT_EQ(listening.exit_code, 0) << listening.err;
}

TEST_F(Probes, AnHttpGetStartupProbeHoldsTheContainerUntilItsServerAnswers) {
  json::object probes{
      {"startupProbe", json::object{{"httpGet", json::object{{"port", 7070}, {"path", "/"}}},
                                    {"periodSeconds", 1},
                                    {"failureThreshold", 120}}},
      {"readinessProbe",
       json::object{{"httpGet", json::object{{"port", 7070}}}, {"periodSeconds", 1}}}};
  // The server starts only once the test creates /tmp/go.
  ASSERT_TRUE(client_->create(kube::resources::kPods, ns_,
                              probed_pod("slow", node(),
                                         "while [ ! -e /tmp/go ]; do sleep 0.2; done; exec perl -e "
                                         "\"$SERVER\"",
                                         probes)));
  auto waiting = wait("slow", [](const json::value& p) {
    return str_at(p, "/status/phase") == "Running" &&
           !str_at(p, "/status/containerStatuses/0/state/running/startedAt").empty();
  });
  ASSERT_TRUE(waiting) << waiting.error();
  EXPECT_FALSE(started(*waiting));
  EXPECT_EQ(condition(*waiting, "Ready"), "False");
  ASSERT_EQ(exec("slow", "touch /tmp/go").exit_code, 0);
  auto ready =
      wait("slow", [](const json::value& p) { return started(p) && running_and_ready(p); });
  ASSERT_TRUE(ready) << ready.error();
  EXPECT_EQ(restarts(*ready), 0);
}

}  // namespace
}  // namespace kstack::testenv::e2e
