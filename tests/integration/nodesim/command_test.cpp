// Containers run their command and args (with env and workingDir), are restarted by
// restartPolicy with the kubelet's back-off, and report exit codes and restart counts.
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

// A pod pinned to `node` whose container "app" runs `sh -c <script>`, with an emptyDir at
// /state (kept across container restarts, so a script can tell its first run from the next).
json::value script_pod(const std::string& name, const std::string& node, const std::string& script,
                       const std::string& restart_policy = "Always") {
  json::object container{
      {"name", "app"},
      {"image", "busybox"},
      {"command", json::array{"sh", "-c"}},
      {"args", json::array{script}},
      {"env", json::array{json::object{{"name", "GREETING"}, {"value", "hello"}}}},
      {"workingDir", "/srv"},
      {"volumeMounts", json::array{json::object{{"name", "state"}, {"mountPath", "/state"}}}}};
  json::object spec{
      {"nodeName", node},
      {"restartPolicy", restart_policy},
      {"containers", json::array{container}},
      {"volumes", json::array{json::object{{"name", "state"}, {"emptyDir", json::object{}}}}}};
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", json::object{{"name", name}}},
                      {"spec", spec}};
}

std::int64_t int_at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  return p != nullptr && p->is_int64() ? p->get_int64() : -1;
}

inline constexpr char kCommandNode[] = "command-node";

class Commands : public OneNodeSuite<kCommandNode> {
 protected:
  tl::expected<json::value, std::string> create_and_wait(
      const json::value& manifest, const std::function<bool(const json::value&)>& done) {
    auto created = client_->create(kube::resources::kPods, ns_, manifest);
    if (!created) return tl::unexpected(created.error().to_string());
    return wait_for_object(*client_, kube::resources::kPods, ns_,
                           str_at(manifest, "/metadata/name"), done, 90s);
  }
  std::string node() const { return simulator()->node_name(); }

  std::shared_ptr<kube::Client> client_ = admin();
  std::string ns_ = make_namespace(*client_, "command");
};

TEST_F(Commands, TheCommandRunsWithTheContainersEnvironmentAndWorkingDirectory) {
  auto manifest = script_pod("greeter", node(),
                             "echo \"$GREETING from $(pwd) as $HOSTNAME\" > /tmp/out.new; "
                             "mv /tmp/out.new /tmp/out; exec sleep infinity");
  // Ready once the command wrote its file (Running alone raced with the write: an exec right
  // after the pod turned Ready read an empty /tmp/out on a loaded machine).
  manifest.at_pointer("/spec/containers/0").as_object()["readinessProbe"] = json::object{
      {"exec", {{"command", json::array{"test", "-s", "/tmp/out"}}}}, {"periodSeconds", 1}};
  auto pod = create_and_wait(manifest, running_and_ready);
  ASSERT_TRUE(pod) << pod.error();
  // Exec joins the same sandbox: it sees the file the command wrote.
  auto out = kubectl_exec(control_plane(), ns_, "greeter", "app", {"cat", "/tmp/out"});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out, "hello from /srv as greeter\n");
}

TEST_F(Commands, AContainerThatExitsIsRestartedWithItsExitCodeInLastState) {
  auto pod = create_and_wait(
      script_pod("crasher", node(),
                 "if [ -e /state/ran ]; then exec sleep infinity; fi; touch /state/ran; exit 3"),
      [](const json::value& p) {
        return running_and_ready(p) && int_at(p, "/status/containerStatuses/0/restartCount") == 1;
      });
  ASSERT_TRUE(pod) << pod.error();
  EXPECT_EQ(int_at(*pod, "/status/containerStatuses/0/lastState/terminated/exitCode"), 3);
  EXPECT_EQ(str_at(*pod, "/status/containerStatuses/0/lastState/terminated/reason"), "Error");
}

TEST_F(Commands, AContainerThatKeepsFailingWaitsInCrashLoopBackOff) {
  // The first restart is immediate; the second waits 10 s (the kubelet's initial back-off).
  auto pod = create_and_wait(script_pod("looper", node(), "exit 7"), [](const json::value& p) {
    return str_at(p, "/status/containerStatuses/0/state/waiting/reason") == "CrashLoopBackOff" &&
           int_at(p, "/status/containerStatuses/0/restartCount") == 1;
  });
  ASSERT_TRUE(pod) << pod.error();
  EXPECT_EQ(int_at(*pod, "/status/containerStatuses/0/lastState/terminated/exitCode"), 7);
  EXPECT_NE(str_at(*pod, "/status/containerStatuses/0/state/waiting/message").find("back-off 10s"),
            std::string::npos);
  EXPECT_EQ(condition(*pod, "Ready"), "False");
  // Not running: exec is refused, as by a kubelet.
  auto refused = kubectl_exec(control_plane(), ns_, "looper", "app", {"true"});
  EXPECT_NE(refused.exit_code, 0);
}

TEST_F(Commands, WithRestartPolicyNeverTheExitCodeEndsThePod) {
  auto pod =
      create_and_wait(script_pod("once", node(), "exit 4", "Never"),
                      [](const json::value& p) { return str_at(p, "/status/phase") == "Failed"; });
  ASSERT_TRUE(pod) << pod.error();
  EXPECT_EQ(int_at(*pod, "/status/containerStatuses/0/state/terminated/exitCode"), 4);
  EXPECT_EQ(int_at(*pod, "/status/containerStatuses/0/restartCount"), 0);
}

TEST_F(Commands, WithRestartPolicyOnFailureAFailureIsRetriedAndSuccessCompletesThePod) {
  auto pod = create_and_wait(
      script_pod("job", node(), "if [ -e /state/ran ]; then exit 0; fi; touch /state/ran; exit 5",
                 "OnFailure"),
      [](const json::value& p) { return str_at(p, "/status/phase") == "Succeeded"; });
  ASSERT_TRUE(pod) << pod.error();
  EXPECT_EQ(int_at(*pod, "/status/containerStatuses/0/restartCount"), 1);
  EXPECT_EQ(int_at(*pod, "/status/containerStatuses/0/lastState/terminated/exitCode"), 5);
  EXPECT_EQ(int_at(*pod, "/status/containerStatuses/0/state/terminated/exitCode"), 0);
  EXPECT_EQ(str_at(*pod, "/status/containerStatuses/0/state/terminated/reason"), "Completed");
}

}  // namespace
}  // namespace kstack::testenv::e2e
