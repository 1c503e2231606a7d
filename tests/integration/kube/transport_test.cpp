// kube/transport against the real test apiserver (TLS, keep-alive, limits, watch streams,
// deadlines, cancellation) and against a tiny local HTTP server for connection-reuse faults.
#include "kube/transport.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/testenv/environment.h"

namespace kstack::kube {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A self-signed CA that signed nothing the apiserver uses (valid until 2126).
constexpr const char* kUnrelatedCaPem = R"(-----BEGIN CERTIFICATE-----
MIIBnTCCAUOgAwIBAgIUcJ3qYcXo2746OeNFnXvdnYsYJkAwCgYIKoZIzj0EAwIw
IzEhMB8GA1UEAwwYa3N0YWNrIHVucmVsYXRlZCB0ZXN0IENBMCAXDTI2MTEyMjAx
MDMxNFoYDzIxMjYxMDI5MDEwMzE0WjAjMSEwHwYDVQQDDBhrc3RhY2sgdW5yZWxh
dGVkIHRlc3QgQ0EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQynxVJdzcSzQJh
GCO41eN29nLIJIdcGx+GlfKfqS363FREeaRcdIFP/08B7tw4YDDsmBtpvQosmlYh
E4khvxzko1MwUTAdBgNVHQ4EFgQUxCD0xHWDzYMCC+DtPAXg99pvMWYwHwYDVR0j
BBgwFoAUxCD0xHWDzYMCC+DtPAXg99pvMWYwDwYDVR0TAQH/BAUwAwEB/zAKBggq
hkjOPQQDAgNIADBFAiEA0thzjyrHyKE/12jkl4/xrjxrMm6Uvjsam48L/AxhcF4C
IBlLhhyQNp+UoXQxD4AQcKY78thTgdRhuVgf3fien7bP
-----END CERTIFICATE-----
)";

std::uint16_t apiserver_port() {
  const std::string& server = testenv::control_plane().server();  // https://127.0.0.1:PORT
  return static_cast<std::uint16_t>(std::stoi(server.substr(server.rfind(':') + 1)));
}

TransportOptions apiserver_options() {
  TransportOptions o;
  o.scheme = "https";
  o.host = "127.0.0.1";
  o.port = apiserver_port();
  o.tls.ca_pem = testenv::control_plane().ca_pem();
  return o;
}

std::unique_ptr<Transport> make(TransportOptions o) {
  auto t = make_transport(std::move(o));
  if (!t) throw std::runtime_error(t.error().message);
  return std::move(*t);
}

HttpRequest admin_request(std::string method, std::string target, std::string body = {}) {
  HttpRequest r;
  r.method = std::move(method);
  r.target = std::move(target);
  r.headers = {{"Authorization", "Bearer " + testenv::control_plane().admin_token()},
               {"Accept", "application/json"}};
  if (!body.empty()) r.headers.push_back({"Content-Type", "application/json"});
  r.body = std::move(body);
  return r;
}

std::string unique_name(std::string_view prefix) {
  static std::atomic<int> counter{0};
  return std::string(prefix) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

// Creates a ConfigMap labelled `kstack-transport-test=<label>` and returns the watch target
// selecting exactly it.
std::string create_labelled_config_map(Transport& t, const std::string& label) {
  const std::string body = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + label +
                           R"(","labels":{"kstack-transport-test":")" + label +
                           R"("}},"data":{"k":"v"}})";
  auto r = t.send(admin_request("POST", "/api/v1/namespaces/default/configmaps", body));
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  if (r) {
    EXPECT_EQ(r->status, 201) << r->body;
  }
  return "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=30"
         "&labelSelector=kstack-transport-test%3D" +
         label;
}

TEST(Transport, GetsTheVersionWithTheClusterCaAndAToken) {
  auto t = make(apiserver_options());
  auto r = t->send(admin_request("GET", "/version"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("\"gitVersion\": \"v1.20.2\""), std::string::npos) << r->body;
  ASSERT_TRUE(r->header("content-type"));
  EXPECT_EQ(*r->header("CONTENT-TYPE"), "application/json");
}

TEST(Transport, SequentialRequestsReuseOneKeptAliveConnection) {
  auto t = make(apiserver_options());
  for (int i = 0; i < 10; ++i) {
    auto r = t->send(admin_request("GET", "/api/v1/namespaces/default"));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->status, 200);
  }
  EXPECT_EQ(t->stats().connections_opened, 1u);
  EXPECT_EQ(t->stats().requests, 10u);
}

TEST(Transport, ConcurrentRequestsFromFourThreadsAllSucceedOnFewConnections) {
  auto o = apiserver_options();
  o.max_idle_connections = 4;
  auto t = make(o);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 20; ++j) {
        auto r = t->send(admin_request("GET", "/api/v1/namespaces/default/configmaps?limit=5"));
        if (r && r->status == 200) {
          ok.fetch_add(1);
        } else {
          ADD_FAILURE() << (r ? std::to_string(r->status) : r.error().message);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 80);
  EXPECT_EQ(t->stats().requests, 80u);
  EXPECT_LE(t->stats().connections_opened, o.max_idle_connections + 4);
}

TEST(Transport, AnUnrelatedCaFailsCertificateVerification) {
  auto o = apiserver_options();
  o.tls.ca_pem = kUnrelatedCaPem;
  auto t = make(o);
  auto r = t->send(admin_request("GET", "/version"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kTls) << r.error().message;
  EXPECT_NE(r.error().message.find("verif"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("127.0.0.1:" + std::to_string(o.port)), std::string::npos)
      << r.error().message;
  EXPECT_EQ(t->stats().connections_opened, 0u);
}

TEST(Transport, AServerNameTheCertificateDoesNotCoverFailsVerification) {
  auto o = apiserver_options();
  o.tls.server_name = "not-the-apiserver.example";
  auto r = make(o)->send(admin_request("GET", "/version"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kTls) << r.error().message;
  EXPECT_NE(r.error().message.find("hostname mismatch"), std::string::npos) << r.error().message;
}

TEST(Transport, VerifiesDnsNamesAndIpAddressesAgainstTheCertificate) {
  auto by_service_name = apiserver_options();
  by_service_name.tls.server_name = "kubernetes.default.svc";  // a DNS SAN, connecting by IP
  auto r = make(by_service_name)->send(admin_request("GET", "/version"));
  ASSERT_TRUE(r) << r.error().message;

  auto by_host_name = apiserver_options();
  by_host_name.host = "localhost";  // resolved, then verified against the DNS SAN
  r = make(by_host_name)->send(admin_request("GET", "/version"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
}

TEST(Transport, InsecureSkipVerifyConnectsWithoutACa) {
  auto o = apiserver_options();
  o.tls.ca_pem.clear();
  o.tls.insecure_skip_verify = true;
  auto r = make(o)->send(admin_request("GET", "/version"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
}

TEST(Transport, AResponseLargerThanTheLimitIsRejected) {
  auto o = apiserver_options();
  o.max_response_bytes = 100;
  auto t = make(o);
  auto r = t->send(admin_request("GET", "/openapi/v2"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kResponseTooLarge) << r.error().message;
  // The half-read connection was discarded; the next request works on a new one.
  auto next = t->send(admin_request("GET", "/healthz"));  // "ok"
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_EQ(next->body, "ok");
  EXPECT_EQ(t->stats().connections_opened, 2u);
}

TEST(Transport, AClosedPortIsATransportErrorNamingIt) {
  // Bind a port without listening: connecting to it is refused.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::uint16_t port = ntohs(addr.sin_port);

  auto o = apiserver_options();
  o.port = port;
  auto r = make(o)->send(admin_request("GET", "/api/v1/namespaces?limit=1"));
  ::close(fd);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kTransport) << r.error().message;
  EXPECT_EQ(r.error().message.rfind(
                "GET /api/v1/namespaces: connect to 127.0.0.1:" + std::to_string(port) + ": ", 0),
            0u)
      << r.error().message;
}

TEST(Transport, AWatchStreamDeliversEventsAsTheyArrive) {
  auto t = make(apiserver_options());
  const std::string label = unique_name("watch-events");
  const std::string target = create_labelled_config_map(*t, label);
  std::string received;
  auto r = t->stream(
      admin_request("GET", target),
      [&](std::string_view chunk) {
        received.append(chunk);
        return received.find('\n') == std::string::npos;  // stop after the first whole event
      },
      CancelToken{}, 10s);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->body.empty());
  EXPECT_NE(received.find("\"type\":\"ADDED\""), std::string::npos) << received;
  EXPECT_NE(received.find(label), std::string::npos) << received;
}

TEST(Transport, CancellingAWatchFromAnotherThreadEndsItPromptly) {
  auto t = make(apiserver_options());
  const std::string target = create_labelled_config_map(*t, unique_name("watch-cancel"));
  CancelToken cancel;
  std::promise<void> first_event;
  bool signalled = false;
  Clock::time_point cancelled_at{};
  std::thread canceller([&, started = first_event.get_future()] {
    // Cancel once the watch is established (or after a generous deadline anyway).
    started.wait_for(20s);
    cancelled_at = Clock::now();
    cancel.cancel();
  });
  auto r = t->stream(
      admin_request("GET", target),
      [&](std::string_view) {
        if (!signalled) first_event.set_value();
        signalled = true;
        return true;
      },
      cancel, 0ms);  // no idle timeout: only cancel can end it before timeoutSeconds=30
  const auto returned_at = Clock::now();
  canceller.join();
  EXPECT_TRUE(signalled);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kCancelled) << r.error().message;
  EXPECT_LT(returned_at - cancelled_at, 2s);
}

TEST(Transport, AnIdleWatchTimesOutAfterTheIdleTimeout) {
  auto t = make(apiserver_options());
  const auto start = Clock::now();
  int chunks = 0;
  auto r = t->stream(
      admin_request("GET",
                    "/api/v1/namespaces/default/configmaps?watch=1"
                    "&timeoutSeconds=30&labelSelector=kstack-transport-test%3Dnone"),
      [&](std::string_view) { return ++chunks > 0; }, CancelToken{}, 200ms);
  const auto took = Clock::now() - start;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kTimeout) << r.error().message;
  EXPECT_NE(r.error().message.find("no data for 200ms"), std::string::npos) << r.error().message;
  EXPECT_EQ(chunks, 0);
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 10s);
}

TEST(Transport, AWatchThatEndsCleanlyLeavesItsConnectionForReuse) {
  auto t = make(apiserver_options());
  auto r = t->stream(
      admin_request("GET",
                    "/api/v1/namespaces/default/configmaps?watch=1"
                    "&timeoutSeconds=1&labelSelector=kstack-transport-test%3Dnone"),
      [](std::string_view) { return true; }, CancelToken{}, 10s);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
  auto next = t->send(admin_request("GET", "/version"));
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_EQ(t->stats().connections_opened, 1u);
}

TEST(Transport, AStreamWithAnErrorStatusReturnsTheBodyInsteadOfStreaming) {
  auto t = make(apiserver_options());
  HttpRequest request = admin_request("GET", "/api/v1/namespaces/default/configmaps?watch=1");
  request.headers[0].value = "Bearer " + testenv::control_plane().token(testenv::kAlice);
  bool called = false;
  auto r = t->stream(
      request, [&](std::string_view) { return called = true; }, CancelToken{}, 10s);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 403);
  EXPECT_NE(r->body.find("\"reason\":\"Forbidden\""), std::string::npos) << r->body;
  EXPECT_FALSE(called);
}

TEST(Transport, ARequestOutlivingItsTimeoutFailsWithTimeout) {
  auto t = make(apiserver_options());
  // A watch sent as a plain request never completes, so it must hit the deadline.
  HttpRequest request =
      admin_request("GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=30");
  request.timeout = 300ms;
  const auto start = Clock::now();
  auto r = t->send(request);
  const auto took = Clock::now() - start;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kTimeout) << r.error().message;
  EXPECT_NE(r.error().message.find("timed out after 300ms"), std::string::npos)
      << r.error().message;
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 10s);
}

// ---- Connection reuse faults, against a local plain-HTTP server ---------------------------------

// Serves one connection at a time; `respond(connection, request)` decides per request whether to
// answer (returning the raw response) or to close the connection without answering (nullopt).
class LocalServer {
 public:
  using Responder = std::function<std::optional<std::string>(int connection, int request)>;

  explicit LocalServer(Responder respond) : respond_(std::move(respond)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 8) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("local server: cannot listen");
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~LocalServer() {
    ::shutdown(fd_, SHUT_RDWR);  // wakes accept()
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }
  int connections() const { return connections_.load(); }

 private:
  void serve() {
    for (int connection = 0;; ++connection) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      connections_.fetch_add(1);
      std::string in;
      char buf[4096];
      for (int request = 0;; ++request) {
        std::size_t end;
        while ((end = in.find("\r\n\r\n")) == std::string::npos) {
          const ssize_t n = ::read(c, buf, sizeof buf);
          if (n <= 0) break;
          in.append(buf, static_cast<std::size_t>(n));
        }
        if (end == std::string::npos) break;
        in.erase(0, end + 4);  // requests here carry no body
        const auto out = respond_(connection, request);
        if (!out || ::write(c, out->data(), out->size()) != static_cast<ssize_t>(out->size()))
          break;
        if (out->find("Connection: close") != std::string::npos) break;
      }
      ::close(c);
    }
  }

  Responder respond_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> connections_{0};
  std::thread thread_;
};

constexpr const char* kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

TransportOptions local_options(const LocalServer& server) {
  TransportOptions o;
  o.scheme = "http";
  o.host = "127.0.0.1";
  o.port = server.port();
  return o;
}

HttpRequest plain(std::string method, std::string target) {
  HttpRequest r;
  r.method = std::move(method);
  r.target = std::move(target);
  return r;
}

TEST(Transport, ARequestOnAKeptConnectionTheServerDroppedIsRetriedOnceOnAFreshOne) {
  // The first connection answers one request, then closes on reading the second.
  LocalServer server([](int connection, int request) -> std::optional<std::string> {
    if (connection == 0 && request == 1) return std::nullopt;
    return kOk;
  });
  auto t = make(local_options(server));
  auto first = t->send(plain("GET", "/a"));
  ASSERT_TRUE(first) << first.error().message;
  auto second = t->send(plain("GET", "/b"));
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->body, "ok");
  EXPECT_EQ(t->stats().connections_opened, 2u);
  EXPECT_EQ(t->stats().requests, 2u);
}

TEST(Transport, ANonIdempotentRequestIsNotRetriedAfterTheServerDroppedIt) {
  LocalServer server([](int connection, int request) -> std::optional<std::string> {
    if (connection == 0 && request == 1) return std::nullopt;
    return kOk;
  });
  auto t = make(local_options(server));
  ASSERT_TRUE(t->send(plain("GET", "/a")));
  auto post = t->send(plain("POST", "/b"));
  ASSERT_FALSE(post);
  EXPECT_EQ(post.error().kind, ErrorKind::kTransport) << post.error().message;
  EXPECT_NE(post.error().message.find("POST /b: read from 127.0.0.1:"), std::string::npos)
      << post.error().message;
}

TEST(Transport, AConnectionTheServerMarksCloseIsNotReused) {
  LocalServer server([](int, int) -> std::optional<std::string> {
    return "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok";
  });
  auto t = make(local_options(server));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t->send(plain("GET", "/")));
  EXPECT_EQ(t->stats().connections_opened, 3u);
  EXPECT_EQ(server.connections(), 3);
}

TEST(Transport, CancellingARequestFromAnotherThreadEndsItWhileItWaitsForTheResponse) {
  CancelToken cancel;
  Clock::time_point cancelled_at{};
  // The server cancels once it has the request, then sends part of a response and stalls.
  LocalServer server([&](int, int) -> std::optional<std::string> {
    cancelled_at = Clock::now();
    cancel.cancel();
    return "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nok";
  });
  auto t = make(local_options(server));
  auto r = t->send(plain("GET", "/slow"), cancel);
  const auto returned_at = Clock::now();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kCancelled) << r.error().message;
  EXPECT_EQ(r.error().message, "GET /slow: cancelled");
  EXPECT_LT(returned_at - cancelled_at, 2s);
  auto again = t->send(plain("GET", "/slow"), cancel);
  ASSERT_FALSE(again) << "an already cancelled token";
  EXPECT_EQ(again.error().kind, ErrorKind::kCancelled);
  EXPECT_EQ(server.connections(), 1);
}

TEST(Transport, ABodyEndedByTheServerClosingIsComplete) {
  LocalServer server([](int, int) -> std::optional<std::string> {
    return "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end";
  });
  auto t = make(local_options(server));
  auto r = t->send(plain("GET", "/"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->body, "until the end");
  auto streamed = std::string();
  auto s = t->stream(
      plain("GET", "/"),
      [&](std::string_view chunk) {
        streamed.append(chunk);
        return true;
      },
      CancelToken{}, 10s);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(streamed, "until the end");
  EXPECT_EQ(t->stats().connections_opened, 2u);
}

// ---- Options validation -----------------------------------------------------------------------

TEST(Transport, MakeTransportRejectsUnusableOptions) {
  TransportOptions o;
  o.host = "127.0.0.1";
  o.scheme = "ftp";
  EXPECT_EQ(make_transport(o).error().kind, ErrorKind::kInvalidArgument);
  o.scheme = "https";
  o.host.clear();
  EXPECT_EQ(make_transport(o).error().kind, ErrorKind::kInvalidArgument);
  o.host = "127.0.0.1";
  o.tls.ca_pem = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n";
  auto bad_ca = make_transport(o);
  ASSERT_FALSE(bad_ca);
  EXPECT_EQ(bad_ca.error().kind, ErrorKind::kConfig);
  EXPECT_NE(bad_ca.error().message.find("certificate-authority"), std::string::npos);
  o.tls.ca_pem = "no PEM at all";
  EXPECT_FALSE(make_transport(o));
  o.tls.ca_pem = kUnrelatedCaPem;
  o.tls.client_cert_pem = kUnrelatedCaPem;
  auto no_key = make_transport(o);
  ASSERT_FALSE(no_key);
  EXPECT_NE(no_key.error().message.find("client-key"), std::string::npos) << no_key.error().message;
}

TEST(Transport, ResponseHeadersAreLookedUpCaseInsensitively) {
  HttpResponse r;
  r.headers = {{"Content-Type", "application/json"}, {"Retry-After", "3"}};
  EXPECT_EQ(r.header("content-type"), "application/json");
  EXPECT_EQ(r.header("RETRY-AFTER"), "3");
  EXPECT_FALSE(r.header("Warning"));
}

}  // namespace
}  // namespace kstack::kube
