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

// Only kstack's own kinds: a kstack outage must never block core resources. Each webhook names
// only what its handler acts on: every matched request is a failurePolicy-Fail call in front of
// the write, the operator's own status writes included.
json::array kstack_rules(json::array operations, json::array resources) {
  return json::array{json::object{
      {"apiGroups", json::array{"kstack.io"}},
      {"apiVersions", json::array{"v1beta1"}},
      {"operations", std::move(operations)},
      {"resources", std::move(resources)},
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
                     std::string_view path, json::array rules) {
  return json::object{
      {"name", name},
      {"admissionReviewVersions", json::array{"v1", "v1beta1"}},
      {"sideEffects", "None"},
      {"failurePolicy", o.failure_policy},
      {"matchPolicy", "Equivalent"},
      {"timeoutSeconds", o.timeout_seconds},
      {"clientConfig", client_config(o, path)},
      {"rules", std::move(rules)},
  };
}

json::object metadata(const std::string& name) {
  return json::object{{"name", name},
                      {"labels", json::object{{"app.kubernetes.io/name", "kstack"},
                                              {"app.kubernetes.io/component", "webhook"}}}};
}

}  // namespace

json::value validating_webhook_configuration(const WebhookConfigurationOptions& options) {
  // /validate checks AppTypes, Stacks and the KStackConfig on every write, and who writes
  // stacks/status (check_owned_fields); AppTypes and KStackConfigs have no status subresource.
  json::object hook =
      webhook(options, "validate.kstack.io", "/validate",
              kstack_rules(json::array{"CREATE", "UPDATE", "DELETE"},
                           json::array{"apptypes", "stacks", "stacks/status", "kstackconfigs"}));
  return json::object{{"apiVersion", kValidatingWebhookConfigurations.api_version()},
                      {"kind", kValidatingWebhookConfigurations.kind},
                      {"metadata", metadata(options.validating_name)},
                      {"webhooks", json::array{std::move(hook)}}};
}

json::value mutating_webhook_configuration(const WebhookConfigurationOptions& options) {
  // /mutate defaults only a Stack's spec on CREATE and UPDATE (RulesHandler::do_mutate); it
  // passes AppTypes, KStackConfigs and status writes through untouched, so they are not sent.
  json::object hook = webhook(options, "mutate.kstack.io", "/mutate",
                              kstack_rules(json::array{"CREATE", "UPDATE"}, json::array{"stacks"}));
  hook["reinvocationPolicy"] = "Never";
  return json::object{{"apiVersion", kMutatingWebhookConfigurations.api_version()},
                      {"kind", kMutatingWebhookConfigurations.kind},
                      {"metadata", metadata(options.mutating_name)},
                      {"webhooks", json::array{std::move(hook)}}};
}

}  // namespace kstack::validator
