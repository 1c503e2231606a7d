// Issue 6 end to end, packages and values: a Stack is set up from a package inside the image
// (file://, a file under the host's /usr, which is every simulated container's image), fetched
// over http:// (served by the test) or read from a ConfigMap (configmap://); a wrong sha256 is
// a config_error naming the mismatch, and the startscript never runs. configMeta and Stack env
// values full of shell metacharacters reach the startscript literally.
#include <iostream>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "tests/e2e/setup/package_fixture.h"
#include "tests/e2e/stack_setup/fixture.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using catalog::resources::kAppTypes;
using catalog::resources::kStacks;
using executor::testing::HttpServer;
using executor::testing::sha256_hex;

class Delivery : public StackSetupTest {
 protected:
  void SetUp() override {
    StackSetupTest::SetUp();
    if (HasFatalFailure()) return;
    create_package_configmap("pkg", "setup.tgz", setup_package());
  }
  // One AppType and a one-member Stack, both named `name`, per URL.
  void create_stacks(const std::map<std::string, std::string>& urls,
                     const std::optional<std::string>& sha256) {
    for (const auto& [name, url] : urls) {
      create(kAppTypes, logapp(ns_, name, url, sha256));
      create(kStacks, logapp_stack(ns_, name, name, 1));
    }
  }
};

TEST_F(Delivery, AStackIsSetUpFromAFileInTheImageOverHttpAndFromAConfigMap) {
  ImageFile image("setup.tgz", setup_package());
  HttpServer server({{"/setup.tgz", setup_package()}});
  const std::map<std::string, std::string> urls = {{"from-file", image.url()},
                                                   {"from-http", server.url("/setup.tgz")},
                                                   {"from-configmap", "configmap://pkg/setup.tgz"}};
  const auto start = std::chrono::steady_clock::now();
  create_stacks(urls, sha256_hex(setup_package()));
  for (const auto& [name, url] : urls) {
    SCOPED_TRACE(url);
    auto ready = wait_quiet(name);
    ASSERT_TRUE(ready) << ready.error();
    const auto log = setup_log(name + "-worker-0");
    ASSERT_EQ(log.size(), 1u) << describe_log(log);
    EXPECT_EQ(log[0].event(), "--configure");
    EXPECT_EQ(read(name + "-worker-0", "/opt/kstack/setup/startscript"), startscript());
  }
  std::cout << "[ setup ] file://, http:// and configmap:// Stacks ready in "
            << seconds_since(start) << " s\n";
  EXPECT_GE(server.requests(), 1) << "fetched from the test's server";
}

TEST_F(Delivery, AWrongSha256IsAConfigErrorNamingTheMismatchAndNothingRuns) {
  ImageFile image("setup.tgz", setup_package());
  HttpServer server({{"/setup.tgz", setup_package()}});
  const std::map<std::string, std::string> urls = {{"bad-file", image.url()},
                                                   {"bad-http", server.url("/setup.tgz")},
                                                   {"bad-configmap", "configmap://pkg/setup.tgz"}};
  const std::string wrong = sha256_hex("not the package");
  create_stacks(urls, wrong);
  for (const auto& [name, url] : urls) {
    SCOPED_TRACE(url);
    const std::string pod = name + "-worker-0";
    auto failed = wait_stack(name, [&](const json::value& s) {
      auto members = status_members(s, "worker");
      return members.count(pod) != 0 && str_at(members.at(pod), "/state") == "config_error";
    });
    ASSERT_TRUE(failed) << failed.error();
    const auto detail =
        str_at(status_members(*failed, "worker").at(pod), "/stateDetail/configErrorDetail");
    EXPECT_NE(detail.find(fmt::format("sha256 mismatch for {}: expected {}, got {}", url, wrong,
                                      sha256_hex(setup_package()))),
              std::string::npos)
        << detail;
    const auto degraded = condition_of(*failed, "Degraded");
    EXPECT_EQ(str_at(degraded, "/reason"), "ConfigError");
    EXPECT_NE(str_at(degraded, "/message").find("sha256 mismatch"), std::string::npos);
    EXPECT_FALSE(exists(pod, kSetupLog)) << "the startscript never ran";
    EXPECT_FALSE(exists(pod, "/opt/kstack/setup/startscript")) << "nothing was unpacked";
  }
}

TEST_F(Delivery, ConfigMetaAndStackEnvValuesReachTheStartscriptLiterally) {
  // No `$$` (the kubelet turns it into `$`) and no `$(NAME)` of a defined variable in the env
  // value: Kubernetes itself expands those in container env.
  const std::string motto = "it's $(id) `id`; rm -rf / && echo \"pwned\" | cat >/tmp/x & \\n\n*";
  const std::string note = "$(id); `id` 'single' \"double\" & | > < \\ * ~ # ${HOME}";
  auto app = logapp(ns_, "meta", "configmap://pkg/setup.tgz", sha256_hex(setup_package()));
  app.at("spec").at("config").as_object()["configMeta"] = json::object{{"motto", motto}};
  create(kAppTypes, app);
  create(kStacks, logapp_stack(ns_, "meta", "meta", 1, {{std::string(kStackNoteEnv), note}}));
  auto ready = wait_quiet("meta");
  ASSERT_TRUE(ready) << ready.error();
  const std::string pod = "meta-worker-0";
  EXPECT_EQ(read(pod, "/data/seen-config-motto"), motto) << "via /etc/kstack/env";
  EXPECT_EQ(read(pod, "/data/seen-stack-note"), note) << "via the container's env";
  boost::system::error_code ec;
  const auto meta = json::parse(read(pod, "/data/configmeta.json"), ec);
  ASSERT_FALSE(ec);
  EXPECT_EQ(str_at(meta, "/nodegroups/1/config_metadata/motto"), motto);
  EXPECT_FALSE(exists(pod, "/tmp/x")) << "nothing was executed";
}

}  // namespace
}  // namespace kstack::testenv::e2e
