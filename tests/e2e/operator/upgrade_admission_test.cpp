// Live-upgrade admission through the real API server (issue 12): the `kstack operator` process
// with its webhook registered by URL, as in operator_e2e_test.cpp, answers UPDATEs of a running
// Stack sent by an ordinary client — spec.app may move only to an AppType of the same distroID
// that lists the current one in upgradeFrom (the refusal names the allowed ones), and a role
// with members may change anything but its storage. A dry run (dryRun=All) is answered the same.
#include <iostream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "tests/e2e/operator/operator_process.h"
#include "tests/e2e/reconciler/support.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using catalog::resources::kAppTypes;
using catalog::resources::kStacks;

constexpr std::chrono::milliseconds kStopGrace{20'000};
constexpr const char* kDenied = R"(admission webhook "validate.kstack.io" denied the request)";

// tiny-apptype.yaml as `name`, of `distro`, listing `upgrade_from`.
json::value apptype(const std::string& ns, const std::string& name, const std::string& distro,
                    const std::vector<std::string>& upgrade_from) {
  auto app = fixture("tiny-apptype.yaml", ns, name);
  auto& spec = app.at("spec").as_object();
  spec["distroID"] = distro;
  json::array from;
  for (const auto& f : upgrade_from) from.emplace_back(f);
  spec["upgradeFrom"] = std::move(from);
  return app;
}

class UpgradeAdmission : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = admin();
    ns_ = make_namespace(*client_, "upadm");
    auto flags = with_default_lease({});
    flags.webhook_port = free_port();
    ASSERT_TRUE(register_webhook(flags.webhook_port));
    auto op = OperatorProcess::start(flags, "operator-upgrade-admission");
    ASSERT_TRUE(op) << op.error();
    operator_ = std::move(*op);
    auto ready = operator_.wait_ready(90s);
    ASSERT_TRUE(ready) << ready.error();
    auto bundle = wait_ca_bundle(30s);
    ASSERT_TRUE(bundle) << bundle.error();
  }

  void TearDown() override {
    // The webhook configurations go first: nothing may call a webhook that is about to stop.
    auto unregistered = register_webhook(0);
    EXPECT_TRUE(unregistered) << unregistered.error();
    if (operator_.process().running()) {
      auto deleted = delete_stacks(*client_, ns_, 90s);  // the operator removes the finalizer
      EXPECT_TRUE(deleted) << deleted.error();
    }
    if (HasFailure())
      std::cout << "---- " << operator_.log().string() << ":\n" << operator_.log_tail(60);
    operator_.process().stop(kStopGrace);
    (void)client_->remove(kube::resources::kNamespaces, "", ns_);
  }

  void create(const kube::ResourceType& type, const json::value& object) {
    auto r = client_->create(type, ns_, object);
    ASSERT_TRUE(r) << type.kind << " " << str_at(object, "/metadata/name") << ": "
                   << r.error().to_string();
  }

  // A one-member Stack of `app` with a 1Gi volume, set up by the operator: its role runs.
  void create_running_stack(const std::string& name, const std::string& app) {
    auto stack = fixture("tiny-stack.yaml", ns_, name);
    auto& spec = stack.at("spec").as_object();
    spec["app"] = app;
    spec["roles"].as_array().at(0).as_object()["storage"] = json::object{{"size", "1Gi"}};
    ASSERT_NO_FATAL_FAILURE(create(kStacks, stack));
    auto ready = wait_stack_ready(*client_, ns_, name);
    ASSERT_TRUE(ready) << ready.error();
  }

  // A JSON patch of the Stack, as a dry run or for real; the API server's answer.
  kube::Result<json::value> patch(const std::string& stack, const std::string& body, bool dry_run) {
    kube::PatchOptions options;
    options.dry_run = dry_run;
    return client_->patch(kStacks, ns_, stack, kube::PatchType::kJson, body, options);
  }
  kube::Result<json::value> set_app(const std::string& stack, const std::string& app,
                                    bool dry_run) {
    return patch(stack, fmt::format(R"([{{"op":"replace","path":"/spec/app","value":"{}"}}])", app),
                 dry_run);
  }

  std::string spec_app(const std::string& stack) {
    auto s = client_->get(kStacks, ns_, stack);
    EXPECT_TRUE(s) << s.error().to_string();
    return s ? str_at(*s, "/spec/app") : std::string();
  }

  std::shared_ptr<kube::Client> client_;
  std::string ns_;
  OperatorProcess operator_;
};

// The refusal of moving `stack` from `from` to `to`: the webhook's, at spec.app, naming
// `allowed` (and no other of `others`) as where `from` may go.
void expect_app_refused(const kube::Result<json::value>& answer, const std::string& from,
                        const std::string& to, const std::string& allowed,
                        const std::vector<std::string>& others, bool dry_run) {
  const auto what = fmt::format("{} -> {}{}", from, to, dry_run ? " (dry run)" : "");
  ASSERT_FALSE(answer) << what << " was admitted";
  const auto message = answer.error().to_string();
  if (!dry_run) std::cout << "[ admission ] " << message << "\n";
  EXPECT_TRUE(answer.error().is(kube::ErrorKind::kForbidden) ||
              answer.error().is(kube::ErrorKind::kInvalid))
      << what << ": " << message;
  EXPECT_NE(message.find(kDenied), std::string::npos) << what << ": " << message;
  const auto head = fmt::format(R"(spec.app: cannot change from "{}" to "{}")", from, to);
  const auto at = message.find(head);
  ASSERT_NE(at, std::string::npos) << what << ": " << message;
  const auto rest = message.substr(at + head.size());
  EXPECT_NE(rest.find('"' + allowed + '"'), std::string::npos)
      << what << ": the allowed target is not named: " << message;
  for (const auto& o : others) {
    EXPECT_EQ(rest.find('"' + o + '"'), std::string::npos)
        << what << ": " << o << " named as allowed: " << message;
  }
}

TEST_F(UpgradeAdmission, SpecAppMovesOnlyToAnAppTypeOfTheSameDistroThatListsTheCurrentOne) {
  // up-b is the upgrade of up-a; up-c (same distro) does not list it; up-d lists it, but is
  // another distro.
  ASSERT_NO_FATAL_FAILURE(create(kAppTypes, apptype(ns_, "up-a", "e2e-up", {})));
  ASSERT_NO_FATAL_FAILURE(create(kAppTypes, apptype(ns_, "up-b", "e2e-up", {"up-a"})));
  ASSERT_NO_FATAL_FAILURE(create(kAppTypes, apptype(ns_, "up-c", "e2e-up", {})));
  ASSERT_NO_FATAL_FAILURE(create(kAppTypes, apptype(ns_, "up-d", "e2e-other", {"up-a"})));
  ASSERT_NO_FATAL_FAILURE(create_running_stack("moving", "up-a"));

  for (const bool dry_run : {true, false}) {
    expect_app_refused(set_app("moving", "up-c", dry_run), "up-a", "up-c", "up-b", {"up-c", "up-d"},
                       dry_run);
    expect_app_refused(set_app("moving", "up-d", dry_run), "up-a", "up-d", "up-b", {"up-c", "up-d"},
                       dry_run);
  }
  EXPECT_EQ(spec_app("moving"), "up-a");

  // A dry run of the allowed move passes and changes nothing; then the move itself.
  auto dry = set_app("moving", "up-b", true);
  ASSERT_TRUE(dry) << "up-a -> up-b (dry run): " << dry.error().to_string();
  EXPECT_EQ(str_at(*dry, "/spec/app"), "up-b");
  EXPECT_EQ(spec_app("moving"), "up-a");
  auto moved = set_app("moving", "up-b", false);
  ASSERT_TRUE(moved) << "up-a -> up-b: " << moved.error().to_string();
  EXPECT_EQ(spec_app("moving"), "up-b");

  // Nothing lists up-d in its upgradeFrom: a Stack of it cannot move anywhere, and is told so.
  ASSERT_NO_FATAL_FAILURE(create_running_stack("stuck", "up-d"));
  for (const bool dry_run : {true, false}) {
    auto refused = set_app("stuck", "up-a", dry_run);
    ASSERT_FALSE(refused) << "up-d -> up-a was admitted";
    // "no AppType [of distroID "e2e-other"] lists "up-d" in its upgradeFrom"
    const auto message = refused.error().to_string();
    EXPECT_NE(message.find(R"(spec.app: cannot change from "up-d" to "up-a")"), std::string::npos)
        << message;
    EXPECT_NE(message.find("no AppType "), std::string::npos) << message;
    EXPECT_NE(message.find(R"(lists "up-d" in its upgradeFrom)"), std::string::npos) << message;
  }
}

TEST_F(UpgradeAdmission, ARoleWithMembersMayChangeItsResourcesButNotItsStorage) {
  ASSERT_NO_FATAL_FAILURE(create(kAppTypes, apptype(ns_, "sized", "e2e-sized", {})));
  ASSERT_NO_FATAL_FAILURE(create_running_stack("sized", "sized"));

  for (const bool dry_run : {true, false}) {
    auto grown =
        patch("sized", R"([{"op":"replace","path":"/spec/roles/0/storage/size","value":"2Gi"}])",
              dry_run);
    ASSERT_FALSE(grown) << "a storage size change of a running role was admitted"
                        << (dry_run ? " (dry run)" : "");
    const auto message = grown.error().to_string();
    if (!dry_run) std::cout << "[ admission ] " << message << "\n";
    EXPECT_NE(message.find(kDenied), std::string::npos) << message;
    EXPECT_NE(message.find(R"(spec.roles[0].storage: cannot change while role "solo" has members)"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("volumeClaimTemplates"), std::string::npos)
        << "the reason is not given: " << message;
  }

  const std::string resources =
      R"([{"op":"add","path":"/spec/roles/0/resources","value":)"
      R"({"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"memory":"128Mi"}}}])";
  auto dry = patch("sized", resources, true);
  ASSERT_TRUE(dry) << "resources (dry run): " << dry.error().to_string();
  auto changed = patch("sized", resources, false);
  ASSERT_TRUE(changed) << "resources: " << changed.error().to_string();
  EXPECT_EQ(str_at(*changed, "/spec/roles/0/resources/requests/cpu"), "100m");
  EXPECT_EQ(str_at(*changed, "/spec/roles/0/storage/size"), "1Gi");
}

}  // namespace
}  // namespace kstack::testenv::e2e
