// cmd/http_endpoints.h: GET only, exact paths, bounded requests, keep-alive, silent clients cut.
#include "cmd/http_endpoints.h"

#include <stdexcept>
#include <string>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace kstack::cmd {
namespace {

using namespace std::chrono_literals;

class Connection {
 public:
  explicit Connection(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error("connect");
    }
  }
  ~Connection() { ::close(fd_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void send(const std::string& data) {
    ASSERT_EQ(::send(fd_, data.data(), data.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(data.size()));
  }
  // One response with a Content-Length body; "" when the server closed the connection.
  std::string read_response() {
    for (;;) {
      const auto end = buffer_.find("\r\n\r\n");
      if (end != std::string::npos) {
        std::size_t length = 0;
        if (auto cl = buffer_.find("Content-Length: "); cl != std::string::npos && cl < end) {
          length = std::stoul(buffer_.substr(cl + 16));
        }
        if (buffer_.size() >= end + 4 + length) {
          auto response = buffer_.substr(0, end + 4 + length);
          buffer_.erase(0, end + 4 + length);
          return response;
        }
      }
      char buf[4096];
      const auto n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return {};
      buffer_.append(buf, static_cast<std::size_t>(n));
    }
  }
  bool closed_by_server() {
    char c;
    return ::recv(fd_, &c, 1, 0) == 0;
  }

 private:
  int fd_;
  std::string buffer_;
};

std::string get(const std::string& path, bool keep_alive = false) {
  return "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + (keep_alive ? "" : "Connection: close\r\n") +
         "\r\n";
}

class HttpEndpointsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpEndpointsOptions o;
    o.bind_address = "127.0.0.1";
    o.port = 0;
    o.read_timeout = 300ms;
    o.routes["/healthz"] = [] { return EndpointResponse{200, {}, "ok\n"}; };
    o.routes["/readyz"] = [] { return EndpointResponse{503, {}, "[-]informers not synced\n"}; };
    o.routes["/boom"] = []() -> EndpointResponse { throw std::runtime_error("boom"); };
    auto s = start_http_endpoints(std::move(o));
    ASSERT_TRUE(s) << s.error().to_string();
    server_ = std::move(*s);
  }
  std::unique_ptr<HttpEndpoints> server_;
};

TEST_F(HttpEndpointsTest, AGetOfARouteGetsItsHandlersAnswer) {
  Connection c(server_->port());
  c.send(get("/healthz?verbose=1"));
  const auto r = c.read_response();
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("\r\n\r\nok\n"), std::string::npos) << r;
  Connection d(server_->port());
  d.send(get("/readyz"));
  EXPECT_EQ(d.read_response().rfind("HTTP/1.1 503", 0), 0u);
}

TEST_F(HttpEndpointsTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  Connection c(server_->port());
  for (int i = 0; i < 3; ++i) {
    c.send(get("/healthz", true));
    EXPECT_EQ(c.read_response().rfind("HTTP/1.1 200", 0), 0u) << i;
  }
}

TEST_F(HttpEndpointsTest, UnknownPathsOtherMethodsBodiesAndHugeHeadersAreRefused) {
  {
    Connection c(server_->port());
    c.send(get("/nope"));
    EXPECT_EQ(c.read_response().rfind("HTTP/1.1 404", 0), 0u);
  }
  {
    Connection c(server_->port());
    c.send("POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
    const auto r = c.read_response();
    EXPECT_EQ(r.rfind("HTTP/1.1 405", 0), 0u) << r;
    EXPECT_NE(r.find("Allow: GET"), std::string::npos) << r;
  }
  {
    Connection c(server_->port());
    c.send("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n");
    EXPECT_EQ(c.read_response().rfind("HTTP/1.1 413", 0), 0u);
  }
  {
    Connection c(server_->port());
    c.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n");
    EXPECT_EQ(c.read_response().rfind("HTTP/1.1 431", 0), 0u);
  }
  {
    Connection c(server_->port());
    c.send("NOT HTTP AT ALL\r\n\r\n");
    EXPECT_EQ(c.read_response().rfind("HTTP/1.1 400", 0), 0u);
  }
}

TEST_F(HttpEndpointsTest, AThrowingHandlerAnswers500AndTheServerGoesOn) {
  Connection c(server_->port());
  c.send(get("/boom"));
  EXPECT_EQ(c.read_response().rfind("HTTP/1.1 500", 0), 0u);
  Connection d(server_->port());
  d.send(get("/healthz"));
  EXPECT_EQ(d.read_response().rfind("HTTP/1.1 200", 0), 0u);
}

TEST_F(HttpEndpointsTest, AClientThatNeverFinishesItsRequestIsDisconnected) {
  Connection c(server_->port());
  c.send("GET /healthz HTTP/1.1\r\n");  // and nothing more: cut after read_timeout (300 ms)
  EXPECT_TRUE(c.closed_by_server());
}

TEST_F(HttpEndpointsTest, StopClosesTheListenerAndIsIdempotent) {
  const auto port = server_->port();
  server_->stop();
  server_->stop();
  EXPECT_THROW(Connection{port}, std::runtime_error);
}

}  // namespace
}  // namespace kstack::cmd
