// Pod spec to sandbox config: hostname/FQDN, environment, mounts with subPath.
#include "tests/nodesim/pod_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>
#include <stdlib.h>

namespace kstack::nodesim {
namespace {

namespace json = boost::json;

const json::value kPod = json::parse(R"json({
  "metadata": {"name": "web-0", "namespace": "shop", "uid": "u-1"},
  "spec": {
    "nodeName": "n1", "hostname": "web-0", "subdomain": "web",
    "containers": [{
      "name": "app", "image": "busybox", "workingDir": "/opt/app",
      "env": [
        {"name": "GREETING", "value": "hello"},
        {"name": "MESSAGE", "value": "$(GREETING) world $$(GREETING) $(UNKNOWN)"},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        {"name": "PATH", "value": "/custom/bin"}
      ],
      "volumeMounts": [
        {"name": "data", "mountPath": "/data"},
        {"name": "data", "mountPath": "/var/lib/app", "subPath": "lib", "readOnly": true},
        {"name": "missing", "mountPath": "/nowhere"}
      ]
    }],
    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}}]
  }
})json");

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

TEST(PodConfig, BuildsHostnameEnvironmentAndMounts) {
  std::vector<std::string> notes;
  auto config = build_pod_config(
      kPod,
      [](const json::value&) {
        return ResolvedVolume{"/state/volumes/pvc-1", false};
      },
      notes);
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->hostname, "web-0");
  EXPECT_EQ(config->fqdn, "web-0.web.shop.svc.cluster.local");
  ASSERT_EQ(config->containers.size(), 1u);
  const auto& c = config->containers[0];
  EXPECT_EQ(c.working_dir, "/opt/app");
  EXPECT_TRUE(has(c.env, "GREETING=hello"));
  EXPECT_TRUE(has(c.env, "MESSAGE=hello world $(GREETING) $(UNKNOWN)"));
  EXPECT_TRUE(has(c.env, "POD_NAME=web-0"));
  EXPECT_TRUE(has(c.env, "PATH=/custom/bin"));
  EXPECT_TRUE(has(c.env, "HOSTNAME=web-0"));
  EXPECT_FALSE(std::any_of(c.env.begin(), c.env.end(),
                           [](const std::string& e) { return e.rfind("SECRET=", 0) == 0; }));
  ASSERT_EQ(c.mounts.size(), 2u);
  EXPECT_EQ(c.mounts[0].source, "/state/volumes/pvc-1");
  EXPECT_EQ(c.mounts[0].target, "/data");
  EXPECT_FALSE(c.mounts[0].read_only);
  EXPECT_EQ(c.mounts[1].source, "/state/volumes/pvc-1/lib");
  EXPECT_TRUE(c.mounts[1].read_only);
  EXPECT_GE(notes.size(), 2u);  // the secret env var and the mount of an unknown volume
}

TEST(PodConfig, AVolumeNotReadyKeepsThePodWaiting) {
  std::vector<std::string> notes;
  auto config = build_pod_config(
      kPod,
      [](const json::value&) -> tl::expected<ResolvedVolume, std::string> {
        return tl::unexpected(
            std::string("waiting for PersistentVolumeClaim \"data-web-0\" to be bound"));
      },
      notes);
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("data-web-0"), std::string::npos);
}

TEST(PodConfig, RefusesEscapingSubPaths) {
  json::value pod = kPod;
  pod.at("spec").at("containers").at(0).at("volumeMounts").at(1).as_object()["subPath"] = "../x";
  std::vector<std::string> notes;
  auto config = build_pod_config(
      pod,
      [](const json::value&) {
        return ResolvedVolume{"/v", false};
      },
      notes);
  EXPECT_FALSE(config);
}

TEST(PodConfig, CommandAndArgsRunWithVariablesExpandedAndTheRestartPolicy) {
  auto pod = json::parse(R"json({
    "metadata": {"name": "job", "namespace": "ns", "uid": "u-2"},
    "spec": {"restartPolicy": "OnFailure", "containers": [{
      "name": "app", "image": "busybox",
      "command": ["sh", "-c"], "args": ["echo $(GREETING) $$(GREETING) $(UNKNOWN)", "x; rm -rf /"],
      "env": [{"name": "GREETING", "value": "hello"}]
    }, {"name": "idle", "image": "busybox", "args": ["--serve"]}]}
  })json");
  std::vector<std::string> notes;
  auto config = build_pod_config(
      pod, [](const json::value&) { return ResolvedVolume{}; }, notes);
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->restart_policy, "OnFailure");
  // Expanded as the kubelet does, and each argument stays one argument (no shell splitting).
  EXPECT_EQ(
      config->containers[0].command,
      (std::vector<std::string>{"sh", "-c", "echo hello $(GREETING) $(UNKNOWN)", "x; rm -rf /"}));
  // args alone would go to the image's entrypoint, which is unknown: the container idles.
  EXPECT_TRUE(config->containers[1].command.empty());
  EXPECT_EQ(notes.size(), 1u);
}

TEST(PodConfig, RestartPolicyDefaultsToAlways) {
  std::vector<std::string> notes;
  auto config = build_pod_config(
      kPod, [](const json::value&) { return ResolvedVolume{}; }, notes);
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->restart_policy, "Always");
  EXPECT_TRUE(config->containers[0].command.empty());
}

TEST(PodConfig, ARegisteredImageGivesItsProcessEnvironmentWorkdirAndUser) {
  char tmpl[] = "/tmp/nodesim-podconfig-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::filesystem::path etc = tmpl;
  std::ofstream(etc / "passwd") << "root:x:0:0:root:/root:/bin/sh\n"
                                   "app:x:1001:1002::/home/app:/bin/sh\n"
                                   "other:x:2001:2002::/home/other:/bin/sh\n";
  std::ofstream(etc / "group") << "root:x:0:\napp:x:1002:\n";
  Image image;
  image.ref = "kstack/app:1";
  image.entrypoint = {"/entry.sh"};
  image.cmd = {"--default"};
  image.env = {{"PATH", "/opt/app/bin:/usr/bin"}, {"MODE", "image"}};
  image.working_dir = "/srv/app";
  image.user = "app";
  ImageSet images;
  images.add(image);
  const json::value pod = json::parse(R"json({
    "metadata": {"name": "a-0", "namespace": "ns", "uid": "u"},
    "spec": {"securityContext": {"runAsUser": 2001},
      "containers": [
        {"name": "plain", "image": "kstack/app:1",
         "env": [{"name": "MODE", "value": "pod $(MODE)"}]},
        {"name": "args", "image": "docker.io/kstack/app:1", "args": ["--port", "$(PORT)"],
         "env": [{"name": "PORT", "value": "80"}],
         "securityContext": {"runAsUser": 4242, "runAsGroup": 7}},
        {"name": "command", "image": "kstack/app:1", "command": ["sh"], "workingDir": "/w"},
        {"name": "other", "image": "busybox"}]}
  })json");
  std::vector<std::string> notes;
  auto config = build_pod_config(pod, [](const json::value&) { return ResolvedVolume{}; }, notes,
                                 {&images, etc});
  ASSERT_TRUE(config) << config.error();
  const auto& c = config->containers;
  EXPECT_EQ(c[0].command, (std::vector<std::string>{"/entry.sh", "--default"}));
  EXPECT_TRUE(has(c[0].env, "PATH=/opt/app/bin:/usr/bin"));
  EXPECT_TRUE(has(c[0].env, "MODE=pod image"));  // the pod's env after the image's
  EXPECT_EQ(c[0].working_dir, "/srv/app");
  ASSERT_TRUE(c[0].user);
  EXPECT_EQ(c[0].user->uid, 2001u);  // the pod's runAsUser over USER, with that uid's group
  EXPECT_EQ(c[0].user->gid, 2002u);
  EXPECT_TRUE(has(c[0].env, "HOME=/home/other"));
  EXPECT_EQ(c[1].command, (std::vector<std::string>{"/entry.sh", "--port", "80"}));
  EXPECT_EQ(c[1].user->uid, 4242u);  // the container's securityContext over the pod's
  EXPECT_EQ(c[1].user->gid, 7u);
  EXPECT_EQ(c[2].command, std::vector<std::string>{"sh"});  // CMD dropped
  EXPECT_EQ(c[2].working_dir, "/w");
  EXPECT_FALSE(c[3].image_def);  // not registered: as before images
  EXPECT_FALSE(c[3].user);
  EXPECT_TRUE(c[3].command.empty());

  Image ghost = image;
  ghost.ref = "kstack/ghost:1";
  ghost.user = "ghost";
  images.add(ghost);
  const json::value ghost_pod = json::parse(R"json({
    "metadata": {"name": "g", "namespace": "ns", "uid": "u2"},
    "spec": {"containers": [{"name": "main", "image": "kstack/ghost:1"}]}})json");
  auto refused = build_pod_config(ghost_pod, [](const json::value&) { return ResolvedVolume{}; },
                                  notes, {&images, etc});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(),
            "container main: USER ghost: unable to find user ghost: no matching entries in passwd "
            "file");
  std::filesystem::remove_all(etc);
}

}  // namespace
}  // namespace kstack::nodesim
