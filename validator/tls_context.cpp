// Server TLS contexts for the admission webhook (see tls_context.h).
#include "validator/tls_context.h"

#include <string>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace kstack::validator::detail {

void SslCtxFree::operator()(ssl_ctx_st* ctx) const { SSL_CTX_free(ctx); }

namespace {

// Lets clients resume sessions (saves a handshake per reconnect of the API server).
constexpr unsigned char kSessionIdContext[] = "kstack-admission";

std::string openssl_reason() {
  const unsigned long code = ERR_peek_last_error();
  const char* reason = code != 0 ? ERR_reason_error_string(code) : nullptr;
  ERR_clear_error();
  return reason != nullptr ? reason : "unknown error";
}

tl::unexpected<kube::Error> invalid(std::string message) {
  return kube::make_error(kube::ErrorKind::kInvalidArgument, std::move(message));
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::unique_ptr<BIO, BioFree> memory_bio(std::string_view pem) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// PEM end-of-input shows as "no start line": the normal end of a chain.
bool only_end_of_pem() {
  const unsigned long last = ERR_peek_last_error();
  const bool end = last == 0 || (ERR_GET_LIB(last) == ERR_LIB_PEM &&
                                 ERR_GET_REASON(last) == PEM_R_NO_START_LINE);
  if (end) ERR_clear_error();
  return end;
}

kube::Result<void> use_chain(SSL_CTX* ctx, std::string_view cert_pem) {
  auto bio = memory_bio(cert_pem);
  if (!bio) return invalid("serving certificate: " + openssl_reason());
  std::unique_ptr<X509, X509Free> leaf(PEM_read_bio_X509_AUX(bio.get(), nullptr, nullptr, nullptr));
  if (!leaf) return invalid("serving certificate is not a PEM certificate: " + openssl_reason());
  if (SSL_CTX_use_certificate(ctx, leaf.get()) != 1) {
    return invalid("serving certificate refused: " + openssl_reason());
  }
  while (X509* intermediate = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(ctx, intermediate) != 1) {  // takes ownership on success
      X509_free(intermediate);
      return invalid("serving certificate chain refused: " + openssl_reason());
    }
  }
  if (!only_end_of_pem()) {
    return invalid("serving certificate chain holds an invalid PEM block: " + openssl_reason());
  }
  return {};
}

kube::Result<void> use_key(SSL_CTX* ctx, std::string_view key_pem) {
  auto bio = memory_bio(key_pem);
  if (!bio) return invalid("serving key: " + openssl_reason());
  std::unique_ptr<EVP_PKEY, PkeyFree> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return invalid("serving key is not a PEM private key: " + openssl_reason());
  X509* leaf = SSL_CTX_get0_certificate(ctx);
  if (leaf == nullptr || X509_check_private_key(leaf, key.get()) != 1) {
    return invalid("serving key does not match the serving certificate: " + openssl_reason());
  }
  if (SSL_CTX_use_PrivateKey(ctx, key.get()) != 1) {
    return invalid("serving key refused: " + openssl_reason());
  }
  return {};
}

}  // namespace

kube::Result<SslCtxPtr> make_server_tls_context(std::string_view cert_pem,
                                                std::string_view key_pem) {
  ERR_clear_error();
  if (cert_pem.empty()) return invalid("serving certificate is empty");
  if (key_pem.empty()) return invalid("serving key is empty");
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) {
    return kube::make_error(kube::ErrorKind::kTls,
                            "cannot create a TLS context: " + openssl_reason());
  }
  SSL_CTX* c = ctx.get();
  if (SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION) != 1) {
    return kube::make_error(kube::ErrorKind::kTls, "cannot require TLS 1.2: " + openssl_reason());
  }
  SSL_CTX_set_options(c, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                             SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_SINGLE_ECDH_USE);
  SSL_CTX_set_session_id_context(c, kSessionIdContext, sizeof kSessionIdContext - 1);
  if (auto chain = use_chain(c, cert_pem); !chain) return tl::unexpected(chain.error());
  if (auto key = use_key(c, key_pem); !key) return tl::unexpected(key.error());
  return ctx;
}

}  // namespace kstack::validator::detail
