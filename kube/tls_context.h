// kstack's TLS client policy in one place, for every connection to the API server (the HTTP
// transport and exec over WebSocket): TLS 1.2 or later, the kubeconfig's CA bundle (else the
// system trust store), an optional client certificate, and verification of the server's name or
// IP address. Plain OpenSSL, so that including it costs no Asio/Beast compile time.
#pragma once

#include <memory>
#include <string>

#include <openssl/types.h>

#include "kube/error.h"
#include "kube/transport.h"

namespace kstack::kube::tls {

struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const;
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;

// A client context for `options`. Unusable PEM data or a half-given client certificate is
// kConfig (the message names the kubeconfig field); an OpenSSL failure is kTls.
Result<SslCtxPtr> make_client_context(const TlsOptions& options);

// Prepares one connection made from such a context: SNI with `verify_name` (unless it is an IP
// address: SNI carries names only) and, unless `options.insecure_skip_verify`, the name or IP
// address the certificate must match — checked by OpenSSL during chain verification, so a
// mismatch reports as a verification error. False if OpenSSL refused the name: connecting then
// would verify no name at all.
bool prepare_client_connection(SSL* ssl, const TlsOptions& options, const std::string& verify_name,
                               bool verify_name_is_ip);

// The reason of the last queued OpenSSL error ("unknown error" if none); clears the queue.
std::string openssl_reason();

}  // namespace kstack::kube::tls
