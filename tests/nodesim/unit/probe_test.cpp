// The httpGet probe read from a container's spec (--http-probes): ports by name or number, the
// API's defaults, and what cannot be probed; the prober's verdicts against a local server.
#include "tests/nodesim/probe.h"

#include <atomic>
#include <thread>

#include <arpa/inet.h>
#include <boost/json/parse.hpp>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace kstack::nodesim {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

json::value container(std::string_view probe) {
  return json::parse(std::string(R"({"name":"operator","ports":[)"
                                 R"({"name":"webhook","containerPort":9443},)"
                                 R"({"name":"probes","containerPort":8081}],)"
                                 R"("readinessProbe":)") +
                     std::string(probe) + "}");
}

TEST(HttpGetProbe, APortNameResolvesToTheContainersPortOnThePodIp) {
  auto probe = http_get_probe(
      container(R"({"httpGet":{"path":"/readyz","port":"probes"},"periodSeconds":5})"),
      "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(probe.has_value());
  ASSERT_TRUE(*probe) << probe->error();
  EXPECT_EQ((*probe)->host, "127.0.0.7");
  EXPECT_EQ((*probe)->port, 8081);
  EXPECT_EQ((*probe)->path, "/readyz");
  EXPECT_EQ((*probe)->period, 5s);
  EXPECT_EQ((*probe)->timeout, 1s);
  EXPECT_EQ((*probe)->failure_threshold, 3);
}

TEST(HttpGetProbe, ANumberedPortAndAnExplicitHostAreTakenAsWritten) {
  auto probe = http_get_probe(
      container(R"({"httpGet":{"host":"127.0.0.1","port":9000},"failureThreshold":1})"),
      "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(probe.has_value() && *probe);
  EXPECT_EQ((*probe)->host, "127.0.0.1");
  EXPECT_EQ((*probe)->port, 9000);
  EXPECT_EQ((*probe)->path, "/");
  EXPECT_EQ((*probe)->failure_threshold, 1);
}

TEST(HttpGetProbe, AnUndeclaredPortNameOrHttpsIsAnErrorNamingTheField) {
  auto unknown =
      http_get_probe(container(R"({"httpGet":{"port":"metrics"}})"), "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(unknown.has_value());
  ASSERT_FALSE(*unknown);
  EXPECT_EQ(unknown->error(),
            "readinessProbe.httpGet.port: container \"operator\" has no port named \"metrics\"");
  auto https = http_get_probe(container(R"({"httpGet":{"port":8081,"scheme":"HTTPS"}})"),
                              "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(https.has_value());
  EXPECT_FALSE(*https);
}

TEST(HttpGetProbe, NoProbeOrAnotherKindIsNothingToRun) {
  EXPECT_FALSE(
      http_get_probe(container(R"({"exec":{"command":["true"]}})"), "readinessProbe", "127.0.0.7")
          .has_value());
  EXPECT_FALSE(http_get_probe(container("null"), "livenessProbe", "127.0.0.7").has_value());
}

TEST(HttpGetProbe, NothingListeningIsAFailureSayingWhere) {
  HttpGetProbe probe;
  probe.host = "127.0.0.1";
  probe.port = 1;  // privileged, never bound by a test
  auto result = run_http_get(probe);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().find("http://127.0.0.1:1/: connect:"), std::string::npos)
      << result.error();
}

// An HTTP server on 127.0.0.1 answering every request with `status`, counting them.
class StatusServer {
 public:
  StatusServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 8);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      for (int c; (c = ::accept(fd_, nullptr, nullptr)) >= 0;) {
        char buf[1024];
        (void)::recv(c, buf, sizeof buf, 0);
        ++requests;
        const std::string answer = "HTTP/1.1 " + std::to_string(status.load()) +
                                   " X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        (void)::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
        ::close(c);
      }
    });
  }
  ~StatusServer() {
    ::shutdown(fd_, SHUT_RDWR);  // ends accept()
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }

  std::atomic<int> status{200};
  std::atomic<int> requests{0};

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

json::value probed_pod(int port) {
  return json::parse(R"({"metadata":{"namespace":"ns","name":"p"},"spec":{"containers":[)"
                     R"({"name":"app","readinessProbe":{"periodSeconds":5,"httpGet":{"port":)" +
                     std::to_string(port) + R"(,"path":"/readyz"}}},{"name":"plain"}]}})");
}

PodState two_containers(const std::string& app_id) {
  PodState state;
  state.uid = "u1";
  state.pod_ip = "127.0.0.1";
  state.containers.resize(2);
  state.containers[0].name = "app";
  state.containers[0].id = app_id;
  state.containers[1].name = "plain";
  state.containers[1].id = "sim://plain";
  return state;
}

TEST(ReadinessProber, AContainerIsReadyOnceItsProbeAnswersAndOnlyProbedWhenDue) {
  StatusServer server;
  ReadinessProber prober;
  auto state = two_containers("sim://a");
  const auto next = prober.probe(probed_pod(server.port()), state);
  EXPECT_EQ(server.requests.load(), 1);
  EXPECT_EQ(state.containers[0].readiness, true);
  EXPECT_EQ(state.containers[1].readiness, std::nullopt);  // no probe: ready while running
  ASSERT_TRUE(next.has_value());
  EXPECT_GT(*next, std::chrono::milliseconds(4000));  // the 5 s period
  EXPECT_LE(*next, std::chrono::milliseconds(5000));

  server.status = 500;  // not due yet: the verdict stands, nothing is sent
  auto again = two_containers("sim://a");
  prober.probe(probed_pod(server.port()), again);
  EXPECT_EQ(server.requests.load(), 1);
  EXPECT_EQ(again.containers[0].readiness, true);
}

TEST(ReadinessProber, ANewContainerIsUnreadyUntilAProbePasses) {
  StatusServer server;
  server.status = 503;
  ReadinessProber prober;
  auto state = two_containers("sim://a");
  prober.probe(probed_pod(server.port()), state);
  EXPECT_EQ(state.containers[0].readiness, false);
  // A restarted container (new ID) starts over, unready, and is probed at once.
  server.status = 200;
  auto restarted = two_containers("sim://b");
  prober.probe(probed_pod(server.port()), restarted);
  EXPECT_EQ(server.requests.load(), 2);
  EXPECT_EQ(restarted.containers[0].readiness, true);
  prober.forget("u1");
  auto forgotten = two_containers("sim://b");
  prober.probe(probed_pod(server.port()), forgotten);
  EXPECT_EQ(server.requests.load(), 3);  // a fresh record: probed again
}

}  // namespace
}  // namespace kstack::nodesim
