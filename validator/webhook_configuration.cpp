// kstack's ValidatingWebhookConfiguration and MutatingWebhookConfiguration, built in one place
// for the operator, the manifests and the tests.
#include <boost/json.hpp>

#include "validator/certs.h"

namespace kstack::validator {
namespace json = boost::json;

const kube::ResourceType kValidatingWebhookConfigurations{"admissionregistration.k8s.io", "v1",
                                                          "validatingwebhookconfigurations",
                                                          "ValidatingWebhookConfiguration", false};
const kube::ResourceType kMutatingWebhookConfigurations{"admissionregistration.k8s.io", "v1",
                                                        "mutatingwebhookconfigurations",
                                                        "MutatingWebhookConfiguration", false};

namespace {

// Only kstack's own kinds: a kstack outage must never block core resources.
json::array kstack_rules(json::array operations) {
  return json::array{json::object{
      {"apiGroups", json::array{"kstack.io"}},
      {"apiVersions", json::array{"v1beta1"}},
      {"operations", std::move(operations)},
      {"resources", json::array{"apptypes", "stacks", "stacks/status", "kstackconfigs"}},
      {"scope", "*"},
  }};
}

json::object client_config(const WebhookConfigurationOptions& o, std::string_view path) {
  json::object config;
  if (!o.url_base.empty()) {
    config["url"] = o.url_base + std::string(path);
  } else {
    config["service"] = json::object{{"namespace", o.service_namespace},
                                     {"name", o.service_name},
                                     {"path", path},
                                     {"port", o.service_port}};
  }
  if (!o.ca_bundle_pem.empty()) config["caBundle"] = base64_encode(o.ca_bundle_pem);
  return config;
}

json::object webhook(const WebhookConfigurationOptions& o, std::string_view name,
                     std::string_view path, json::array operations) {
  return json::object{
      {"name", name},
      {"admissionReviewVersions", json::array{"v1", "v1beta1"}},
      {"sideEffects", "None"},
      {"failurePolicy", o.failure_policy},
      {"matchPolicy", "Equivalent"},
      {"timeoutSeconds", o.timeout_seconds},
      {"clientConfig", client_config(o, path)},
      {"rules", kstack_rules(std::move(operations))},
  };
}

json::object metadata(const std::string& name) {
  return json::object{{"name", name},
                      {"labels", json::object{{"app.kubernetes.io/name", "kstack"},
                                              {"app.kubernetes.io/component", "webhook"}}}};
}

}  // namespace

json::value validating_webhook_configuration(const WebhookConfigurationOptions& options) {
  json::object hook = webhook(options, "validate.kstack.io", "/validate",
                              json::array{"CREATE", "UPDATE", "DELETE"});
  return json::object{{"apiVersion", kValidatingWebhookConfigurations.api_version()},
                      {"kind", kValidatingWebhookConfigurations.kind},
                      {"metadata", metadata(options.validating_name)},
                      {"webhooks", json::array{std::move(hook)}}};
}

json::value mutating_webhook_configuration(const WebhookConfigurationOptions& options) {
  json::object hook =
      webhook(options, "mutate.kstack.io", "/mutate", json::array{"CREATE", "UPDATE"});
  hook["reinvocationPolicy"] = "Never";
  return json::object{{"apiVersion", kMutatingWebhookConfigurations.api_version()},
                      {"kind", kMutatingWebhookConfigurations.kind},
                      {"metadata", metadata(options.mutating_name)},
                      {"webhooks", json::array{std::move(hook)}}};
}

}  // namespace kstack::validator
