// Certificate generation, parsing and verification (validator/pki.cpp). Pure: no cluster.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "validator/certs.h"

namespace kstack::validator {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::system_clock;

// A whole second, so that certificate times (second precision) compare exactly.
const Clock::time_point kT0 = Clock::from_time_t(1'900'000'000);

CertificateAndKey ca_at(Clock::time_point at, std::chrono::seconds lifetime = kDefaultCaLifetime) {
  CaOptions o;
  o.lifetime = lifetime;
  o.issued_at = at;
  auto ca = generate_ca(o);
  if (!ca) throw std::runtime_error(ca.error().to_string());
  return *ca;
}

ServingCertificateOptions serving_options(Clock::time_point at,
                                          std::chrono::seconds lifetime = kDefaultServingLifetime) {
  ServingCertificateOptions o;
  o.dns_names = service_dns_names("kstack-webhook", "kstack-system");
  o.ip_addresses = {"127.0.0.1", "::1"};
  o.lifetime = lifetime;
  o.issued_at = at;
  return o;
}

TEST(Pki, ServiceDnsNamesAreTheFourFormsOfTheServiceName) {
  EXPECT_EQ(
      service_dns_names("hook", "ns"),
      (std::vector<std::string>{"hook", "hook.ns", "hook.ns.svc", "hook.ns.svc.cluster.local"}));
}

TEST(Pki, CaIsSelfSignedCaValidForItsLifetimeWithSkewAllowance) {
  const auto ca = ca_at(kT0);
  auto info = parse_certificate(ca.cert_pem);
  ASSERT_TRUE(info) << info.error().to_string();
  EXPECT_TRUE(info->is_ca);
  EXPECT_EQ(info->subject_common_name, "kstack-webhook-ca");
  EXPECT_EQ(info->not_after - kT0, kDefaultCaLifetime);
  EXPECT_EQ(kT0 - info->not_before, kMaxNotBeforeBackdate);
  EXPECT_TRUE(check_key_pair(ca.cert_pem, ca.key_pem));
  EXPECT_NE(ca.key_pem.find("-----BEGIN PRIVATE KEY-----"), std::string::npos);  // PKCS#8
}

TEST(Pki, ShortLifetimesAreBackdatedByAtMostATenth) {
  auto info = parse_certificate(ca_at(kT0, 3s).cert_pem);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->not_before, kT0);
  EXPECT_EQ(info->not_after, kT0 + 3s);
  EXPECT_EQ(info->renew_at(2.0 / 3.0), kT0 + 2s);
}

TEST(Pki, ServingCertificateCoversServiceNamesAndExtraAddresses) {
  const auto ca = ca_at(kT0);
  auto serving = generate_serving_certificate(ca, serving_options(kT0));
  ASSERT_TRUE(serving) << serving.error().to_string();
  auto info = parse_certificate(serving->cert_pem);
  ASSERT_TRUE(info);
  EXPECT_FALSE(info->is_ca);
  EXPECT_EQ(info->subject_common_name, "kstack-webhook");
  EXPECT_EQ(info->dns_names, service_dns_names("kstack-webhook", "kstack-system"));
  EXPECT_EQ(info->ip_addresses, (std::vector<std::string>{"127.0.0.1", "::1"}));
  EXPECT_EQ(info->not_after - kT0, kDefaultServingLifetime);
  EXPECT_TRUE(check_key_pair(serving->cert_pem, serving->key_pem));
  auto verified = verify_server_certificate(serving->cert_pem, ca.cert_pem, kT0 + 1h);
  EXPECT_TRUE(verified) << verified.error().to_string();
}

TEST(Pki, ServingCertificateDoesNotVerifyAgainstAnotherCaOrOutsideItsValidity) {
  const auto ca = ca_at(kT0);
  auto serving = generate_serving_certificate(ca, serving_options(kT0, 1h));
  ASSERT_TRUE(serving);
  auto other = verify_server_certificate(serving->cert_pem, ca_at(kT0).cert_pem, kT0 + 1s);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().kind, kube::ErrorKind::kTls);
  auto expired = verify_server_certificate(serving->cert_pem, ca.cert_pem, kT0 + 2h);
  ASSERT_FALSE(expired);
  EXPECT_NE(expired.error().message.find("expired"), std::string::npos) << expired.error().message;
}

TEST(Pki, ServingCertificateNeverOutlivesItsCa) {
  const auto ca = ca_at(kT0, 10s);
  auto serving = generate_serving_certificate(ca, serving_options(kT0, 1h));
  ASSERT_TRUE(serving);
  auto info = parse_certificate(serving->cert_pem);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->not_after, kT0 + 10s);
}

TEST(Pki, SerialsArePositiveTwentyOctetsAndDistinct) {
  const auto ca = ca_at(kT0);
  std::set<std::string> serials;
  for (int i = 0; i < 8; ++i) {
    auto serving = generate_serving_certificate(ca, serving_options(kT0));
    ASSERT_TRUE(serving);
    auto info = parse_certificate(serving->cert_pem);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->serial_hex.size(), 40u) << info->serial_hex;
    EXPECT_LT(info->serial_hex[0], '8') << "the top bit makes a serial negative";
    serials.insert(info->serial_hex);
  }
  EXPECT_EQ(serials.size(), 8u);
}

TEST(Pki, InvalidSansAreRefusedWithTheirValue) {
  const auto ca = ca_at(kT0);
  auto o = serving_options(kT0);
  o.dns_names.push_back("not a name");
  auto bad_dns = generate_serving_certificate(ca, o);
  ASSERT_FALSE(bad_dns);
  EXPECT_EQ(bad_dns.error().kind, kube::ErrorKind::kInvalidArgument);
  EXPECT_NE(bad_dns.error().message.find("not a name"), std::string::npos);

  o = serving_options(kT0);
  o.ip_addresses.push_back("1.2.3.4.5");
  auto bad_ip = generate_serving_certificate(ca, o);
  ASSERT_FALSE(bad_ip);
  EXPECT_NE(bad_ip.error().message.find("1.2.3.4.5"), std::string::npos);

  EXPECT_FALSE(generate_serving_certificate(ca, ServingCertificateOptions{}));
}

TEST(Pki, SigningNeedsTheCaKeyThatMatchesTheCaCertificate) {
  auto a = ca_at(kT0);
  const auto b = ca_at(kT0);
  a.key_pem = b.key_pem;
  auto serving = generate_serving_certificate(a, serving_options(kT0));
  ASSERT_FALSE(serving);
  EXPECT_EQ(serving.error().kind, kube::ErrorKind::kInvalidArgument);
  EXPECT_EQ(serving.error().message.find("PRIVATE KEY"), std::string::npos);
}

TEST(Pki, CheckKeyPairDetectsAForeignOrMissingKey) {
  const auto a = ca_at(kT0);
  const auto b = ca_at(kT0);
  EXPECT_TRUE(check_key_pair(a.cert_pem, a.key_pem));
  EXPECT_FALSE(check_key_pair(a.cert_pem, b.key_pem));
  EXPECT_FALSE(check_key_pair(a.cert_pem, ""));
  EXPECT_FALSE(check_key_pair("", a.key_pem));
}

TEST(Pki, ParseCertificatesReadsEveryCertificateOfABundle) {
  const auto a = ca_at(kT0);
  const auto b = ca_at(kT0 + 1s);
  auto bundle = parse_certificates(a.cert_pem + b.cert_pem);
  ASSERT_TRUE(bundle);
  ASSERT_EQ(bundle->size(), 2u);
  EXPECT_EQ((*bundle)[0].pem, a.cert_pem);
  EXPECT_EQ((*bundle)[1].pem, b.cert_pem);
  EXPECT_NE((*bundle)[0].sha256_fingerprint, (*bundle)[1].sha256_fingerprint);
  EXPECT_EQ((*bundle)[0].sha256_fingerprint.size(), 64u);
  EXPECT_FALSE(parse_certificates("not PEM"));
  EXPECT_FALSE(parse_certificate(""));
}

TEST(Pki, Base64RoundTripsBinaryAndRejectsMalformedText) {
  const std::string bytes("\x00\xff\x10pem\n", 7);
  for (std::size_t n = 0; n <= bytes.size(); ++n) {
    const auto part = bytes.substr(0, n);
    EXPECT_EQ(base64_decode(base64_encode(part)), part) << n;
  }
  EXPECT_EQ(base64_encode("ab"), "YWI=");
  EXPECT_FALSE(base64_decode("YWI"));
}

}  // namespace
}  // namespace kstack::validator
