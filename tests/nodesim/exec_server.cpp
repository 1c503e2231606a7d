// The exec endpoint (see exec_server.h): Boost.Beast WebSocket over TLS with C++20 coroutines.
//
// One exec = one connection = one strand. Its coroutines: the session (handshake, spawn, then
// the life cycle below), a reader (WebSocket -> stdin, resize, v5 close signal), one pump per
// output pipe (pipe -> frames) and an exit watcher (pidfd readable). They share an ExecState
// and wake the session through a one-waiter Event. Frames are written under an AsyncMutex
// (Beast allows one outstanding write). Life cycle:
//   1. until the command exits; a client that disconnects closes stdin, and a command still
//      running kDisconnectGrace later is killed;
//   2. output is forwarded until both pipes reach EOF, at most kExitDrain after the exit
//      (background processes may hold the pipes open);
//   3. the status goes on channel 3 (metav1.Status JSON for v4/v5, text failures before) and
//      the WebSocket is closed normally.
// Stdin EOF: v5's close signal {255, 0} closes the command's stdin; v1-v4 have no such signal,
// so only the client closing the WebSocket ends stdin — and then nothing more can be sent.
#include "tests/nodesim/exec_server.h"

#include <array>
#include <deque>
#include <mutex>
#include <thread>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/json/parse.hpp>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include "tests/nodesim/exec_protocol.h"

namespace kstack::nodesim {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using Tcp = asio::ip::tcp;
using SslStream = beast::ssl_stream<beast::tcp_stream>;
using WsStream = websocket::stream<SslStream>;
using Request = http::request<http::string_body>;
using Clock = std::chrono::steady_clock;
using asio::awaitable;

namespace {

constexpr std::size_t kReadChunk = 32 * 1024;  // as io.Copy
constexpr auto kHandshakeTimeout = std::chrono::seconds(30);

auto redirect(beast::error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

// A wake-up flag for a single waiting coroutine; set() from any coroutine of the same strand.
class Event {
 public:
  explicit Event(const asio::any_io_executor& ex) : timer_(ex) {}
  void set() {
    set_ = true;
    timer_.cancel();
  }
  awaitable<void> wait_until(Clock::time_point deadline) {
    if (!set_) {
      timer_.expires_at(deadline);
      beast::error_code ec;
      co_await timer_.async_wait(redirect(ec));
    }
    set_ = false;
  }

 private:
  asio::steady_timer timer_;
  bool set_ = false;
};

// FIFO mutex for coroutines of one strand; unlock() hands the lock to the next waiter.
class AsyncMutex {
 public:
  explicit AsyncMutex(const asio::any_io_executor& ex) : ex_(ex) {}
  awaitable<void> lock() {
    if (!locked_) {
      locked_ = true;
      co_return;
    }
    asio::steady_timer turn(ex_, Clock::time_point::max());
    waiters_.push_back(&turn);
    beast::error_code ec;
    co_await turn.async_wait(redirect(ec));  // cancelled by unlock(): we own the lock now
  }
  void unlock() {
    if (waiters_.empty()) {
      locked_ = false;
      return;
    }
    auto* next = waiters_.front();
    waiters_.pop_front();
    next->cancel();
  }

 private:
  asio::any_io_executor ex_;
  bool locked_ = false;
  std::deque<asio::steady_timer*> waiters_;
};

struct ExecState {
  ExecState(WsStream&& stream, const asio::any_io_executor& ex)
      : ws(std::move(stream)),
        pidfd(ex),
        input(ex),
        output(ex),
        error_output(ex),
        pty(ex),
        wake(ex),
        write_mutex(ex) {}
  ExecState(const ExecState&) = delete;
  ExecState& operator=(const ExecState&) = delete;
  ~ExecState() {
    if (pid > 0 && !exited) {  // the server is shutting down mid-exec
      ::kill(pid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
  }

  // One frame: the channel byte, then the data. False once the client cannot be reached.
  awaitable<bool> send(std::uint8_t channel, const char* data, std::size_t size) {
    if (client_gone) co_return false;
    std::array<asio::const_buffer, 2> frame = {asio::buffer(&channel, 1), asio::buffer(data, size)};
    co_await write_mutex.lock();
    beast::error_code ec;
    if (!client_gone) co_await ws.async_write(frame, redirect(ec));
    write_mutex.unlock();
    if (ec) {
      client_gone = true;
      wake.set();
    }
    co_return !client_gone;
  }

  asio::posix::stream_descriptor& stdin_stream() { return tty ? pty : input; }

  void close_stdin() {
    beast::error_code ec;
    if (!tty && input.is_open()) input.close(ec);
  }

  WsStream ws;
  StreamProtocol protocol = StreamProtocol::kV4;
  std::vector<std::string> command;
  std::string container_id;
  bool tty = false;
  pid_t pid = -1;
  asio::posix::stream_descriptor pidfd, input, output, error_output, pty;
  Event wake;
  AsyncMutex write_mutex;
  int outputs_running = 0;
  bool exited = false;
  int exit_code = 0;
  bool client_gone = false;  // closed by the client, or the connection broke
  bool closing = false;      // we started the closing handshake
  bool reader_done = false;
};

awaitable<void> read_input(std::shared_ptr<ExecState> s) {
  beast::flat_buffer buffer;
  for (;;) {
    beast::error_code ec;
    buffer.clear();
    co_await s->ws.async_read(buffer, redirect(ec));
    if (ec) break;
    auto data = buffer.cdata();
    const auto* p = static_cast<const unsigned char*>(data.data());
    const std::size_t n = data.size();
    if (n == 0) continue;
    if (p[0] == kStdinChannel) {
      auto& in = s->stdin_stream();
      if (n > 1 && in.is_open()) {
        co_await asio::async_write(in, asio::buffer(p + 1, n - 1), redirect(ec));
        if (ec) s->close_stdin();  // the command closed its stdin (EPIPE)
      }
    } else if (p[0] == kResizeChannel && s->tty && s->pty.is_open()) {
      boost::system::error_code jec;
      auto size =
          boost::json::parse(std::string_view(reinterpret_cast<const char*>(p + 1), n - 1), jec);
      if (!jec && size.is_object()) {
        const auto* w = size.as_object().if_contains("Width");
        const auto* h = size.as_object().if_contains("Height");
        if (w != nullptr && h != nullptr) {
          auto width = w->to_number<unsigned short>(jec);
          auto height = jec ? 0 : h->to_number<unsigned short>(jec);
          if (!jec) resize_terminal(s->pty.native_handle(), width, height);
        }
      }
    } else if (p[0] == kCloseSignal && s->protocol == StreamProtocol::kV5 && n >= 2 &&
               p[1] == kStdinChannel) {
      s->close_stdin();
    }
  }
  s->reader_done = true;
  s->close_stdin();
  if (!s->closing) s->client_gone = true;
  s->wake.set();
}

awaitable<void> pump_output(std::shared_ptr<ExecState> s, asio::posix::stream_descriptor& pipe,
                            std::uint8_t channel) {
  std::vector<char> buffer(kReadChunk);
  for (;;) {
    beast::error_code ec;
    std::size_t n = co_await pipe.async_read_some(asio::buffer(buffer), redirect(ec));
    // Once the client is gone, output is read and dropped so the command never blocks on it.
    if (n > 0) co_await s->send(channel, buffer.data(), n);
    if (ec) break;  // EOF, EIO (a terminal whose last writer left), or cancelled
  }
  --s->outputs_running;
  s->wake.set();
}

awaitable<void> wait_exit(std::shared_ptr<ExecState> s) {
  beast::error_code ec;
  co_await s->pidfd.async_wait(asio::posix::descriptor_base::wait_read, redirect(ec));
  auto code = reap_exec(s->pid);
  if (!code) {  // cancelled (shutdown): make sure the helper goes
    spdlog::warn("exec in {}: the wait for pid {} ended before it exited ({}); killing it",
                 s->container_id, s->pid, ec ? ec.message() : std::string("no error"));
    ::kill(s->pid, SIGKILL);
    int status = 0;
    ::waitpid(s->pid, &status, 0);
    code = 137;
  }
  spdlog::info("exec in {}: pid {} exited with {}", s->container_id, s->pid, *code);
  s->exit_code = *code;
  s->exited = true;
  s->wake.set();
}

// The exec's life after the WebSocket handshake (steps 1-3 of the file comment).
awaitable<void> run_exec(std::shared_ptr<ExecState> s) {
  auto ex = co_await asio::this_coro::executor;
  asio::co_spawn(ex, read_input(s), asio::detached);
  auto start_pump = [&](asio::posix::stream_descriptor& d, std::uint8_t channel) {
    if (!d.is_open()) return;
    ++s->outputs_running;
    asio::co_spawn(ex, pump_output(s, d, channel), asio::detached);
  };
  start_pump(s->output, kStdoutChannel);
  start_pump(s->error_output, kStderrChannel);
  start_pump(s->pty, kStdoutChannel);
  asio::co_spawn(ex, wait_exit(s), asio::detached);

  std::optional<Clock::time_point> kill_at;
  while (!s->exited) {
    if (s->client_gone && !kill_at) kill_at = Clock::now() + kDisconnectGrace;
    if (kill_at && Clock::now() >= *kill_at) {
      spdlog::info("exec in {}: client gone, killing \"{}\"", s->container_id,
                   s->command.empty() ? std::string() : s->command[0]);
      ::kill(s->pid, SIGKILL);
      kill_at = Clock::time_point::max();
    }
    co_await s->wake.wait_until(kill_at.value_or(Clock::time_point::max()));
  }
  const auto drain_until = Clock::now() + kExitDrain;
  while (s->outputs_running > 0 && Clock::now() < drain_until) {
    co_await s->wake.wait_until(drain_until);
  }
  if (s->outputs_running > 0) {
    beast::error_code ec;
    s->output.close(ec);
    s->error_output.close(ec);
    s->pty.close(ec);
    while (s->outputs_running > 0) co_await s->wake.wait_until(Clock::time_point::max());
  }
  if (!s->client_gone) {
    if (auto payload = final_error_channel_payload(s->protocol, s->exit_code, s->command)) {
      co_await s->send(kErrorChannel, payload->data(), payload->size());
    }
  }
  beast::error_code ec;
  if (!s->client_gone) {
    s->closing = true;
    co_await s->write_mutex.lock();
    co_await s->ws.async_close(websocket::close_code::normal, redirect(ec));
    s->write_mutex.unlock();
  }
  if (!s->reader_done) beast::get_lowest_layer(s->ws).close();
  while (!s->reader_done) co_await s->wake.wait_until(Clock::time_point::max());
  spdlog::debug("exec in {} ended with exit code {}", s->container_id, s->exit_code);
}

awaitable<void> respond(SslStream& stream, const Request& req, http::status status,
                        std::string body) {
  http::response<http::string_body> res{status, req.version()};
  res.set(http::field::server, "kstack-nodesim");
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.keep_alive(false);
  res.body() = std::move(body);
  res.prepare_payload();
  beast::error_code ec;
  co_await http::async_write(stream, res, redirect(ec));
  if (!ec) co_await stream.async_shutdown(redirect(ec));
}

}  // namespace

struct ExecServer::Impl {
  Impl(Runtime& r, ExecServerOptions o) : runtime(r), options(std::move(o)) {}

  awaitable<void> accept_loop();
  std::string served_protocols() const;
  awaitable<void> session(Tcp::socket socket);

  // Order matters: sessions still pending when the io_context is destroyed use `ssl`.
  Runtime& runtime;
  ExecServerOptions options;
  asio::ssl::context ssl{asio::ssl::context::tls_server};
  asio::io_context ioc;
  Tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;
  int port = 0;
  std::once_flag stopped;
};

std::string ExecServer::Impl::served_protocols() const {
  std::string names;
  for (auto protocol : options.protocols) {
    if (!names.empty()) names += ", ";
    names += protocol_name(protocol);
  }
  return names;
}

awaitable<void> ExecServer::Impl::accept_loop() {
  for (;;) {
    beast::error_code ec;
    Tcp::socket socket = co_await acceptor.async_accept(asio::make_strand(ioc), redirect(ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) continue;
    auto ex = socket.get_executor();
    asio::co_spawn(ex, session(std::move(socket)), asio::detached);
  }
}

awaitable<void> ExecServer::Impl::session(Tcp::socket socket) {
  SslStream stream(std::move(socket), ssl);
  beast::error_code ec;
  beast::get_lowest_layer(stream).expires_after(kHandshakeTimeout);
  co_await stream.async_handshake(asio::ssl::stream_base::server, redirect(ec));
  if (ec) co_return;
  beast::flat_buffer buffer;
  Request req;
  co_await http::async_read(stream, buffer, req, redirect(ec));
  if (ec) co_return;

  std::string_view target(req.target().data(), req.target().size());
  if (target == "/healthz") {
    co_await respond(stream, req, http::status::ok, "ok");
    co_return;
  }
  if (target.rfind("/exec/", 0) != 0) {
    co_await respond(stream, req, http::status::not_found, "404 page not found\n");
    co_return;
  }
  if (options.unreachable && options.unreachable()) {
    co_await respond(stream, req, http::status::service_unavailable,
                     "node is lost (heartbeats stopped): its kubelet cannot be reached\n");
    co_return;
  }
  auto params = parse_exec_target(target);
  if (!params) {
    co_await respond(stream, req, http::status::bad_request, params.error() + "\n");
    co_return;
  }
  auto where =
      runtime.exec_target(params->namespace_name, params->pod, params->pod_uid, params->container);
  if (!where) {
    co_await respond(stream, req, static_cast<http::status>(where.error().http_status),
                     where.error().message + "\n");
    co_return;
  }
  if (!websocket::is_upgrade(req)) {
    bool spdy = beast::iequals(req[http::field::upgrade].substr(0, 4), "SPDY");
    co_await respond(stream, req, http::status::bad_request,
                     spdy ? "SPDY is not supported by kstack-nodesim: use a WebSocket "
                            "(v4.channel.k8s.io or v5.channel.k8s.io)\n"
                          : "Upgrade request required\n");
    co_return;
  }
  auto offered = req[http::field::sec_websocket_protocol];
  auto negotiated =
      negotiate_protocol(std::string_view(offered.data(), offered.size()), options.protocols);
  if (!negotiated) {
    co_await respond(stream, req, http::status::bad_request,
                     "none of the offered subprotocols is supported (this node serves " +
                         served_protocols() + ")\n");
    co_return;
  }

  auto ex = co_await asio::this_coro::executor;
  auto s = std::make_shared<ExecState>(WsStream(std::move(stream)), ex);
  s->protocol = negotiated->protocol;
  s->command = params->command;
  s->tty = params->tty;
  s->container_id = where->container_id;
  beast::get_lowest_layer(s->ws).expires_never();
  auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::server);
  timeouts.handshake_timeout = std::chrono::seconds(10);
  s->ws.set_option(timeouts);
  s->ws.set_option(
      websocket::stream_base::decorator([name = negotiated->name](websocket::response_type& res) {
        res.set(http::field::server, "kstack-nodesim");
        if (!name.empty()) res.set(http::field::sec_websocket_protocol, name);
      }));
  s->ws.read_message_max(kMaxMessageBytes);
  s->ws.binary(true);
  co_await s->ws.async_accept(req, redirect(ec));
  if (ec) co_return;

  ExecOptions io{params->stdin, params->stdout, params->stderr, params->tty};
  auto proc = spawn_exec(*where, params->command, io);
  if (!proc) {
    spdlog::warn("exec in {}: {}", where->container_id, proc.error());
    std::string status =
        s->protocol >= StreamProtocol::kV4 ? internal_error_status(proc.error()) : proc.error();
    co_await s->send(kErrorChannel, status.data(), status.size());
    co_await s->ws.async_close(websocket::close_code::normal, redirect(ec));
    co_return;
  }
  s->pid = proc->pid;
  s->pidfd.assign(proc->pidfd);
  if (proc->stdin_fd >= 0) s->input.assign(proc->stdin_fd);
  if (proc->stdout_fd >= 0) s->output.assign(proc->stdout_fd);
  if (proc->stderr_fd >= 0) s->error_output.assign(proc->stderr_fd);
  if (proc->pty_fd >= 0) s->pty.assign(proc->pty_fd);
  spdlog::info("exec in {}: {} (pid {})", where->container_id, params->command[0], proc->pid);

  // As the kubelet: an empty frame on the lowest writable channel says "connected".
  std::uint8_t first = params->stdout || params->tty ? kStdoutChannel
                       : params->stderr              ? kStderrChannel
                                                     : kErrorChannel;
  co_await s->send(first, nullptr, 0);
  co_await run_exec(s);
}

ExecServer::ExecServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ExecServer::~ExecServer() { stop(); }

int ExecServer::port() const { return impl_->port; }

tl::expected<std::unique_ptr<ExecServer>, std::string> ExecServer::start(
    Runtime& runtime, ExecServerOptions options) {
  auto impl = std::make_unique<Impl>(runtime, std::move(options));
  beast::error_code ec;
  impl->ssl.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                        asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                        asio::ssl::context::no_tlsv1_1);
  impl->ssl.use_certificate_chain(asio::buffer(impl->options.cert_pem), ec);
  if (!ec)
    impl->ssl.use_private_key(asio::buffer(impl->options.key_pem), asio::ssl::context::pem, ec);
  if (ec) return tl::unexpected("TLS certificate: " + ec.message());
  auto address = asio::ip::make_address(impl->options.address, ec);
  if (ec) return tl::unexpected("address " + impl->options.address + ": " + ec.message());
  Tcp::endpoint endpoint(address, static_cast<unsigned short>(impl->options.port));
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return tl::unexpected(fmt::format("listen on {}:{}: {}", impl->options.address,
                                      impl->options.port, ec.message()));
  }
  impl->port = impl->acceptor.local_endpoint().port();
  asio::co_spawn(impl->ioc, impl->accept_loop(), asio::detached);
  for (int i = 0; i < std::max(1, impl->options.threads); ++i) {
    impl->threads.emplace_back([io = &impl->ioc] { io->run(); });
  }
  return std::unique_ptr<ExecServer>(new ExecServer(std::move(impl)));
}

void ExecServer::stop() {
  if (!impl_) return;
  std::call_once(impl_->stopped, [this] {
    asio::post(impl_->ioc, [this] {
      beast::error_code ec;
      impl_->acceptor.close(ec);
    });
    impl_->ioc.stop();
    for (auto& t : impl_->threads) t.join();
    impl_->threads.clear();
  });
}

}  // namespace kstack::nodesim
