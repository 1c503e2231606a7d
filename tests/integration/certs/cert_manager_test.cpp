// CertManager against a real kube-apiserver: the Secret, the caBundle of both webhook
// configurations, zero-write passes, replicas racing, renewal and CA rotation with short
// lifetimes.
#include <algorithm>
#include <atomic>
#include <latch>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/certs/support.h"

namespace kstack::validator {
namespace {

using kube::testing::admin;
using kube::testing::make_namespace;
using testing::ca_bundles;
using testing::create_webhook_configurations;
using testing::Deliveries;
using testing::fingerprint;
using testing::get_secret;
using testing::secret_field;
using testing::webhook_names;
using testing::WebhookNames;
using testing::writes;
using namespace std::chrono_literals;

CertManagerOptions options_for(const std::string& ns, const WebhookNames& names,
                               Deliveries& deliveries) {
  CertManagerOptions o;
  o.namespace_name = ns;
  o.extra_sans = {"127.0.0.1", "localhost"};
  o.validating_webhook_configuration = names.validating;
  o.mutating_webhook_configuration = names.mutating;
  o.on_certificate = deliveries.callback();
  o.min_recheck_delay = 100ms;
  return o;
}

// Runs a manager's loop on its own thread until stopped.
class Running {
 public:
  explicit Running(CertManager& manager) : thread_([this, &manager] { manager.run(cancel_); }) {}
  ~Running() { stop(); }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;
  void stop() {
    cancel_.cancel();
    if (thread_.joinable()) thread_.join();
  }

 private:
  kube::CancelToken cancel_;
  std::thread thread_;
};

std::uint64_t count(kube::Client& client, std::string_view verb, std::string_view code) {
  const auto snapshot = client.metrics().snapshot();
  auto it = snapshot.find({std::string(verb), std::string(code)});
  return it == snapshot.end() ? 0 : it->second;
}

TEST(CertManager, EnsureCreatesTheSecretAndFillsTheCaBundleOfBothConfigurations) {
  auto client = admin();
  const auto ns = make_namespace(*client);
  const auto names = webhook_names(ns);
  create_webhook_configurations(*client, names);
  Deliveries deliveries;
  CertManager manager(client, options_for(ns, names, deliveries));

  auto status = manager.ensure();
  ASSERT_TRUE(status) << status.error().to_string();
  EXPECT_TRUE(status->written);
  EXPECT_TRUE(status->delivered);
  EXPECT_TRUE(status->missing_webhook_configurations.empty());

  const auto secret = get_secret(*client, ns);
  EXPECT_EQ(secret.at_pointer("/type"), "kubernetes.io/tls");
  const auto cert = secret_field(secret, kTlsCertKey);
  const auto ca = secret_field(secret, kCaCertKey);
  EXPECT_TRUE(check_key_pair(cert, secret_field(secret, kTlsPrivateKeyKey)));
  EXPECT_TRUE(check_key_pair(ca, secret_field(secret, kCaPrivateKeyKey)));
  auto verified = verify_server_certificate(cert, ca, std::chrono::system_clock::now());
  EXPECT_TRUE(verified) << verified.error().to_string();
  ASSERT_EQ(deliveries.certs(), std::vector<std::string>{cert});

  auto info = parse_certificate(cert);
  ASSERT_TRUE(info);
  auto expected_dns = service_dns_names(kDefaultWebhookServiceName, ns);
  expected_dns.push_back("localhost");
  EXPECT_EQ(info->dns_names, expected_dns);
  EXPECT_EQ(info->ip_addresses, std::vector<std::string>{"127.0.0.1"});
  EXPECT_EQ(status->serving.sha256_fingerprint, info->sha256_fingerprint);

  EXPECT_EQ(ca_bundles(*client, kValidatingWebhookConfigurations, names.validating),
            std::vector<std::string>{ca});
  EXPECT_EQ(ca_bundles(*client, kMutatingWebhookConfigurations, names.mutating),
            std::vector<std::string>{ca});
}

TEST(CertManager, ASecondEnsureMakesNoWrite) {
  auto client = admin();
  const auto ns = make_namespace(*client);
  const auto names = webhook_names(ns);
  create_webhook_configurations(*client, names);
  Deliveries deliveries;
  CertManager manager(client, options_for(ns, names, deliveries));
  ASSERT_TRUE(manager.ensure());

  const auto before = writes(*client);
  auto again = manager.ensure();
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(writes(*client), before);
  EXPECT_FALSE(again->written);
  EXPECT_FALSE(again->delivered);
  EXPECT_EQ(deliveries.certs().size(), 1u);
}

TEST(CertManager, AHandEditedCaBundleIsRestoredByTheNextEnsure) {
  auto client = admin();
  const auto ns = make_namespace(*client);
  const auto names = webhook_names(ns);
  create_webhook_configurations(*client, names);
  Deliveries deliveries;
  CertManager manager(client, options_for(ns, names, deliveries));
  ASSERT_TRUE(manager.ensure());
  const auto ca = secret_field(get_secret(*client, ns), kCaCertKey);

  auto config = client->get(kValidatingWebhookConfigurations, "", names.validating);
  ASSERT_TRUE(config);
  auto other_ca = generate_ca({});
  ASSERT_TRUE(other_ca);
  config->at_pointer("/webhooks/0/clientConfig").as_object()["caBundle"] =
      base64_encode(other_ca->cert_pem);
  ASSERT_TRUE(client->update(kValidatingWebhookConfigurations, "", *config));

  const auto before = writes(*client);
  auto status = manager.ensure();
  ASSERT_TRUE(status) << status.error().to_string();
  EXPECT_EQ(writes(*client), before + 1) << "only the edited configuration is written";
  EXPECT_EQ(ca_bundles(*client, kValidatingWebhookConfigurations, names.validating),
            std::vector<std::string>{ca});
  EXPECT_EQ(deliveries.certs().size(), 1u);
}

TEST(CertManager, MissingWebhookConfigurationsAreReportedAndFilledOnceCreated) {
  auto client = admin();
  const auto ns = make_namespace(*client);
  const auto names = webhook_names(ns);
  Deliveries deliveries;
  CertManager manager(client, options_for(ns, names, deliveries));

  auto first = manager.ensure();
  ASSERT_TRUE(first) << first.error().to_string();
  EXPECT_EQ(first->missing_webhook_configurations,
            (std::vector<std::string>{names.validating, names.mutating}));
  EXPECT_EQ(deliveries.certs().size(), 1u) << "the server gets its certificate regardless";

  create_webhook_configurations(*client, names);
  auto second = manager.ensure();
  ASSERT_TRUE(second) << second.error().to_string();
  EXPECT_TRUE(second->missing_webhook_configurations.empty());
  const auto ca = secret_field(get_secret(*client, ns), kCaCertKey);
  EXPECT_EQ(ca_bundles(*client, kMutatingWebhookConfigurations, names.mutating),
            std::vector<std::string>{ca});
}

TEST(CertManager, GarbageInTheSecretIsReplacedWithAGuardedUpdate) {
  auto client = admin();
  const auto ns = make_namespace(*client);
  boost::json::value junk = {
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"metadata", {{"name", kDefaultTlsSecretName}, {"labels", {{"keep", "me"}}}}},
      {"type", "kubernetes.io/tls"},
      {"data", {{kTlsCertKey, base64_encode("junk")}, {kTlsPrivateKeyKey, base64_encode("junk")}}}};
  ASSERT_TRUE(client->create(kube::resources::kSecrets, ns, junk));
  Deliveries deliveries;
  CertManager manager(client, options_for(ns, {}, deliveries));

  auto status = manager.ensure();
  ASSERT_TRUE(status) << status.error().to_string();
  EXPECT_TRUE(status->written);
  const auto secret = get_secret(*client, ns);
  EXPECT_EQ(secret.at_pointer("/metadata/labels/keep"), "me");
  EXPECT_TRUE(
      check_key_pair(secret_field(secret, kTlsCertKey), secret_field(secret, kTlsPrivateKeyKey)));
  EXPECT_EQ(deliveries.certs(), std::vector<std::string>{secret_field(secret, kTlsCertKey)});
}

TEST(CertManager, AFailedHandOverIsReturnedAndRetriedOnTheNextPass) {
  auto client = admin();
  const auto ns = make_namespace(*client);
  std::atomic<int> calls{0};
  CertManagerOptions o;
  o.namespace_name = ns;
  o.validating_webhook_configuration.clear();
  o.mutating_webhook_configuration.clear();
  o.on_certificate = [&](const std::string&, const std::string&) -> kube::Result<void> {
    if (calls.fetch_add(1) == 0) return kube::make_error(kube::ErrorKind::kTls, "refused");
    return {};
  };
  CertManager manager(client, o);
  auto first = manager.ensure();
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().message, "refused");
  auto second = manager.ensure();
  ASSERT_TRUE(second) << second.error().to_string();
  EXPECT_TRUE(second->delivered);
  EXPECT_FALSE(second->written);
  EXPECT_EQ(calls.load(), 2);
}

TEST(CertManager, TwoReplicasStartedTogetherConvergeOnOneSecret) {
  auto setup = admin();
  const auto ns = make_namespace(*setup);
  const auto names = webhook_names(ns);
  create_webhook_configurations(*setup, names);
  auto client_a = admin();
  auto client_b = admin();
  Deliveries a_deliveries;
  Deliveries b_deliveries;
  CertManager a(client_a, options_for(ns, names, a_deliveries));
  CertManager b(client_b, options_for(ns, names, b_deliveries));

  std::latch start(2);
  kube::Result<CertStatus> a_status = kube::make_error(kube::ErrorKind::kInternal, "not run");
  kube::Result<CertStatus> b_status = a_status;
  std::thread ta([&] {
    start.arrive_and_wait();
    a_status = a.ensure();
  });
  std::thread tb([&] {
    start.arrive_and_wait();
    b_status = b.ensure();
  });
  ta.join();
  tb.join();
  ASSERT_TRUE(a_status) << a_status.error().to_string();
  ASSERT_TRUE(b_status) << b_status.error().to_string();

  const auto secret = get_secret(*setup, ns);
  const auto cert = secret_field(secret, kTlsCertKey);
  EXPECT_EQ(a_deliveries.certs(), std::vector<std::string>{cert});
  EXPECT_EQ(b_deliveries.certs(), std::vector<std::string>{cert});
  EXPECT_EQ(count(*client_a, "POST", "201") + count(*client_b, "POST", "201"), 1u);
  EXPECT_EQ(ca_bundles(*setup, kValidatingWebhookConfigurations, names.validating),
            std::vector<std::string>{secret_field(secret, kCaCertKey)});
}

TEST(CertManager, RenewalIssuesANewServingCertificateFromTheSameCaAndHandsItOver) {
  auto client = admin();
  const auto ns = make_namespace(*client);
  const auto names = webhook_names(ns);
  create_webhook_configurations(*client, names);
  Deliveries deliveries;
  auto o = options_for(ns, names, deliveries);
  o.serving_lifetime = 3s;  // renewed 2 s after issue
  CertManager manager(client, o);
  Running running(manager);
  ASSERT_TRUE(deliveries.wait_for(3, 20s)) << "got " << deliveries.certs().size();
  running.stop();

  const auto secret = get_secret(*client, ns);
  const auto ca = secret_field(secret, kCaCertKey);
  const auto certs = deliveries.certs();
  std::set<std::string> distinct;
  for (const auto& cert : certs) {
    distinct.insert(fingerprint(cert));
    auto info = parse_certificate(cert);
    ASSERT_TRUE(info);
    auto ok = verify_server_certificate(cert, ca, info->not_before + 1s);
    EXPECT_TRUE(ok) << "not signed by the CA kept in the Secret: " << ok.error().to_string();
  }
  EXPECT_EQ(distinct.size(), certs.size());
  EXPECT_EQ(certs.back(), secret_field(secret, kTlsCertKey));
  EXPECT_EQ(parse_certificates(ca)->size(), 1u);
  EXPECT_EQ(ca_bundles(*client, kValidatingWebhookConfigurations, names.validating),
            std::vector<std::string>{ca});
}

TEST(CertManager, TwoReplicasRenewingTogetherServeTheSameCertificates) {
  auto setup = admin();
  const auto ns = make_namespace(*setup);
  Deliveries a_deliveries;
  Deliveries b_deliveries;
  auto oa = options_for(ns, {}, a_deliveries);
  auto ob = options_for(ns, {}, b_deliveries);
  oa.serving_lifetime = ob.serving_lifetime = 3s;
  auto client_a = admin();
  auto client_b = admin();
  CertManager a(client_a, oa);
  CertManager b(client_b, ob);
  {
    Running ra(a);
    Running rb(b);
    ASSERT_TRUE(a_deliveries.wait_for(3, 20s));
    ASSERT_TRUE(b_deliveries.wait_for(3, 20s));
  }
  // Each renewal was written once (the other replica adopted it), so both handed the same
  // sequence to their servers; one may be a renewal ahead when they were stopped.
  const auto sa = a_deliveries.certs();
  const auto sb = b_deliveries.certs();
  const auto common = std::min(sa.size(), sb.size());
  EXPECT_LE(std::max(sa.size(), sb.size()) - common, 1u);
  for (std::size_t i = 0; i < common; ++i) {
    EXPECT_EQ(fingerprint(sa[i]), fingerprint(sb[i])) << "delivery " << i;
  }
  const auto secret_writes = count(*client_a, "PUT", "200") + count(*client_b, "PUT", "200") +
                             count(*client_a, "POST", "201") + count(*client_b, "POST", "201");
  EXPECT_EQ(secret_writes, std::max(sa.size(), sb.size()));
}

TEST(CertManager, CaRotationPublishesBothCasBeforeServingFromTheNewOne) {
  auto client = admin();
  const auto ns = make_namespace(*client);
  const auto names = webhook_names(ns);
  create_webhook_configurations(*client, names);
  auto observer = admin();

  // Each delivered certificate must verify against what the API server would use right then.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> failures;
  std::set<std::string> issuers_seen;  // fingerprints of the CAs that signed served certs
  std::size_t max_bundle = 0;
  Deliveries unused;
  CertManagerOptions o = options_for(ns, names, unused);
  o.ca_lifetime = 6s;  // rotated 4 s after issue
  o.serving_lifetime = 3s;
  o.on_certificate = [&](const std::string& cert, const std::string&) -> kube::Result<void> {
    const auto bundle = ca_bundles(*observer, kValidatingWebhookConfigurations, names.validating);
    std::lock_guard lock(mu);
    const auto now = std::chrono::system_clock::now();
    if (bundle.size() != 1 || !verify_server_certificate(cert, bundle[0], now)) {
      failures.push_back("served " + fingerprint(cert) + " not trusted by the caBundle");
    }
    for (const auto& ca : parse_certificates(bundle[0]).value_or(std::vector<CertificateInfo>{})) {
      if (verify_server_certificate(cert, ca.pem, now)) issuers_seen.insert(ca.sha256_fingerprint);
    }
    max_bundle = std::max(
        max_bundle, parse_certificates(bundle[0]).value_or(std::vector<CertificateInfo>{}).size());
    cv.notify_all();
    return {};
  };
  CertManager manager(client, o);
  Running running(manager);
  {
    std::unique_lock lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, 30s, [&] { return issuers_seen.size() >= 2; }))
        << "no certificate from a second CA";
  }
  running.stop();
  std::lock_guard lock(mu);
  EXPECT_TRUE(failures.empty()) << failures.front();
  EXPECT_EQ(max_bundle, 2u) << "old and new CA published together during the overlap";
}

}  // namespace
}  // namespace kstack::validator
