// The admission HTTPS server (validator/server.h) over real TLS on loopback: endpoints and
// errors, keep-alive, concurrency, malformed input (truncated JSON, wrong apiVersion, missing
// request, 10 MiB body, slow clients), handler failures, metrics callback and graceful stop.
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/unit/validator/admission/support.h"

namespace kstack::validator {
namespace {

using namespace testing;  // NOLINT: the test helpers

class AdmissionServerTest : public ::testing::Test {
 protected:
  void start(ServerOptions options) {
    server_ = start_server(std::move(options), handler_);
    client_ = transport_to(server_->port(), cert_.cert_pem);
  }
  void start() { start(test_options(cert_)); }

  kube::HttpResponse send(const kube::HttpRequest& request) { return send_with(*client_, request); }
  static kube::HttpResponse send_with(kube::Transport& t, const kube::HttpRequest& request) {
    auto r = t.send(request);
    if (!r)
      ADD_FAILURE() << request.method << " " << request.target << ": " << r.error().to_string();
    return r ? *r : kube::HttpResponse{};
  }
  // A request that must be answered by the server itself with `status` and a Status body.
  std::string expect_status(const kube::HttpRequest& request, int status) {
    const auto r = send(request);
    EXPECT_EQ(r.status, status) << r.body;
    if (r.status != status) return {};
    const auto body = parse_json(r.body);
    EXPECT_EQ(body.at("kind"), "Status");
    EXPECT_EQ(body.at("code"), status);
    return std::string(body.at("message").as_string());
  }

  TestCert cert_ = make_self_signed("kstack-admission-test");
  TestHandler handler_;
  std::unique_ptr<AdmissionServer> server_;
  std::unique_ptr<kube::Transport> client_;
};

TEST_F(AdmissionServerTest, HealthzAnswersOkOverTls12OrLater) {
  start();
  const auto r = send(get("/healthz"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok");
  auto raw = RawTlsClient::connect(server_->port());
  ASSERT_TRUE(raw);
  EXPECT_TRUE(raw->protocol() == "TLSv1.2" || raw->protocol() == "TLSv1.3") << raw->protocol();
  EXPECT_TRUE(server_->serving());
}

TEST_F(AdmissionServerTest, ValidateAnswersV1AndV1beta1InTheirOwnVersionWithTheUidEchoed) {
  start();
  for (const char* version : {"admission.k8s.io/v1", "admission.k8s.io/v1beta1"}) {
    const std::string uid = std::string("uid-") + version;
    const auto r = send(post("/validate", review_body(version, uid, "good")));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("Content-Type"), "application/json");
    const auto review = parse_json(r.body);
    EXPECT_EQ(review.at("apiVersion"), version);
    EXPECT_EQ(review.at("response").at("uid").as_string(), uid);
    EXPECT_EQ(review.at("response").at("allowed"), true);
    EXPECT_EQ(review.at("response").at("warnings").at(0), "checked by kstack test handler");

    const auto denied =
        parse_json(send(post("/validate", review_body(version, "d", "deny-me"))).body);
    EXPECT_EQ(denied.at("response").at("allowed"), false);
    EXPECT_EQ(denied.at("response").at("status").at("code"), 403);
    EXPECT_EQ(denied.at("response").at("status").at("message"),
              "metadata.name: \"deny-me\" is not allowed");
  }
}

TEST_F(AdmissionServerTest, MutateAnswersWithABase64JsonPatch) {
  start();
  const auto r = send(post("/mutate", review_body("admission.k8s.io/v1", "m1", "s")));
  ASSERT_EQ(r.status, 200) << r.body;
  const auto response = parse_json(r.body).at("response");
  EXPECT_EQ(response.at("uid"), "m1");
  EXPECT_EQ(response.at("patchType"), "JSONPatch");
  // [{"op":"add","path":"/metadata/labels/kstack-mutated","value":"yes"}]
  EXPECT_EQ(response.at("patch"),
            "W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscy9rc3RhY2stbXV0YXRlZCIsInZhbHVlIjoieW"
            "VzIn1d");
}

TEST_F(AdmissionServerTest, AnswersUnknownPaths404WrongMethods405AndWrongMediaTypes415) {
  start();
  EXPECT_NE(expect_status(get("/nope"), 404).find("/validate and /mutate"), std::string::npos);
  EXPECT_EQ(expect_status(get("/validate"), 405), "GET is not allowed here, only POST");
  EXPECT_EQ(send(get("/mutate")).header("Allow"), "POST");
  EXPECT_EQ(expect_status(post("/healthz", ""), 405), "POST is not allowed here, only GET");
  EXPECT_EQ(expect_status(
                post("/validate", review_body("admission.k8s.io/v1", "u", "s"), "text/plain"), 415),
            "Content-Type must be application/json, not \"text/plain\"");
  EXPECT_EQ(send(post("/validate", review_body("admission.k8s.io/v1", "u", "s"),
                      "application/json; charset=utf-8"))
                .status,
            200);
  EXPECT_EQ(handler_.calls(), 1);
  EXPECT_GE(server_->stats().rejected, 5u);
  // Bodiless refusals keep their connection; a refused body is not read, so that connection
  // closes after the answer and the next request opens a second one.
  EXPECT_EQ(client_->stats().connections_opened, 2u);
}

TEST_F(AdmissionServerTest, KeepsOneTlsConnectionAliveForManyRequests) {
  start();
  constexpr int kRequests = 200;
  for (int i = 0; i < kRequests; ++i) {
    const auto r = send(post(i % 2 ? "/mutate" : "/validate",
                             review_body("admission.k8s.io/v1", "k" + std::to_string(i), "s")));
    ASSERT_EQ(r.status, 200);
  }
  EXPECT_EQ(client_->stats().connections_opened, 1u);
  EXPECT_EQ(server_->stats().connections, 1u);
  EXPECT_EQ(server_->stats().requests, static_cast<std::uint64_t>(kRequests));
  EXPECT_EQ(server_->stats().active_connections, 1u);
}

TEST_F(AdmissionServerTest, ServesConcurrentClients) {
  start();
  constexpr int kClients = 8;
  constexpr int kRequests = 50;
  std::vector<std::future<int>> ok;
  ok.reserve(kClients);
  for (int c = 0; c < kClients; ++c) {
    ok.push_back(std::async(std::launch::async, [&, c] {
      auto t = transport_to(server_->port(), cert_.cert_pem);
      int good = 0;
      for (int i = 0; i < kRequests; ++i) {
        const std::string uid = "c" + std::to_string(c) + "-" + std::to_string(i);
        auto r = t->send(post("/validate", review_body("admission.k8s.io/v1", uid, "s")));
        if (r && r->status == 200 &&
            parse_json(r->body).at("response").at("uid").as_string() == uid)
          ++good;
      }
      return good;
    }));
  }
  for (auto& f : ok) EXPECT_EQ(f.get(), kRequests);
  EXPECT_EQ(server_->stats().connections, static_cast<std::uint64_t>(kClients));
}

TEST_F(AdmissionServerTest, MalformedReviewsGet400NamingTheProblemAndTheConnectionStaysUsable) {
  start();
  const std::string good = review_body("admission.k8s.io/v1", "u", "s");
  EXPECT_NE(expect_status(post("/validate", good.substr(0, good.size() / 2)), 400)
                .find("body is not JSON at byte " + std::to_string(good.size() / 2)),
            std::string::npos);
  EXPECT_NE(expect_status(post("/validate", review_body("admission.k8s.io/v7", "u", "s")), 400)
                .find("wrong apiVersion \"admission.k8s.io/v7\""),
            std::string::npos);
  EXPECT_EQ(
      expect_status(
          post("/mutate", R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})"), 400),
      "AdmissionReview: missing request");
  EXPECT_EQ(send(post("/validate", good)).status, 200);
  EXPECT_EQ(client_->stats().connections_opened, 1u);
  EXPECT_EQ(handler_.calls(), 1);
}

TEST_F(AdmissionServerTest, A10MiBBodyGets413AndTheServerKeepsServing) {
  start();
  const std::string huge = "{\"pad\":\"" + std::string(10u << 20, 'x') + "\"}";
  const auto begin = Clock::now();
  EXPECT_NE(expect_status(post("/validate", huge), 413).find("exceeds 3145728 bytes"),
            std::string::npos);
  EXPECT_LT(Clock::now() - begin, 5s);
  auto other = transport_to(server_->port(), cert_.cert_pem);
  EXPECT_EQ(
      send_with(*other, post("/validate", review_body("admission.k8s.io/v1", "after", "s"))).status,
      200);
  EXPECT_EQ(handler_.calls(), 1);
}

TEST_F(AdmissionServerTest, AChunkedBodyOverTheLimitGets413) {
  auto options = test_options(cert_);
  options.max_body_bytes = 1024;
  start(options);
  auto raw = RawTlsClient::connect(server_->port());
  ASSERT_TRUE(raw);
  const std::string chunk(1000, 'x');
  std::string request =
      "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i) request += "3e8\r\n" + chunk + "\r\n";
  ASSERT_TRUE(raw->write(request));
  const std::string response = raw->read_response(Clock::now() + 5s);
  EXPECT_EQ(response.rfind("HTTP/1.1 413 Payload Too Large\r\n", 0), 0u) << response;
  EXPECT_NE(response.find("Connection: close"), std::string::npos);
}

// One byte a second: cut off at the header deadline, and meanwhile a server with a single
// thread keeps answering others (the slow client holds a socket and a timer, not a thread).
TEST_F(AdmissionServerTest, ASlowClientIsCutOffAndDoesNotHoldAThread) {
  auto options = test_options(cert_);
  options.threads = 1;
  options.header_timeout = 1s;
  start(options);
  const std::string request =
      "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\r\n";
  std::promise<void> first_byte_sent;
  auto slow = std::async(std::launch::async, [&] {
    auto raw = RawTlsClient::connect(server_->port());
    if (!raw) return std::pair<std::size_t, Clock::duration>{0, {}};
    const auto begin = Clock::now();
    std::size_t sent = 0;
    while (sent < request.size() && Clock::now() - begin < 10s) {
      if (!raw->write(request.substr(sent, 1))) break;
      if (++sent == 1) first_byte_sent.set_value();
      auto got = raw->read_some(1s);  // the next byte in a second, unless the server hangs up
      if (got && got->empty()) break;
    }
    return std::pair{sent, Clock::now() - begin};
  });
  ASSERT_EQ(first_byte_sent.get_future().wait_for(5s), std::future_status::ready);
  for (int i = 0; i < 5; ++i) {
    const auto begin = Clock::now();
    EXPECT_EQ(send(get("/healthz")).status, 200);
    EXPECT_LT(Clock::now() - begin, 500ms);
  }
  const auto [sent, took] = slow.get();
  EXPECT_LT(sent, request.size());
  EXPECT_GE(took, 900ms);
  EXPECT_LT(took, 3s);
  EXPECT_TRUE(eventually([&] { return server_->stats().timeouts >= 1; }));
}

TEST_F(AdmissionServerTest, ASlowBodyIsCutOffAtTheBodyTimeout) {
  auto options = test_options(cert_);
  options.body_timeout = 1s;
  start(options);
  auto raw = RawTlsClient::connect(server_->port());
  ASSERT_TRUE(raw);
  ASSERT_TRUE(
      raw->write("POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 "Content-Length: 100\r\n\r\n"));
  const auto begin = Clock::now();
  bool closed = false;
  for (int i = 0; i < 10 && !closed; ++i) {
    if (!raw->write("{")) break;
    auto got = raw->read_some(1s);
    closed = got && got->empty();
  }
  EXPECT_TRUE(closed);
  EXPECT_LT(Clock::now() - begin, 3s);
  EXPECT_EQ(send(get("/healthz")).status, 200);
}

TEST_F(AdmissionServerTest, AConnectionThatNeverSendsARequestIsClosedAtTheHeaderTimeout) {
  auto options = test_options(cert_);
  options.header_timeout = 500ms;
  start(options);
  auto raw = RawTlsClient::connect(server_->port());
  ASSERT_TRUE(raw);
  const auto begin = Clock::now();
  const auto got = raw->read_some(5s);
  ASSERT_TRUE(got.has_value()) << "not closed within 5 s";
  EXPECT_EQ(*got, "");
  EXPECT_LT(Clock::now() - begin, 2s);
}

TEST_F(AdmissionServerTest, AHandlerExceptionBecomes500AndTheServerKeepsServing) {
  start();
  EXPECT_NE(expect_status(post("/validate", review_body("admission.k8s.io/v1", "u", "throw")), 500)
                .find("boom"),
            std::string::npos);
  EXPECT_EQ(expect_status(post("/mutate", review_body("admission.k8s.io/v1", "u", "throw")), 500),
            "admission handler failed: boom");
  EXPECT_EQ(send(post("/validate", review_body("admission.k8s.io/v1", "u", "fine"))).status, 200);
}

TEST_F(AdmissionServerTest, ReportsEveryAnsweredRequestToTheObserver) {
  struct Seen {
    std::mutex mu;
    std::vector<std::pair<std::string, int>> requests;  // endpoint, status
  };
  auto seen = std::make_shared<Seen>();  // shared: the server may outlive this scope
  auto options = test_options(cert_);
  options.on_request = [seen](std::string_view endpoint, int status,
                              std::chrono::nanoseconds took) {
    EXPECT_GT(took.count(), 0);
    std::lock_guard lock(seen->mu);
    seen->requests.emplace_back(endpoint, status);
  };
  start(options);
  send(get("/healthz"));
  send(post("/validate", review_body("admission.k8s.io/v1", "u", "s")));
  send(post("/mutate", "{"));
  send(get("/x"));
  std::lock_guard lock(seen->mu);
  EXPECT_EQ(seen->requests,
            (std::vector<std::pair<std::string, int>>{
                {"/healthz", 200}, {"/validate", 200}, {"/mutate", 400}, {"other", 404}}));
}

TEST_F(AdmissionServerTest, StopFinishesTheRequestInFlightThenRefusesConnections) {
  start();
  auto idle = RawTlsClient::connect(server_->port());  // an idle keep-alive connection
  ASSERT_TRUE(idle);
  auto in_flight = std::async(std::launch::async, [&] {
    return client_->send(
        post("/validate", review_body("admission.k8s.io/v1", "inflight", "block")));
  });
  ASSERT_TRUE(handler_.wait_blocked(5s));
  const std::uint16_t port = server_->port();
  auto stopped = std::async(std::launch::async, [&] { server_->stop(); });
  // The idle connection is closed at once, while the blocked request is still running.
  const auto got = idle->read_some(5s);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, "");
  EXPECT_EQ(stopped.wait_for(0s), std::future_status::timeout);
  handler_.release();
  auto answer = in_flight.get();
  ASSERT_TRUE(answer) << answer.error().to_string();
  EXPECT_EQ(answer->status, 200);
  EXPECT_EQ(answer->header("Connection"), "close");
  ASSERT_EQ(stopped.wait_for(5s), std::future_status::ready);
  EXPECT_FALSE(server_->serving());
  EXPECT_EQ(RawTlsClient::connect(port), nullptr);
}

}  // namespace
}  // namespace kstack::validator
