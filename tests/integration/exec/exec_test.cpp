// Exec over WebSocket (kube/exec.h) through the real kube-apiserver into pods run by the node
// simulator (tests/nodesim): exit codes and both output streams, 20 MiB of stdin, concurrency,
// literal arguments, cancellation, deadline, the container ID check, output bounds and the
// server's typed refusals. Link with kstack_nodesim_gtest (main + e2e control plane).
//
// ctest runs the binary three times: against a node serving every subprotocol (v5 wins), one
// serving only v4.channel.k8s.io (every kubelet before 1.30) and one serving only
// channel.k8s.io (exit codes as text), chosen by KSTACK_NODESIM_EXEC_PROTOCOLS. Without v5 there
// is no end of stdin: commands fed stdin read a byte count (`head -c N`) instead of to EOF.
#include "kube/exec.h"

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "kube/client.h"
#include "tests/nodesim/testing/e2e.h"
#include "tests/testenv/environment.h"  // the test users
#include "tests/testenv/node_simulator.h"

namespace kstack::kube {
namespace {

namespace e2e = testenv::e2e;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

boost::json::value pod_manifest(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"terminationGracePeriodSeconds", 0},
            {"automountServiceAccountToken", false},  // needs the ServiceAccount, not its token
            {"containers", boost::json::array{{{"name", "app"}, {"image", "debian:bookworm"}}}}}}};
}

std::string expected_protocol() { return e2e::expected_exec_protocol(); }

// Only v5 can end a command's stdin while the exchange goes on.
bool stdin_can_end() { return expected_protocol() == exec_detail::kProtocolV5; }

// v4/v5 carry the exit code in a Status; channel.k8s.io only says "non-zero" in text.
void expect_exit(const ExecResult& r, int code) {
  if (code == 0 || expected_protocol() != exec_detail::kProtocolV1) {
    EXPECT_EQ(r.exit_code, code) << r.status_message;
    return;
  }
  EXPECT_EQ(r.exit_code, kExitCodeUnknown);
  EXPECT_NE(r.status_message.find("exit code " + std::to_string(code)), std::string::npos)
      << r.status_message;
}

std::uint64_t exec_count(Client& client, const std::string& code) {
  auto snapshot = client.metrics().snapshot();
  auto it = snapshot.find({"EXEC", code});
  return it == snapshot.end() ? 0 : it->second;
}

class Exec : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto started = testenv::NodeSimulator::start(e2e::control_plane());
    if (!started) {
      start_error_ = started.error();
      return;
    }
    simulator_ = std::move(*started);
  }
  static void TearDownTestSuite() { simulator_.reset(); }

  void SetUp() override {
    ASSERT_TRUE(simulator_) << "the node simulator did not start: " << start_error_;
    client_ = e2e::admin();
    ns_ = e2e::make_namespace(*client_, "exec");
    // Pods are admitted once the controller-manager has made the namespace's ServiceAccount.
    auto account = e2e::wait_for_object(
        *client_, resources::kServiceAccounts, ns_, "default",
        [](const boost::json::value&) { return true; }, seconds(60));
    ASSERT_TRUE(account) << account.error();
  }

  // Creates the pods and waits until each runs with a container ID for "app"; returns the IDs.
  std::map<std::string, std::string> run_pods(const std::vector<std::string>& names) {
    for (const auto& name : names) {
      auto created = client_->create(resources::kPods, ns_, pod_manifest(name));
      EXPECT_TRUE(created) << name << ": " << created.error().to_string();
    }
    std::map<std::string, std::string> ids;
    auto running = e2e::wait_for(
        *client_, resources::kPods, ns_, {},
        [&](const e2e::Objects& pods) {
          ids.clear();
          for (const auto& name : names) {
            auto it = pods.find(name);
            if (it == pods.end() || e2e::str_at(it->second, "/status/phase") != "Running") {
              return false;
            }
            const std::string id = exec_detail::container_id(it->second, "app");
            if (id.empty()) return false;
            ids[name] = id;
          }
          return true;
        },
        seconds(120));
    EXPECT_TRUE(running) << running.error();
    return ids;
  }

  std::string run_pod(const std::string& name) { return run_pods({name})[name]; }

  static std::unique_ptr<testenv::NodeSimulator> simulator_;
  static std::string start_error_;
  std::shared_ptr<Client> client_;
  std::string ns_;
};

std::unique_ptr<testenv::NodeSimulator> Exec::simulator_;
std::string Exec::start_error_;

TEST_F(Exec, ReturnsStdoutStderrAndTheExitCode) {
  run_pod("p");
  const auto before = exec_count(*client_, "101");
  auto r = exec(*client_, ns_, "p", {"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->stdout_data, "out\n");
  EXPECT_EQ(r->stderr_data, "err\n");
  expect_exit(*r, 3);
  EXPECT_FALSE(r->stdout_truncated);
  EXPECT_FALSE(r->stderr_truncated);
  // The simulator, like the API server from 1.30, takes the client's first choice it serves.
  EXPECT_EQ(r->protocol, expected_protocol());
  EXPECT_EQ(exec_count(*client_, "101"), before + 1);

  auto ok = exec(*client_, ns_, "p", {"true"});
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(ok->exit_code, 0);
  EXPECT_EQ(ok->stdout_data, "");
}

TEST_F(Exec, PipesTwentyMebibytesThroughCatByteForByte) {
  run_pod("p");
  std::string input(20u << 20, '\0');
  std::uint64_t x = 0x9E3779B97F4A7C15ull;  // xorshift: every byte value, no pattern cat could fake
  for (auto& c : input) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x >> 56);
  }
  // Streamed in 1 MiB views of the one buffer: never copied whole.
  std::size_t offset = 0;
  std::size_t pieces = 0;
  const StdinSource source = [&]() -> std::optional<std::string_view> {
    if (offset == input.size()) return std::nullopt;
    const std::size_t n = std::min<std::size_t>(1u << 20, input.size() - offset);
    std::string_view piece(input.data() + offset, n);
    offset += n;
    ++pieces;
    return piece;
  };
  ExecOptions o;
  o.max_stdout_bytes = input.size() + 1;
  o.timeout = seconds(240);
  const auto start = Clock::now();
  const std::string size = std::to_string(input.size());
  const std::vector<std::string> copy = stdin_can_end()
                                            ? std::vector<std::string>{"cat"}
                                            : std::vector<std::string>{"head", "-c", size};
  auto r = exec_streaming(*client_, ns_, "p", copy, source, o);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_FALSE(r->stdout_truncated);
  ASSERT_EQ(r->stdout_data.size(), input.size());
  EXPECT_TRUE(r->stdout_data == input) << "stdout differs from stdin";
  EXPECT_EQ(pieces, 20u);
  std::cerr << "20 MiB through cat in "
            << std::chrono::duration_cast<milliseconds>(Clock::now() - start).count() << " ms\n";

  // The same bytes, counted inside the container (stdin complete, then end of input).
  const std::vector<std::string> count =
      stdin_can_end() ? std::vector<std::string>{"wc", "-c"}
                      : std::vector<std::string>{"sh", "-c", "head -c \"$0\" | wc -c", size};
  auto counted = exec(*client_, ns_, "p", count, input, o);
  ASSERT_TRUE(counted) << counted.error().to_string();
  EXPECT_EQ(counted->stdout_data, std::to_string(input.size()) + "\n");
}

TEST_F(Exec, StdinEndsWithV5sCloseSignalAndNeverOnOlderProtocols) {
  run_pod("p");
  ExecOptions o;
  o.attach_stdin = true;
  if (stdin_can_end()) {
    o.timeout = seconds(30);
    auto r = exec(*client_, ns_, "p", {"cat"}, {}, o);
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->exit_code, 0);
    EXPECT_EQ(r->stdout_data, "");
    return;
  }
  // kstack's empty stdin frame is ignored, as by a kubelet: cat reads on until the deadline.
  o.timeout = seconds(3);
  auto r = exec(*client_, ns_, "p", {"cat"}, "abc", o);
  ASSERT_FALSE(r) << "stdin ended without a close signal: " << r->stdout_data;
  EXPECT_EQ(r.error().kind, ErrorKind::kTimeout) << r.error().to_string();
}

TEST_F(Exec, SixteenConcurrentExecsOnDifferentPodsAllSucceed) {
  constexpr int kPods = 16;
  std::vector<std::string> names;
  for (int i = 0; i < kPods; ++i) names.push_back("p" + std::to_string(i));
  run_pods(names);
  std::vector<std::future<Result<ExecResult>>> runs;
  for (int i = 0; i < kPods; ++i) {
    runs.push_back(std::async(std::launch::async, [this, name = names[i], i] {
      ExecOptions o;
      o.timeout = seconds(120);
      const std::string input = "from " + name;
      return exec(*client_, ns_, name,
                  {"sh", "-c", "hostname; head -c \"$1\"; exit \"$0\"", std::to_string(i),
                   std::to_string(input.size())},
                  input, o);
    }));
  }
  for (int i = 0; i < kPods; ++i) {
    auto r = runs[i].get();
    ASSERT_TRUE(r) << names[i] << ": " << r.error().to_string();
    EXPECT_EQ(r->stdout_data, names[i] + "\nfrom " + names[i]) << names[i];
    SCOPED_TRACE(names[i]);
    expect_exit(*r, i);
  }
}

TEST_F(Exec, ArgumentsArriveLiterallyNeverThroughAShell) {
  run_pod("p");
  auto r = exec(*client_, ns_, "p", {"printf", "%s", "; rm -rf / $(id)"});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->stdout_data, "; rm -rf / $(id)");
  EXPECT_EQ(r->exit_code, 0);

  const std::vector<std::string> hostile = {"`id`",
                                            "a&command=b=c",
                                            "x  y",
                                            "+plus+",
                                            "100%",
                                            "#frag?q",
                                            "\xc3\xbc\xe6\x97\xa5",
                                            "'\"\\",
                                            "",
                                            "line1\nline2",
                                            "$HOME",
                                            "*"};
  std::vector<std::string> argv = {"printf", "[%s]"};
  argv.insert(argv.end(), hostile.begin(), hostile.end());
  auto all = exec(*client_, ns_, "p", argv);
  ASSERT_TRUE(all) << all.error().to_string();
  std::string expected;
  for (const auto& a : hostile) expected += "[" + a + "]";
  EXPECT_EQ(all->stdout_data, expected);
}

TEST_F(Exec, CancelFromAnotherThreadEndsARunningExec) {
  run_pod("p");
  CancelToken cancel;
  std::promise<void> connected;
  bool signalled = false;
  // Called on the exec's thread once the WebSocket is up; stdin then ends at once.
  const StdinSource source = [&]() -> std::optional<std::string_view> {
    if (!signalled) {
      signalled = true;
      connected.set_value();
    }
    return std::nullopt;
  };
  auto running = std::async(std::launch::async, [&] {
    ExecOptions o;
    o.timeout = seconds(120);
    return exec_streaming(*client_, ns_, "p", {"sleep", "100"}, source, o, cancel);
  });
  ASSERT_EQ(connected.get_future().wait_for(seconds(60)), std::future_status::ready);
  const auto start = Clock::now();
  cancel.cancel();
  ASSERT_EQ(running.wait_for(seconds(10)), std::future_status::ready);
  auto r = running.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kCancelled) << r.error().to_string();
  EXPECT_LT(Clock::now() - start, seconds(5));

  // Already cancelled: nothing is attempted.
  const auto attempts = client_->metrics().total();
  auto early = exec(*client_, ns_, "p", {"true"}, {}, {}, cancel);
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error().kind, ErrorKind::kCancelled);
  EXPECT_EQ(client_->metrics().total(), attempts);
}

TEST_F(Exec, TheDeadlineEndsAnExecThatRunsTooLong) {
  run_pod("p");
  ExecOptions o;
  o.timeout = milliseconds(1500);
  const auto start = Clock::now();
  auto r = exec(*client_, ns_, "p", {"sleep", "100"}, {}, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kTimeout) << r.error().to_string();
  EXPECT_NE(r.error().message.find("timed out after 1500ms"), std::string::npos)
      << r.error().message;
  EXPECT_LT(Clock::now() - start, seconds(10));
}

TEST_F(Exec, AnotherContainerIdIsRefusedBeforeAnythingRuns) {
  const std::string id = run_pod("p");
  ASSERT_FALSE(id.empty());
  ExecOptions o;
  o.expected_container_id = id + "-previous";
  const auto upgrades = exec_count(*client_, "101");
  auto refused = exec(*client_, ns_, "p", {"touch", "/tmp/ran"}, {}, o);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kConflict) << refused.error().to_string();
  EXPECT_NE(refused.error().message.find(id), std::string::npos) << refused.error().message;
  EXPECT_EQ(exec_count(*client_, "101"), upgrades);  // no exec was even attempted

  auto ran = exec(*client_, ns_, "p", {"test", "-e", "/tmp/ran"});
  ASSERT_TRUE(ran) << ran.error().to_string();
  expect_exit(*ran, 1);  // the refused command did not run

  o.expected_container_id = id;  // the right one
  auto allowed = exec(*client_, ns_, "p", {"true"}, {}, o);
  ASSERT_TRUE(allowed) << allowed.error().to_string();
  EXPECT_EQ(allowed->exit_code, 0);
}

TEST_F(Exec, OutputBeyondTheBoundsIsDroppedAndReported) {
  run_pod("p");
  ExecOptions o;
  o.max_stdout_bytes = 1000;
  o.max_stderr_bytes = 10'000;
  auto r =
      exec(*client_, ns_, "p",
           {"sh", "-c", "head -c 300000 /dev/zero; head -c 5000 /dev/zero >&2; exit 4"}, {}, o);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->stdout_data, std::string(1000, '\0'));
  EXPECT_TRUE(r->stdout_truncated);
  EXPECT_EQ(r->stderr_data.size(), 5000u);
  EXPECT_FALSE(r->stderr_truncated);
  expect_exit(*r, 4);  // the status after the dropped output still arrives
}

TEST_F(Exec, TheServersRefusalsAreTypedErrors) {
  run_pod("p");
  auto no_pod = exec(*client_, ns_, "nope", {"true"});
  ASSERT_FALSE(no_pod);
  EXPECT_EQ(no_pod.error().kind, ErrorKind::kNotFound) << no_pod.error().to_string();
  EXPECT_EQ(no_pod.error().http_status, 404);
  EXPECT_GE(exec_count(*client_, "404"), 1u);

  ExecOptions other;
  other.container = "sidecar";
  auto no_container = exec(*client_, ns_, "p", {"true"}, {}, other);
  ASSERT_FALSE(no_container);
  EXPECT_EQ(no_container.error().kind, ErrorKind::kBadRequest) << no_container.error().to_string();

  auto& cp = e2e::control_plane();
  Config alice_config;
  alice_config.server = cp.server();
  alice_config.ca_pem = cp.ca_pem();
  alice_config.credentials = static_token(cp.token(testenv::kAlice));
  alice_config.qps = 0;
  auto alice = Client::create(std::move(alice_config));
  ASSERT_TRUE(alice) << alice.error().to_string();
  auto forbidden = exec(**alice, ns_, "p", {"true"});
  ASSERT_FALSE(forbidden);
  EXPECT_EQ(forbidden.error().kind, ErrorKind::kForbidden) << forbidden.error().to_string();
  EXPECT_EQ(forbidden.error().http_status, 403);
}

TEST_F(Exec, TlsAndConnectionFailuresAreTypedAsTheTransportTypesThem) {
  auto& cp = e2e::control_plane();
  Config untrusted;  // the system trust store does not know the test CA
  untrusted.server = cp.server();
  untrusted.credentials = static_token(cp.admin_token());
  untrusted.qps = 0;
  auto client = Client::create(std::move(untrusted));
  ASSERT_TRUE(client) << client.error().to_string();
  auto tls = exec(**client, ns_, "p", {"true"});
  ASSERT_FALSE(tls);
  EXPECT_EQ(tls.error().kind, ErrorKind::kTls) << tls.error().to_string();
  EXPECT_NE(tls.error().message.find("verif"), std::string::npos) << tls.error().message;
  EXPECT_EQ(exec_count(**client, "<error>"), 1u);

  Config nowhere;  // nothing listens on port 1
  nowhere.server = "https://127.0.0.1:1";
  nowhere.ca_pem = cp.ca_pem();
  auto closed = Client::create(std::move(nowhere));
  ASSERT_TRUE(closed) << closed.error().to_string();
  auto refused = exec(**closed, ns_, "p", {"true"});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kTransport) << refused.error().to_string();
  EXPECT_NE(refused.error().message.find("connect to 127.0.0.1:1"), std::string::npos)
      << refused.error().message;
}

TEST_F(Exec, ATerminalMergesStderrIntoStdout) {
  run_pod("p");
  ExecOptions o;
  o.tty = true;
  auto r = exec(*client_, ns_, "p", {"sh", "-c", "echo out; echo err >&2; exit 2"}, {}, o);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_NE(r->stdout_data.find("out"), std::string::npos) << r->stdout_data;
  EXPECT_NE(r->stdout_data.find("err"), std::string::npos) << r->stdout_data;
  EXPECT_EQ(r->stderr_data, "");
  expect_exit(*r, 2);
}

}  // namespace
}  // namespace kstack::kube
