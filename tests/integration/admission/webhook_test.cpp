// End to end with the real kube-apiserver of the test control plane: it calls the admission
// server as a validating (AdmissionReview v1) and a mutating (v1beta1) webhook, verifying the
// serving certificate against caBundle, and applies the answers (denial message, JSON patch,
// warnings). Proves the envelope is what the API server accepts, not just what we think it is.
#include <gtest/gtest.h>

#include "tests/testenv/environment.h"
#include "tests/unit/validator/admission/support.h"

namespace kstack::validator {
namespace {

using namespace testing;  // NOLINT: the test helpers

std::string base64(const std::string& in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

boost::json::object webhook(std::string_view name, std::string_view url, const std::string& ca,
                            const char* version) {
  return {{"name", name},
          {"admissionReviewVersions", boost::json::array{version}},
          {"clientConfig", {{"url", url}, {"caBundle", base64(ca)}}},
          {"rules", boost::json::array{{{"apiGroups", boost::json::array{""}},
                                        {"apiVersions", boost::json::array{"v1"}},
                                        {"operations", boost::json::array{"CREATE"}},
                                        {"resources", boost::json::array{"configmaps"}}}}},
          {"objectSelector", {{"matchLabels", {{"kstack-admission-test", "true"}}}}},
          {"sideEffects", "None"},
          {"failurePolicy", "Fail"},
          {"timeoutSeconds", 5}};
}

std::string config_map(const std::string& name) {
  boost::json::object cm{
      {"apiVersion", "v1"},
      {"kind", "ConfigMap"},
      {"metadata",
       {{"name", name}, {"namespace", "default"}, {"labels", {{"kstack-admission-test", "true"}}}}},
      {"data", {{"k", "v"}}}};
  return boost::json::serialize(cm);
}

TEST(AdmissionWebhook, TheApiServerCallsValidateAndMutateAndAppliesTheAnswers) {
  auto& cp = testenv::control_plane();
  const TestCert cert = make_self_signed("kstack-webhook-test");
  TestHandler handler;
  auto server = start_server(test_options(cert), handler);
  const std::string base = "https://127.0.0.1:" + std::to_string(server->port());

  boost::json::object validating{
      {"apiVersion", "admissionregistration.k8s.io/v1"},
      {"kind", "ValidatingWebhookConfiguration"},
      {"metadata", {{"name", "kstack-admission-test"}}},
      {"webhooks", boost::json::array{webhook("validate.kstack-test.io", base + "/validate",
                                              cert.cert_pem, "v1")}}};
  boost::json::object mutating{
      {"apiVersion", "admissionregistration.k8s.io/v1"},
      {"kind", "MutatingWebhookConfiguration"},
      {"metadata", {{"name", "kstack-admission-test"}}},
      {"webhooks", boost::json::array{webhook("mutate.kstack-test.io", base + "/mutate",
                                              cert.cert_pem, "v1beta1")}}};
  for (const auto& config : {validating, mutating}) {
    const auto applied = cp.kubectl({"apply", "-f", "-"}, boost::json::serialize(config));
    ASSERT_TRUE(applied.ok()) << applied.err;
  }

  // The API server picks webhook configurations up from its own watch: probe (each kubectl call
  // takes a while) until both answer, bounded by a deadline.
  const auto deadline = Clock::now() + 30s;
  bool active = false;
  while (!active && Clock::now() < deadline) {
    const auto denied =
        cp.kubectl({"create", "--dry-run=server", "-f", "-"}, config_map("deny-probe"));
    const auto mutated = cp.kubectl({"create", "--dry-run=server", "-o",
                                     "jsonpath={.metadata.labels.kstack-mutated}", "-f", "-"},
                                    config_map("probe"));
    active =
        !denied.ok() && denied.err.find("deny-probe") != std::string::npos && mutated.out == "yes";
  }
  ASSERT_TRUE(active) << "the API server did not start calling the webhooks within 30 s";

  const auto denied = cp.kubectl({"create", "-f", "-"}, config_map("deny-me"));
  EXPECT_FALSE(denied.ok());
  EXPECT_NE(denied.err.find("admission webhook \"validate.kstack-test.io\" denied the request: "
                            "metadata.name: \"deny-me\" is not allowed"),
            std::string::npos)
      << denied.err;

  const auto created = cp.kubectl({"create", "-f", "-"}, config_map("allowed"));
  ASSERT_TRUE(created.ok()) << created.err;
  EXPECT_NE(created.err.find("checked by kstack test handler"), std::string::npos) << created.err;
  const auto label = cp.kubectl({"get", "configmap", "allowed", "-n", "default", "-o",
                                 "jsonpath={.metadata.labels.kstack-mutated}"});
  EXPECT_EQ(label.out, "yes") << label.err;

  cp.kubectl({"delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration",
              "kstack-admission-test"});
  cp.kubectl({"delete", "configmap", "allowed", "-n", "default"});
  EXPECT_GE(server->stats().requests, 4u);
  EXPECT_EQ(server->stats().rejected, 0u);
}

}  // namespace
}  // namespace kstack::validator
