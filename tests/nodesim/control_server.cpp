// Plain-HTTP control server (see control_server.h): Beast, coroutines, keep-alive, one thread.
#include "tests/nodesim/control_server.h"

#include <mutex>
#include <thread>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include "tests/nodesim/exec_protocol.h"

namespace kstack::nodesim {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Tcp = asio::ip::tcp;

namespace {

auto redirect(beast::error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

ControlRequest to_control_request(const http::request<http::string_body>& req) {
  ControlRequest out;
  out.method = std::string(req.method_string());
  std::string_view target(req.target().data(), req.target().size());
  auto q = target.find('?');
  out.path = percent_decode(target.substr(0, q), false).value_or(std::string(target.substr(0, q)));
  std::string_view query = q == std::string_view::npos ? std::string_view{} : target.substr(q + 1);
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    auto eq = pair.find('=');
    auto key = percent_decode(pair.substr(0, eq), true);
    auto value = percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true);
    if (key && value) out.query[*key] = *value;
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  out.body = req.body();
  return out;
}

}  // namespace

struct ControlServer::Impl {
  asio::awaitable<void> accept_loop();
  asio::awaitable<void> session(Tcp::socket socket);

  ControlHandler handler;
  asio::io_context ioc;
  Tcp::acceptor acceptor{ioc};
  std::thread thread;
  int port = 0;
  std::once_flag stopped;
};

asio::awaitable<void> ControlServer::Impl::accept_loop() {
  for (;;) {
    beast::error_code ec;
    Tcp::socket socket = co_await acceptor.async_accept(redirect(ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) continue;
    asio::co_spawn(ioc, session(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> ControlServer::Impl::session(Tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (;;) {
    beast::error_code ec;
    http::request<http::string_body> req;
    stream.expires_after(std::chrono::seconds(60));
    co_await http::async_read(stream, buffer, req, redirect(ec));
    if (ec) break;
    ControlResponse answer;
    try {
      answer = handler(to_control_request(req));
    } catch (const std::exception& e) {
      answer = {500, fmt::format("{{\"error\":\"{}\"}}", e.what())};
    }
    http::response<http::string_body> res{static_cast<http::status>(answer.status), req.version()};
    res.set(http::field::server, "kstack-nodesim");
    res.set(http::field::content_type, answer.content_type);
    res.keep_alive(req.keep_alive());
    res.body() = std::move(answer.body);
    res.prepare_payload();
    co_await http::async_write(stream, res, redirect(ec));
    if (ec || !res.keep_alive()) break;
  }
  beast::error_code ec;
  stream.socket().shutdown(Tcp::socket::shutdown_both, ec);
}

ControlServer::ControlServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ControlServer::~ControlServer() { stop(); }

int ControlServer::port() const { return impl_->port; }

tl::expected<std::unique_ptr<ControlServer>, std::string> ControlServer::start(
    const std::string& address, int port, ControlHandler handler) {
  auto impl = std::make_unique<Impl>();
  impl->handler = std::move(handler);
  beast::error_code ec;
  auto ip = asio::ip::make_address(address, ec);
  if (ec) return tl::unexpected("address " + address + ": " + ec.message());
  Tcp::endpoint endpoint(ip, static_cast<unsigned short>(port));
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return tl::unexpected(fmt::format("listen on {}:{}: {}", address, port, ec.message()));
  impl->port = impl->acceptor.local_endpoint().port();
  asio::co_spawn(impl->ioc, impl->accept_loop(), asio::detached);
  impl->thread = std::thread([io = &impl->ioc] { io->run(); });
  return std::unique_ptr<ControlServer>(new ControlServer(std::move(impl)));
}

void ControlServer::stop() {
  if (!impl_) return;
  std::call_once(impl_->stopped, [this] {
    asio::post(impl_->ioc, [this] {
      beast::error_code ec;
      impl_->acceptor.close(ec);
    });
    impl_->ioc.stop();
    if (impl_->thread.joinable()) impl_->thread.join();
  });
}

}  // namespace kstack::nodesim
