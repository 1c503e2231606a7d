// Issue 6 end to end, container restarts (the node simulator's restart: new container ID,
// private directories wiped, emptyDirs and PVC kept): a member is set up again in its new
// container, running --configure a second time (the package stays in the /opt/kstack emptyDir,
// not unpacked again) unless /opt/kstack/setup is one of the role's persistDirs — then the
// earlier container's configure.status (exit 0) counts and --configure is not rerun.
#include <iostream>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "kube/exec.h"
#include "tests/e2e/stack_setup/fixture.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using catalog::resources::kStacks;
using kube::resources::kPods;

class Restart : public StackSetupTest {
 protected:
  // Restarts the member's container and waits until the member is ready in the new one;
  // returns {old container, new container}.
  std::pair<std::string, std::string> restart_and_wait(const std::string& stack,
                                                       const std::string& pod) {
    auto before = wait_quiet(stack);
    EXPECT_TRUE(before) << before.error();
    if (!before) return {};
    const auto old_id =
        str_at(status_members(*before, "worker").at(pod), "/stateDetail/lastConfiguredContainer");
    EXPECT_FALSE(old_id.empty());
    const auto start = std::chrono::steady_clock::now();
    auto restarted = node_simulator().restart_pod(ns_, pod);
    EXPECT_TRUE(restarted) << restarted.error();
    auto running = wait_for_object(
        *client_, kPods, ns_, pod,
        [&](const json::value& p) {
          const auto id = kube::exec_detail::container_id(p, "app");
          return !id.empty() && id != old_id;
        },
        kConvergeTimeout);
    EXPECT_TRUE(running) << running.error();
    if (!running) return {};
    const auto new_id = kube::exec_detail::container_id(*running, "app");
    auto after = wait_stack(stack, [&](const json::value& s) {
      return stack_ready(s) && str_at(status_members(s, "worker").at(pod),
                                      "/stateDetail/lastConfiguredContainer") == new_id;
    });
    EXPECT_TRUE(after) << after.error();
    std::cout << "[ setup ] " << pod << " ready in its new container " << seconds_since(start)
              << " s after the restart\n";
    return {old_id, new_id};
  }
};

TEST_F(Restart, ARestartedContainerIsConfiguredAgainWhenTheSetupDirectoryIsNotPersisted) {
  create_logapp("logapp");
  create(kStacks, logapp_stack(ns_, "rerun", "logapp", 2));
  const auto [old_id, new_id] = restart_and_wait("rerun", "rerun-worker-0");
  ASSERT_FALSE(new_id.empty());
  const auto log = setup_log("rerun-worker-0");
  const auto configures = entries_of(log, "--configure");
  ASSERT_EQ(configures.size(), 2u) << describe_log(log);
  EXPECT_EQ(log.size(), 2u) << describe_log(log);
  EXPECT_LT(configures[0].time, configures[1].time);
  // Set up again: configmeta written again, configure run again for the new container.
  EXPECT_EQ(exec("rerun-worker-0", {"test", "-s", "/etc/kstack/configmeta.json"}).exit_code, 0);
  EXPECT_EQ(read("rerun-worker-0", "/opt/kstack/setup/configure.status"), new_id + "=0\n");
  EXPECT_EQ(setup_log("rerun-worker-1").size(), 1u) << "the other member is left alone";
}

TEST_F(Restart, ARestartedContainerWithAPersistedSetupDirectoryIsNotConfiguredAgain) {
  create_logapp("keeper", {"/data", "/opt/kstack/setup"});
  create(kStacks, logapp_stack(ns_, "keep", "keeper", 2));
  const auto [old_id, new_id] = restart_and_wait("keep", "keep-worker-0");
  ASSERT_FALSE(new_id.empty());
  const auto log = setup_log("keep-worker-0");
  EXPECT_EQ(entries_of(log, "--configure").size(), 1u) << describe_log(log);
  EXPECT_EQ(log.size(), 1u) << describe_log(log);
  // The status of the earlier container is what told kstack; /etc/kstack (not persisted) was
  // written again for the new container.
  EXPECT_EQ(read("keep-worker-0", "/opt/kstack/setup/configure.status"), old_id + "=0\n");
  EXPECT_EQ(exec("keep-worker-0", {"test", "-s", "/etc/kstack/configmeta.json"}).exit_code, 0);
  bool reported = false;
  for (const auto& e : events("keep", "Configured")) {
    const auto note = str_at(e, "/note");
    if (note.find("keep-worker-0") != std::string::npos &&
        note.find("already configured by an earlier container (" + old_id + ")") !=
            std::string::npos) {
      reported = true;
    }
  }
  EXPECT_TRUE(reported) << "a Configured event says configure was not rerun";
}

}  // namespace
}  // namespace kstack::testenv::e2e
