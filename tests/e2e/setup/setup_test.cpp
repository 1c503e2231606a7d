// executor::SetupRunner (executor/setup.h) through the real kube-apiserver into pods of the node
// simulator: /etc/kstack written byte for byte with private modes, real tar.gz packages
// installed over file://, http:// (curl in the container) and configmap:// with sha256 checks,
// the detached `startscript --configure` and its status, startscript arguments arriving
// literally, and the container ID guard. Link with kstack_nodesim_gtest (main + control plane).
// ctest also runs them against nodes that serve only older exec subprotocols
// (tests/e2e/setup/CMakeLists.txt).
#include "executor/setup.h"

#include <cctype>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "kube/client.h"
#include "kube/exec.h"
#include "tests/e2e/setup/package_fixture.h"
#include "tests/nodesim/testing/e2e.h"
#include "tests/testenv/node_simulator.h"

namespace kstack::executor {
namespace {

namespace e2e = testenv::e2e;
using std::chrono::seconds;
using testing::HttpServer;
using testing::kStartScriptLog;
using testing::make_package;
using testing::sha256_hex;
using testing::start_script;
using State = SetupRunner::ConfigureStatus::State;

// configure waits for this file, so a test sees kRunning for as long as it wants.
constexpr const char* kGate = "/tmp/configure-go";
const std::string kGatedConfigure = std::string("echo configuring\nwhile [ ! -e ") + kGate +
                                    " ]; do sleep 0.1; done\nsleep 1\nexit 0";

// A pod with container "app"; `path` (when set) replaces the container's PATH.
boost::json::value pod_manifest(const std::string& name, const std::string& path = {}) {
  boost::json::object app = {{"name", "app"}, {"image", "debian:bookworm"}};
  if (!path.empty()) app["env"] = boost::json::array{{{"name", "PATH"}, {"value", path}}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"terminationGracePeriodSeconds", 0},
            {"automountServiceAccountToken", false},
            {"containers", boost::json::array{app}}}}};
}

std::uint64_t exec_count(kube::Client& client) {
  auto snapshot = client.metrics().snapshot();
  auto it = snapshot.find({"EXEC", "101"});
  return it == snapshot.end() ? 0 : it->second;
}

class Setup : public ::testing::Test {
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
    ns_ = e2e::make_namespace(*client_, "setup");
    member_ = start_member("m");
    runner_ = std::make_unique<SetupRunner>(client_, options());
  }

  // Creates the pod and waits until it runs with a container ID for "app".
  MemberTarget start_member(const std::string& pod, const std::string& path = {}) {
    auto created = client_->create(kube::resources::kPods, ns_, pod_manifest(pod, path));
    EXPECT_TRUE(created) << created.error().to_string();
    auto running = e2e::wait_for_object(
        *client_, kube::resources::kPods, ns_, pod,
        [](const boost::json::value& p) {
          return e2e::str_at(p, "/status/phase") == "Running" &&
                 !kube::exec_detail::container_id(p, "app").empty();
        },
        seconds(120));
    EXPECT_TRUE(running) << running.error();
    if (!running) return {};
    return {ns_, pod, kube::exec_detail::container_id(*running, "app")};
  }

  virtual SetupOptions options() { return {}; }

  // Runs argv in the member's container (stdin given => attached); fails the test on an error.
  kube::ExecResult run(const std::vector<std::string>& argv, const std::string& input = {},
                       const std::string& pod = "m") {
    auto r = kube::exec(*client_, ns_, pod, argv, input);
    EXPECT_TRUE(r) << r.error().to_string();
    return r ? *r : kube::ExecResult{};
  }
  std::string read_file(const std::string& path) { return run({"cat", path}).stdout_data; }
  bool exists(const std::string& path) { return run({"test", "-e", path}).exit_code == 0; }
  std::string setup_dir_listing() { return run({"ls", "-A", std::string(kSetupDir)}).stdout_data; }

  // Polls configure_status, as the reconciler's passes do, until it reports `state`.
  SetupRunner::ConfigureStatus wait_status(State state) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(60);
    SetupRunner::ConfigureStatus last;
    while (std::chrono::steady_clock::now() < deadline) {
      auto s = runner_->configure_status(member_);
      EXPECT_TRUE(s) << s.error().to_string();
      if (!s) return {};
      last = *s;
      if (last.state == state) return last;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "configure_status never reached the state; last "
                  << static_cast<int>(last.state);
    return last;
  }

  void install(const std::string& package_bytes) {
    catalog::SetupPackage package{"configmap://setup/pkg.tgz", sha256_hex(package_bytes)};
    auto r = runner_->install_package(member_, package, &package_bytes);
    ASSERT_TRUE(r) << r.error().to_string();
  }

  static std::unique_ptr<testenv::NodeSimulator> simulator_;
  static std::string start_error_;
  std::shared_ptr<kube::Client> client_;
  std::string ns_;
  MemberTarget member_;
  std::unique_ptr<SetupRunner> runner_;
};

std::unique_ptr<testenv::NodeSimulator> Setup::simulator_;
std::string Setup::start_error_;

// ctest runs this binary against nodes serving every exec subprotocol, only v4.channel.k8s.io
// (kubelets before 1.30: no end of stdin) and only channel.k8s.io (no exit codes).
TEST_F(Setup, ExecsSpeakTheSubprotocolTheNodeServes) {
  auto r = run({"true"});
  EXPECT_EQ(r.protocol, e2e::expected_exec_protocol());
}

TEST_F(Setup, WriteConfigWritesBothFilesByteForByteWithPrivateModes) {
  const std::string meta = "{\"cluster\":{\"name\":\"it's $(id) `id`\\n\"}}\nsecond line\n";
  const std::string env = "KSTACK_STACK='it'\"'\"'s $(id)'\nKSTACK_FQDNS='a;b c'\n\n";
  auto w = runner_->write_config(member_, meta, env);
  ASSERT_TRUE(w) << w.error().to_string();
  EXPECT_EQ(read_file(std::string(kConfigMetaPath)), meta);
  EXPECT_EQ(read_file(std::string(kEnvPath)), env);
  EXPECT_EQ(run({"stat", "-c", "%a", std::string(kConfigDir), std::string(kConfigMetaPath),
                 std::string(kEnvPath)})
                .stdout_data,
            "700\n600\n600\n");

  // Rewritten in place (a later pass with new members); no temporary files left behind.
  auto again = runner_->write_config(member_, "{}", "");
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(read_file(std::string(kConfigMetaPath)), "{}");
  EXPECT_EQ(read_file(std::string(kEnvPath)), "");
  EXPECT_EQ(run({"ls", "-A", std::string(kConfigDir)}).stdout_data, "configmeta.json\nenv\n");
}

TEST_F(Setup, InstallsAFileUrlPackageFromTheImageAfterCheckingItsSha256) {
  const std::string pkg = make_package({{"startscript", start_script("exit 0")}});
  // A byte count, not end of file: only v5 has one (ctest also runs this against v4-only nodes).
  ASSERT_EQ(
      run({"sh", "-c", "head -c \"$2\" > \"$1\"", "x", "/tmp/pkg.tgz", std::to_string(pkg.size())},
          pkg)
          .exit_code,
      0);
  ASSERT_EQ(read_file("/tmp/pkg.tgz"), pkg);

  auto before = runner_->package_installed(member_);
  ASSERT_TRUE(before) << before.error().to_string();
  EXPECT_FALSE(*before);

  const std::string wrong(64, 'a');
  auto refused = runner_->install_package(member_, {"file:///tmp/pkg.tgz", wrong});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, SetupErrorKind::kConfig) << refused.error().to_string();
  EXPECT_EQ(refused.error().message, "sha256 mismatch for file:///tmp/pkg.tgz: expected " + wrong +
                                         ", got " + sha256_hex(pkg));
  EXPECT_EQ(setup_dir_listing(), "");  // nothing unpacked

  auto missing = runner_->install_package(member_, {"file:///tmp/nope.tgz", std::nullopt});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, SetupErrorKind::kConfig);
  EXPECT_NE(missing.error().message.find("no such file"), std::string::npos);

  // Upper-case hex is the same digest.
  std::string upper = sha256_hex(pkg);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto ok = runner_->install_package(member_, {"file:///tmp/pkg.tgz", upper});
  ASSERT_TRUE(ok) << ok.error().to_string();
  auto after = runner_->package_installed(member_);
  ASSERT_TRUE(after) << after.error().to_string();
  EXPECT_TRUE(*after);
  EXPECT_EQ(read_file(std::string(kStartScript)), start_script("exit 0"));
}

TEST_F(Setup, InstallsAnHttpPackageFetchedInTheContainer) {
  ASSERT_EQ(run({"sh", "-c", "command -v curl || command -v wget"}).exit_code, 0)
      << "the simulated container (host /usr) has neither curl nor wget";
  const std::string pkg = make_package({{"startscript", start_script("exit 0")}});
  HttpServer server({{"/pkg.tgz", pkg}});

  const std::string wrong = sha256_hex("something else");
  auto refused = runner_->install_package(member_, {server.url("/pkg.tgz"), wrong});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, SetupErrorKind::kConfig) << refused.error().to_string();
  EXPECT_EQ(refused.error().message, "sha256 mismatch for " + server.url("/pkg.tgz") +
                                         ": expected " + wrong + ", got " + sha256_hex(pkg));
  EXPECT_EQ(setup_dir_listing(), "");  // nothing unpacked, the download removed
  EXPECT_EQ(run({"ls", "-A", "/opt/kstack"}).stdout_data, "setup\n");

  auto not_found = runner_->install_package(member_, {server.url("/missing.tgz"), std::nullopt});
  ASSERT_FALSE(not_found);
  EXPECT_EQ(not_found.error().kind, SetupErrorKind::kConfig) << not_found.error().to_string();
  EXPECT_NE(not_found.error().message.find("404"), std::string::npos) << not_found.error().message;

  auto ok = runner_->install_package(member_, {server.url("/pkg.tgz"), sha256_hex(pkg)});
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(server.requests(), 3);
  EXPECT_EQ(read_file(std::string(kStartScript)), start_script("exit 0"));
  EXPECT_EQ(setup_dir_listing(), "startscript\n");
}

TEST_F(Setup, AnHttpPackageFallsBackToWgetAndNeedsCurlOrWgetAndSha256sum) {
  // A container whose PATH holds only the tools linked into /tmp/tools: wget, no curl.
  const MemberTarget bare = start_member("bare", "/tmp/tools");
  ASSERT_FALSE(bare.container_id.empty());
  const auto link = [&](const std::string& tool) {
    return run({"/bin/ln", "-sf", "/usr/bin/" + tool, "/tmp/tools/" + tool}, {}, "bare").exit_code;
  };
  ASSERT_EQ(run({"/bin/mkdir", "/tmp/tools"}, {}, "bare").exit_code, 0);
  for (const char* tool : {"sh", "mkdir", "rm", "wget", "sha256sum", "tar", "gzip"}) {
    ASSERT_EQ(link(tool), 0) << tool;
  }
  const std::string pkg = make_package({{"startscript", start_script("exit 0")}});
  HttpServer server({{"/pkg.tgz", pkg}});
  const catalog::SetupPackage package{server.url("/pkg.tgz"), sha256_hex(pkg)};

  ASSERT_EQ(run({"/bin/rm", "/tmp/tools/sha256sum"}, {}, "bare").exit_code, 0);
  auto no_sum = runner_->install_package(bare, package);
  ASSERT_FALSE(no_sum);
  EXPECT_EQ(no_sum.error().kind, SetupErrorKind::kConfig);
  EXPECT_EQ(no_sum.error().message,
            "no sha256sum in the container to verify " + package.package_url);

  ASSERT_EQ(link("sha256sum"), 0);
  auto ok = runner_->install_package(bare, package);
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(run({"/bin/cat", std::string(kStartScript)}, {}, "bare").stdout_data,
            start_script("exit 0"));

  ASSERT_EQ(run({"/bin/rm", "/tmp/tools/wget"}, {}, "bare").exit_code, 0);
  auto no_fetcher = runner_->install_package(bare, package);
  ASSERT_FALSE(no_fetcher);
  EXPECT_EQ(no_fetcher.error().kind, SetupErrorKind::kConfig);
  EXPECT_EQ(no_fetcher.error().message,
            "neither curl nor wget in the container to fetch " + package.package_url);
  EXPECT_EQ(server.requests(), 2);
}

TEST_F(Setup, InstallsAConfigMapPayloadVerifiedBeforeAnythingRuns) {
  const std::string pkg = make_package({{"startscript", start_script("exit 0")}});
  const std::string wrong(64, '0');
  const auto execs = exec_count(*client_);
  auto refused = runner_->install_package(member_, {"configmap://setup/pkg.tgz", wrong}, &pkg);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, SetupErrorKind::kConfig);
  EXPECT_EQ(refused.error().message, "sha256 mismatch for configmap://setup/pkg.tgz: expected " +
                                         wrong + ", got " + sha256_hex(pkg));
  EXPECT_EQ(exec_count(*client_), execs);  // refused here, before any exec
  EXPECT_FALSE(exists(std::string(kSetupDir)));

  const std::string garbage = "not a tarball";
  auto broken = runner_->install_package(member_, {"configmap://setup/pkg.tgz", {}}, &garbage);
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().kind, SetupErrorKind::kConfig);
  EXPECT_NE(broken.error().message.find("unpacking configmap://setup/pkg.tgz failed"),
            std::string::npos)
      << broken.error().message;

  const std::string no_script = make_package({{"README", "hello\n"}});
  auto empty = runner_->install_package(member_, {"configmap://setup/pkg.tgz", {}}, &no_script);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().kind, SetupErrorKind::kConfig);
  EXPECT_EQ(empty.error().message,
            "package configmap://setup/pkg.tgz has no executable startscript");

  auto ok = runner_->install_package(member_, {"configmap://setup/pkg.tgz", sha256_hex(pkg)}, &pkg);
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(read_file(std::string(kStartScript)), start_script("exit 0"));
}

TEST_F(Setup, RefusesPackagesOverTheSizeBoundAndUnknownSchemes) {
  SetupOptions small;
  small.max_package_bytes = 100;
  SetupRunner runner(client_, small);
  const std::string big(101, 'x');
  auto too_big = runner.install_package(member_, {"configmap://setup/pkg.tgz", {}}, &big);
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().kind, SetupErrorKind::kConfig);
  EXPECT_NE(too_big.error().message.find("101 bytes"), std::string::npos);

  auto ftp = runner.install_package(member_, {"ftp://example.com/pkg.tgz", {}});
  ASSERT_FALSE(ftp);
  EXPECT_EQ(ftp.error().kind, SetupErrorKind::kConfig);
  auto bad_sum = runner.install_package(member_, {"file:///tmp/pkg.tgz", "xyz"});
  ASSERT_FALSE(bad_sum);
  EXPECT_EQ(bad_sum.error().kind, SetupErrorKind::kConfig);
}

TEST_F(Setup, ConfigureRunsDetachedOnceAndReportsExitZero) {
  auto none = runner_->configure_status(member_);
  ASSERT_TRUE(none) << none.error().to_string();
  EXPECT_EQ(none->state, State::kNotStarted);
  install(make_package({{"startscript", start_script(kGatedConfigure)}}));
  auto installed = runner_->configure_status(member_);
  ASSERT_TRUE(installed) << installed.error().to_string();
  EXPECT_EQ(installed->state, State::kNotStarted);

  auto started = runner_->start_configure(member_);
  ASSERT_TRUE(started) << started.error().to_string();
  // The exec has ended; the script waits for the gate, detached from it.
  auto running = runner_->configure_status(member_);
  ASSERT_TRUE(running) << running.error().to_string();
  EXPECT_EQ(running->state, State::kRunning);
  EXPECT_EQ(running->container_id, member_.container_id);

  ASSERT_EQ(run({"touch", kGate}).exit_code, 0);
  auto done = wait_status(State::kDone);
  EXPECT_EQ(done.container_id, member_.container_id);
  EXPECT_EQ(done.exit_code, 0);
  EXPECT_EQ(done.stdout_tail, "configuring\n");
  EXPECT_EQ(done.stderr_tail, "");
  EXPECT_EQ(read_file(std::string(kConfigureStatus)), member_.container_id + "=0\n");

  const std::string log = read_file(std::string(kStartScriptLog));
  EXPECT_EQ(log.rfind("[--configure] ", 0), 0u) << log;
  EXPECT_EQ(log.find('\n'), log.size() - 1) << "one run only:\n" << log;
}

TEST_F(Setup, AFailedConfigureReportsItsExitCodeAndStderr) {
  install(make_package({{"startscript", start_script("echo partial; echo boom >&2; exit 7")}}));
  auto started = runner_->start_configure(member_);
  ASSERT_TRUE(started) << started.error().to_string();
  auto done = wait_status(State::kDone);
  EXPECT_EQ(done.container_id, member_.container_id);
  EXPECT_EQ(done.exit_code, 7);
  EXPECT_EQ(done.stdout_tail, "partial\n");
  EXPECT_NE(done.stderr_tail.find("boom"), std::string::npos) << done.stderr_tail;
}

TEST_F(Setup, AStatusOfAnEarlierContainerIsReportedAsSuch) {
  install(make_package({{"startscript", start_script("exit 0")}}));
  // The setup directory survived from an earlier container (a PVC) that configured it.
  ASSERT_EQ(
      run({"sh", "-c", "echo 'containerd://old=0' > \"$1\"", "x", std::string(kConfigureStatus)})
          .exit_code,
      0);
  auto s = runner_->configure_status(member_);
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->state, State::kDone);
  EXPECT_EQ(s->container_id, "containerd://old");
  EXPECT_EQ(s->exit_code, 0);
}

TEST_F(Setup, StartscriptArgumentsArriveLiterally) {
  install(
      make_package({{"startscript", start_script("exit 0", "echo out; echo err >&2; exit 3")}}));
  const std::vector<std::string> args = {"--addnodes", "--role",        "worker",
                                         "--fqdns",    "a;b,$(id),c d", "'\"`id`\n*"};
  auto r = runner_->run_startscript(member_, args);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->stdout_tail, "out\n");
  EXPECT_EQ(r->stderr_tail, "err\n");
  const std::string log = read_file(std::string(kStartScriptLog));
  const std::string expected = "[--addnodes][--role][worker][--fqdns][a;b,$(id),c d]['\"`id`\n*] ";
  EXPECT_EQ(log.rfind(expected, 0), 0u) << log;
  EXPECT_EQ(setup_dir_listing(), "startscript\n");  // its output files are removed
}

TEST_F(Setup, StartscriptOutputIsCutToItsTail) {
  SetupOptions o;
  o.tail_bytes = 8;
  SetupRunner runner(client_, o);
  install(make_package({{"startscript", start_script("exit 0", "echo 0123456789abcdef; exit 0")}}));
  auto r = runner.run_startscript(member_, {"--delnodes"});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->stdout_tail, "9abcdef\n");
}

// A step's shell killed by a signal before it reported (an OOM kill, the container stopping)
// says nothing about the setup: retried on a later pass, not a config error. Here the `sh` first
// on the container's PATH SIGKILLs itself, as such a kill would: exit 137, nothing reported.
TEST_F(Setup, AStepWhoseShellIsKilledBeforeItReportsIsRetriedNotAConfigError) {
  const MemberTarget killed = start_member("killed", "/tmp/tools");
  ASSERT_FALSE(killed.container_id.empty());
  ASSERT_EQ(run({"/bin/mkdir", "/tmp/tools"}, {}, "killed").exit_code, 0);
  ASSERT_EQ(
      run({"/bin/sh", "-c",
           "printf '#!/bin/sh\\nkill -9 $$\\n' >/tmp/tools/sh && /bin/chmod +x /tmp/tools/sh"},
          {}, "killed")
          .exit_code,
      0);
  auto written = runner_->write_config(killed, "{}", "A=1\n");
  ASSERT_FALSE(written);
  if (e2e::expected_exec_protocol() == kube::exec_detail::kProtocolV1) {
    // channel.k8s.io carries no exit code: a shell killed before it reported cannot be told
    // from one that never started (no sh), which is the setup's fault.
    EXPECT_EQ(written.error().kind, SetupErrorKind::kConfig) << written.error().to_string();
  } else {
    EXPECT_EQ(written.error().kind, SetupErrorKind::kTransport) << written.error().to_string();
    EXPECT_EQ(written.error().message, "write_config in pod " + ns_ +
                                           "/killed was killed by signal 9 (exit 137) before it "
                                           "reported its end");
  }
  EXPECT_EQ(run({"/bin/ls", "-A", std::string(kConfigDir)}, {}, "killed").stdout_data, "");
}

TEST_F(Setup, AnotherContainerIdIsAConflictAndNothingRuns) {
  MemberTarget stale = member_;
  stale.container_id = member_.container_id + "-previous";
  const std::string pkg = make_package({{"startscript", start_script("exit 0")}});
  const auto execs = exec_count(*client_);
  auto expect_conflict = [](const auto& r, const char* step) {
    ASSERT_FALSE(r) << step;
    EXPECT_EQ(r.error().kind, SetupErrorKind::kContainerChanged)
        << step << ": " << r.error().to_string();
  };
  expect_conflict(runner_->write_config(stale, "{}", "A=1\n"), "write_config");
  expect_conflict(runner_->package_installed(stale), "package_installed");
  expect_conflict(runner_->install_package(stale, {"configmap://setup/pkg.tgz", {}}, &pkg),
                  "install_package");
  expect_conflict(runner_->start_configure(stale), "start_configure");
  expect_conflict(runner_->configure_status(stale), "configure_status");
  expect_conflict(runner_->run_startscript(stale, {"--addnodes"}), "run_startscript");
  EXPECT_EQ(exec_count(*client_), execs);
  EXPECT_FALSE(exists(std::string(kConfigDir)));
  EXPECT_FALSE(exists("/opt/kstack"));
}

}  // namespace
}  // namespace kstack::executor
