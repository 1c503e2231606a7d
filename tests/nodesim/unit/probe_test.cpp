// Probes read from a container's spec: httpGet, tcpSocket and exec, ports by name or number,
// the API's defaults, and what cannot be probed; the httpGet and tcpSocket checks against a
// local server; the prober's verdicts (--http-probes for an idle container's readiness).
#include "tests/nodesim/probe.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>
#include <vector>

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

TEST(ParseProbe, APortNameResolvesToTheContainersPortOnThePodIp) {
  auto probe =
      parse_probe(container(R"({"httpGet":{"path":"/readyz","port":"probes"},"periodSeconds":5})"),
                  "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(probe.has_value());
  ASSERT_TRUE(*probe) << probe->error();
  EXPECT_EQ((*probe)->host, "127.0.0.7");
  EXPECT_EQ((*probe)->port, 8081);
  EXPECT_EQ((*probe)->path, "/readyz");
  EXPECT_EQ((*probe)->action, ProbeAction::kHttpGet);
  EXPECT_EQ((*probe)->timing.period, 5s);
  EXPECT_EQ((*probe)->timeout, 1s);
  EXPECT_EQ((*probe)->timing.failure_threshold, 3);
  EXPECT_EQ((*probe)->timing.success_threshold, 1);
}

TEST(ParseProbe, ANumberedPortAndAnExplicitHostAreTakenAsWritten) {
  auto probe =
      parse_probe(container(R"({"httpGet":{"host":"127.0.0.1","port":9000},"failureThreshold":1})"),
                  "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(probe.has_value() && *probe);
  EXPECT_EQ((*probe)->host, "127.0.0.1");
  EXPECT_EQ((*probe)->port, 9000);
  EXPECT_EQ((*probe)->path, "/");
  EXPECT_EQ((*probe)->timing.failure_threshold, 1);
}

TEST(ParseProbe, AnUndeclaredPortNameOrHttpsIsAnErrorNamingTheField) {
  auto unknown =
      parse_probe(container(R"({"httpGet":{"port":"metrics"}})"), "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(unknown.has_value());
  ASSERT_FALSE(*unknown);
  EXPECT_EQ(unknown->error(),
            "readinessProbe.httpGet.port: container \"operator\" has no port named \"metrics\"");
  auto https = parse_probe(container(R"({"httpGet":{"port":8081,"scheme":"HTTPS"}})"),
                           "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(https.has_value());
  EXPECT_FALSE(*https);
}

TEST(ParseProbe, ExecAndTcpSocketProbesWithTheirTimings) {
  auto exec = parse_probe(container(R"({"exec":{"command":["cat","/tmp/ready"]},)"
                                    R"("initialDelaySeconds":2,"timeoutSeconds":3,)"
                                    R"("successThreshold":2})"),
                          "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(exec.has_value() && *exec);
  EXPECT_EQ((*exec)->action, ProbeAction::kExec);
  EXPECT_EQ((*exec)->command, (std::vector<std::string>{"cat", "/tmp/ready"}));
  EXPECT_EQ((*exec)->timing.initial_delay, 2s);
  EXPECT_EQ((*exec)->timeout, 3s);
  EXPECT_EQ((*exec)->timing.success_threshold, 2);
  auto tcp =
      parse_probe(container(R"({"tcpSocket":{"port":"webhook"}})"), "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(tcp.has_value() && *tcp);
  EXPECT_EQ((*tcp)->action, ProbeAction::kTcpSocket);
  EXPECT_EQ((*tcp)->host, "127.0.0.7");
  EXPECT_EQ((*tcp)->port, 9443);
}

TEST(ParseProbe, NoProbeIsNothingToRunAndAProbeWithoutActionIsAnError) {
  EXPECT_FALSE(parse_probe(container("null"), "readinessProbe", "127.0.0.7").has_value());
  auto empty = parse_probe(container(R"({"periodSeconds":1})"), "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(empty.has_value());
  ASSERT_FALSE(*empty);
  EXPECT_NE(empty->error().find("readinessProbe: none of exec, tcpSocket, httpGet"),
            std::string::npos);
}

TEST(RunProbe, NothingListeningIsAFailureSayingWhere) {
  ProbeSpec probe;
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

TEST(RunProbe, TcpSocketPassesWhenSomethingListensAndHttpGetByStatus) {
  StatusServer server;
  ProbeSpec probe;
  probe.host = "127.0.0.1";
  probe.port = server.port();
  probe.action = ProbeAction::kTcpSocket;
  EXPECT_TRUE(run_tcp_socket(probe));
  probe.action = ProbeAction::kHttpGet;
  EXPECT_TRUE(run_http_get(probe));
  server.status = 503;
  auto failed = run_http_get(probe);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().find("HTTP 503"), std::string::npos) << failed.error();
}

TEST(ProbeTracker, ReadinessTurnsAfterSuccessAndFailureThresholdsInARow) {
  const ProbeTracker::TimePoint t0{};
  ProbeTracker t(ProbeType::kReadiness, ProbeTiming{5s, 10s, 2, 3}, t0);
  EXPECT_FALSE(t.verdict());     // unready until probed
  EXPECT_FALSE(t.due(t0 + 4s));  // initialDelaySeconds
  EXPECT_TRUE(t.due(t0 + 5s));
  EXPECT_FALSE(t.record(true, t0 + 5s));  // one success of two
  EXPECT_FALSE(t.due(t0 + 14s));
  EXPECT_TRUE(t.due(t0 + 15s));  // periodSeconds
  EXPECT_TRUE(t.record(true, t0 + 15s));
  EXPECT_TRUE(t.verdict());
  EXPECT_FALSE(t.record(false, t0 + 25s));
  EXPECT_FALSE(t.record(false, t0 + 35s));
  EXPECT_FALSE(t.record(true, t0 + 45s));  // a success resets the failures
  EXPECT_FALSE(t.record(false, t0 + 55s));
  EXPECT_FALSE(t.record(false, t0 + 65s));
  EXPECT_TRUE(t.record(false, t0 + 75s));  // the third failure in a row
  EXPECT_FALSE(t.verdict());
}

TEST(ProbeTracker, LivenessStartsAliveAndStartupStartsNotStarted) {
  const ProbeTracker::TimePoint t0{};
  ProbeTracker liveness(ProbeType::kLiveness, ProbeTiming{0s, 1s, 1, 2}, t0);
  EXPECT_TRUE(liveness.verdict());
  EXPECT_TRUE(liveness.due(t0));
  liveness.record(false, t0);
  EXPECT_TRUE(liveness.verdict());
  liveness.record(false, t0 + 1s);
  EXPECT_FALSE(liveness.verdict());
  ProbeTracker startup(ProbeType::kStartup, ProbeTiming{}, t0);
  EXPECT_FALSE(startup.verdict());
  startup.record(true, t0);
  EXPECT_TRUE(startup.verdict());
}

// A pod whose container "app" runs a command and has the probes given (JSON members), and
// a container "plain" without probes.
json::value pod_with(const std::string& probes, bool command = true) {
  return json::parse(R"({"metadata":{"namespace":"ns","name":"p"},"spec":{"containers":[)"
                     R"({"name":"app",)" +
                     std::string(command ? R"("command":["server"],)" : "") + probes +
                     R"(},{"name":"plain"}]}})");
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

// A runner answering from a script of results per probe action and counting calls.
struct FakeRunner {
  std::map<std::string, bool> pass;  // by exec command[0]
  std::vector<std::string> calls;
  ProbeRunner runner() {
    return [this](const ProbeSpec& p,
                  const std::string& container) -> tl::expected<void, std::string> {
      calls.push_back(container + ":" + p.command.at(0));
      if (pass[p.command.at(0)]) return {};
      return tl::unexpected(std::string("exit code 1"));
    };
  }
};

Prober prober_for_commands() {
  return Prober([](const json::value& c) { return c.as_object().contains("command"); }, false);
}

TEST(Prober, ReadinessDrivesReadyAndIsProbedOnlyWhenDue) {
  auto prober = prober_for_commands();
  FakeRunner fake;
  const auto pod = pod_with(R"("readinessProbe":{"periodSeconds":5,"exec":{"command":["ready"]}})");
  const std::chrono::steady_clock::time_point t0{};
  auto state = two_containers("sim://a");
  auto outcome = prober.probe(pod, state, t0, fake.runner());
  EXPECT_EQ(state.containers[0].readiness, false);
  EXPECT_EQ(state.containers[1].readiness, std::nullopt);  // no probe: ready while running
  ASSERT_TRUE(outcome.next.has_value());
  EXPECT_EQ(*outcome.next, 5000ms);
  fake.pass["ready"] = true;
  state = two_containers("sim://a");
  prober.probe(pod, state, t0 + 4s, fake.runner());  // not due: nothing runs
  EXPECT_EQ(fake.calls.size(), 1u);
  EXPECT_EQ(state.containers[0].readiness, false);
  prober.probe(pod, state, t0 + 5s, fake.runner());
  EXPECT_EQ(fake.calls.size(), 2u);
  EXPECT_EQ(state.containers[0].readiness, true);
  EXPECT_TRUE(prober.probe(pod, state, t0 + 6s, fake.runner()).kill.empty());
}

TEST(Prober, AFailedLivenessProbeKillsTheContainerAfterItsThreshold) {
  auto prober = prober_for_commands();
  FakeRunner fake;
  const auto pod = pod_with(
      R"("livenessProbe":{"periodSeconds":1,"failureThreshold":2,"exec":{"command":["alive"]}})");
  const std::chrono::steady_clock::time_point t0{};
  auto state = two_containers("sim://a");
  EXPECT_TRUE(prober.probe(pod, state, t0, fake.runner()).kill.empty());
  EXPECT_EQ(state.containers[0].readiness, std::nullopt);  // liveness does not gate ready
  EXPECT_EQ(prober.probe(pod, state, t0 + 1s, fake.runner()).kill, std::vector<std::string>{"app"});
  // The restarted container (a new ID) starts alive again.
  auto restarted = two_containers("sim://b");
  EXPECT_TRUE(prober.probe(pod, restarted, t0 + 2s, fake.runner()).kill.empty());
}

TEST(Prober, UntilTheStartupProbePassesNoOtherProbeRunsAndTheContainerIsNotStarted) {
  auto prober = prober_for_commands();
  FakeRunner fake;
  const auto pod = pod_with(
      R"("startupProbe":{"periodSeconds":1,"failureThreshold":3,"exec":{"command":["started"]}},)"
      R"("livenessProbe":{"exec":{"command":["alive"]}},)"
      R"("readinessProbe":{"exec":{"command":["ready"]}})");
  fake.pass["alive"] = true;
  fake.pass["ready"] = true;
  const std::chrono::steady_clock::time_point t0{};
  auto state = two_containers("sim://a");
  EXPECT_TRUE(prober.probe(pod, state, t0, fake.runner()).kill.empty());
  EXPECT_EQ(state.containers[0].started, false);
  EXPECT_EQ(state.containers[0].readiness, false);
  EXPECT_EQ(fake.calls, std::vector<std::string>{"app:started"});
  fake.pass["started"] = true;
  prober.probe(pod, state, t0 + 1s, fake.runner());
  EXPECT_EQ(state.containers[0].started, true);
  EXPECT_EQ(state.containers[0].readiness, true);
  EXPECT_EQ(fake.calls,
            (std::vector<std::string>{"app:started", "app:started", "app:alive", "app:ready"}));
  // Started: the startup probe is not run again.
  prober.probe(pod, state, t0 + 20s, fake.runner());
  EXPECT_EQ(std::count(fake.calls.begin(), fake.calls.end(), "app:started"), 2);
}

TEST(Prober, AStartupProbeFailingItsThresholdKillsTheContainer) {
  auto prober = prober_for_commands();
  FakeRunner fake;
  const auto pod = pod_with(
      R"("startupProbe":{"periodSeconds":1,"failureThreshold":2,"exec":{"command":["started"]}})");
  const std::chrono::steady_clock::time_point t0{};
  auto state = two_containers("sim://a");
  EXPECT_TRUE(prober.probe(pod, state, t0, fake.runner()).kill.empty());
  EXPECT_EQ(prober.probe(pod, state, t0 + 1s, fake.runner()).kill, std::vector<std::string>{"app"});
}

TEST(Prober, AnIdleContainerHasOnlyItsHttpGetReadinessProbedAndOnlyWhenAsked) {
  StatusServer server;
  const auto pod =
      pod_with(R"("readinessProbe":{"httpGet":{"port":)" + std::to_string(server.port()) +
                   R"(}},"livenessProbe":{"exec":{"command":["alive"]}})",
               /*command=*/false);
  const auto http_only = [](const ProbeSpec& p, const std::string&) { return run_http_get(p); };
  const std::chrono::steady_clock::time_point t0{};
  auto not_asked = prober_for_commands();
  auto state = two_containers("sim://a");
  not_asked.probe(pod, state, t0, http_only);
  EXPECT_EQ(server.requests.load(), 0);
  EXPECT_EQ(state.containers[0].readiness, std::nullopt);

  Prober asked([](const json::value&) { return false; }, true);
  auto outcome = asked.probe(pod, state, t0, http_only);
  EXPECT_EQ(server.requests.load(), 1);
  EXPECT_EQ(state.containers[0].readiness, true);
  EXPECT_TRUE(outcome.kill.empty());  // liveness is not run for an idle container
  asked.forget("u1");
  asked.probe(pod, state, t0, http_only);
  EXPECT_EQ(server.requests.load(), 2);  // a fresh record: probed again
}

}  // namespace
}  // namespace kstack::nodesim
