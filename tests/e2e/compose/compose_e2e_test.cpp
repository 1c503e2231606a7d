// `kstack import compose` end to end (issue 14, acceptance 3): the Compose file
// tests/unit/cmd/testdata/compose/redis-replica.yml — a Redis primary and a replica that
// depends on it — is converted by the kstack binary, applied with kubectl as a user would, and
// run by an in-process Controller on the test control plane and a simulated node. The node
// simulator runs an image it does not know with the host's programs, here Debian's
// redis-server and redis-cli (docs/nodesim.md "Images"), so the roles' command and args from
// the file's entrypoint and command are what runs. Checked: the Stack becomes Ready; the
// replica's pod was made only once the primary was ready (depends_on -> dependsOn); a key
// written on the primary is read back on the replica (replication through the kstack host
// name the file gives).
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "kube/exec.h"
#include "kube/resource.h"
#include "tests/e2e/reconciler/support.h"
#include "tests/testenv/process.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::chrono::seconds kTimeout{120};

fs::path compose_file() {
  return fs::path(KSTACK_SOURCE_DIR) / "tests/unit/cmd/testdata/compose/redis-replica.yml";
}

// Runs argv in the pod's container; its stdout, or why it failed.
tl::expected<std::string, std::string> exec(kube::Client& client, const std::string& ns,
                                            const std::string& pod,
                                            const std::vector<std::string>& argv,
                                            const std::string& input = {}) {
  auto done = kube::exec(client, ns, pod, argv, input);
  if (!done) return tl::unexpected(done.error().to_string());
  if (done->exit_code != 0) {
    return tl::unexpected(fmt::format("{}: exit {}: {}{}", fmt::join(argv, " "), done->exit_code,
                                      done->stderr_data, done->stdout_data));
  }
  return done->stdout_data;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// The time of the pod's Ready=True transition ("" if not ready).
std::string ready_since(const json::value& pod) {
  boost::system::error_code ec;
  const auto* conditions = pod.find_pointer("/status/conditions", ec);
  if (conditions == nullptr || !conditions->is_array()) return "";
  for (const auto& c : conditions->get_array()) {
    if (str_at(c, "/type") == "Ready" && str_at(c, "/status") == "True") {
      return str_at(c, "/lastTransitionTime");
    }
  }
  return "";
}

class ComposeE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rbac = install_operator_rbac();
    ASSERT_TRUE(rbac) << rbac.error();
    client_ = admin();
    ns_ = make_namespace(*client_, "compose");
  }
  void TearDown() override {
    if (controller_ != nullptr) {
      auto deleted = delete_stacks(*client_, ns_, 120s);
      EXPECT_TRUE(deleted) << ns_ << ": " << (deleted ? "" : deleted.error());
      controller_->stop();
    }
    if (client_ != nullptr) (void)client_->remove(kube::resources::kNamespaces, "", ns_);
  }

  std::shared_ptr<kube::Client> client_;
  std::string ns_;
  std::unique_ptr<RunningController> controller_;
};

TEST_F(ComposeE2E, ConvertedRedisPrimaryAndReplicaBecomeReadyAndReplicate) {
  // What a user runs: kstack import compose FILE -n NS > out.yaml; kubectl apply -f out.yaml.
  auto converted = run_command(
      {KSTACK_BINARY, "import", "compose", compose_file().string(), "-n", ns_, "--strict"});
  ASSERT_TRUE(converted) << converted.error();
  ASSERT_EQ(converted->exit_code, 0) << converted->err;
  EXPECT_NE(converted->err.find("AppType and Stack \"cache\" (2 roles); 0 warnings"),
            std::string::npos)
      << converted->err;
  auto& cp = control_plane();
  const auto manifest = cp.work_dir() / (ns_ + "-cache.yaml");
  std::ofstream(manifest) << converted->out;
  auto applied = cp.kubectl({"apply", "-f", manifest.string()});
  ASSERT_TRUE(applied.ok()) << applied.err;

  auto options = controller_options(ns_);
  options.poll_interval = 300ms;
  auto running = RunningController::start(std::move(options));
  ASSERT_TRUE(running) << running.error();
  controller_ = std::move(*running);

  auto ready = wait_stack_ready(*client_, ns_, "cache", kTimeout);
  ASSERT_TRUE(ready) << ready.error();
  auto primaries = status_members(*ready, "primary");
  auto replicas = status_members(*ready, "replica");
  ASSERT_EQ(primaries.size(), 1u);
  ASSERT_EQ(replicas.size(), 1u);
  EXPECT_EQ(primaries.begin()->first, "cache-primary-0");
  EXPECT_EQ(replicas.begin()->first, "cache-replica-0");

  // The containers run what the file says (entrypoint -> command, command -> args).
  auto pods = list_objects(*client_, kube::resources::kPods, ns_, stack_selector("cache"));
  ASSERT_EQ(pods.size(), 2u);
  const auto& primary = pods.at("cache-primary-0");
  const auto& replica = pods.at("cache-replica-0");
  EXPECT_EQ(json::serialize(primary.at_pointer("/spec/containers/0/command")),
            R"(["redis-server"])");
  EXPECT_EQ(json::serialize(replica.at_pointer("/spec/containers/0/args")),
            R"(["--port","6380","--protected-mode","no","--replicaof","cache-primary-0.cache",)"
            R"("6379","--dir","/data"])");
  // depends_on: the replica's pod was made only once the primary was ready (timestamps are
  // whole seconds: "not before").
  const auto primary_ready = ready_since(primary);
  ASSERT_NE(primary_ready, "");
  EXPECT_GE(str_at(replica, "/metadata/creationTimestamp"), primary_ready);

  // Data: a key written on the primary is read back on the replica. WAIT (same connection as
  // the SET) returns once the replica has acknowledged the write: no polling.
  auto set = exec(*client_, ns_, "cache-primary-0", {"redis-cli", "-p", "6379"},
                  "SET compose-key from-the-primary\nWAIT 1 60000\n");
  ASSERT_TRUE(set) << set.error();
  EXPECT_EQ(*set, "OK\n1\n");
  auto got =
      exec(*client_, ns_, "cache-replica-0", {"redis-cli", "-p", "6380", "get", "compose-key"});
  ASSERT_TRUE(got) << got.error();
  EXPECT_EQ(trim(*got), "from-the-primary");
  // The primary's data is on its claim (the file's volume).
  auto dir =
      exec(*client_, ns_, "cache-primary-0", {"redis-cli", "-p", "6379", "config", "get", "dir"});
  ASSERT_TRUE(dir) << dir.error();
  EXPECT_NE(dir->find("/data"), std::string::npos) << *dir;
}

// Every realistic file of the test material converts to objects the API server stores: the
// CRDs' schemas accept them (server-side dry run, nothing is created).
TEST_F(ComposeE2E, EveryTestFileIsAcceptedByTheApiServer) {
  auto& cp = control_plane();
  int files = 0;
  for (const auto& e : fs::directory_iterator(compose_file().parent_path())) {
    if (e.path().extension() != ".yml") continue;
    ++files;
    SCOPED_TRACE(e.path().filename().string());
    auto converted = run_command({KSTACK_BINARY, "import", "compose", e.path().string(), "--name",
                                  e.path().stem().string(), "-n", ns_});
    ASSERT_TRUE(converted) << converted.error();
    ASSERT_EQ(converted->exit_code, 0) << converted->err;
    const auto manifest = cp.work_dir() / (ns_ + "-" + e.path().stem().string() + ".yaml");
    std::ofstream(manifest) << converted->out;
    auto applied = cp.kubectl({"apply", "--dry-run=server", "-f", manifest.string()});
    EXPECT_TRUE(applied.ok()) << applied.err;
    EXPECT_NE(applied.out.find("apptype.kstack.io/" + e.path().stem().string() + " created"),
              std::string::npos)
        << applied.out;
  }
  EXPECT_GE(files, 10);
}

}  // namespace
}  // namespace kstack::testenv::e2e
