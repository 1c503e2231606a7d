// Issue 11 end to end, pods that work with any image: a role's readinessProbe gates the member's
// `ready` (set up AND pod Ready), its livenessProbe restarts a container whose daemon died
// (kstack then sets the member up again), and a non-root image is set up through kstack's
// emptyDirs at /etc/kstack and /opt/kstack. The image (testdata/probed-image, USER nobody) is
// registered on this binary's simulated node, so its entrypoint runs and its probes are run
// (docs/nodesim.md "Probes", "Images").
#include <algorithm>
#include <filesystem>
#include <iostream>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "kube/exec.h"
#include "tests/e2e/setup/package_fixture.h"
#include "tests/e2e/stack_setup/fixture.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using catalog::resources::kAppTypes;
using catalog::resources::kStacks;
using kube::resources::kPods;

constexpr const char* kImage = "kstack-test/probed:1";
constexpr const char* kReadyMarker = "/tmp/ready";  // private to the container: a restart wipes it
// The startscript's log: in kstack's emptyDir, so it outlives container restarts (the role has
// no persisted dir: the simulator makes a claim's sub-directories root's 0755, not nobody's).
constexpr const char* kProbedLog = "/opt/kstack/probed.log";
const std::string kPod = "probed-worker-0";

// Logs every call ("<time>\t<args>", as the stack_setup startscript) and checks it can read
// the env kstack wrote, copying it next to the log.
std::string probed_startscript() {
  return R"sh(#!/bin/sh
line=$(date +%s.%N)
for a in "$@"; do line="$line	$a"; done
printf '%s\n' "$line" >>/opt/kstack/probed.log || exit 5
. /etc/kstack/env || exit 4
cp /etc/kstack/env /opt/kstack/seen-env || exit 4
exit 0
)sh";
}

const std::string& probed_package() {
  static const std::string package =
      executor::testing::make_package({{"startscript", probed_startscript()}});
  return package;
}

const ConfigureEnvironment kProbedImage([](EnvironmentOptions& options) {
  options.node.images[kImage] =
      std::filesystem::path(KSTACK_SOURCE_DIR) / "tests/e2e/stack_setup/testdata/probed-image";
});

std::string member_field(const json::value& stack, std::string_view pointer) {
  const auto members = status_members(stack, "worker");
  auto it = members.find(kPod);
  return it == members.end() ? std::string() : str_at(it->second, pointer);
}

class Probes : public StackSetupTest {
 protected:
  // logapp on the probed image with probed_startscript() from a ConfigMap, no persisted dir, a
  // readiness probe on kReadyMarker and a liveness probe on the image's daemon; one member.
  void create_probed_stack() {
    create_package_configmap("probed-setup", "setup.tgz", probed_package());
    auto app = logapp(ns_, "probed-app", "configmap://probed-setup/setup.tgz",
                      executor::testing::sha256_hex(probed_package()), {});
    auto& spec = app.at("spec").as_object();
    spec["defaultImageRepoTag"] = kImage;
    auto& role = spec["roles"].as_array().at(0).as_object();
    role["readinessProbe"] = json::parse(
        R"({"exec": {"command": ["test", "-f", "/tmp/ready"]}, "periodSeconds": 1,
            "failureThreshold": 1})");
    role["livenessProbe"] = json::parse(
        R"({"exec": {"command": ["/usr/local/bin/kstack-test-probed", "--alive"]},
            "periodSeconds": 1, "failureThreshold": 2})");
    create(kAppTypes, app);
    create(kStacks, logapp_stack(ns_, "probed", "probed-app", 1));
  }

  // Waits until the member is set up in its current container (lastConfiguredContainer set to
  // it) and returns the Stack at that moment.
  json::value wait_configured(const std::string& not_container = {}) {
    auto s = wait_stack("probed", [&](const json::value& st) {
      const auto id = member_field(st, "/stateDetail/lastConfiguredContainer");
      return (!id.empty() && id != not_container) ||
             member_field(st, "/state") == catalog::kMemberConfigError;
    });
    EXPECT_TRUE(s) << s.error();
    if (!s) return json::value();
    EXPECT_NE(member_field(*s, "/state"), catalog::kMemberConfigError)
        << describe_stack(*client_, ns_, "probed");
    return member_field(*s, "/state") == catalog::kMemberConfigError ? json::value() : *s;
  }

  void mark_ready(bool ready) {
    const auto r = exec(kPod, ready ? std::vector<std::string>{"touch", kReadyMarker}
                                    : std::vector<std::string>{"rm", "-f", kReadyMarker});
    EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  }

  tl::expected<json::value, std::string> wait_unready() {
    return wait_stack("probed", [](const json::value& st) {
      return member_field(st, "/state") == catalog::kMemberCreating &&
             str_at(condition_of(st, "Ready"), "/status") == "False";
    });
  }
};

TEST_F(Probes, AMemberIsReadyOnlyWhileItsReadinessProbePassesAndIsNeverSetUpTwiceForIt) {
  create_probed_stack();
  StackStateRecorder recorder(client_, ns_, "probed");  // from the Stack's first version on
  const auto start = std::chrono::steady_clock::now();
  const auto configured = wait_configured();
  ASSERT_FALSE(configured.is_null());
  // The old planner made the member ready right here: setup succeeded, the probe still fails.
  EXPECT_EQ(member_field(configured, "/state"), catalog::kMemberCreating)
      << describe_stack(*client_, ns_, "probed");
  EXPECT_EQ(str_at(condition_of(configured, "Ready"), "/status"), "False");
  EXPECT_EQ(str_at(condition_of(configured, "Ready"), "/reason"), "MembersNotReady");
  const auto cid = member_field(configured, "/stateDetail/lastConfiguredContainer");
  EXPECT_EQ(read(kPod, "/opt/kstack/setup/configure.status"), cid + "=0\n");

  mark_ready(true);
  const auto became_ready = std::chrono::steady_clock::now();
  auto ready = wait_stack("probed", stack_ready);
  ASSERT_TRUE(ready) << ready.error();
  std::cout << "[ probes ] ready " << seconds_since(became_ready)
            << " s after the readiness probe could pass, " << seconds_since(start)
            << " s after the Stack was created\n";
  EXPECT_EQ(member_field(*ready, "/stateDetail/lastConfiguredContainer"), cid);
  // Every earlier state of the member was a non-ready one.
  ASSERT_TRUE(recorder.saw(str_at(*ready, "/metadata/resourceVersion"), std::chrono::seconds(30)))
      << "the recorder's watch never delivered the Ready version";
  const auto history = recorder.history().at("worker/" + kPod);
  EXPECT_EQ(history.back(), catalog::kMemberReady) << recorder.describe();
  EXPECT_EQ(std::count(history.begin(), history.end(), catalog::kMemberReady), 1)
      << recorder.describe();

  // The probe fails again: the member goes back to creating and the Stack is not Ready, without
  // any setup step; then it recovers.
  mark_ready(false);
  auto unready = wait_unready();
  ASSERT_TRUE(unready) << unready.error();
  EXPECT_EQ(member_field(*unready, "/stateDetail/lastConfiguredContainer"), cid);
  EXPECT_FALSE(events("probed", "NotReady").empty());
  mark_ready(true);
  ready = wait_stack("probed", stack_ready);
  ASSERT_TRUE(ready) << ready.error();
  const auto log = parse_setup_log(read(kPod, kProbedLog));
  EXPECT_EQ(entries_of(log, "--configure").size(), 1u) << describe_log(log);
  EXPECT_EQ(log.size(), 1u) << describe_log(log);
  std::cout << "[ probes ] member states: " << recorder.describe() << "\n";
}

TEST_F(Probes, ANonRootImageIsSetUpThroughKStacksEmptyDirs) {
  create_probed_stack();
  ASSERT_FALSE(wait_configured().is_null());
  // kstack's execs run as the image's user (USER nobody); /etc/kstack and /opt/kstack are
  // emptyDirs it can write, so configmeta, env and the package are that user's.
  EXPECT_EQ(exec(kPod, {"id", "-un"}).stdout_data, "nobody\n");
  EXPECT_EQ(exec(kPod, {"stat", "-c", "%U %a", "/etc/kstack/env", "/etc/kstack/configmeta.json"})
                .stdout_data,
            "nobody 600\nnobody 600\n");
  EXPECT_EQ(exec(kPod, {"stat", "-c", "%U", "/opt/kstack/setup/startscript"}).stdout_data,
            "nobody\n");
  // The image's own /etc is root's (not writable for nobody): only the emptyDir made it work.
  EXPECT_EQ(exec(kPod, {"stat", "-c", "%U %a", "/etc", "/etc/kstack", "/opt/kstack"}).stdout_data,
            "root 755\nroot 777\nroot 777\n");
  EXPECT_NE(exec(kPod, {"touch", "/etc/not-mine"}).exit_code, 0);
  // The startscript ran as nobody and read the env kstack wrote.
  EXPECT_NE(read(kPod, "/opt/kstack/seen-env").find("KSTACK_POD='probed-worker-0'"),
            std::string::npos);
  EXPECT_EQ(exec(kPod, {"stat", "-c", "%U", kProbedLog}).stdout_data, "nobody\n");
  // The entrypoint, waiting for /etc/kstack/env, started the daemon.
  EXPECT_TRUE(exists(kPod, "/tmp/daemon.pid"));
}

TEST_F(Probes, AMemberWhoseDaemonDiesIsRestartedByItsLivenessProbeAndSetUpAgain) {
  create_probed_stack();
  const auto first = wait_configured();
  ASSERT_FALSE(first.is_null());
  mark_ready(true);
  ASSERT_TRUE(wait_stack("probed", stack_ready));
  const auto old_id = member_field(first, "/stateDetail/lastConfiguredContainer");

  // The daemon dies; the container's first process lives on: only the liveness probe sees it.
  const auto killed = std::chrono::steady_clock::now();
  const auto r = exec(kPod, {"sh", "-c", "kill \"$(cat /tmp/daemon.pid)\""});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
  auto restarted = wait_for_object(
      *client_, kPods, ns_, kPod,
      [&](const json::value& p) {
        const auto id = kube::exec_detail::container_id(p, "app");
        return !id.empty() && id != old_id;
      },
      kConvergeTimeout);
  ASSERT_TRUE(restarted) << restarted.error();
  const auto& status = restarted->at_pointer("/status/containerStatuses/0");
  EXPECT_EQ(int_at(status, "/restartCount"), 1);
  EXPECT_EQ(int_at(status, "/lastState/terminated/exitCode"), 137) << "killed by the kubelet";
  const auto new_id = kube::exec_detail::container_id(*restarted, "app");

  // Set up again in the new container (configure rerun: the setup dir is only in the
  // emptyDir); the marker was in the old container's /tmp, so it is not ready yet.
  const auto again = wait_configured(old_id);
  ASSERT_FALSE(again.is_null());
  EXPECT_EQ(member_field(again, "/stateDetail/lastConfiguredContainer"), new_id);
  EXPECT_EQ(member_field(again, "/state"), catalog::kMemberCreating);
  EXPECT_EQ(read(kPod, "/opt/kstack/setup/configure.status"), new_id + "=0\n");
  mark_ready(true);
  auto ready = wait_stack("probed", stack_ready);
  ASSERT_TRUE(ready) << ready.error();
  std::cout << "[ probes ] ready again " << seconds_since(killed)
            << " s after the daemon was killed\n";
  const auto log = parse_setup_log(read(kPod, kProbedLog));
  EXPECT_EQ(entries_of(log, "--configure").size(), 2u) << describe_log(log);
  EXPECT_EQ(exec(kPod, {"/usr/local/bin/kstack-test-probed", "--alive"}).exit_code, 0)
      << "the new container's daemon runs";
}

}  // namespace
}  // namespace kstack::testenv::e2e
