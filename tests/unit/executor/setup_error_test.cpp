// Setup errors are typed by what they mean for the member (executor/setup_error.h): only a
// wrong setup is a config error; the API server's refusals stay API errors.
#include "executor/setup_error.h"

#include <atomic>
#include <string>
#include <thread>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "executor/setup.h"
#include "kube/client.h"
#include "validator/certs.h"

namespace kstack::executor {
// For GoogleTest's messages (found by argument-dependent lookup, so not in the anonymous
// namespace).
inline void PrintTo(SetupErrorKind kind, std::ostream* out) { *out << to_string(kind); }

namespace {

kube::Error server_error(kube::ErrorKind kind, int status, std::string reason) {
  kube::Error e;
  e.kind = kind;
  e.http_status = status;
  e.reason = std::move(reason);
  e.message = "from the server";
  return e;
}

kube::Error local_error(kube::ErrorKind kind, std::string reason = {}) {
  kube::Error e = server_error(kind, 0, std::move(reason));
  e.message = "on this side";
  return e;
}

TEST(SetupErrorClassify, AnInvalidAnswerFromTheApiServerIsAnApiErrorNotAConfigError) {
  const auto e = classify(server_error(kube::ErrorKind::kInvalid, 422, "Invalid"));
  EXPECT_EQ(e.kind, SetupErrorKind::kApi);
  ASSERT_TRUE(e.api.has_value());
  EXPECT_EQ(e.api->http_status, 422);
}

TEST(SetupErrorClassify, AConflictFromTheApiServerIsNotAChangedContainer) {
  EXPECT_EQ(classify(server_error(kube::ErrorKind::kConflict, 409, "Conflict")).kind,
            SetupErrorKind::kApi);
}

TEST(SetupErrorClassify, ExecRefusingAnotherContainerIsAChangedContainer) {
  EXPECT_EQ(classify(local_error(kube::ErrorKind::kConflict, "ContainerChanged")).kind,
            SetupErrorKind::kContainerChanged);
}

TEST(SetupErrorClassify, ClientSideFailuresAreTransportOrTimeout) {
  EXPECT_EQ(classify(local_error(kube::ErrorKind::kTimeout)).kind, SetupErrorKind::kTimeout);
  EXPECT_EQ(classify(local_error(kube::ErrorKind::kTransport)).kind, SetupErrorKind::kTransport);
  EXPECT_EQ(classify(local_error(kube::ErrorKind::kTls)).kind, SetupErrorKind::kTransport);
}

TEST(SetupErrorClassify, KeepsTheClientErrorAndItsMessage) {
  const auto e = classify(server_error(kube::ErrorKind::kForbidden, 403, "Forbidden"));
  EXPECT_EQ(e.kind, SetupErrorKind::kApi);
  EXPECT_EQ(e.message, "from the server");
  EXPECT_EQ(e.to_string(), "API error: from the server");
  ASSERT_TRUE(e.api.has_value());
  EXPECT_EQ(e.api->reason, "Forbidden");
}

TEST(SetupErrorKilled, AStepShellKilledBeforeItReportedIsRetriedNotAConfigError) {
  // The shell of write_config SIGKILLed (exit 137, no exit trailer on stderr).
  auto killed = killed_before_reporting("write_config in pod ns/p", 137, false);
  ASSERT_TRUE(killed.has_value());
  EXPECT_EQ(killed->kind, SetupErrorKind::kTransport);
  EXPECT_EQ(killed->message,
            "write_config in pod ns/p was killed by signal 9 (exit 137) before it reported its "
            "end");
  EXPECT_FALSE(killed->api.has_value());
  EXPECT_EQ(killed_before_reporting("install", 143, false)->kind, SetupErrorKind::kTransport);
  // A script that ended and reported its code, whatever the code: the step decides.
  EXPECT_FALSE(killed_before_reporting("write_config", 137, true).has_value());
  // Ordinary exits, and codes that are not a signal's.
  for (int code : {0, 1, 96, 98, 126, 127, 128, 193, 255}) {
    EXPECT_FALSE(killed_before_reporting("write_config", code, false).has_value()) << code;
  }
}

// An HTTPS server on loopback (exec needs https) answering every request with one 422 Status.
class InvalidAnsweringServer {
 public:
  InvalidAnsweringServer() {
    auto ca = validator::generate_ca({});
    validator::ServingCertificateOptions serving;
    serving.ip_addresses = {"127.0.0.1"};
    auto cert =
        ca ? validator::generate_serving_certificate(*ca, serving) : tl::unexpected(ca.error());
    if (!cert) {
      ADD_FAILURE() << "certificates: " << cert.error().message;
      return;
    }
    ca_pem_ = ca->cert_pem;
    ctx_ = SSL_CTX_new(TLS_server_method());
    BIO* cert_bio = BIO_new_mem_buf(cert->cert_pem.data(), static_cast<int>(cert->cert_pem.size()));
    BIO* key_bio = BIO_new_mem_buf(cert->key_pem.data(), static_cast<int>(cert->key_pem.size()));
    X509* x509 = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
    const bool loaded = x509 != nullptr && key != nullptr &&
                        SSL_CTX_use_certificate(ctx_, x509) == 1 &&
                        SSL_CTX_use_PrivateKey(ctx_, key) == 1;
    X509_free(x509);
    EVP_PKEY_free(key);
    BIO_free(cert_bio);
    BIO_free(key_bio);
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (!loaded || fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(fd_, 8) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ADD_FAILURE() << "cannot serve TLS on loopback";
      return;
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~InvalidAnsweringServer() {
    ::shutdown(fd_, SHUT_RDWR);  // ends accept()
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
    SSL_CTX_free(ctx_);
  }
  std::string url() const { return fmt::format("https://127.0.0.1:{}", port_); }
  const std::string& ca_pem() const { return ca_pem_; }
  int requests() const { return requests_.load(); }

 private:
  void serve() {
    for (;;) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, c);
      if (SSL_accept(ssl) == 1) answer(ssl);
      SSL_shutdown(ssl);
      SSL_free(ssl);
      ::close(c);
    }
  }
  void answer(SSL* ssl) {
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      const int n = SSL_read(ssl, buf, sizeof buf);
      if (n <= 0) return;
      request.append(buf, static_cast<std::size_t>(n));
    }
    ++requests_;
    const std::string body =
        R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid",)"
        R"("code":422,"message":"Pod \"p\" is invalid: spec: Forbidden"})";
    const std::string answer = fmt::format(
        "HTTP/1.1 422 Unprocessable Entity\r\nContent-Type: application/json\r\n"
        "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
        body.size(), body);
    SSL_write(ssl, answer.data(), static_cast<int>(answer.size()));
  }
  SSL_CTX* ctx_ = nullptr;
  std::string ca_pem_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> requests_{0};
  std::thread thread_;
};

TEST(SetupRunner, A422FromTheApiServerDuringSetupIsNotAConfigError) {
  InvalidAnsweringServer server;
  kube::Config cfg;
  cfg.server = server.url();
  cfg.ca_pem = server.ca_pem();
  cfg.qps = 0;
  auto client = kube::Client::create(cfg);
  ASSERT_TRUE(client) << client.error().to_string();
  SetupRunner runner(*client);
  const MemberTarget member{"ns", "p", "containerd://abc"};

  auto written = runner.write_config(member, "{}", "");
  ASSERT_FALSE(written);
  EXPECT_GE(server.requests(), 1);
  EXPECT_NE(written.error().kind, SetupErrorKind::kConfig) << written.error().to_string();
  EXPECT_EQ(written.error().kind, SetupErrorKind::kApi) << written.error().to_string();
  ASSERT_TRUE(written.error().api.has_value());
  EXPECT_EQ(written.error().api->http_status, 422);
  EXPECT_NE(written.error().message.find("write_config in pod ns/p"), std::string::npos)
      << written.error().message;

  auto installed = runner.install_package(member, {"file:///tmp/pkg.tgz", std::nullopt});
  ASSERT_FALSE(installed);
  EXPECT_EQ(installed.error().kind, SetupErrorKind::kApi) << installed.error().to_string();
}

}  // namespace
}  // namespace kstack::executor
