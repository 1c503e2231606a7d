// TLS client policy shared by kube/transport.cpp and kube/exec.cpp (see tls_context.h).
#include "kube/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace kstack::kube::tls {

namespace {

using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;

BioPtr memory_bio(std::string_view pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
}

// PEM reading ends with "no start line" once the input is exhausted: that is not an error.
bool only_end_of_pem_queued() {
  const unsigned long last = ERR_peek_last_error();
  return last == 0 ||
         (ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE);
}

Result<void> add_certificate_authorities(SSL_CTX* ctx, std::string_view pem) {
  const auto invalid = [](std::string detail) {
    return make_error(
        ErrorKind::kConfig,
        "certificate-authority data is not a valid PEM certificate bundle: " + detail);
  };
  ERR_clear_error();
  BioPtr bio = memory_bio(pem);
  if (!bio) return invalid(openssl_reason());
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int count = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    const int added = X509_STORE_add_cert(store, cert);
    X509_free(cert);
    if (added != 1) return invalid(openssl_reason());
    ++count;
  }
  if (!only_end_of_pem_queued()) return invalid(openssl_reason());
  ERR_clear_error();
  if (count == 0) return invalid("no certificate found");
  return {};
}

// The leaf certificate, then any intermediates sent along with it.
Result<void> use_certificate_chain(SSL_CTX* ctx, std::string_view pem) {
  const auto invalid = [] {
    return make_error(
        ErrorKind::kConfig,
        "client-certificate data is not a valid PEM certificate: " + openssl_reason());
  };
  ERR_clear_error();
  BioPtr bio = memory_bio(pem);
  if (!bio) return invalid();
  std::unique_ptr<X509, decltype(&X509_free)> leaf(
      PEM_read_bio_X509_AUX(bio.get(), nullptr, nullptr, nullptr), &X509_free);
  if (!leaf || SSL_CTX_use_certificate(ctx, leaf.get()) != 1) return invalid();
  SSL_CTX_clear_chain_certs(ctx);
  while (X509* intermediate = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add_extra_chain_cert(ctx, intermediate) != 1) {  // takes ownership on success
      X509_free(intermediate);
      return invalid();
    }
  }
  if (!only_end_of_pem_queued()) return invalid();
  ERR_clear_error();
  return {};
}

Result<void> use_private_key(SSL_CTX* ctx, std::string_view pem) {
  const auto invalid = [] {
    return make_error(ErrorKind::kConfig,
                      "client-key data is not a valid PEM private key: " + openssl_reason());
  };
  ERR_clear_error();
  BioPtr bio = memory_bio(pem);
  if (!bio) return invalid();
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
  if (!key || SSL_CTX_use_PrivateKey(ctx, key.get()) != 1) return invalid();
  return {};
}

}  // namespace

void SslCtxFree::operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }

std::string openssl_reason() {
  const unsigned long code = ERR_peek_last_error();
  const char* reason = code != 0 ? ERR_reason_error_string(code) : nullptr;
  ERR_clear_error();
  return reason != nullptr ? reason : "unknown error";
}

Result<SslCtxPtr> make_client_context(const TlsOptions& tls) {
  ERR_clear_error();
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return make_error(ErrorKind::kTls, "cannot create a TLS context: " + openssl_reason());
  SSL_CTX* native = ctx.get();
  if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1) {
    return make_error(ErrorKind::kTls, "cannot require TLS 1.2: " + openssl_reason());
  }
  SSL_CTX_set_options(native, SSL_OP_ALL | SSL_OP_NO_COMPRESSION | SSL_OP_NO_SSLv3 |
                                  SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1);
  if (!tls.ca_pem.empty()) {
    if (auto added = add_certificate_authorities(native, tls.ca_pem); !added) {
      return tl::unexpected(added.error());
    }
  }
  if (tls.insecure_skip_verify) {
    SSL_CTX_set_verify(native, SSL_VERIFY_NONE, nullptr);
  } else {
    SSL_CTX_set_verify(native, SSL_VERIFY_PEER, nullptr);
    if (tls.ca_pem.empty() && SSL_CTX_set_default_verify_paths(native) != 1) {
      return make_error(ErrorKind::kConfig,
                        "cannot load the system trust store: " + openssl_reason());
    }
  }
  if (!tls.client_cert_pem.empty() && tls.client_key_pem.empty()) {
    return make_error(ErrorKind::kConfig, "client-certificate data given without client-key data");
  }
  if (tls.client_cert_pem.empty() && !tls.client_key_pem.empty()) {
    return make_error(ErrorKind::kConfig, "client-key data given without client-certificate data");
  }
  if (!tls.client_cert_pem.empty()) {
    if (auto used = use_certificate_chain(native, tls.client_cert_pem); !used) {
      return tl::unexpected(used.error());
    }
    if (auto used = use_private_key(native, tls.client_key_pem); !used) {
      return tl::unexpected(used.error());
    }
    if (SSL_CTX_check_private_key(native) != 1) {
      return make_error(ErrorKind::kConfig,
                        "client-key does not match client-certificate: " + openssl_reason());
    }
  }
  return ctx;
}

bool prepare_client_connection(SSL* ssl, const TlsOptions& options, const std::string& verify_name,
                               bool verify_name_is_ip) {
  if (!verify_name_is_ip) {
    if (SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                 const_cast<char*>(verify_name.c_str())) != 1) {
      return false;
    }
  }
  if (options.insecure_skip_verify) return true;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  if (verify_name_is_ip) return X509_VERIFY_PARAM_set1_ip_asc(param, verify_name.c_str()) == 1;
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return X509_VERIFY_PARAM_set1_host(param, verify_name.c_str(), verify_name.size()) == 1;
}

}  // namespace kstack::kube::tls
