// The plain-HTTP endpoint server (see http_endpoints.h). One io_context run by one thread;
// each connection is a Session moving through do_read/on_read -> answer -> do_write/on_write,
// then back to do_read (keep-alive) or closed. Every read and write has a deadline
// (tcp_stream expiry), so a silent client costs a socket and a timer, never a thread. Any
// protocol error is answered and the connection closed: probes and scrapers never send one.
#include "cmd/http_endpoints.h"

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

namespace kstack::cmd {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Tcp = asio::ip::tcp;

// Requests carry no body: a declared one beyond this is refused with 413 before reading it.
constexpr std::uint64_t kMaxBodyBytes = 1024;

struct Shared {
  explicit Shared(HttpEndpointsOptions o) : options(std::move(o)) {}
  const HttpEndpointsOptions options;
  std::atomic<bool> stopping{false};
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Tcp::socket&& socket, std::shared_ptr<Shared> shared)
      : shared_(std::move(shared)), stream_(std::move(socket)) {}

  void run() {
    asio::dispatch(stream_.get_executor(),
                   beast::bind_front_handler(&Session::do_read, shared_from_this()));
  }

 private:
  const HttpEndpointsOptions& options() const { return shared_->options; }

  void do_read() {
    if (shared_->stopping) return;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(options().max_header_bytes));
    parser_->body_limit(kMaxBodyBytes);
    // The first request must come whole within read_timeout; a kept-alive connection may wait
    // idle_timeout for its next one.
    stream_.expires_after(first_ ? options().read_timeout : options().idle_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t /*bytes*/) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
        ec == asio::error::eof) {
      return close();
    }
    if (ec == http::error::header_limit) {
      return reply(http::status::request_header_fields_too_large, "request header too large\n",
                   false);
    }
    if (ec == http::error::body_limit) {
      return reply(http::status::payload_too_large, "these endpoints take no request body\n",
                   false);
    }
    if (ec) return reply(http::status::bad_request, "malformed HTTP request\n", false);
    answer(parser_->release());
  }

  void answer(const http::request<http::string_body>& req) {
    const bool keep = req.keep_alive();
    if (req.method() != http::verb::get) {
      response_.set(http::field::allow, "GET");
      return reply(http::status::method_not_allowed, "only GET is allowed\n", false);
    }
    if (!req.body().empty()) {
      return reply(http::status::bad_request, "GET takes no request body\n", false);
    }
    const std::string_view target = req.target();
    const std::string path(target.substr(0, target.find('?')));
    const auto route = options().routes.find(path);
    if (route == options().routes.end()) {
      return reply(http::status::not_found, "not found\n", keep);
    }
    EndpointResponse out;
    try {
      out = route->second();
    } catch (const std::exception& e) {
      spdlog::error("http endpoints: the {} handler failed: {}", path, e.what());
      return reply(http::status::internal_server_error, "internal error\n", false);
    }
    response_.set(http::field::content_type, out.content_type);
    reply(static_cast<http::status>(out.status), std::move(out.body), keep);
  }

  void reply(http::status status, std::string body, bool keep) {
    if (response_[http::field::content_type].empty()) {
      response_.set(http::field::content_type, "text/plain; charset=utf-8");
    }
    response_.version(11);
    response_.result(status);
    response_.set(http::field::server, "kstack");
    response_.set(http::field::cache_control, "no-store");
    response_.body() = std::move(body);
    response_.keep_alive(keep && !shared_->stopping);
    response_.prepare_payload();
    stream_.expires_after(options().read_timeout);
    http::async_write(stream_, response_,
                      beast::bind_front_handler(&Session::on_write, shared_from_this()));
  }

  void on_write(beast::error_code ec, std::size_t /*bytes*/) {
    const bool keep = response_.keep_alive();
    response_ = {};
    if (ec || !keep) return close();
    first_ = false;
    do_read();
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(Tcp::socket::shutdown_both, ignored);
  }

  std::shared_ptr<Shared> shared_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  bool first_ = true;
};

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(asio::io_context& ioc, std::shared_ptr<Shared> shared)
      : ioc_(ioc), acceptor_(asio::make_strand(ioc)), shared_(std::move(shared)) {}

  kube::Result<std::uint16_t> listen(const std::string& address, std::uint16_t port) {
    beast::error_code ec;
    const auto ip = asio::ip::make_address(address, ec);
    if (ec) {
      return kube::make_error(
          kube::ErrorKind::kInvalidArgument,
          "http endpoints: bind address \"" + address + "\" is not an IP address");
    }
    const Tcp::endpoint endpoint(ip, port);
    const auto fail = [&](std::string_view step) {
      return kube::make_error(kube::ErrorKind::kTransport,
                              "http endpoints: cannot " + std::string(step) + " " + address + ":" +
                                  std::to_string(port) + ": " + ec.message());
    };
    if (acceptor_.open(endpoint.protocol(), ec); ec) return fail("open a socket for");
    if (acceptor_.set_option(asio::socket_base::reuse_address(true), ec); ec)
      return fail("configure");
    if (acceptor_.bind(endpoint, ec); ec) return fail("bind");
    if (acceptor_.listen(asio::socket_base::max_listen_connections, ec); ec)
      return fail("listen on");
    const auto local = acceptor_.local_endpoint(ec);
    if (ec) return fail("read the bound port of");
    return local.port();
  }

  void run() {
    asio::dispatch(acceptor_.get_executor(),
                   beast::bind_front_handler(&Listener::do_accept, shared_from_this()));
  }

 private:
  void do_accept() {
    if (shared_->stopping || !acceptor_.is_open()) return;
    acceptor_.async_accept(asio::make_strand(ioc_),
                           beast::bind_front_handler(&Listener::on_accept, shared_from_this()));
  }

  void on_accept(beast::error_code ec, Tcp::socket socket) {
    if (ec == asio::error::operation_aborted || shared_->stopping) return;
    if (!ec) std::make_shared<Session>(std::move(socket), shared_)->run();
    // An accept error (out of descriptors...) is retried with the next accept.
    do_accept();
  }

  asio::io_context& ioc_;
  Tcp::acceptor acceptor_;
  std::shared_ptr<Shared> shared_;
};

class HttpEndpointsImpl final : public HttpEndpoints {
 public:
  explicit HttpEndpointsImpl(HttpEndpointsOptions options)
      : ioc_(std::make_unique<asio::io_context>(1)),
        shared_(std::make_shared<Shared>(std::move(options))),
        listener_(std::make_shared<Listener>(*ioc_, shared_)) {}
  ~HttpEndpointsImpl() override { stop(); }
  HttpEndpointsImpl(const HttpEndpointsImpl&) = delete;
  HttpEndpointsImpl& operator=(const HttpEndpointsImpl&) = delete;

  kube::Result<void> start() {
    auto bound = listener_->listen(shared_->options.bind_address, shared_->options.port);
    if (!bound) return tl::unexpected(bound.error());
    port_ = *bound;
    listener_->run();
    thread_ = std::thread([this] {
      for (;;) {
        try {
          ioc_->run();
          return;
        } catch (const std::exception& e) {  // handlers do not throw; the net under them
          spdlog::error("http endpoints: unexpected exception: {}", e.what());
        }
      }
    });
    return {};
  }

  std::uint16_t port() const override { return port_; }

  void stop() override {
    std::lock_guard lock(stop_mu_);
    if (shared_->stopping.exchange(true)) return;
    // Pending handlers (accept, reads, writes) are destroyed with the io_context: the
    // listener, the sessions and their sockets go with them. Nothing is worth waiting for.
    ioc_->stop();
    if (thread_.joinable()) thread_.join();
    listener_.reset();
    ioc_.reset();
  }

 private:
  std::unique_ptr<asio::io_context> ioc_;  // first: destroyed last, after all bound to it
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<Listener> listener_;
  std::thread thread_;
  std::uint16_t port_ = 0;
  std::mutex stop_mu_;
};

}  // namespace

kube::Result<std::unique_ptr<HttpEndpoints>> start_http_endpoints(HttpEndpointsOptions options) {
  if (options.read_timeout.count() <= 0 || options.idle_timeout.count() <= 0) {
    return kube::make_error(kube::ErrorKind::kInvalidArgument,
                            "http endpoints: read and idle timeouts must be positive");
  }
  try {
    auto server = std::make_unique<HttpEndpointsImpl>(std::move(options));
    if (auto started = server->start(); !started) return tl::unexpected(started.error());
    return server;
  } catch (const std::exception& e) {
    return kube::make_error(kube::ErrorKind::kTransport,
                            std::string("http endpoints: ") + e.what());
  }
}

}  // namespace kstack::cmd
