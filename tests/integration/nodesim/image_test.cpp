// Registered images (docs/nodesim.md, "Images"): a container of testdata/image's image runs its
// COPY'd ENTRYPOINT with its CMD, ENV, WORKDIR and USER; `command` and `args` override them as
// in Kubernetes; its probes run; a restart runs the entrypoint again; the user (or
// securityContext's) is the identity of the process and of every exec, and can write to
// emptyDirs but not to root-owned paths.
#include <functional>

#include <boost/json.hpp>
#include <gtest/gtest.h>
#include <tl/expected.hpp>

#include "tests/nodesim/testing/appdef_images.h"
#include "tests/nodesim/testing/e2e.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* kImage = "kstack-test/web:1";

// A pod of the test image pinned to `node`, with an emptyDir at /data; `extra` fields are set
// on its container (command, args, readinessProbe, securityContext...).
json::value image_pod(const std::string& name, const std::string& node, json::object extra = {}) {
  json::object container{
      {"name", "web"},
      {"image", kImage},
      {"volumeMounts", json::array{json::object{{"name", "data"}, {"mountPath", "/data"}}}}};
  for (auto& [k, v] : extra) container[k] = v;
  return json::object{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", json::object{{"name", name}}},
      {"spec", json::object{{"nodeName", node},
                            {"containers", json::array{container}},
                            {"volumes", json::array{json::object{{"name", "data"},
                                                                 {"emptyDir", json::object{}}}}}}}};
}

std::int64_t restarts(const json::value& pod) {
  boost::system::error_code ec;
  const auto* p = pod.find_pointer("/status/containerStatuses/0/restartCount", ec);
  return p != nullptr && p->is_int64() ? p->get_int64() : -1;
}

class Images : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    NodeSimulatorOptions options;
    options.node_name = "image-node";
    options.images = {
        {kImage, appdefs_dir().parent_path() / "tests/integration/nodesim/testdata/image"}};
    auto sim = NodeSimulator::start(control_plane(), options);
    ASSERT_TRUE(sim) << sim.error();
    simulator() = std::move(*sim);
  }
  static void TearDownTestSuite() { simulator().reset(); }
  static std::unique_ptr<NodeSimulator>& simulator() {
    static std::unique_ptr<NodeSimulator> sim;
    return sim;
  }

  tl::expected<json::value, std::string> create_and_wait(
      const json::value& manifest, const std::function<bool(const json::value&)>& done) {
    auto created = client_->create(kube::resources::kPods, ns_, manifest);
    if (!created) return tl::unexpected(created.error().to_string());
    return wait(str_at(manifest, "/metadata/name"), done);
  }
  tl::expected<json::value, std::string> wait(const std::string& name,
                                              const std::function<bool(const json::value&)>& done) {
    return wait_for_object(*client_, kube::resources::kPods, ns_, name, done, 90s);
  }
  CommandResult exec(const std::string& pod, const std::vector<std::string>& argv) {
    return kubectl_exec(control_plane(), ns_, pod, "web", argv);
  }
  std::string node() const { return simulator()->node_name(); }

  std::shared_ptr<kube::Client> client_ = admin();
  std::string ns_ = make_namespace(*client_, "images");
};

// Ready only once the entrypoint's server answers for /ready.html, which the test creates.
json::object readiness_on_ready_html() {
  return json::object{
      {"readinessProbe",
       json::object{{"httpGet", json::object{{"path", "/ready.html"}, {"port", 8080}}},
                    {"periodSeconds", 1},
                    {"failureThreshold", 1}}}};
}

// Ready once the entrypoint serves on `port` (after it recorded its start): tests read what it
// wrote only then.
json::value serving_probe(int port) {
  return json::object{{"httpGet", json::object{{"path", "/index.html"}, {"port", port}}},
                      {"periodSeconds", 1}};
}

TEST_F(Images, TheEntrypointRunsWithItsCmdEnvWorkdirAndUserAndItsProbesRun) {
  auto unready = create_and_wait(
      image_pod("web", node(), readiness_on_ready_html()), [](const json::value& p) {
        return str_at(p, "/status/phase") == "Running" && condition(p, "Ready") == "False";
      });
  ASSERT_TRUE(unready) << unready.error();
  auto started = exec("web", {"cat", "/tmp/started"});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  EXPECT_EQ(started.out,
            "argv: /usr/local/bin/kstack-test-web --port 8080\n"
            "greeting: hello from the image\n"
            "pwd: /srv/web\n"
            "uid: 65534 gid: 65534\n");
  // The httpGet probe reaches the entrypoint's server: Ready once the page exists.
  ASSERT_EQ(exec("web", {"touch", "/tmp/www/ready.html"}).exit_code, 0);
  auto ready = wait("web", running_and_ready);
  ASSERT_TRUE(ready) << ready.error();
  EXPECT_EQ(restarts(*ready), 0);
}

TEST_F(Images, ArgsReplaceTheCmdAndCommandReplacesTheEntrypointAndDropsTheCmd) {
  auto with_args = create_and_wait(image_pod("args", node(),
                                             json::object{{"args", json::array{"--port", "9090"}},
                                                          {"readinessProbe", serving_probe(9090)}}),
                                   running_and_ready);
  ASSERT_TRUE(with_args) << with_args.error();
  auto started = exec("args", {"head", "-n", "1", "/tmp/started"});
  EXPECT_EQ(started.out, "argv: /usr/local/bin/kstack-test-web --port 9090\n") << started.err;

  auto with_command = create_and_wait(
      image_pod("command", node(),
                json::object{
                    {"command", json::array{"sh", "-c",
                                            "echo \"$# $GREETING in $(pwd)\" > "
                                            "/tmp/out; exec sleep infinity"}},
                    {"readinessProbe",
                     json::object{
                         {"exec", json::object{{"command", json::array{"test", "-s", "/tmp/out"}}}},
                         {"periodSeconds", 1}}}}),
      running_and_ready);
  ASSERT_TRUE(with_command) << with_command.error();
  auto out = exec("command", {"cat", "/tmp/out"});
  EXPECT_EQ(out.out, "0 hello from the image in /srv/web\n") << out.err;  // no CMD arguments
  EXPECT_NE(exec("command", {"test", "-e", "/tmp/started"}).exit_code, 0);
}

TEST_F(Images, ARestartRunsTheEntrypointAgainWithTheImagesFilesInPlace) {
  auto ready = create_and_wait(
      image_pod("again", node(), json::object{{"readinessProbe", serving_probe(8080)}}),
      running_and_ready);
  ASSERT_TRUE(ready) << ready.error();
  ASSERT_TRUE(simulator()->restart_pod(ns_, "again"));
  auto restarted =
      wait("again", [](const json::value& p) { return restarts(p) == 1 && running_and_ready(p); });
  ASSERT_TRUE(restarted) << restarted.error();
  // /tmp was wiped by the restart: the new container wrote it again; the emptyDir counts two.
  auto starts = exec("again", {"sh", "-c", "test -s /tmp/started && cat /data/starts"});
  EXPECT_EQ(starts.exit_code, 0) << starts.err;
  EXPECT_EQ(starts.out, "start\nstart\n");
}

TEST_F(Images, TheUserWritesToEmptyDirsButNotRootOwnedPathsAndExecsRunAsIt) {
  auto ready = create_and_wait(image_pod("user", node()), running_and_ready);
  ASSERT_TRUE(ready) << ready.error();
  auto id = exec("user", {"id", "-u"});
  EXPECT_EQ(id.out, "65534\n") << id.err;
  EXPECT_EQ(exec("user", {"touch", "/data/mine"}).exit_code, 0);
  EXPECT_EQ(exec("user", {"touch", "/tmp/mine"}).exit_code, 0);
  EXPECT_NE(exec("user", {"touch", "/etc/mine"}).exit_code, 0);
  EXPECT_NE(exec("user", {"touch", "/usr/local/bin/mine"}).exit_code, 0);
  auto owner = exec("user", {"stat", "-c", "%u", "/data/mine"});
  EXPECT_EQ(owner.out, "65534\n") << owner.err;
}

TEST_F(Images, SecurityContextRunAsUserAndGroupOverrideTheImagesUser) {
  json::value pod = image_pod("override", node(),
                              json::object{{"securityContext", json::object{{"runAsUser", 1234}}},
                                           {"readinessProbe", serving_probe(8080)}});
  pod.as_object()["spec"].as_object()["securityContext"] =
      json::object{{"runAsUser", 999}, {"runAsGroup", 4321}};  // the container's user wins
  auto ready = create_and_wait(pod, running_and_ready);
  ASSERT_TRUE(ready) << ready.error();
  auto started = exec("override", {"tail", "-n", "1", "/tmp/started"});
  EXPECT_EQ(started.out, "uid: 1234 gid: 4321\n") << started.err;
  auto id = exec("override", {"id", "-u"});
  EXPECT_EQ(id.out, "1234\n") << id.err;
}

}  // namespace
}  // namespace kstack::testenv::e2e
