// kstack's webhook configurations (validator/webhook_configuration.cpp). Pure: no cluster (the
// cert manager tests create them on the real API server).
#include <fstream>
#include <sstream>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/yaml.h"
#include "validator/certs.h"

#ifndef KSTACK_SOURCE_DIR
#error "KSTACK_SOURCE_DIR must point at the source tree (deploy/webhook.yaml)"
#endif

namespace kstack::validator {
namespace {

namespace json = boost::json;

const json::value& at(const json::value& v, std::string_view pointer) {
  return v.at_pointer(pointer);
}

TEST(WebhookConfiguration, ValidatingConfigurationCoversKstackKindsOnlyWithExplicitPolicies) {
  WebhookConfigurationOptions o;
  o.service_namespace = "kstack-system";
  const json::value v = validating_webhook_configuration(o);
  EXPECT_EQ(at(v, "/apiVersion"), "admissionregistration.k8s.io/v1");
  EXPECT_EQ(at(v, "/kind"), "ValidatingWebhookConfiguration");
  EXPECT_EQ(at(v, "/metadata/name"), kDefaultValidatingWebhookConfigurationName);
  ASSERT_EQ(at(v, "/webhooks").as_array().size(), 1u);
  const json::value& hook = at(v, "/webhooks/0");
  EXPECT_EQ(at(hook, "/name"), "validate.kstack.io");
  EXPECT_EQ(at(hook, "/failurePolicy"), "Fail");
  EXPECT_EQ(at(hook, "/sideEffects"), "None");
  EXPECT_EQ(at(hook, "/matchPolicy"), "Equivalent");
  EXPECT_EQ(at(hook, "/timeoutSeconds"), 10);
  EXPECT_EQ(at(hook, "/admissionReviewVersions"), (json::array{"v1", "v1beta1"}));
  EXPECT_EQ(at(hook, "/rules"),
            json::parse(R"([{"apiGroups":["kstack.io"],"apiVersions":["v1beta1"],
                             "operations":["CREATE","UPDATE","DELETE"],
                             "resources":["apptypes","stacks","stacks/status","kstackconfigs"],
                             "scope":"*"}])"));
  EXPECT_EQ(at(hook, "/clientConfig"),
            json::parse(R"({"service":{"namespace":"kstack-system","name":"kstack-webhook",
                                       "path":"/validate","port":9443}})"));
}

TEST(WebhookConfiguration, MutatingConfigurationNamesOnlyStacksOnCreateAndUpdate) {
  WebhookConfigurationOptions o;
  o.service_namespace = "ops";
  o.service_name = "hook";
  o.service_port = 8443;
  const json::value v = mutating_webhook_configuration(o);
  EXPECT_EQ(at(v, "/kind"), "MutatingWebhookConfiguration");
  EXPECT_EQ(at(v, "/metadata/name"), kDefaultMutatingWebhookConfigurationName);
  const json::value& hook = at(v, "/webhooks/0");
  EXPECT_EQ(at(hook, "/name"), "mutate.kstack.io");
  // Only what the defaulting touches: no stacks/status (the operator's status writes), no
  // AppTypes, no KStackConfigs.
  EXPECT_EQ(at(hook, "/rules"),
            json::parse(R"([{"apiGroups":["kstack.io"],"apiVersions":["v1beta1"],
                             "operations":["CREATE","UPDATE"],"resources":["stacks"],
                             "scope":"*"}])"));
  EXPECT_EQ(at(hook, "/clientConfig/service/path"), "/mutate");
  EXPECT_EQ(at(hook, "/clientConfig/service/name"), "hook");
  EXPECT_EQ(at(hook, "/clientConfig/service/port"), 8443);
  EXPECT_EQ(at(hook, "/reinvocationPolicy"), "Never");
}

TEST(WebhookConfiguration, UrlClientConfigAndCaBundleForLocalRuns) {
  WebhookConfigurationOptions o;
  o.validating_name = "v";
  o.mutating_name = "m";
  o.url_base = "https://127.0.0.1:12345";
  o.ca_bundle_pem = "-----BEGIN CERTIFICATE-----\n";
  o.failure_policy = "Ignore";
  const json::value v = validating_webhook_configuration(o);
  const json::value m = mutating_webhook_configuration(o);
  EXPECT_EQ(at(v, "/metadata/name"), "v");
  EXPECT_EQ(at(m, "/metadata/name"), "m");
  EXPECT_EQ(at(v, "/webhooks/0/clientConfig/url"), "https://127.0.0.1:12345/validate");
  EXPECT_EQ(at(m, "/webhooks/0/clientConfig/url"), "https://127.0.0.1:12345/mutate");
  EXPECT_FALSE(at(v, "/webhooks/0/clientConfig").as_object().contains("service"));
  EXPECT_EQ(at(v, "/webhooks/0/clientConfig/caBundle"),
            json::value(base64_encode(o.ca_bundle_pem)));
  EXPECT_EQ(at(m, "/webhooks/0/failurePolicy"), "Ignore");
}

TEST(WebhookConfiguration, AnEmptyCaBundleIsLeftOut) {
  const json::value v = validating_webhook_configuration({});
  EXPECT_FALSE(at(v, "/webhooks/0/clientConfig").as_object().contains("caBundle"));
}

// The cluster gets its configurations from deploy/webhook.yaml; the tests and local runs from the
// code. Both must intercept the same requests.
TEST(WebhookConfiguration, TheShippedManifestHasTheSameRulesAsTheCode) {
  std::ifstream in(std::string(KSTACK_SOURCE_DIR) + "/deploy/webhook.yaml");
  ASSERT_TRUE(in) << "deploy/webhook.yaml";
  std::stringstream text;
  text << in.rdbuf();
  auto docs = catalog::parse_yaml_documents(text.str());
  ASSERT_TRUE(docs) << docs.error().to_string();
  const json::value expected[] = {validating_webhook_configuration({}),
                                  mutating_webhook_configuration({})};
  for (const json::value& want : expected) {
    const json::value* shipped = nullptr;
    for (const auto& d : *docs) {
      ASSERT_TRUE(d.error.empty()) << "document " << d.index << ": " << d.error;
      if (d.value.at_pointer("/kind") == at(want, "/kind")) shipped = &d.value;
    }
    ASSERT_NE(shipped, nullptr) << at(want, "/kind") << " missing from deploy/webhook.yaml";
    EXPECT_EQ(at(*shipped, "/metadata/name"), at(want, "/metadata/name"));
    const auto& hooks = at(*shipped, "/webhooks").as_array();
    ASSERT_EQ(hooks.size(), 1u) << at(want, "/kind");
    for (const char* key :
         {"/name", "/rules", "/failurePolicy", "/sideEffects", "/matchPolicy", "/timeoutSeconds",
          "/admissionReviewVersions", "/clientConfig/service/path", "/clientConfig/service/port"}) {
      EXPECT_EQ(at(hooks[0], key), at(want, std::string("/webhooks/0") + key))
          << at(want, "/kind") << " " << key;
    }
  }
}

}  // namespace
}  // namespace kstack::validator
