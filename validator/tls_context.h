// The admission server's TLS configuration, built with plain OpenSSL so that it compiles apart
// from the Beast translation unit (server.cpp): TLS 1.2+, the serving chain and its key.
#pragma once

#include <memory>
#include <string_view>

#include "kube/error.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace kstack::validator::detail {

struct SslCtxFree {
  void operator()(ssl_ctx_st* ctx) const;
};
using SslCtxPtr = std::unique_ptr<ssl_ctx_st, SslCtxFree>;

// A server SSL_CTX for `cert_pem` (leaf first, then intermediates) and `key_pem`. Errors
// (kInvalidArgument) say which PEM is wrong, or that the key does not match the certificate.
kube::Result<SslCtxPtr> make_server_tls_context(std::string_view cert_pem,
                                                std::string_view key_pem);

}  // namespace kstack::validator::detail
