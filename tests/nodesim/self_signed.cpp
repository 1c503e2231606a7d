// Self-signed certificate generation with OpenSSL 3 (see self_signed.h).
#include "tests/nodesim/self_signed.h"

#include <memory>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace kstack::nodesim {

namespace {

template <auto Free>
struct Deleter {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION_free>>;

std::string openssl_error(const char* what) {
  char buf[256];
  ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
  return std::string(what) + ": " + buf;
}

std::string bio_string(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(n));
}

}  // namespace

tl::expected<CertificatePem, std::string> self_signed_certificate(
    const std::vector<std::string>& sans) {
  PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) return tl::unexpected(openssl_error("key generation"));
  X509Ptr cert(X509_new());
  if (!cert) return tl::unexpected(openssl_error("X509_new"));
  X509_set_version(cert.get(), 2);
  unsigned char serial[8];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7F;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("kstack-nodesim"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  std::string san_list;
  for (const auto& s : sans) san_list += (san_list.empty() ? "" : ",") + s;
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
  if (!san_list.empty()) {
    ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, san_list.c_str()));
    if (!ext || X509_add_ext(cert.get(), ext.get(), -1) != 1) {
      return tl::unexpected(openssl_error("subjectAltName"));
    }
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
    return tl::unexpected(openssl_error("X509_sign"));
  }
  BioPtr cert_bio(BIO_new(BIO_s_mem()));
  BioPtr key_bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    return tl::unexpected(openssl_error("PEM encoding"));
  }
  return CertificatePem{bio_string(cert_bio.get()), bio_string(key_bio.get())};
}

}  // namespace kstack::nodesim
