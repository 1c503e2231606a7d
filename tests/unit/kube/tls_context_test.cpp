// One client SSL_CTX (kube/tls_context.h) shared by concurrent handshakes, as the transport's
// connection pool shares it: every handshake verifies the server, and the name to verify stays
// with its own connection. In the TSan build (docs/sanitizers.md) this is also the smallest
// reproduction of OpenSSL's certificate-cache report that tests/sanitizers/tsan.supp covers:
// each round starts from a fresh context, so the trust-store CA's extensions are cached by the
// first of several handshakes released at once.
#include "kube/tls_context.h"

#include <barrier>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include "validator/certs.h"

namespace kstack::kube::tls {
namespace {

// Each round on a fresh context; without the suppression TSan reports the cache race in most
// single rounds.
constexpr int kRounds = 16;
constexpr int kThreads = 4;
constexpr int kHandshakesPerThread = 2;
constexpr const char* kServerName = "apiserver.kstack.test";

struct Pki {
  validator::CertificateAndKey ca;
  validator::CertificateAndKey server;
};

Pki make_pki() {
  auto ca = validator::generate_ca({});
  if (!ca) throw std::runtime_error(ca.error().message);
  validator::ServingCertificateOptions serving;
  serving.dns_names = {kServerName};
  auto server = validator::generate_serving_certificate(*ca, serving);
  if (!server) throw std::runtime_error(server.error().message);
  return {*ca, *server};
}

// A server context of its own per thread: only the client context is under test.
SslCtxPtr server_context(const validator::CertificateAndKey& server) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  std::unique_ptr<BIO, decltype(&BIO_free)> cert_bio(
      BIO_new_mem_buf(server.cert_pem.data(), static_cast<int>(server.cert_pem.size())), &BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr), &X509_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> key_bio(
      BIO_new_mem_buf(server.key_pem.data(), static_cast<int>(server.key_pem.size())), &BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
  if (!ctx || !cert || !key || SSL_CTX_use_certificate(ctx.get(), cert.get()) != 1 ||
      SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1) {
    throw std::runtime_error("server context: " + openssl_reason());
  }
  return ctx;
}

// The client's verify result after a handshake over an in-memory BIO pair, or -1 if the
// handshake did not complete.
long handshake(SSL_CTX* client_ctx, SSL_CTX* server_ctx, const TlsOptions& options,
               const std::string& verify_name) {
  std::unique_ptr<SSL, decltype(&SSL_free)> client(SSL_new(client_ctx), &SSL_free);
  std::unique_ptr<SSL, decltype(&SSL_free)> server(SSL_new(server_ctx), &SSL_free);
  BIO* client_end = nullptr;
  BIO* server_end = nullptr;
  if (!client || !server || BIO_new_bio_pair(&client_end, 0, &server_end, 0) != 1) return -1;
  SSL_set_bio(client.get(), client_end, client_end);  // each SSL owns its end
  SSL_set_bio(server.get(), server_end, server_end);
  if (!prepare_client_connection(client.get(), options, verify_name, false)) return -1;
  SSL_set_connect_state(client.get());
  SSL_set_accept_state(server.get());
  bool client_done = false;
  bool server_done = false;
  // A TLS 1.3 handshake takes a handful of flights; each call moves at most one forward.
  for (int step = 0; step < 64 && !(client_done && server_done); ++step) {
    if (!client_done) client_done = SSL_do_handshake(client.get()) == 1;
    if (!server_done) server_done = SSL_do_handshake(server.get()) == 1;
  }
  const long verify = SSL_get_verify_result(client.get());
  if (!client_done && verify == X509_V_OK) return -1;  // failed, but not in verification
  return verify;
}

// Runs kThreads × kHandshakesPerThread handshakes released together on one client context;
// thread t verifies names[t % names.size()]. Returns the verify results, per thread.
std::vector<std::vector<long>> concurrent_handshakes(const Pki& pki,
                                                     const std::vector<std::string>& names) {
  TlsOptions options;
  options.ca_pem = pki.ca.cert_pem;
  auto client_ctx = make_client_context(options);
  if (!client_ctx) throw std::runtime_error(client_ctx.error().message);
  std::vector<std::vector<long>> results(kThreads);
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Made here, not before the threads start: a thread's first use of OpenSSL's random
      // generators seeds its own from the shared one under a lock TSan sees, which would order
      // the handshakes. The transport's long-lived threads are past that.
      const SslCtxPtr server_ctx = server_context(pki.server);
      start.arrive_and_wait();
      for (int i = 0; i < kHandshakesPerThread; ++i) {
        results[t].push_back(
            handshake(client_ctx->get(), server_ctx.get(), options, names[t % names.size()]));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return results;
}

TEST(SharedClientContext, ConcurrentHandshakesAllVerifyTheServer) {
  const Pki pki = make_pki();
  for (int round = 0; round < kRounds; ++round) {
    const auto results = concurrent_handshakes(pki, {kServerName});
    for (int t = 0; t < kThreads; ++t) {
      for (long verify : results[t]) {
        EXPECT_EQ(verify, X509_V_OK) << "round " << round << ", thread " << t << ": "
                                     << X509_verify_cert_error_string(verify);
      }
    }
  }
}

TEST(SharedClientContext, TheNameToVerifyBelongsToEachConnectionNotToTheContext) {
  const Pki pki = make_pki();
  // Half the threads expect another name: each connection's result follows its own name.
  const auto results = concurrent_handshakes(pki, {kServerName, "elsewhere.kstack.test"});
  for (int t = 0; t < kThreads; ++t) {
    const long expected = t % 2 == 0 ? X509_V_OK : X509_V_ERR_HOSTNAME_MISMATCH;
    for (long verify : results[t]) {
      EXPECT_EQ(verify, expected) << "thread " << t << ": "
                                  << X509_verify_cert_error_string(verify);
    }
  }
}

}  // namespace
}  // namespace kstack::kube::tls
