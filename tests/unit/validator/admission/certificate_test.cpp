// Serving certificate changes without a restart (validator/server.h): set_certificate swaps
// the certificate for new handshakes, keeps established connections, refuses bad PEMs; the
// CertificateFileWatcher installs changed files (cert-manager style).
#include <filesystem>
#include <fstream>
#include <future>

#include <gtest/gtest.h>

#include "tests/unit/validator/admission/support.h"

namespace kstack::validator {
namespace {

using namespace testing;  // NOLINT: the test helpers

std::string peer_fingerprint(std::uint16_t port) {
  auto raw = RawTlsClient::connect(port);
  return raw ? raw->peer_fingerprint() : "(no connection)";
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  const auto tmp = path.string() + ".tmp";
  std::ofstream(tmp, std::ios::binary | std::ios::trunc) << content;
  std::filesystem::rename(tmp, path);  // atomically, as a writer should
}

class CertificateTest : public ::testing::Test {
 protected:
  void SetUp() override { server_ = start_server(test_options(first_), handler_); }
  TestCert first_ = make_self_signed("first");
  TestCert second_ = make_self_signed("second");
  TestHandler handler_;
  std::unique_ptr<AdmissionServer> server_;
};

TEST_F(CertificateTest, NewHandshakesSeeTheNewCertificateAndOpenConnectionsKeepWorking) {
  EXPECT_EQ(peer_fingerprint(server_->port()), first_.fingerprint);
  auto old_client = transport_to(server_->port(), first_.cert_pem);
  ASSERT_EQ(old_client->send(get("/healthz"))->status, 200);

  ASSERT_TRUE(server_->set_certificate(second_.cert_pem, second_.key_pem));
  EXPECT_EQ(peer_fingerprint(server_->port()), second_.fingerprint);
  auto new_client = transport_to(server_->port(), second_.cert_pem);
  EXPECT_EQ(new_client->send(get("/healthz"))->status, 200);
  // A client trusting only the old certificate: its kept-alive connection still works...
  for (int i = 0; i < 3; ++i) {
    auto r = old_client->send(post("/validate", review_body("admission.k8s.io/v1", "u", "s")));
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->status, 200);
  }
  EXPECT_EQ(old_client->stats().connections_opened, 1u);
  // ...but a new connection of it fails verification.
  auto fresh_old = transport_to(server_->port(), first_.cert_pem);
  auto refused = fresh_old->send(get("/healthz"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, kube::ErrorKind::kTls);
}

TEST_F(CertificateTest, SwapsUnderLoadWithoutAFailedRequest) {
  std::atomic<bool> done{false};
  auto load = std::async(std::launch::async, [&] {
    int failures = 0;
    int sent = 0;
    kube::TransportOptions o;  // trusts both certificates
    o.host = "127.0.0.1";
    o.port = server_->port();
    o.tls.ca_pem = first_.cert_pem + second_.cert_pem;
    auto t = std::move(*kube::make_transport(o));
    while (!done || sent < 50) {
      auto r = t->send(post("/validate", review_body("admission.k8s.io/v1", "u", "s")));
      failures += !r || r->status != 200;
      ++sent;
      if (sent % 5 == 0) t = std::move(*kube::make_transport(o));  // new handshakes too
    }
    return failures;
  });
  for (int i = 0; i < 20; ++i) {
    const TestCert& next = i % 2 ? first_ : second_;
    ASSERT_TRUE(server_->set_certificate(next.cert_pem, next.key_pem));
  }
  done = true;
  EXPECT_EQ(load.get(), 0);
}

TEST_F(CertificateTest, ABadCertificateIsRefusedAndTheOldOneStays) {
  auto garbage = server_->set_certificate("not a pem", second_.key_pem);
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().message.rfind("serving certificate is not a PEM certificate", 0), 0u)
      << garbage.error().message;
  auto no_key = server_->set_certificate(second_.cert_pem, "");
  ASSERT_FALSE(no_key);
  EXPECT_EQ(no_key.error().message, "serving key is empty");
  auto mismatch = server_->set_certificate(second_.cert_pem, first_.key_pem);
  ASSERT_FALSE(mismatch);
  EXPECT_EQ(mismatch.error().message.rfind("serving key does not match the serving certificate", 0),
            0u)
      << mismatch.error().message;
  EXPECT_EQ(peer_fingerprint(server_->port()), first_.fingerprint);
}

TEST(AdmissionServerStart, RefusesABadCertificateOrAddress) {
  TestHandler handler;
  const TestCert cert = make_self_signed("x");
  auto options = test_options(cert);
  options.key_pem = make_self_signed("y").key_pem;
  auto mismatch = start_admission_server(options, handler);
  ASSERT_FALSE(mismatch);
  EXPECT_EQ(mismatch.error().kind, kube::ErrorKind::kInvalidArgument);
  options = test_options(cert);
  options.bind_address = "not-an-ip";
  EXPECT_FALSE(start_admission_server(options, handler));
}

class CertificateFileTest : public CertificateTest {
 protected:
  void SetUp() override {
    CertificateTest::SetUp();
    char tmpl[] = "/tmp/kstack-admission-certs-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    files_ = {dir_ / "tls.crt", dir_ / "tls.key"};
    write_file(files_.cert_file, first_.cert_pem);
    write_file(files_.key_file, first_.key_pem);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  CertificateFiles files_;
};

TEST_F(CertificateFileTest, ReadsTheFilesAndNamesAMissingOne) {
  auto pems = read_certificate_files(files_);
  ASSERT_TRUE(pems);
  EXPECT_EQ(pems->cert_pem, first_.cert_pem);
  EXPECT_EQ(pems->key_pem, first_.key_pem);
  auto missing = read_certificate_files({dir_ / "nope.crt", files_.key_file});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, kube::ErrorKind::kConfig);
  EXPECT_NE(missing.error().message.find("nope.crt"), std::string::npos);
}

TEST_F(CertificateFileTest, TheWatcherInstallsChangedFilesOnItsOwn) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<bool> results;
  CertificateWatchOptions options;
  options.files = files_;
  options.poll_interval = 50ms;
  options.on_reload = [&](const kube::Result<void>& r) {
    std::lock_guard lock(mu);
    results.push_back(r.has_value());
    cv.notify_all();
  };
  CertificateFileWatcher watcher(*server_, options, *read_certificate_files(files_));
  const auto wait_results = [&](std::size_t n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 5s, [&] { return results.size() >= n; });
  };

  // The key is replaced first (refused: it does not match), then the certificate follows.
  write_file(files_.key_file, second_.key_pem);
  ASSERT_TRUE(wait_results(1));
  EXPECT_EQ(peer_fingerprint(server_->port()), first_.fingerprint);
  write_file(files_.cert_file, second_.cert_pem);
  ASSERT_TRUE(wait_results(2));
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(results, (std::vector<bool>{false, true}));
  }
  EXPECT_EQ(watcher.reloads(), 1u);
  EXPECT_EQ(peer_fingerprint(server_->port()), second_.fingerprint);
  auto client = transport_to(server_->port(), second_.cert_pem);
  EXPECT_EQ(client->send(get("/healthz"))->status, 200);
}

TEST_F(CertificateFileTest, CheckNowReportsNoChangeAReloadOrAnError) {
  CertificateWatchOptions options;
  options.files = files_;
  options.poll_interval = 1h;  // only check_now()
  CertificateFileWatcher watcher(*server_, options, *read_certificate_files(files_));
  EXPECT_EQ(watcher.check_now(), false);
  write_file(files_.cert_file, second_.cert_pem);
  write_file(files_.key_file, second_.key_pem);
  EXPECT_EQ(watcher.check_now(), true);
  EXPECT_EQ(peer_fingerprint(server_->port()), second_.fingerprint);
  write_file(files_.cert_file, "garbage");
  EXPECT_FALSE(watcher.check_now());
  EXPECT_EQ(peer_fingerprint(server_->port()), second_.fingerprint);
  std::filesystem::remove(files_.key_file);
  EXPECT_FALSE(watcher.check_now());
  watcher.stop();
  watcher.stop();
}

}  // namespace
}  // namespace kstack::validator
