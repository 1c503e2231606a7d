// Helpers of the admission server tests (header-only; used by the unit tests of this folder and
// by tests/integration/admission): self-signed certificates made with the OpenSSL API, a raw TLS
// client for byte-level tests (slow clients, peer certificate fingerprints), a scriptable
// AdmissionHandler, AdmissionReview bodies, and a running server with a kube transport to it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include <arpa/inet.h>
#include <boost/json.hpp>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kube/transport.h"
#include "validator/server.h"

namespace kstack::validator::testing {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Waits for a condition that becomes true on a server thread (a counter updated just after a
// socket closes), checking every millisecond until `timeout`.
template <class Predicate>
bool eventually(Predicate done, std::chrono::milliseconds timeout = 2s) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// ---- Certificates -------------------------------------------------------------------------

struct TestCert {
  std::string cert_pem;
  std::string key_pem;
  std::string fingerprint;  // SHA-256 of the DER certificate, hex
};

inline std::string hex(const unsigned char* data, unsigned int size) {
  std::string out;
  char byte[3];
  for (unsigned int i = 0; i < size; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", data[i]);
    out += byte;
  }
  return out;
}

inline std::string fingerprint(X509* cert) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (X509_digest(cert, EVP_sha256(), md, &size) != 1) throw std::runtime_error("X509_digest");
  return hex(md, size);
}

// A self-signed ECDSA P-256 certificate for 127.0.0.1 and localhost, its own CA.
inline TestCert make_self_signed(const std::string& common_name) {
  const auto check = [](bool ok, const char* what) {
    if (!ok) throw std::runtime_error(std::string("test certificate: ") + what);
  };
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), &EVP_PKEY_free);
  check(key != nullptr, "EVP_EC_gen");
  std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), &X509_free);
  check(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), 2);
  static std::atomic<long> serial{1};
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial.fetch_add(1));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert.get(), name);
  X509_set_pubkey(cert.get(), key.get());
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
  for (const auto& [nid, value] : {std::pair{NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"},
                                   std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    check(ext != nullptr && X509_add_ext(cert.get(), ext, -1) == 1, "extension");
    X509_EXTENSION_free(ext);
  }
  check(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0, "X509_sign");

  const auto to_pem = [](auto write) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
    write(bio.get());
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(size));
  };
  TestCert out;
  out.cert_pem = to_pem([&](BIO* b) { PEM_write_bio_X509(b, cert.get()); });
  out.key_pem = to_pem([&](BIO* b) {
    PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  out.fingerprint = fingerprint(cert.get());
  return out;
}

// ---- A raw TLS client ---------------------------------------------------------------------

// OpenSSL writes to the socket with write(): when the server closed first (at its connection
// limit), the write must fail with EPIPE rather than kill the test process with SIGPIPE.
inline const bool kSigpipeIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();

// Blocking OpenSSL client on a socket with poll()-based deadlines. No certificate
// verification: tests look at the peer certificate's fingerprint instead.
class RawTlsClient {
 public:
  static std::unique_ptr<RawTlsClient> connect(std::uint16_t port,
                                               std::chrono::milliseconds timeout = 5s) {
    auto c = std::unique_ptr<RawTlsClient>(new RawTlsClient);
    c->fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd_ < 0) return nullptr;
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(c->fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(c->fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(c->fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(c->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return nullptr;
    c->ctx_ = SSL_CTX_new(TLS_client_method());
    c->ssl_ = SSL_new(c->ctx_);
    SSL_set_fd(c->ssl_, c->fd_);
    if (SSL_connect(c->ssl_) != 1) {
      ERR_clear_error();
      return nullptr;
    }
    return c;
  }
  ~RawTlsClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
  }
  RawTlsClient(const RawTlsClient&) = delete;
  RawTlsClient& operator=(const RawTlsClient&) = delete;

  std::string peer_fingerprint() const {
    X509* peer = SSL_get1_peer_certificate(ssl_);
    if (peer == nullptr) return {};
    std::string out = fingerprint(peer);
    X509_free(peer);
    return out;
  }
  std::string protocol() const { return SSL_get_version(ssl_); }

  bool write(std::string_view data) {
    while (!data.empty()) {
      const int n = SSL_write(ssl_, data.data(), static_cast<int>(data.size()));
      if (n <= 0) {
        ERR_clear_error();
        return false;
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // Waits up to `timeout` for something to read: returns the bytes read, "" when the peer
  // closed (or reset), nullopt when nothing came in time.
  std::optional<std::string> read_some(std::chrono::milliseconds timeout) {
    if (SSL_pending(ssl_) == 0) {
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(timeout.count())) == 0) return std::nullopt;
    }
    char buf[16384];
    const int n = SSL_read(ssl_, buf, sizeof buf);
    if (n <= 0) {
      ERR_clear_error();
      return std::string();
    }
    return std::string(buf, static_cast<std::size_t>(n));
  }

  // Reads one HTTP response (Content-Length delimited) before `deadline`; "" if none.
  std::string read_response(Clock::time_point deadline) {
    std::string in;
    for (;;) {
      const auto header_end = in.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        const auto at = in.find("Content-Length: ");
        const std::size_t length = at == std::string::npos ? 0 : std::stoul(in.substr(at + 16));
        if (in.size() >= header_end + 4 + length) return in;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left <= 0ms) return {};
      auto got = read_some(left);
      if (!got || got->empty()) return {};
      in += *got;
    }
  }

 private:
  RawTlsClient() = default;
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

// ---- A scriptable handler -----------------------------------------------------------------

// Decides by metadata.name of the object: "deny-*" is denied (403), "throw" throws, "block"
// waits until release() (or 10 s); everything else is allowed with a warning. mutate() adds a
// label with a JSON patch.
class TestHandler final : public AdmissionHandler {
 public:
  AdmissionResponse validate(const AdmissionRequest& request) override {
    calls_.fetch_add(1);
    const std::string name = object_name(request);
    if (name == "throw") throw std::runtime_error("boom");
    if (name == "block") wait_released();
    if (name.rfind("deny-", 0) == 0) {
      return AdmissionResponse::deny(403, "Forbidden",
                                     "metadata.name: \"" + name + "\" is not allowed");
    }
    AdmissionResponse r = AdmissionResponse::allow();
    r.warnings.push_back("checked by kstack test handler");
    return r;
  }
  AdmissionResponse mutate(const AdmissionRequest& request) override {
    calls_.fetch_add(1);
    if (object_name(request) == "throw") throw std::runtime_error("boom");
    AdmissionResponse r = AdmissionResponse::allow();
    boost::json::object op{
        {"op", "add"}, {"path", "/metadata/labels/kstack-mutated"}, {"value", "yes"}};
    r.patch = boost::json::array{op};
    return r;
  }

  // Blocks until a "block" request arrived (returns false after `timeout`).
  bool wait_blocked(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return blocked_; });
  }
  void release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  int calls() const { return calls_.load(); }

 private:
  static std::string object_name(const AdmissionRequest& request) {
    const auto* object = request.object.if_object();
    const auto* metadata = object != nullptr ? object->if_contains("metadata") : nullptr;
    const auto* name = metadata != nullptr && metadata->is_object()
                           ? metadata->get_object().if_contains("name")
                           : nullptr;
    return name != nullptr && name->is_string() ? std::string(name->get_string()) : request.name;
  }
  void wait_released() {
    std::unique_lock lock(mu_);
    blocked_ = true;
    cv_.notify_all();
    cv_.wait_for(lock, 10s, [&] { return released_; });
  }

  std::atomic<int> calls_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool blocked_ = false;
  bool released_ = false;
};

// ---- Requests -----------------------------------------------------------------------------

inline std::string review_body(std::string_view api_version, std::string_view uid,
                               std::string_view name, std::string_view operation = "CREATE") {
  boost::json::object object{
      {"apiVersion", "kstack.io/v1beta1"},
      {"kind", "Stack"},
      {"metadata", {{"name", name}, {"namespace", "default"}}},
      {"spec",
       {{"app", "spark"}, {"roles", boost::json::array{{{"id", "worker"}, {"members", 2}}}}}}};
  boost::json::object request{
      {"uid", uid},
      {"kind", {{"group", "kstack.io"}, {"version", "v1beta1"}, {"kind", "Stack"}}},
      {"resource", {{"group", "kstack.io"}, {"version", "v1beta1"}, {"resource", "stacks"}}},
      {"name", name},
      {"namespace", "default"},
      {"operation", operation},
      {"userInfo", {{"username", "alice"}, {"groups", boost::json::array{"system:authenticated"}}}},
      {"object", object},
      {"oldObject", nullptr},
      {"dryRun", false}};
  boost::json::object review{
      {"apiVersion", api_version}, {"kind", "AdmissionReview"}, {"request", request}};
  return boost::json::serialize(review);
}

inline kube::HttpRequest post(std::string target, std::string body,
                              std::string content_type = "application/json") {
  kube::HttpRequest r;
  r.method = "POST";
  r.target = std::move(target);
  r.headers.push_back({"Content-Type", std::move(content_type)});
  r.body = std::move(body);
  return r;
}

inline kube::HttpRequest get(std::string target) {
  kube::HttpRequest r;
  r.method = "GET";
  r.target = std::move(target);
  return r;
}

// ---- A running server ---------------------------------------------------------------------

inline ServerOptions test_options(const TestCert& cert) {
  ServerOptions o;
  o.bind_address = "127.0.0.1";
  o.port = 0;
  o.threads = 2;
  o.header_timeout = 2s;
  o.body_timeout = 2s;
  o.idle_timeout = 5s;
  o.shutdown_timeout = 5s;
  o.cert_pem = cert.cert_pem;
  o.key_pem = cert.key_pem;
  return o;
}

inline std::unique_ptr<kube::Transport> transport_to(std::uint16_t port,
                                                     const std::string& ca_pem) {
  kube::TransportOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.tls.ca_pem = ca_pem;
  o.request_timeout = 10s;
  auto t = kube::make_transport(o);
  if (!t) throw std::runtime_error("transport: " + t.error().to_string());
  return std::move(*t);
}

inline std::unique_ptr<AdmissionServer> start_server(ServerOptions options,
                                                     AdmissionHandler& handler) {
  auto server = start_admission_server(std::move(options), handler);
  if (!server) throw std::runtime_error("admission server: " + server.error().to_string());
  return std::move(*server);
}

inline boost::json::value parse_json(std::string_view body) {
  boost::system::error_code ec;
  auto v = boost::json::parse(body, ec);
  if (ec) throw std::runtime_error("not JSON: " + std::string(body.substr(0, 200)));
  return v;
}

}  // namespace kstack::validator::testing
