// Acceptance: certificate renewal under load. The real admission server serves with the
// certificate CertManager keeps in the cluster; while clients send AdmissionReviews
// continuously (new connections, and one kept-alive connection), the serving certificate is
// renewed twice; no request fails and the clients see every new certificate.
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <set>
#include <thread>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kube/transport.h"
#include "tests/integration/certs/support.h"
#include "validator/server.h"

namespace kstack::validator {
namespace {

using kube::testing::admin;
using kube::testing::make_namespace;
using testing::Deliveries;
using testing::fingerprint;
using testing::get_secret;
using testing::secret_field;
using namespace std::chrono_literals;

class AllowAll final : public AdmissionHandler {
 public:
  AdmissionResponse validate(const AdmissionRequest&) override {
    return AdmissionResponse::allow();
  }
  AdmissionResponse mutate(const AdmissionRequest&) override { return AdmissionResponse::allow(); }
};

std::string review(const std::string& uid) {
  boost::json::object review{
      {"apiVersion", "admission.k8s.io/v1"},
      {"kind", "AdmissionReview"},
      {"request",
       {{"uid", uid},
        {"kind", {{"group", "kstack.io"}, {"version", "v1beta1"}, {"kind", "Stack"}}},
        {"resource", {{"group", "kstack.io"}, {"version", "v1beta1"}, {"resource", "stacks"}}},
        {"name", "s"},
        {"namespace", "default"},
        {"operation", "CREATE"},
        {"userInfo", {{"username", "alice"}}},
        {"object",
         {{"apiVersion", "kstack.io/v1beta1"},
          {"kind", "Stack"},
          {"metadata", {{"name", "s"}, {"namespace", "default"}}}}}}}};
  return boost::json::serialize(review);
}

// "" when `response` is the allowing answer to review `uid`, else what is wrong.
std::string check_answer(const kube::Result<kube::HttpResponse>& response, const std::string& uid) {
  if (!response) return response.error().to_string();
  if (response->status != 200) return "HTTP " + std::to_string(response->status);
  boost::system::error_code ec;
  const auto v = boost::json::parse(response->body, ec);
  const auto* allowed = ec ? nullptr : v.find_pointer("/response/allowed", ec);
  const auto* echoed = ec ? nullptr : v.find_pointer("/response/uid", ec);
  if (allowed == nullptr || echoed == nullptr || *allowed != true || !echoed->is_string() ||
      echoed->get_string() != uid) {
    return "unexpected answer " + response->body.substr(0, 200);
  }
  return {};
}

std::unique_ptr<kube::Transport> transport_to(std::uint16_t port, const std::string& ca_pem,
                                              std::size_t max_idle_connections) {
  kube::TransportOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.tls.ca_pem = ca_pem;
  o.request_timeout = 10s;
  o.max_idle_connections = max_idle_connections;
  auto t = kube::make_transport(o);
  if (!t) throw std::runtime_error("transport: " + t.error().to_string());
  return std::move(*t);
}

kube::HttpRequest post_validate(const std::string& uid) {
  kube::HttpRequest r;
  r.method = "POST";
  r.target = "/validate?timeout=10s";
  r.headers.push_back({"Content-Type", "application/json"});
  r.body = review(uid);
  return r;
}

// A TLS handshake with 127.0.0.1:port verified against `ca_pem` (chain and IP SAN), as the
// API server would make it: the fingerprint of the certificate the server presented.
kube::Result<std::string> handshake_fingerprint(std::uint16_t port, const std::string& ca_pem) {
  const auto fail = [](std::string what) {
    std::array<char, 256> buf{};
    ERR_error_string_n(ERR_get_error(), buf.data(), buf.size());
    ERR_clear_error();
    return kube::make_error(kube::ErrorKind::kTls, what + ": " + buf.data());
  };
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        &SSL_CTX_free);
  if (!ctx) return fail("SSL_CTX_new");
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size())), &BIO_free);
  while (X509* ca = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx.get()), ca);
    X509_free(ca);
  }
  ERR_clear_error();
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);

  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return kube::make_error(kube::ErrorKind::kTransport, "socket");
  std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return kube::make_error(kube::ErrorKind::kTransport, "connect");
  }
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), &SSL_free);
  if (!ssl) return fail("SSL_new");
  X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), "127.0.0.1");
  SSL_set_fd(ssl.get(), fd);
  if (SSL_connect(ssl.get()) != 1) {
    const long verify = SSL_get_verify_result(ssl.get());
    return fail(std::string("handshake (verify: ") + X509_verify_cert_error_string(verify) + ")");
  }
  std::unique_ptr<X509, decltype(&X509_free)> peer(SSL_get1_peer_certificate(ssl.get()),
                                                   &X509_free);
  if (!peer) return fail("no peer certificate");
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  X509_digest(peer.get(), EVP_sha256(), md.data(), &len);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  SSL_shutdown(ssl.get());
  return hex;
}

// What the client threads saw.
struct Observed {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> failures;
  std::set<std::string> fingerprints;

  void fail(std::string what) {
    std::lock_guard lock(mu);
    failures.push_back(std::move(what));
  }
  void saw(const std::string& fp) {
    std::lock_guard lock(mu);
    if (fingerprints.insert(fp).second) cv.notify_all();
  }
};

TEST(CertificateRenewalUnderLoad, ServingCertificateIsRenewedTwiceWithoutAFailedRequest) {
  auto client = admin();
  const auto ns = make_namespace(*client);

  // The server starts with the certificate of the first pass, then follows the renewals.
  std::mutex server_mu;
  AdmissionServer* server = nullptr;
  CertificateAndKey initial;
  Deliveries deliveries;
  auto record = deliveries.callback();
  CertManagerOptions o;
  o.namespace_name = ns;
  o.extra_sans = {"127.0.0.1"};
  o.validating_webhook_configuration.clear();  // no webhook configuration: nothing calls us
  o.mutating_webhook_configuration.clear();
  o.serving_lifetime = 6s;  // renewed every 4 s, 2 s before expiry
  o.min_recheck_delay = 100ms;
  o.on_certificate = [&](const std::string& cert, const std::string& key) -> kube::Result<void> {
    std::lock_guard lock(server_mu);
    if (server != nullptr) {
      if (auto swapped = server->set_certificate(cert, key); !swapped) return swapped;
    } else {
      initial = {cert, key};
    }
    return record(cert, key);
  };
  CertManager manager(client, o);
  auto first = manager.ensure();
  ASSERT_TRUE(first) << first.error().to_string();

  AllowAll handler;
  ServerOptions so;
  so.bind_address = "127.0.0.1";
  so.port = 0;
  so.cert_pem = initial.cert_pem;
  so.key_pem = initial.key_pem;
  auto started = start_admission_server(so, handler);
  ASSERT_TRUE(started) << started.error().to_string();
  {
    std::lock_guard lock(server_mu);
    server = started->get();
  }
  const std::uint16_t port = (*started)->port();
  const std::string ca = secret_field(get_secret(*client, ns), kCaCertKey);

  Observed observed;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> fresh_ok{0};
  std::atomic<std::uint64_t> kept_ok{0};
  auto fresh = transport_to(port, ca, 0);  // no idle pool: every request handshakes
  auto kept = transport_to(port, ca, 1);   // one connection, kept alive throughout

  kube::CancelToken cancel_manager;
  std::thread renewals([&] { manager.run(cancel_manager); });
  std::thread fresh_client([&] {
    for (std::uint64_t i = 0; !stop.load(); ++i) {
      const std::string uid = "fresh-" + std::to_string(i);
      if (auto bad = check_answer(fresh->send(post_validate(uid)), uid); !bad.empty()) {
        observed.fail(fmt::format("{}: {}", uid, bad));
      } else {
        fresh_ok.fetch_add(1);
        observed.cv.notify_all();
      }
    }
  });
  std::thread kept_client([&] {
    for (std::uint64_t i = 0; !stop.load(); ++i) {
      const std::string uid = "kept-" + std::to_string(i);
      if (auto bad = check_answer(kept->send(post_validate(uid)), uid); !bad.empty()) {
        observed.fail(fmt::format("{}: {}", uid, bad));
      } else {
        kept_ok.fetch_add(1);
        observed.cv.notify_all();
      }
    }
  });
  std::thread handshakes([&] {
    while (!stop.load()) {
      auto fp = handshake_fingerprint(port, ca);
      if (fp) {
        observed.saw(*fp);
      } else {
        observed.fail("handshake: " + fp.error().to_string());
      }
    }
  });

  bool saw_three = false;
  {
    std::unique_lock lock(observed.mu);
    saw_three = observed.cv.wait_for(lock, 40s, [&] { return observed.fingerprints.size() >= 3; });
  }
  // Keep the load on a little after the second renewal: the kept-alive connection must go on
  // working although its certificate is no longer the one being served.
  const auto kept_at_third = kept_ok.load();
  const auto fresh_at_third = fresh_ok.load();
  {
    std::unique_lock lock(observed.mu);
    observed.cv.wait_for(lock, 10s, [&] {
      return kept_ok.load() > kept_at_third + 10 && fresh_ok.load() > fresh_at_third + 10;
    });
  }
  stop = true;
  fresh_client.join();
  kept_client.join();
  handshakes.join();
  cancel_manager.cancel();
  renewals.join();
  (*started)->stop();

  EXPECT_TRUE(saw_three) << "the clients saw " << observed.fingerprints.size()
                         << " serving certificates";
  std::lock_guard lock(observed.mu);
  EXPECT_TRUE(observed.failures.empty())
      << observed.failures.size() << " failures, first: " << observed.failures.front();
  std::set<std::string> delivered;
  for (const auto& cert : deliveries.certs()) delivered.insert(fingerprint(cert));
  EXPECT_GE(delivered.size(), 3u);
  for (const auto& fp : observed.fingerprints) {
    EXPECT_TRUE(delivered.count(fp)) << "served a certificate CertManager never handed over";
  }
  EXPECT_GT(kept_ok.load(), kept_at_third) << "the kept-alive connection stopped working";
  EXPECT_EQ(kept->stats().connections_opened, 1u);
  EXPECT_GT(fresh_ok.load(), fresh_at_third);
  EXPECT_EQ(fresh->stats().connections_opened, fresh->stats().requests);
  std::printf(
      "renewal under load: %llu requests on new connections, %llu on the kept one, "
      "%zu serving certificates seen\n",
      static_cast<unsigned long long>(fresh_ok.load()),
      static_cast<unsigned long long>(kept_ok.load()), observed.fingerprints.size());
}

}  // namespace
}  // namespace kstack::validator
