// Certificate generation, parsing and verification with the OpenSSL 3 API (the only file of
// kstack_certs that includes OpenSSL's X.509 headers). Nothing here logs; error messages never
// contain key material.
#include <algorithm>
#include <array>
#include <ctime>
#include <memory>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "validator/certs.h"

namespace kstack::validator {
namespace {

using Clock = std::chrono::system_clock;
using kube::ErrorKind;
using kube::make_error;

template <auto Free>
struct Deleter {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using PkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, Deleter<EVP_PKEY_CTX_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BN_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION_free>>;
using NamesPtr = std::unique_ptr<GENERAL_NAMES, Deleter<GENERAL_NAMES_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Deleter<X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Deleter<X509_STORE_CTX_free>>;

constexpr std::size_t kMaxCommonName = 64;  // RFC 5280 ub-common-name

// "what: <OpenSSL's queued reasons>", emptying the thread's error queue.
std::string openssl_error(std::string_view what) {
  std::string message(what);
  bool first = true;
  for (unsigned long e = ERR_get_error(); e != 0; e = ERR_get_error()) {
    std::array<char, 256> buf{};
    ERR_error_string_n(e, buf.data(), buf.size());
    message += first ? ": " : "; ";
    message += buf.data();
    first = false;
  }
  return message;
}

tl::unexpected<kube::Error> internal(std::string_view what) {
  return make_error(ErrorKind::kInternal, openssl_error(what));
}

BioPtr memory_bio(std::string_view data) {
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

std::string drain(BIO* bio) {
  std::string out(BIO_ctrl_pending(bio), '\0');
  const int n = BIO_read(bio, out.data(), static_cast<int>(out.size()));
  out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return out;
}

std::vector<X509Ptr> read_certificates(std::string_view pem) {
  std::vector<X509Ptr> certs;
  BioPtr bio = memory_bio(pem);
  while (bio) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) break;
    certs.push_back(std::move(cert));
  }
  ERR_clear_error();  // the end of the bundle reads as "no start line"
  return certs;
}

PkeyPtr read_private_key(std::string_view pem) {
  BioPtr bio = memory_bio(pem);
  PkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  ERR_clear_error();
  return key;
}

std::string certificate_pem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return {};
  return drain(bio.get());
}

std::string private_key_pem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return {};
  }
  return drain(bio.get());
}

PkeyPtr generate_key() {
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) <= 0 ||
      EVP_PKEY_CTX_set_group_name(ctx.get(), "P-256") <= 0) {
    return nullptr;
  }
  EVP_PKEY* key = nullptr;
  if (EVP_PKEY_generate(ctx.get(), &key) <= 0) return nullptr;
  return PkeyPtr(key);
}

// 159 random bits: positive, at most 20 octets (RFC 5280 §4.1.2.2), unpredictable.
bool set_random_serial(X509* cert) {
  std::array<unsigned char, 20> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) return false;
  bytes[0] = static_cast<unsigned char>((bytes[0] & 0x7f) | 0x40);
  BnPtr bn(BN_bin2bn(bytes.data(), static_cast<int>(bytes.size()), nullptr));
  return bn && BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert)) != nullptr;
}

std::time_t time_of(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return 0;
  return timegm(&tm);
}

Clock::time_point not_before(const X509* cert) {
  return Clock::from_time_t(time_of(X509_get0_notBefore(cert)));
}
Clock::time_point not_after(const X509* cert) {
  return Clock::from_time_t(time_of(X509_get0_notAfter(cert)));
}

bool is_ca(X509* cert) { return X509_check_ca(cert) != 0; }

bool add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

bool valid_dns_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '*';
  });
}

// subjectAltName built entry by entry (no config-string parsing of caller-given names).
kube::Result<void> add_subject_alt_names(X509* cert, const ServingCertificateOptions& o) {
  NamesPtr names(GENERAL_NAMES_new());
  if (!names) return internal("allocating subjectAltName");
  for (const auto& dns : o.dns_names) {
    if (!valid_dns_name(dns)) {
      return make_error(ErrorKind::kInvalidArgument, fmt::format("invalid DNS SAN \"{}\"", dns));
    }
    ASN1_IA5STRING* text = ASN1_IA5STRING_new();
    GENERAL_NAME* name = GENERAL_NAME_new();
    if (text == nullptr || name == nullptr ||
        ASN1_STRING_set(text, dns.data(), static_cast<int>(dns.size())) != 1) {
      ASN1_IA5STRING_free(text);
      GENERAL_NAME_free(name);
      return internal("building subjectAltName");
    }
    GENERAL_NAME_set0_value(name, GEN_DNS, text);
    if (sk_GENERAL_NAME_push(names.get(), name) == 0) {
      GENERAL_NAME_free(name);
      return internal("building subjectAltName");
    }
  }
  for (const auto& ip : o.ip_addresses) {
    ASN1_OCTET_STRING* octets = a2i_IPADDRESS(ip.c_str());
    if (octets == nullptr) {
      ERR_clear_error();
      return make_error(ErrorKind::kInvalidArgument, fmt::format("invalid IP SAN \"{}\"", ip));
    }
    GENERAL_NAME* name = GENERAL_NAME_new();
    if (name == nullptr) {
      ASN1_OCTET_STRING_free(octets);
      return internal("building subjectAltName");
    }
    GENERAL_NAME_set0_value(name, GEN_IPADD, octets);
    if (sk_GENERAL_NAME_push(names.get(), name) == 0) {
      GENERAL_NAME_free(name);
      return internal("building subjectAltName");
    }
  }
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), 0, X509V3_ADD_DEFAULT) != 1) {
    return internal("adding subjectAltName");
  }
  return {};
}

// A certificate with version, serial, validity, subject, issuer and public key set.
kube::Result<X509Ptr> new_certificate(std::string common_name, EVP_PKEY* key, X509* issuer,
                                      std::chrono::seconds lifetime,
                                      std::optional<Clock::time_point> issued_at,
                                      std::time_t latest_not_after) {
  if (lifetime.count() <= 0) {
    return make_error(ErrorKind::kInvalidArgument, "certificate lifetime must be positive");
  }
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1 ||
      !set_random_serial(cert.get())) {
    return internal("creating certificate");
  }
  const std::time_t now = Clock::to_time_t(issued_at.value_or(Clock::now()));
  const auto backdate = std::min<std::chrono::seconds>(kMaxNotBeforeBackdate, lifetime / 10);
  std::time_t end = now + lifetime.count();
  if (latest_not_after != 0) end = std::min(end, latest_not_after);
  if (ASN1_TIME_set(X509_getm_notBefore(cert.get()), now - backdate.count()) == nullptr ||
      ASN1_TIME_set(X509_getm_notAfter(cert.get()), end) == nullptr) {
    return internal("setting validity");
  }
  if (common_name.size() > kMaxCommonName) common_name.resize(kMaxCommonName);
  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                 -1, 0) != 1 ||
      X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : subject) != 1 ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return internal("setting names and key");
  }
  return cert;
}

kube::Result<CertificateAndKey> sign_and_encode(X509* cert, EVP_PKEY* key, EVP_PKEY* signer) {
  if (X509_sign(cert, signer, EVP_sha256()) <= 0) return internal("signing certificate");
  CertificateAndKey out{certificate_pem(cert), private_key_pem(key)};
  if (out.cert_pem.empty() || out.key_pem.empty()) return internal("encoding PEM");
  return out;
}

std::string to_hex(const unsigned char* data, std::size_t size) {
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) out += fmt::format("{:02x}", data[i]);
  return out;
}

std::string ip_text(const ASN1_OCTET_STRING* octets) {
  const int len = ASN1_STRING_length(octets);
  const unsigned char* data = ASN1_STRING_get0_data(octets);
  std::array<char, INET6_ADDRSTRLEN> buf{};
  const int family = len == 4 ? AF_INET : len == 16 ? AF_INET6 : 0;
  if (family == 0 || inet_ntop(family, data, buf.data(), buf.size()) == nullptr) return {};
  return buf.data();
}

CertificateInfo describe(X509* cert) {
  CertificateInfo info;
  X509_NAME* subject = X509_get_subject_name(cert);
  std::array<char, 256> cn{};
  if (X509_NAME_get_text_by_NID(subject, NID_commonName, cn.data(), cn.size()) > 0) {
    info.subject_common_name = cn.data();
  }
  if (BnPtr bn(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr)); bn) {
    if (char* hex = BN_bn2hex(bn.get()); hex != nullptr) {
      info.serial_hex = hex;
      OPENSSL_free(hex);
    }
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int md_len = 0;
  if (X509_digest(cert, EVP_sha256(), md.data(), &md_len) == 1) {
    info.sha256_fingerprint = to_hex(md.data(), md_len);
  }
  info.not_before = not_before(cert);
  info.not_after = not_after(cert);
  info.is_ca = is_ca(cert);
  info.pem = certificate_pem(cert);
  NamesPtr names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type == GEN_DNS) {
      const auto* s = name->d.dNSName;
      info.dns_names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                  static_cast<std::size_t>(ASN1_STRING_length(s)));
    } else if (name->type == GEN_IPADD) {
      info.ip_addresses.push_back(ip_text(name->d.iPAddress));
    }
  }
  ERR_clear_error();
  return info;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Generation and parsing.

kube::Result<CertificateAndKey> generate_ca(const CaOptions& options) {
  PkeyPtr key = generate_key();
  if (!key) return internal("generating CA key");
  auto cert = new_certificate(options.common_name, key.get(), nullptr, options.lifetime,
                              options.issued_at, 0);
  if (!cert) return tl::unexpected(std::move(cert.error()));
  X509* x = cert->get();
  // Subject key id first: the authority key id of a self-signed certificate refers to it.
  if (!add_extension(x, x, NID_basic_constraints, "critical,CA:TRUE") ||
      !add_extension(x, x, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature") ||
      !add_extension(x, x, NID_subject_key_identifier, "hash") ||
      !add_extension(x, x, NID_authority_key_identifier, "keyid:always")) {
    return internal("adding CA extensions");
  }
  return sign_and_encode(x, key.get(), key.get());
}

kube::Result<CertificateAndKey> generate_serving_certificate(
    const CertificateAndKey& ca, const ServingCertificateOptions& options) {
  if (options.dns_names.empty() && options.ip_addresses.empty()) {
    return make_error(ErrorKind::kInvalidArgument, "a serving certificate needs at least one SAN");
  }
  auto ca_certs = read_certificates(ca.cert_pem);
  PkeyPtr ca_key = read_private_key(ca.key_pem);
  if (ca_certs.empty() || !ca_key) {
    return make_error(ErrorKind::kInvalidArgument, "the CA certificate or key does not parse");
  }
  X509* issuer = ca_certs.front().get();
  if (X509_check_private_key(issuer, ca_key.get()) != 1) {
    ERR_clear_error();
    return make_error(ErrorKind::kInvalidArgument, "the CA key does not match the CA certificate");
  }
  PkeyPtr key = generate_key();
  if (!key) return internal("generating serving key");
  std::string cn = options.common_name;
  if (cn.empty())
    cn = options.dns_names.empty() ? options.ip_addresses.front() : options.dns_names.front();
  // A certificate never outlives the CA that vouches for it.
  auto cert = new_certificate(cn, key.get(), issuer, options.lifetime, options.issued_at,
                              time_of(X509_get0_notAfter(issuer)));
  if (!cert) return tl::unexpected(std::move(cert.error()));
  X509* x = cert->get();
  if (!add_extension(x, issuer, NID_basic_constraints, "critical,CA:FALSE") ||
      !add_extension(x, issuer, NID_key_usage, "critical,digitalSignature") ||
      !add_extension(x, issuer, NID_ext_key_usage, "serverAuth") ||
      !add_extension(x, issuer, NID_subject_key_identifier, "hash") ||
      !add_extension(x, issuer, NID_authority_key_identifier, "keyid:always")) {
    return internal("adding serving certificate extensions");
  }
  if (auto sans = add_subject_alt_names(x, options); !sans) {
    return tl::unexpected(std::move(sans.error()));
  }
  return sign_and_encode(x, key.get(), ca_key.get());
}

std::vector<std::string> service_dns_names(std::string_view service, std::string_view ns) {
  return {std::string(service), fmt::format("{}.{}", service, ns),
          fmt::format("{}.{}.svc", service, ns),
          fmt::format("{}.{}.svc.cluster.local", service, ns)};
}

std::chrono::seconds CertificateInfo::lifetime() const {
  return std::chrono::duration_cast<std::chrono::seconds>(not_after - not_before);
}

Clock::time_point CertificateInfo::renew_at(double fraction) const {
  const auto span = std::chrono::duration_cast<std::chrono::milliseconds>(not_after - not_before);
  return not_before + std::chrono::milliseconds(static_cast<std::int64_t>(
                          static_cast<double>(span.count()) * std::clamp(fraction, 0.0, 1.0)));
}

kube::Result<std::vector<CertificateInfo>> parse_certificates(std::string_view pem) {
  auto certs = read_certificates(pem);
  if (certs.empty()) {
    return make_error(ErrorKind::kInvalidArgument, "no PEM certificate found");
  }
  std::vector<CertificateInfo> out;
  out.reserve(certs.size());
  for (auto& cert : certs) out.push_back(describe(cert.get()));
  return out;
}

kube::Result<CertificateInfo> parse_certificate(std::string_view pem) {
  auto all = parse_certificates(pem);
  if (!all) return tl::unexpected(std::move(all.error()));
  return std::move(all->front());
}

kube::Result<void> check_key_pair(std::string_view cert_pem, std::string_view key_pem) {
  auto certs = read_certificates(cert_pem);
  if (certs.empty()) return make_error(ErrorKind::kInvalidArgument, "no PEM certificate found");
  PkeyPtr key = read_private_key(key_pem);
  if (!key) return make_error(ErrorKind::kInvalidArgument, "the private key does not parse");
  if (X509_check_private_key(certs.front().get(), key.get()) != 1) {
    ERR_clear_error();
    return make_error(ErrorKind::kInvalidArgument,
                      "the private key does not match the certificate");
  }
  return {};
}

kube::Result<void> verify_server_certificate(std::string_view cert_pem,
                                             std::string_view ca_bundle_pem, Clock::time_point at) {
  auto certs = read_certificates(cert_pem);
  if (certs.empty()) return make_error(ErrorKind::kInvalidArgument, "no PEM certificate found");
  auto cas = read_certificates(ca_bundle_pem);
  if (cas.empty()) return make_error(ErrorKind::kInvalidArgument, "no CA certificate found");
  StorePtr store(X509_STORE_new());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!store || !ctx) return internal("allocating verification context");
  for (auto& ca : cas) X509_STORE_add_cert(store.get(), ca.get());
  if (X509_STORE_CTX_init(ctx.get(), store.get(), certs.front().get(), nullptr) != 1 ||
      X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER) != 1) {
    return internal("initialising verification");
  }
  X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx.get()), Clock::to_time_t(at));
  if (X509_verify_cert(ctx.get()) != 1) {
    const int err = X509_STORE_CTX_get_error(ctx.get());
    ERR_clear_error();
    return make_error(ErrorKind::kTls, fmt::format("certificate verification failed: {}",
                                                   X509_verify_cert_error_string(err)));
  }
  return {};
}

}  // namespace kstack::validator
