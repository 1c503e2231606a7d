// The test control plane itself: users and RBAC, parallel control planes, apiserver restart,
// etcd compaction. Uses only kubectl/curl (not kstack's client, which it is there to test).
#include "tests/testenv/control_plane.h"

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/testenv/environment.h"

namespace kstack::testenv {
namespace {

using namespace std::chrono_literals;

// Polls `condition` until it holds or `timeout` passes (RBAC changes reach the authorizer
// through an informer, so they take effect shortly after the write returns).
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 15s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(100ms);
  }
  return true;
}

TEST(ControlPlane, AdminCanListNamespaces) {
  auto r = control_plane().kubectl({"get", "namespaces", "-o", "name"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("namespace/default"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("namespace/kube-system"), std::string::npos) << r.out;
}

TEST(ControlPlane, ServerIsLoopbackHttpsAndReady) {
  auto& cp = control_plane();
  EXPECT_EQ(cp.server().rfind("https://127.0.0.1:", 0), 0u) << cp.server();
  EXPECT_EQ(cp.etcd_endpoint().rfind("http://127.0.0.1:", 0), 0u) << cp.etcd_endpoint();
  EXPECT_EQ(cp.ca_pem().rfind("-----BEGIN CERTIFICATE-----", 0), 0u);
  auto [code, body] = cp.get("/readyz");
  EXPECT_EQ(code, 200);
  EXPECT_EQ(body, "ok");
  auto version = cp.kubectl({"version", "-o", "json"});
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_NE(version.out.find("\"gitVersion\": \"v1.20.2\""), std::string::npos) << version.out;
}

TEST(ControlPlane, ControllerManagerHasCreatedTheDefaultServiceAccount) {
  auto r = control_plane().kubectl({"get", "serviceaccount", "default", "-n", "default", "-o",
                                    "jsonpath={.metadata.name} {.secrets[0].name}"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("default default-token-", 0), 0u) << r.out;
}

TEST(ControlPlane, AliceIsAuthenticatedButForbiddenToListPods) {
  auto r = control_plane().kubectl_as(kAlice, {"get", "pods", "-n", "default"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("Forbidden"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("User \"alice\" cannot list resource \"pods\""), std::string::npos) << r.err;
}

TEST(ControlPlane, AWrongTokenIsUnauthorized) {
  auto r = control_plane().kubectl({"--token=not-a-valid-token", "get", "pods", "-n", "default"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("Unauthorized"), std::string::npos) << r.err;
}

TEST(ControlPlane, BobGetsWhatHisGroupIsGranted) {
  auto& cp = control_plane();
  auto bind = cp.kubectl({"create", "rolebinding", "testers-view", "-n", "default",
                          "--clusterrole=view", std::string("--group=") + kTestersGroup});
  ASSERT_EQ(bind.exit_code, 0) << bind.err;
  EXPECT_TRUE(eventually([&] {
    return cp.kubectl_as(kBob, {"get", "pods", "-n", "default"}).ok();
  }));
  auto alice = cp.kubectl_as(kAlice, {"get", "pods", "-n", "default"});
  EXPECT_NE(alice.exit_code, 0) << "alice is not in " << kTestersGroup;
  EXPECT_EQ(cp.kubectl({"delete", "rolebinding", "testers-view", "-n", "default"}).exit_code, 0);
}

TEST(ControlPlane, TokensAndKubeconfigsExistForEveryUser) {
  auto& cp = control_plane();
  EXPECT_EQ(cp.token(kAdminUser), cp.admin_token());
  EXPECT_NE(cp.token(kAlice), cp.token(kBob));
  EXPECT_THROW(cp.token("mallory"), std::out_of_range);
  EXPECT_TRUE(std::filesystem::exists(cp.kubeconfig()));
  EXPECT_TRUE(std::filesystem::exists(cp.kubeconfig_for(kBob)));
  EXPECT_TRUE(std::filesystem::exists(cp.ca_file()));
}

TEST(ControlPlane, ASecondControlPlaneRunsAlongsideOnOtherPorts) {
  auto& first = control_plane();
  auto started = ControlPlane::start({});
  ASSERT_TRUE(started) << started.error();
  auto& second = **started;
  EXPECT_NE(second.server(), first.server());
  EXPECT_NE(second.etcd_endpoint(), first.etcd_endpoint());
  EXPECT_NE(second.work_dir(), first.work_dir());
  EXPECT_NE(second.ca_pem(), first.ca_pem());

  second.kubectl({"create", "namespace", "only-in-second"});
  EXPECT_EQ(second.kubectl({"get", "namespace", "only-in-second"}).exit_code, 0);
  EXPECT_NE(first.kubectl({"get", "namespace", "only-in-second"}).exit_code, 0);
  EXPECT_EQ(first.kubectl({"get", "namespaces"}).exit_code, 0);

  auto work_dir = second.work_dir();
  second.stop();
  EXPECT_FALSE(std::filesystem::exists(work_dir));
  EXPECT_EQ(first.kubectl({"get", "namespaces"}).exit_code, 0);
}

TEST(ControlPlane, ApiserverRestartsOnTheSamePortWithItsData) {
  auto& cp = control_plane();
  auto create = cp.kubectl(
      {"create", "configmap", "survives-restart", "-n", "default", "--from-literal=key=value"});
  ASSERT_EQ(create.exit_code, 0) << create.err;
  auto server = cp.server();
  pid_t before = cp.apiserver_pid();
  ASSERT_GT(before, 0);

  cp.kill_apiserver();
  EXPECT_EQ(cp.apiserver_pid(), 0);
  EXPECT_NE(cp.kubectl({"get", "namespaces"}).exit_code, 0);

  auto restarted = cp.start_apiserver();
  ASSERT_TRUE(restarted) << restarted.error();
  EXPECT_GT(cp.apiserver_pid(), 0);
  EXPECT_NE(cp.apiserver_pid(), before);
  EXPECT_EQ(cp.server(), server);
  auto r = cp.kubectl(
      {"get", "configmap", "survives-restart", "-n", "default", "-o", "jsonpath={.data.key}"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "value");
  EXPECT_FALSE(cp.start_apiserver()) << "a second apiserver on the same port must be refused";
  cp.kubectl({"delete", "configmap", "survives-restart", "-n", "default"});
}

TEST(ControlPlane, CompactingEtcdExpiresOldResourceVersions) {
  auto& cp = control_plane();
  auto create = cp.kubectl({"create", "configmap", "before-compaction", "-n", "default"});
  ASSERT_EQ(create.exit_code, 0) << create.err;
  auto rv = cp.kubectl({"get", "configmap", "before-compaction", "-n", "default", "-o",
                        "jsonpath={.metadata.resourceVersion}"});
  ASSERT_EQ(rv.exit_code, 0) << rv.err;
  cp.kubectl({"delete", "configmap", "before-compaction", "-n", "default"});

  auto revision = cp.compact_etcd();
  ASSERT_TRUE(revision) << revision.error();
  EXPECT_GT(*revision, std::stoll(rv.out));
  auto again = cp.compact_etcd();  // nothing new written: compacted already, still fine
  ASSERT_TRUE(again) << again.error();

  auto [code, body] = cp.get(
      "/api/v1/namespaces/default/configmaps?resourceVersionMatch=Exact"
      "&resourceVersion=" +
      rv.out);
  EXPECT_EQ(code, 410) << body;
}

}  // namespace
}  // namespace kstack::testenv
