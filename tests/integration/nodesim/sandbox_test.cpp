// Per-pod sandboxes: private /etc/kstack, /opt and /tmp; a container restart wipes them but
// keeps claim data; a failed container fails the pod.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "tests/integration/nodesim/one_node_suite.h"
#include "tests/nodesim/testing/e2e.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

json::value pod(const std::string& name, const std::string& claim = {}) {
  json::object container{{"name", "app"}, {"image", "busybox"}};
  json::object spec{{"containers", json::array{container}}};
  if (!claim.empty()) {
    container["volumeMounts"] = json::array{json::object{{"name", "data"}, {"mountPath", "/data"}}};
    spec["containers"] = json::array{container};
    spec["volumes"] = json::array{json::object{
        {"name", "data"}, {"persistentVolumeClaim", json::object{{"claimName", claim}}}}};
  }
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", json::object{{"name", name}}},
                      {"spec", spec}};
}

inline constexpr char kSandboxNode[] = "sandbox-node";

class Sandboxes : public OneNodeSuite<kSandboxNode> {
 protected:
  json::value run(const std::string& ns, const json::value& manifest) {
    auto created = client_->create(kube::resources::kPods, ns, manifest);
    EXPECT_TRUE(created) << created.error().to_string();
    auto name = str_at(manifest, "/metadata/name");
    auto ready =
        wait_for_object(*client_, kube::resources::kPods, ns, name, running_and_ready, 120s);
    EXPECT_TRUE(ready) << ready.error();
    return ready ? *ready : json::value();
  }
  CommandResult exec(const std::string& ns, const std::string& pod, const std::string& script) {
    return kubectl_exec(control_plane(), ns, pod, "app", {"sh", "-c", script});
  }

  std::shared_ptr<kube::Client> client_ = admin();
};

TEST_F(Sandboxes, FilesUnderEtcKstackAreNotVisibleInAnotherPod) {
  const std::string ns = make_namespace(*client_, "private");
  run(ns, pod("a"));
  run(ns, pod("b"));
  auto write = exec(ns, "a",
                    "mkdir -p /etc/kstack /opt/kstack && echo a > /etc/kstack/configmeta.json && "
                    "echo a > /opt/kstack/setup && echo a > /tmp/scratch");
  ASSERT_EQ(write.exit_code, 0) << write.err;
  auto in_b = exec(ns, "b", "ls /etc/kstack/configmeta.json /opt/kstack/setup /tmp/scratch");
  EXPECT_NE(in_b.exit_code, 0) << "pod b sees pod a's files: " << in_b.out;
  auto in_a = exec(ns, "a", "cat /etc/kstack/configmeta.json /opt/kstack/setup /tmp/scratch");
  EXPECT_EQ(in_a.out, "a\na\na\n") << in_a.err;
  auto identity = exec(ns, "b", "hostname; test -x /bin/sh && test -r /etc/passwd && echo host-ok");
  EXPECT_EQ(identity.out, "b\nhost-ok\n") << identity.err;
}

TEST_F(Sandboxes, RestartKeepsClaimDataAndWipesEverythingElse) {
  const std::string ns = make_namespace(*client_, "restart");
  json::value claim = json::parse(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim",
      "metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],
      "resources":{"requests":{"storage":"1Gi"}}}})");
  ASSERT_TRUE(client_->create(kube::resources::kPersistentVolumeClaims, ns, claim));
  auto before = run(ns, pod("db", "data"));
  const std::string old_id = str_at(before, "/status/containerStatuses/0/containerID");
  auto write = exec(ns, "db",
                    "echo keep > /data/keep && mkdir -p /etc/kstack && echo gone > "
                    "/etc/kstack/gone && echo gone > /tmp/gone");
  ASSERT_EQ(write.exit_code, 0) << write.err;

  auto restarted = simulator()->restart_pod(ns, "db");
  ASSERT_TRUE(restarted) << restarted.error();
  auto answer = json::parse(*restarted);
  const std::string new_id(answer.at("containers").at(0).at("containerID").as_string());
  EXPECT_NE(new_id, old_id);
  auto after = wait_for_object(
      *client_, kube::resources::kPods, ns, "db",
      [&](const json::value& p) {
        boost::system::error_code ec;
        const auto* count = p.find_pointer("/status/containerStatuses/0/restartCount", ec);
        return str_at(p, "/status/containerStatuses/0/containerID") == new_id && count != nullptr &&
               *count == 1 && running_and_ready(p);
      },
      60s);
  ASSERT_TRUE(after) << after.error();
  EXPECT_EQ(str_at(*after, "/status/containerStatuses/0/lastState/terminated/containerID"), old_id);

  auto check = exec(ns, "db", "cat /data/keep; ls /etc/kstack/gone /tmp/gone 2>/dev/null; true");
  EXPECT_EQ(check.out, "keep\n") << check.err;
}

TEST_F(Sandboxes, FailedContainerFailsThePod) {
  const std::string ns = make_namespace(*client_, "fail");
  run(ns, pod("job"));
  auto failed = simulator()->fail_pod(ns, "job", 42);
  ASSERT_TRUE(failed) << failed.error();
  auto after = wait_for_object(
      *client_, kube::resources::kPods, ns, "job",
      [](const json::value& p) { return str_at(p, "/status/phase") == "Failed"; }, 60s);
  ASSERT_TRUE(after) << after.error();
  boost::system::error_code ec;
  const auto* code =
      after->find_pointer("/status/containerStatuses/0/state/terminated/exitCode", ec);
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(*code, 42);
  EXPECT_EQ(condition(*after, "Ready"), "False");
  auto refused = exec(ns, "job", "true");
  EXPECT_NE(refused.exit_code, 0);
}

}  // namespace
}  // namespace kstack::testenv::e2e
