// The renewal decision (renew_if_due, next_renewal in validator/certs.cpp) on simulated time.
// Pure: no cluster.
#include <gtest/gtest.h>

#include "validator/certs.h"

namespace kstack::validator {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::system_clock;

const Clock::time_point kT0 = Clock::from_time_t(1'900'000'000);

CertificatePolicy policy(std::chrono::seconds ca_lifetime = 9000s,
                         std::chrono::seconds serving_lifetime = 300s) {
  CertificatePolicy p;
  p.dns_names = service_dns_names("kstack-webhook", "kstack-system");
  p.ip_addresses = {"127.0.0.1"};
  p.ca_lifetime = ca_lifetime;
  p.serving_lifetime = serving_lifetime;
  return p;
}

TlsMaterial renewed(const TlsMaterial& current, const CertificatePolicy& p, Clock::time_point at) {
  auto r = renew_if_due(current, p, at);
  if (!r) throw std::runtime_error(r.error().to_string());
  if (!r->has_value()) throw std::runtime_error("expected a renewal");
  return (*r)->material;
}

std::optional<Renewal> decide(const TlsMaterial& current, const CertificatePolicy& p,
                              Clock::time_point at) {
  auto r = renew_if_due(current, p, at);
  if (!r) throw std::runtime_error(r.error().to_string());
  return *r;
}

std::vector<CertificateInfo> cas_of(const TlsMaterial& m) {
  return parse_certificates(m.ca_bundle_pem).value_or(std::vector<CertificateInfo>{});
}

Clock::time_point serving_renew_at(const TlsMaterial& m) {
  return parse_certificate(m.cert_pem).value().renew_at(kDefaultRenewFraction);
}

bool signed_by(const std::string& cert_pem, const std::string& ca_pem, Clock::time_point at) {
  return verify_server_certificate(cert_pem, ca_pem, at).has_value();
}

TEST(Renewal, EmptyMaterialGetsANewCaAndServingCertificate) {
  auto r = decide({}, policy(), kT0);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ca_rotated);
  EXPECT_TRUE(r->serving_issued);
  const auto& m = r->material;
  ASSERT_EQ(cas_of(m).size(), 1u);
  EXPECT_TRUE(check_key_pair(m.ca_bundle_pem, m.ca_key_pem));
  EXPECT_TRUE(check_key_pair(m.cert_pem, m.key_pem));
  EXPECT_TRUE(signed_by(m.cert_pem, m.ca_bundle_pem, kT0));
  EXPECT_EQ(next_renewal(m, kDefaultRenewFraction, kT0), serving_renew_at(m));
  // Backdated by a tenth of the lifetime (at most a minute), renewed at two thirds of the span.
  EXPECT_EQ(serving_renew_at(m), kT0 - 30s + 220s);
}

TEST(Renewal, NothingIsDueBeforeTwoThirdsOfTheServingLifetime) {
  const auto m = renewed({}, policy(), kT0);
  EXPECT_FALSE(decide(m, policy(), kT0));
  EXPECT_FALSE(decide(m, policy(), serving_renew_at(m) - 1s));
}

TEST(Renewal, ServingCertificateIsRenewedAtTwoThirdsByTheSameCa) {
  const auto m = renewed({}, policy(), kT0);
  const auto due = serving_renew_at(m);
  auto r = decide(m, policy(), due);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->ca_rotated);
  EXPECT_TRUE(r->serving_issued);
  EXPECT_EQ(r->reason, "serving certificate due for renewal");
  EXPECT_EQ(r->material.ca_bundle_pem, m.ca_bundle_pem);
  EXPECT_EQ(r->material.ca_key_pem, m.ca_key_pem);
  EXPECT_NE(r->material.cert_pem, m.cert_pem);
  EXPECT_TRUE(signed_by(r->material.cert_pem, m.ca_bundle_pem, due));
  EXPECT_GT(next_renewal(r->material, kDefaultRenewFraction, due), due);
}

TEST(Renewal, AServingCertificateMissingARequiredNameIsReissued) {
  const auto m = renewed({}, policy(), kT0);
  auto p = policy();
  p.dns_names.push_back("webhook.example.com");
  auto r = decide(m, p, kT0 + 1s);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->serving_issued);
  EXPECT_FALSE(r->ca_rotated);
  EXPECT_NE(r->reason.find("webhook.example.com"), std::string::npos);
  auto info = parse_certificate(r->material.cert_pem);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->dns_names.back(), "webhook.example.com");
}

TEST(Renewal, AServingKeyThatDoesNotMatchIsReplaced) {
  auto m = renewed({}, policy(), kT0);
  m.key_pem = m.ca_key_pem;
  auto r = decide(m, policy(), kT0 + 1s);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->serving_issued);
  EXPECT_TRUE(check_key_pair(r->material.cert_pem, r->material.key_pem));
}

TEST(Renewal, GarbageIsReplacedByFreshMaterial) {
  const TlsMaterial garbage{"junk", "junk", "junk", "junk"};
  auto r = decide(garbage, policy(), kT0);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ca_rotated);
  EXPECT_TRUE(r->serving_issued);
  EXPECT_EQ(cas_of(r->material).size(), 1u);
}

TEST(Renewal, CaRotationKeepsTheOldCaTrustedAndSignsWithItUntilTheNewOneIsPublished) {
  const auto p = policy(900s, 400s);
  const auto m = renewed({}, p, kT0);
  const auto old_ca = cas_of(m).front();
  const auto rotation = old_ca.renew_at(kDefaultRenewFraction);  // the serving one is overdue too

  auto r = decide(m, p, rotation);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ca_rotated);
  EXPECT_TRUE(r->serving_issued);
  const auto bundle = cas_of(r->material);
  ASSERT_EQ(bundle.size(), 2u);
  EXPECT_NE(bundle[0].sha256_fingerprint, old_ca.sha256_fingerprint);
  EXPECT_EQ(bundle[1].sha256_fingerprint, old_ca.sha256_fingerprint);
  EXPECT_TRUE(check_key_pair(bundle[0].pem, r->material.ca_key_pem));
  // The serving certificate issued in the rotation step comes from the outgoing CA, and ends
  // with it.
  EXPECT_TRUE(signed_by(r->material.cert_pem, old_ca.pem, rotation));
  EXPECT_FALSE(signed_by(r->material.cert_pem, bundle[0].pem, rotation));
  auto serving = parse_certificate(r->material.cert_pem);
  ASSERT_TRUE(serving);
  EXPECT_EQ(serving->not_after, old_ca.not_after);

  // The next serving certificate comes from the new CA; the old CA stays until it expires.
  const auto later = serving->renew_at(kDefaultRenewFraction);
  auto next = decide(r->material, p, later);
  ASSERT_TRUE(next);
  EXPECT_FALSE(next->ca_rotated);
  EXPECT_TRUE(signed_by(next->material.cert_pem, bundle[0].pem, later));
  EXPECT_EQ(cas_of(next->material).size(), 2u);
  EXPECT_EQ(next_renewal(next->material, kDefaultRenewFraction, kT0), old_ca.not_after);

  auto pruned = decide(next->material, p, old_ca.not_after);
  ASSERT_TRUE(pruned);
  EXPECT_EQ(pruned->reason, "expired CA dropped from the bundle");
  EXPECT_FALSE(pruned->serving_issued);
  ASSERT_EQ(cas_of(pruned->material).size(), 1u);
  EXPECT_EQ(cas_of(pruned->material)[0].sha256_fingerprint, bundle[0].sha256_fingerprint);
}

TEST(Renewal, ALostCaKeyRotatesTheCaButKeepsTheServingCertificateTrusted) {
  auto m = renewed({}, policy(), kT0);
  const auto old = m;
  m.ca_key_pem.clear();
  auto r = decide(m, policy(), kT0 + 10s);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ca_rotated);
  EXPECT_FALSE(r->serving_issued);
  EXPECT_EQ(r->material.cert_pem, old.cert_pem);
  EXPECT_EQ(cas_of(r->material).size(), 2u);
  EXPECT_TRUE(signed_by(old.cert_pem, r->material.ca_bundle_pem, kT0 + 10s));
}

TEST(Renewal, AnExpiredCaIsReplacedAndTheServingCertificateReissued) {
  const auto p = policy(60s, 30s);
  const auto m = renewed({}, p, kT0);
  auto r = decide(m, p, kT0 + 61s);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ca_rotated);
  EXPECT_TRUE(r->serving_issued);
  ASSERT_EQ(cas_of(r->material).size(), 1u);
  EXPECT_TRUE(signed_by(r->material.cert_pem, r->material.ca_bundle_pem, kT0 + 61s));
}

TEST(Renewal, NextRenewalOfUnusableMaterialIsNow) {
  EXPECT_EQ(next_renewal({}, kDefaultRenewFraction, kT0), kT0);
}

}  // namespace
}  // namespace kstack::validator
