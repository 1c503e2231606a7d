// The admission webhook end to end: kstack's CRDs in the real kube-apiserver, the webhook
// (informer-backed catalog, rules, HTTPS server, self-managed certificates) registered through
// clientConfig.url on 127.0.0.1 with the caBundle the operator writes, and kubectl and
// clients of different users on the other side.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "catalog/yaml.h"
#include "tests/integration/kube/client_fixture.h"
#include "validator/certs.h"
#include "validator/webhook.h"

#ifndef KSTACK_SOURCE_DIR
#error "KSTACK_SOURCE_DIR must point at the source tree (deploy/crds)"
#endif

namespace kstack::validator {
namespace {

using kube::testing::admin;
using kube::testing::client_for;
using kube::testing::str_at;
namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* kSystemNamespace = "kstack-system";
constexpr const char* kOperator = "alice";  // plays the operator's identity in these tests
constexpr const char* kUser = "bob";        // an ordinary user with RBAC on stacks

const kube::ResourceType kStacks{"kstack.io", "v1beta1", "stacks", "Stack", true};
const kube::ResourceType kAppTypes{"kstack.io", "v1beta1", "apptypes", "AppType", true};
const kube::ResourceType kConfigs{"kstack.io", "v1beta1", "kstackconfigs", "KStackConfig", true};
const kube::ResourceType kValidating{"admissionregistration.k8s.io", "v1",
                                     "validatingwebhookconfigurations",
                                     "ValidatingWebhookConfiguration", false};

const char* kAppType = R"(apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: kv, namespace: shop}
spec:
  label: {name: Key-value store}
  distroID: example/kv
  version: "1.0"
  configSchemaVersion: 1
  defaultImageRepoTag: example/kv:1.0
  services:
  - {id: client, label: {name: Client}, endpoint: {port: 2379, urlScheme: http}}
  roles:
  - {id: server, cardinality: "3+"}
  - {id: proxy, cardinality: "1"}
  config:
    roleServices: [{roleID: server, serviceIDs: [client]}]
    selectedRoles: [server]
)";

void must(const testenv::CommandResult& r, const std::string& what) {
  ASSERT_EQ(r.exit_code, 0) << what << ": " << r.out << r.err;
}

class WebhookE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto& cp = testenv::control_plane();
    must(cp.kubectl({"apply", "-k", std::string(KSTACK_SOURCE_DIR) + "/deploy/crds"}), "CRDs");
    must(cp.kubectl({"wait", "--for=condition=Established", "--timeout=60s", "crd",
                     "apptypes.kstack.io", "stacks.kstack.io", "kstackconfigs.kstack.io"}),
         "CRDs established");
    for (const char* ns : {kSystemNamespace, "shop"}) {
      cp.kubectl({"create", "namespace", ns});
    }
    // Both users may do anything with kstack's kinds as far as RBAC goes: what they may not do
    // is up to the webhook.
    must(cp.kubectl({"create", "clusterrole", "kstack-all", "--verb=*",
                     "--resource=stacks.kstack.io,stacks.kstack.io/status,apptypes.kstack.io"}),
         "clusterrole");
    must(cp.kubectl({"create", "clusterrolebinding", "kstack-all", "--clusterrole=kstack-all",
                     std::string("--user=") + kOperator, std::string("--user=") + kUser}),
         "binding");

    WebhookOptions o;
    o.system_namespace = kSystemNamespace;
    o.operator_username = kOperator;
    o.server.bind_address = "127.0.0.1";
    o.server.port = 0;
    o.extra_sans = {"127.0.0.1"};
    // Counted before the answer is written, so a write the API server has finished is counted.
    o.server.on_request = [](std::string_view endpoint, int, std::chrono::nanoseconds) {
      if (endpoint == "/mutate") ++mutate_calls_;
      if (endpoint == "/validate") ++validate_calls_;
    };
    auto started = start_webhook(admin(), o);
    ASSERT_TRUE(started) << started.error().to_string();
    webhook_ = std::move(*started).release();

    // Register it by URL with an empty caBundle: the operator's CertManager must fill it in.
    WebhookConfigurationOptions wc;
    wc.url_base = "https://127.0.0.1:" + std::to_string(webhook_->port());
    auto c = admin();
    ASSERT_TRUE(c->create(kValidating, "", validating_webhook_configuration(wc)));
    const kube::ResourceType mutating{"admissionregistration.k8s.io", "v1",
                                      "mutatingwebhookconfigurations",
                                      "MutatingWebhookConfiguration", false};
    ASSERT_TRUE(c->create(mutating, "", mutating_webhook_configuration(wc)));
    // Both: the CertManager may have filled one in and still be waiting (5 s) to retry the
    // other, made after its first attempt; a Stack sent meanwhile fails the mutating call.
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    bool filled = false;
    while (!filled && std::chrono::steady_clock::now() < deadline) {
      auto v = c->get(kValidating, "", kDefaultValidatingWebhookConfigurationName);
      auto m = c->get(mutating, "", kDefaultMutatingWebhookConfigurationName);
      filled = v && !str_at(*v, "/webhooks/0/clientConfig/caBundle").empty() && m &&
               !str_at(*m, "/webhooks/0/clientConfig/caBundle").empty();
      if (!filled) std::this_thread::sleep_for(200ms);  // the CertManager retries every 5 s
    }
    ASSERT_TRUE(filled) << "caBundle was not written by the operator into both configurations";
    auto applied = cp.kubectl({"apply", "-f", "-"}, kAppType);
    if (applied.exit_code != 0) {
      // kubectl prints little for some denials; the client shows the whole Status.
      auto yaml = catalog::parse_yaml(kAppType);
      auto direct = admin()->create(kAppTypes, "shop", *yaml);
      FAIL() << "AppType: " << applied.err << " / "
             << (direct ? std::string("created directly") : direct.error().to_string());
    }
  }

  static void TearDownTestSuite() {
    if (webhook_ != nullptr) webhook_->stop();
    delete webhook_;
    webhook_ = nullptr;
  }

  static Webhook* webhook_;
  static std::atomic<std::uint64_t> mutate_calls_;
  static std::atomic<std::uint64_t> validate_calls_;
};

Webhook* WebhookE2E::webhook_ = nullptr;
std::atomic<std::uint64_t> WebhookE2E::mutate_calls_{0};
std::atomic<std::uint64_t> WebhookE2E::validate_calls_{0};

TEST_F(WebhookE2E, AnInvalidStackIsRefusedNamingEveryBadField) {
  auto r = testenv::control_plane().kubectl({"apply", "-f", "-"}, R"(apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: broken, namespace: shop}
spec:
  app: kv
  roles:
  - {id: server, members: 2}
  - {id: ghost, members: 1}
  - {id: proxy, members: 4}
)");
  ASSERT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.err.find("admission webhook"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("spec.roles[0].members"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("spec.roles[1].id"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("spec.roles[2].members"), std::string::npos) << r.err;
  EXPECT_EQ(admin()->get(kStacks, "shop", "broken").error().kind, kube::ErrorKind::kNotFound);
}

TEST_F(WebhookE2E, AValidStackIsAcceptedWithItsDefaultsFilledIn) {
  must(testenv::control_plane().kubectl({"apply", "-f", "-"}, R"(apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: good, namespace: shop}
spec:
  app: kv
  roles:
  - {id: server}
)"),
       "valid stack");
  auto s = admin()->get(kStacks, "shop", "good");
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(str_at(*s, "/spec/appCatalog"), "local");
  EXPECT_EQ(str_at(*s, "/spec/serviceType"), "ClusterIP");
  EXPECT_EQ(str_at(*s, "/spec/namingScheme"), "CrNameRole");
  EXPECT_EQ(s->at_pointer("/spec/roles/0/members").as_int64(), 3);
  // The operator's cleanup finalizer came with the defaults (no controller runs here), and the
  // validating webhook let the user's CREATE carry it.
  EXPECT_EQ(s->at_pointer("/metadata/finalizers"), json::array{"kstack.io/cleanup"});
  // Taking it off again is the operator's alone; dropping it here lets the namespace go.
  auto removal = client_for(kUser)->patch(kStacks, "shop", "good", kube::PatchType::kMerge,
                                          R"({"metadata":{"finalizers":null}})");
  ASSERT_FALSE(removal);
  EXPECT_NE(removal.error().message.find("kstack.io/cleanup"), std::string::npos)
      << removal.error().to_string();
  ASSERT_TRUE(client_for(kOperator)->patch(kStacks, "shop", "good", kube::PatchType::kMerge,
                                           R"({"metadata":{"finalizers":null}})"));
}

TEST_F(WebhookE2E, AnAppTypeInUseCannotBeChangedOrDeletedButReapplyingItPasses) {
  auto& cp = testenv::control_plane();
  must(cp.kubectl({"apply", "-f", "-"}, R"(apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: user-of-kv, namespace: shop}
spec: {app: kv, roles: [{id: server, members: 3}]}
)"),
       "stack using kv");
  must(cp.kubectl({"apply", "-f", "-"}, kAppType), "re-applying the identical AppType");

  std::string changed = kAppType;
  changed.replace(changed.find("version: \"1.0\""), 14, "version: \"2.0\"");
  auto update = cp.kubectl({"apply", "-f", "-"}, changed);
  ASSERT_NE(update.exit_code, 0) << update.out;
  EXPECT_NE(update.err.find("shop/user-of-kv"), std::string::npos) << update.err;

  auto del = cp.kubectl({"delete", "apptype", "kv", "-n", "shop"});
  ASSERT_NE(del.exit_code, 0) << del.out;
  EXPECT_NE(del.err.find("shop/user-of-kv"), std::string::npos) << del.err;
  EXPECT_TRUE(admin()->get(kAppTypes, "shop", "kv"));
}

TEST_F(WebhookE2E, OnlyTheOperatorMayWriteStatusAndTheCleanupFinalizer) {
  auto c = admin();
  auto created = c->create(kStacks, "shop", json::parse(R"({"apiVersion":"kstack.io/v1beta1",
      "kind":"Stack","metadata":{"name":"owned"},"spec":{"app":"kv","roles":[{"id":"server"}]}})"));
  ASSERT_TRUE(created) << created.error().to_string();
  auto op = client_for(kOperator);
  auto user = client_for(kUser);

  auto by_user = user->patch(kStacks, "shop", "owned", kube::PatchType::kMerge,
                             R"({"status":{"state":"ready"}})", {}, "status");
  ASSERT_FALSE(by_user);
  EXPECT_NE(by_user.error().message.find("status"), std::string::npos)
      << by_user.error().to_string();
  auto by_operator = op->patch(kStacks, "shop", "owned", kube::PatchType::kMerge,
                               R"({"status":{"state":"creating"}})", {}, "status");
  ASSERT_TRUE(by_operator) << by_operator.error().to_string();
  EXPECT_EQ(str_at(*by_operator, "/status/state"), "creating");

  ASSERT_TRUE(op->patch(kStacks, "shop", "owned", kube::PatchType::kMerge,
                        R"({"metadata":{"finalizers":["kstack.io/cleanup"]}})"));
  auto removal = user->patch(kStacks, "shop", "owned", kube::PatchType::kMerge,
                             R"({"metadata":{"finalizers":null}})");
  ASSERT_FALSE(removal);
  EXPECT_NE(removal.error().message.find("kstack.io/cleanup"), std::string::npos)
      << removal.error().to_string();
  auto label = user->patch(kStacks, "shop", "owned", kube::PatchType::kMerge,
                           R"({"metadata":{"labels":{"kstack.io/stack":"forged"}}})");
  ASSERT_FALSE(label);
  EXPECT_NE(label.error().message.find("kstack.io/stack"), std::string::npos)
      << label.error().to_string();
  ASSERT_TRUE(op->patch(kStacks, "shop", "owned", kube::PatchType::kMerge,
                        R"({"metadata":{"finalizers":null}})"));
}

// Polls `done` until it holds or `timeout` passes (the webhook's caches follow the API server).
template <class Predicate>
bool eventually(Predicate done, std::chrono::seconds timeout = 60s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(200ms);
  }
  return true;
}

// DELETE on the collection sends one review per item with request.name empty and the item in
// oldObject only; the AppType in use must survive it, dry run or not, and be named.
TEST_F(WebhookE2E, ACollectionDeleteAndItsDryRunLeaveAnAppTypeInUseAndNameIt) {
  auto& cp = testenv::control_plane();
  cp.kubectl({"create", "namespace", "bulk"});
  std::string app = kAppType;
  app.replace(app.find("namespace: shop"), 15, "namespace: bulk");
  must(cp.kubectl({"apply", "-f", "-"}, app), "AppType bulk/kv");
  const std::string stack = R"(apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: user-of-kv, namespace: bulk}
spec: {app: kv, roles: [{id: server, members: 3}]}
)";
  // Admitted once the webhook's cache has the AppType; refused by name once it has the Stack.
  ASSERT_TRUE(eventually([&] { return cp.kubectl({"apply", "-f", "-"}, stack).exit_code == 0; }));
  ASSERT_TRUE(eventually([&] {
    return cp.kubectl({"delete", "apptype", "kv", "-n", "bulk", "--dry-run=server"}).exit_code != 0;
  }));

  auto c = admin();
  for (std::string query : {"?dryRun=All", ""}) {
    auto r = c->raw("DELETE", "/apis/kstack.io/v1beta1/namespaces/bulk/apptypes" + query);
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_NE(r->status, 200) << query << ": " << r->body;
    EXPECT_NE(
        r->body.find("AppType bulk/kv cannot be deleted while used by 1 stack (bulk/user-of-kv)"),
        std::string::npos)
        << query << ": " << r->body;
    auto kept = c->get(kAppTypes, "bulk", "kv");
    EXPECT_TRUE(kept) << query << ": " << kept.error().to_string();
  }
}

// The calls each webhook endpoint answered while `write` ran (nothing else writes kstack's kinds
// in this binary, and the API server calls its webhooks before the write returns).
struct Calls {
  std::uint64_t mutate = 0;
  std::uint64_t validate = 0;
};

TEST_F(WebhookE2E, StatusWritesAppTypesAndTheConfigSkipTheMutatingWebhookWhileStacksAreDefaulted) {
  auto during = [](auto write) {
    const std::uint64_t m = mutate_calls_, v = validate_calls_;
    write();
    return Calls{mutate_calls_ - m, validate_calls_ - v};
  };
  auto c = admin();
  kube::Result<json::value> stack = kube::make_error(kube::ErrorKind::kInternal, "not created");
  Calls calls = during([&] {
    stack = c->create(kStacks, "shop", json::parse(R"({"apiVersion":"kstack.io/v1beta1",
        "kind":"Stack","metadata":{"name":"counted"},"spec":{"app":"kv","roles":[{"id":"server"}]}})"));
  });
  ASSERT_TRUE(stack) << stack.error().to_string();
  EXPECT_EQ(str_at(*stack, "/spec/serviceType"), "ClusterIP");
  EXPECT_GE(calls.mutate, 1u) << "a Stack CREATE is defaulted through /mutate";

  // The operator's status writes, as it makes them: PUT and merge patch of stacks/status.
  auto op = client_for(kOperator);
  json::value with_status = *stack;
  with_status.as_object()["status"] = json::object{{"state", "creating"}};
  calls = during([&] {
    auto put = op->update_status(kStacks, "shop", with_status);
    ASSERT_TRUE(put) << put.error().to_string();
    auto patched = op->patch(kStacks, "shop", "counted", kube::PatchType::kMerge,
                             R"({"status":{"state":"ready"}})", {}, "status");
    ASSERT_TRUE(patched) << patched.error().to_string();
  });
  EXPECT_EQ(calls.mutate, 0u) << "stacks/status went through /mutate";
  EXPECT_GE(calls.validate, 2u) << "stacks/status is still checked by /validate";

  auto app = catalog::parse_yaml(kAppType);
  ASSERT_TRUE(app);
  app->at_pointer("/metadata/name") = "kv-counted";
  calls = during([&] {
    auto created = c->create(kAppTypes, "shop", *app);
    ASSERT_TRUE(created) << created.error().to_string();
  });
  EXPECT_EQ(calls.mutate, 0u) << "an AppType CREATE went through /mutate";
  EXPECT_GE(calls.validate, 1u);

  calls = during([&] {
    auto created = c->create(kConfigs, kSystemNamespace, json::parse(R"({
        "apiVersion":"kstack.io/v1beta1","kind":"KStackConfig",
        "metadata":{"name":"kstack-config"},"spec":{}})"));
    ASSERT_TRUE(created) << created.error().to_string();
  });
  EXPECT_EQ(calls.mutate, 0u) << "a KStackConfig CREATE went through /mutate";
  EXPECT_GE(calls.validate, 1u);
  ASSERT_TRUE(c->remove(kConfigs, kSystemNamespace, "kstack-config"));
}

TEST_F(WebhookE2E, TheWebhookIsReadyAndCountsWhatItAnswered) {
  EXPECT_TRUE(webhook_->ready());
  EXPECT_GT(webhook_->stats().requests, 0u);
}

}  // namespace
}  // namespace kstack::validator
