// The admission server's global bounds (validator/server.h): connections beyond
// max_connections are closed at accept, a request whose body would take the in-flight body
// budget past max_inflight_body_bytes is answered 503 with Retry-After before its body is
// read, and a wrong Content-Type is answered 415 from the header alone.
#include <gtest/gtest.h>

#include "tests/unit/validator/admission/support.h"

namespace kstack::validator {
namespace {

using namespace testing;  // NOLINT: the test helpers

constexpr std::size_t kBody = 1000;

// A review of exactly kBody bytes (padded with spaces, which JSON allows after the value).
std::string review_of_body_size() {
  std::string body = review_body("admission.k8s.io/v1", "b", "s");
  body.resize(kBody, ' ');
  return body;
}

std::string header(std::string_view content_type, std::size_t length) {
  return "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: " + std::string(content_type) +
         "\r\nContent-Length: " + std::to_string(length) + "\r\n\r\n";
}

class ServerBudgetTest : public ::testing::Test {
 protected:
  void start(ServerOptions options) { server_ = start_server(std::move(options), handler_); }
  std::unique_ptr<RawTlsClient> connect() { return RawTlsClient::connect(server_->port()); }

  TestCert cert_ = make_self_signed("kstack-budget-test");
  TestHandler handler_;
  std::unique_ptr<AdmissionServer> server_;
};

// The old server read the body first (and held it) to answer 415 afterwards: this client
// never sends one, so it got no answer at all.
TEST_F(ServerBudgetTest, AWrongContentTypeIsAnswered415BeforeTheBodyIsSent) {
  start(test_options(cert_));
  auto raw = connect();
  ASSERT_TRUE(raw);
  ASSERT_TRUE(raw->write(header("text/plain", 2u << 20)));
  const std::string response = raw->read_response(Clock::now() + 10s);
  EXPECT_EQ(response.rfind("HTTP/1.1 415 Unsupported Media Type\r\n", 0), 0u) << response;
  EXPECT_NE(response.find("Content-Type must be application/json, not \\\"text/plain\\\""),
            std::string::npos)
      << response;
  EXPECT_NE(response.find("Connection: close"), std::string::npos) << response;
  EXPECT_EQ(server_->stats().admitted_bodies, 0u);
}

TEST_F(ServerBudgetTest, ABodyBeyondTheInflightBudgetIsAnswered503WithRetryAfter) {
  auto options = test_options(cert_);
  options.max_body_bytes = kBody;
  options.max_inflight_body_bytes = 2 * kBody;
  start(options);
  const std::string body = review_of_body_size();
  ASSERT_EQ(body.size(), kBody);

  // Two bodies announced and not yet sent take the whole budget.
  auto a = connect();
  auto b = connect();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->write(header("application/json", kBody)));
  ASSERT_TRUE(b->write(header("application/json", kBody)));
  ASSERT_TRUE(eventually([&] { return server_->stats().admitted_bodies == 2; }, 10s));
  EXPECT_EQ(server_->stats().inflight_body_bytes, 2 * kBody);

  auto c = connect();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->write(header("application/json", kBody)));
  const std::string refused = c->read_response(Clock::now() + 10s);
  EXPECT_EQ(refused.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << refused;
  EXPECT_NE(refused.find("Retry-After: 1\r\n"), std::string::npos) << refused;
  EXPECT_NE(refused.find("admission server busy: request bodies being read already take the "
                         "budget of 2000 bytes (this one announces 1000); retry after 1 s"),
            std::string::npos)
      << refused;
  EXPECT_EQ(server_->stats().busy, 1u);

  for (auto* client : {a.get(), b.get()}) {
    ASSERT_TRUE(client->write(body));
    const std::string answered = client->read_response(Clock::now() + 10s);
    EXPECT_EQ(answered.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answered;
  }
  // Answered bodies give their share back.
  EXPECT_TRUE(eventually([&] { return server_->stats().inflight_body_bytes == 0; }, 10s));
  EXPECT_EQ(server_->stats().body_bytes_held, 0u);
  auto d = connect();
  ASSERT_TRUE(d);
  ASSERT_TRUE(d->write(header("application/json", kBody) + body));
  const std::string later = d->read_response(Clock::now() + 10s);
  EXPECT_EQ(later.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << later;
  EXPECT_EQ(handler_.calls(), 3);
}

TEST_F(ServerBudgetTest, ConnectionsBeyondTheLimitAreClosedAtAccept) {
  auto options = test_options(cert_);
  options.max_connections = 3;
  start(options);
  std::vector<std::unique_ptr<RawTlsClient>> open;
  for (int i = 0; i < 3; ++i) {
    open.push_back(connect());
    ASSERT_TRUE(open.back()) << "connection " << i;
  }
  ASSERT_TRUE(eventually([&] { return server_->stats().active_connections == 3; }, 10s));
  EXPECT_FALSE(connect()) << "a fourth TLS handshake succeeded";
  EXPECT_EQ(server_->stats().refused_connections, 1u);
  EXPECT_EQ(server_->stats().connections, 3u);

  open.pop_back();
  ASSERT_TRUE(eventually([&] { return server_->stats().active_connections == 2; }, 10s));
  auto again = connect();
  ASSERT_TRUE(again);
  ASSERT_TRUE(again->write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string response = again->read_response(Clock::now() + 10s);
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response;
}

TEST(AdmissionServerStart, RefusesABodyBudgetSmallerThanOneBody) {
  TestHandler handler;
  const TestCert cert = make_self_signed("kstack-budget-test");
  auto options = test_options(cert);
  options.max_inflight_body_bytes = options.max_body_bytes - 1;
  auto server = start_admission_server(options, handler);
  ASSERT_FALSE(server);
  EXPECT_EQ(server.error().message,
            "admission server: max_inflight_body_bytes (3145727) must be at least "
            "max_body_bytes (3145728)");
  options.max_inflight_body_bytes = kMaxInflightBodyBytes;
  options.max_connections = 0;
  auto none = start_admission_server(options, handler);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "admission server: max_connections must be positive");
}

}  // namespace
}  // namespace kstack::validator
