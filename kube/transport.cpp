// HTTP/1.1 client over Boost.Beast: TLS, keep-alive pooling, deadlines and cross-thread cancel.
//
// Each connection owns a one-thread io_context. An exchange starts async operations and runs that
// io_context on the calling thread until they complete, so no thread is started per connection.
// Deadlines are beast::tcp_stream expiries (the stream closes itself when one passes). Cancelling
// from another thread posts a close to the connection's io_context (post is thread-safe), which
// ends whatever operation is pending.
#include "kube/transport.h"

#include <algorithm>
#include <condition_variable>
#include <thread>
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>

#include "kube/resolve.h"
#include "kube/tls_context.h"

namespace kstack::kube {

// ---- CancelToken, HttpResponse ----------------------------------------------------------------

struct CancelToken::State {
  std::mutex mu;
  std::atomic<bool> cancelled{false};
  std::uint64_t next_id = 1;
  std::vector<std::pair<std::uint64_t, std::function<void()>>> actions;
};

CancelToken::CancelToken() : state_(std::make_shared<State>()) {}

// Actions run under the lock, so once remove_action() returns the action is neither running nor
// will run. They must therefore be quick and must not use the token.
void CancelToken::cancel() const {
  std::lock_guard lock(state_->mu);
  if (state_->cancelled.exchange(true)) return;
  for (auto& entry : state_->actions) entry.second();
}

bool CancelToken::cancelled() const { return state_->cancelled.load(); }

std::uint64_t CancelToken::add_action(std::function<void()> action) const {
  std::lock_guard lock(state_->mu);
  const std::uint64_t id = state_->next_id++;
  if (state_->cancelled.load()) {
    action();
  } else {
    state_->actions.emplace_back(id, std::move(action));
  }
  return id;
}

void CancelToken::remove_action(std::uint64_t id) const {
  std::lock_guard lock(state_->mu);
  std::erase_if(state_->actions, [id](const auto& entry) { return entry.first == id; });
}

namespace {

bool iequals(std::string_view a, std::string_view b) {
  auto lower = [](unsigned char c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) {
           return lower(static_cast<unsigned char>(x)) == lower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::optional<std::string> HttpResponse::header(std::string_view name) const {
  for (const auto& h : headers) {
    if (iequals(h.name, name)) return h.value;
  }
  return std::nullopt;
}

// ---- Transport ----------------------------------------------------------------------------------

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using Tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using RequestMessage = http::request<http::string_body>;

constexpr std::uint32_t kMaxHeaderBytes = 1u << 20;         // as Go's net/http default
constexpr std::size_t kMaxErrorBodyBytes = 1u << 20;        // non-2xx body of a stream
constexpr std::size_t kStreamBufferBytes = 64u << 10;       // one read of a streamed body
constexpr std::chrono::seconds kIdleConnectionTimeout{90};  // as Go's http.Transport

Error error_of(ErrorKind kind, std::string message) {
  Error e;
  e.kind = kind;
  e.message = std::move(message);
  return e;
}

Clock::time_point deadline_after(milliseconds d) {
  const auto now = Clock::now();
  const auto room = std::chrono::duration_cast<milliseconds>(Clock::time_point::max() - now);
  return d >= room ? Clock::time_point::max() : now + std::max(d, milliseconds{0});
}

using tls::openssl_reason;

// A connection with everything its operations need. Pooled as a whole.
struct Connection {
  asio::io_context ioc{1};  // declared first: outlives the streams bound to it
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  std::optional<beast::tcp_stream> plain;
  beast::flat_buffer buffer;
  Clock::time_point idle_since{};
  bool reused = false;  // taken from the idle pool

  beast::tcp_stream& lowest() { return tls ? tls->next_layer() : *plain; }

  // Runs until every started operation has completed. Each one is bounded by the stream's
  // expiry or ended by a posted close, so this returns.
  void run() {
    ioc.restart();
    ioc.run();
  }

  // Whether an idle connection still looks usable: nothing may arrive on an idle HTTP/1.1
  // connection, so readability means the server closed it (or misbehaved).
  bool usable_after_idle() {
    if (Clock::now() - idle_since > kIdleConnectionTimeout) return false;
    if (buffer.size() != 0) return false;
    if (tls && SSL_pending(tls->native_handle()) > 0) return false;
    auto& socket = lowest().socket();
    if (!socket.is_open()) return false;
    pollfd pfd{socket.native_handle(), POLLIN, 0};
    return ::poll(&pfd, 1, 0) == 0;
  }
};

// Completion handlers: one type per signature keeps the template instantiations few.
struct IoDone {
  beast::error_code* ec;
  void operator()(beast::error_code e, std::size_t /*bytes*/) const { *ec = e; }
};
struct Done {
  beast::error_code* ec;
  void operator()(beast::error_code e) const { *ec = e; }
};
struct ConnectDone {
  beast::error_code* ec;
  void operator()(beast::error_code e, const Tcp::endpoint& /*peer*/) const { *ec = e; }
};

// While alive, cancelling the token closes the connection's socket from its own io_context.
class CancelGuard {
 public:
  CancelGuard(const CancelToken& token, Connection& c)
      : token_(token),
        id_(token.add_action([&c] { asio::post(c.ioc, [&c] { c.lowest().close(); }); })) {}
  ~CancelGuard() { token_.remove_action(id_); }
  CancelGuard(const CancelGuard&) = delete;
  CancelGuard& operator=(const CancelGuard&) = delete;

 private:
  const CancelToken& token_;
  std::uint64_t id_;
};

// The server closed a kept-alive connection while it was idle (seen before any response byte).
bool connection_lost(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted || ec == ssl::error::stream_truncated;
}

bool idempotent(http::verb v) {
  return v == http::verb::get || v == http::verb::head || v == http::verb::options ||
         v == http::verb::put || v == http::verb::delete_;
}

// A body ended by the peer closing without TLS close_notify is complete when the message is
// delimited by end of stream (no Content-Length, not chunked).
template <class Parser>
void accept_truncation(Parser& p, beast::error_code& ec) {
  if (ec == ssl::error::stream_truncated && p.is_header_done() && p.need_eof()) {
    p.put_eof(ec);
  }
}

template <class Fields>
void copy_headers(const Fields& fields, HttpResponse& out) {
  for (const auto& f : fields) {
    out.headers.push_back(Header{std::string(f.name_string()), std::string(f.value())});
  }
}

// One send/stream call, for error messages and cancellation.
struct Call {
  const CancelToken& cancel;
  std::string what;         // "GET /api/v1/namespaces"
  std::string on_timeout;   // "timed out after 60000ms", "no data for 200ms"
  bool idempotent = false;  // may be retried after an unanswered read
};

// What one attempt on one connection produced.
struct Outcome {
  Result<HttpResponse> result = HttpResponse{};
  bool keep = false;   // the connection may go back to the pool
  bool retry = false;  // a reused connection turned out dead before any response byte
};

bool is_token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_token_char);
}

bool has_control_char(std::string_view s, bool allow_tab) {
  return std::any_of(s.begin(), s.end(), [allow_tab](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && !(allow_tab && c == '\t')) || u == 0x7f;
  });
}

class TransportImpl final : public Transport {
 public:
  TransportImpl(TransportOptions options, std::unique_ptr<ssl::context> ssl_ctx)
      : o_(std::move(options)), ssl_(std::move(ssl_ctx)) {
    beast::error_code ec;
    const auto ip = asio::ip::make_address(o_.host, ec);
    if (!ec) ip_ = ip;
    const std::string host = ip_ && ip_->is_v6() ? "[" + o_.host + "]" : o_.host;
    authority_ = host + ":" + std::to_string(o_.port);
    const bool default_port =
        (o_.scheme == "https" && o_.port == 443) || (o_.scheme == "http" && o_.port == 80);
    host_header_ = default_port ? host : authority_;
    verify_name_ = o_.tls.server_name.empty() ? o_.host : o_.tls.server_name;
    asio::ip::make_address(verify_name_, ec);
    verify_name_is_ip_ = !ec;
  }

  TransportStats stats() const override { return {opened_.load(), requests_.load()}; }

  Result<HttpResponse> send(const HttpRequest& request, const CancelToken& cancel) override;
  Result<HttpResponse> stream(const HttpRequest& request, const ChunkHandler& on_chunk,
                              const CancelToken& cancel, milliseconds idle_timeout) override;

 private:
  using Exchange = std::function<Outcome(Connection&)>;

  Result<HttpResponse> with_connection(const Call& call, Clock::time_point connect_deadline,
                                       const Exchange& exchange);
  Result<std::unique_ptr<Connection>> connect(const Call& call, Clock::time_point deadline);
  Result<std::vector<Tcp::endpoint>> resolve(const Call& call, Clock::time_point deadline);
  bool prepare_tls(SSL* ssl) const;
  std::unique_ptr<Connection> take_idle();
  void put_idle(std::unique_ptr<Connection> c);

  Result<RequestMessage> build(const HttpRequest& request) const;
  template <class Stream>
  Outcome send_on(Stream& s, Connection& c, const Call& call, const RequestMessage& msg,
                  Clock::time_point deadline);
  template <class Stream>
  Outcome stream_on(Stream& s, Connection& c, const Call& call, const RequestMessage& msg,
                    const ChunkHandler& on_chunk, milliseconds idle_timeout);
  template <class Stream>
  Outcome write_and_read_header(Stream& s, Connection& c, const Call& call,
                                const RequestMessage& msg,
                                http::response_parser<http::buffer_body>& p,
                                const std::function<void()>& arm);

  Error io_error(const Call& call, std::string_view phase, const beast::error_code& ec,
                 std::string_view on_timeout) const;
  Error cancelled(const Call& call) const {
    return error_of(ErrorKind::kCancelled, call.what + ": cancelled");
  }

  const TransportOptions o_;
  const std::unique_ptr<ssl::context> ssl_;  // null for http
  std::optional<asio::ip::address> ip_;      // the host, when it is an IP literal
  std::string authority_;                    // host:port, for messages
  std::string host_header_;
  std::string verify_name_;  // checked against the server certificate
  bool verify_name_is_ip_ = false;

  std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_;  // most recently used last
  std::atomic<std::uint64_t> opened_{0};
  std::atomic<std::uint64_t> requests_{0};
};

Error TransportImpl::io_error(const Call& call, std::string_view phase, const beast::error_code& ec,
                              std::string_view on_timeout) const {
  if (call.cancel.cancelled()) return cancelled(call);
  std::string where = call.what + ": " + std::string(phase) + " " + authority_ + ": ";
  if (ec == beast::error::timeout) {
    return error_of(ErrorKind::kTimeout, where + std::string(on_timeout));
  }
  if (ec == http::error::body_limit) {
    return error_of(
        ErrorKind::kResponseTooLarge,
        where + "response body exceeds " + std::to_string(o_.max_response_bytes) + " bytes");
  }
  if (ec == http::error::header_limit) {
    return error_of(ErrorKind::kResponseTooLarge, where + "response header exceeds " +
                                                      std::to_string(kMaxHeaderBytes) + " bytes");
  }
  return error_of(ErrorKind::kTransport, where + ec.message());
}

Result<RequestMessage> TransportImpl::build(const HttpRequest& request) const {
  const auto invalid = [&](std::string what) {
    return tl::unexpected(error_of(ErrorKind::kInvalidArgument, request.method + " " + what));
  };
  if (!is_token(request.method)) return invalid(": invalid HTTP method");
  if (request.target.empty() || request.target.front() != '/' ||
      request.target.find(' ') != std::string::npos || has_control_char(request.target, false)) {
    return invalid("\"" + request.target + "\": target must be a path (origin-form)");
  }
  RequestMessage msg;
  msg.version(11);
  msg.method_string(request.method);
  msg.target(request.target);
  msg.set(http::field::host, host_header_);
  for (const auto& h : request.headers) {
    if (!is_token(h.name) || has_control_char(h.value, true)) {
      return invalid(request.target + ": invalid header \"" + h.name + "\"");
    }
    if (iequals(h.name, "host")) {
      msg.set(http::field::host, h.value);
    } else {
      msg.insert(h.name, h.value);
    }
  }
  msg.body() = request.body;
  msg.prepare_payload();
  return msg;
}

// ---- Connections --------------------------------------------------------------------------------

Result<std::vector<Tcp::endpoint>> TransportImpl::resolve(const Call& call,
                                                          Clock::time_point deadline) {
  auto endpoints = resolve_host(o_.host, o_.port, authority_, deadline, call.cancel);
  if (endpoints) return endpoints;
  if (endpoints.error().is(ErrorKind::kCancelled)) return tl::unexpected(cancelled(call));
  return tl::unexpected(
      error_of(endpoints.error().kind, call.what + ": " + endpoints.error().message));
}

// False if OpenSSL refused the name: connecting then would verify no name at all.
bool TransportImpl::prepare_tls(SSL* ssl) const {
  return tls::prepare_client_connection(ssl, o_.tls, verify_name_, verify_name_is_ip_);
}

Result<std::unique_ptr<Connection>> TransportImpl::connect(const Call& call,
                                                           Clock::time_point deadline) {
  const auto budget = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
  const std::string on_timeout =
      "timed out after " + std::to_string(std::max<long long>(budget.count(), 0)) + "ms";
  std::vector<Tcp::endpoint> endpoints;
  if (ip_) {
    endpoints.emplace_back(*ip_, o_.port);
  } else {
    auto resolved = resolve(call, deadline);
    if (!resolved) return tl::unexpected(resolved.error());
    endpoints = std::move(*resolved);
  }

  auto c = std::make_unique<Connection>();
  if (ssl_) {
    c->tls.emplace(c->ioc, *ssl_);
    if (!prepare_tls(c->tls->native_handle())) {
      return tl::unexpected(error_of(
          ErrorKind::kTls, call.what + ": TLS with " + authority_ + ": cannot use \"" +
                               verify_name_ + "\" as the name to verify: " + openssl_reason()));
    }
  } else {
    c->plain.emplace(c->ioc);
  }
  CancelGuard guard(call.cancel, *c);
  beast::error_code ec;
  c->lowest().expires_at(deadline);
  c->lowest().async_connect(endpoints, ConnectDone{&ec});
  c->run();
  if (call.cancel.cancelled()) return tl::unexpected(cancelled(call));
  if (ec) return tl::unexpected(io_error(call, "connect to", ec, on_timeout));
  c->lowest().socket().set_option(Tcp::no_delay(true), ec);

  if (c->tls) {
    c->tls->async_handshake(ssl::stream_base::client, Done{&ec});
    c->run();
    if (call.cancel.cancelled()) return tl::unexpected(cancelled(call));
    if (ec) {
      const long verify = SSL_get_verify_result(c->tls->native_handle());
      if (verify != X509_V_OK && ec != beast::error::timeout) {
        return tl::unexpected(error_of(
            ErrorKind::kTls,
            call.what + ": TLS handshake with " + authority_ +
                ": certificate verification failed: " + X509_verify_cert_error_string(verify)));
      }
      Error e = io_error(call, "TLS handshake with", ec, on_timeout);
      if (e.kind == ErrorKind::kTransport) e.kind = ErrorKind::kTls;
      return tl::unexpected(std::move(e));
    }
  }
  opened_.fetch_add(1);
  return c;
}

std::unique_ptr<Connection> TransportImpl::take_idle() {
  std::vector<std::unique_ptr<Connection>> dead;  // destroyed after the lock is released
  std::lock_guard lock(mu_);
  while (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    if (c->usable_after_idle()) {
      c->reused = true;
      return c;
    }
    dead.push_back(std::move(c));
  }
  return nullptr;
}

void TransportImpl::put_idle(std::unique_ptr<Connection> c) {
  std::unique_ptr<Connection> dropped;  // destroyed after the lock is released
  c->idle_since = Clock::now();
  std::lock_guard lock(mu_);
  if (idle_.size() < o_.max_idle_connections) {
    idle_.push_back(std::move(c));
  } else {
    dropped = std::move(c);
  }
}

Result<HttpResponse> TransportImpl::with_connection(const Call& call,
                                                    Clock::time_point connect_deadline,
                                                    const Exchange& exchange) {
  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<Connection> c = attempt == 0 ? take_idle() : nullptr;
    if (!c) {
      auto fresh = connect(call, connect_deadline);
      if (!fresh) return tl::unexpected(fresh.error());
      c = std::move(*fresh);
    }
    Outcome out;
    {
      CancelGuard guard(call.cancel, *c);
      out = exchange(*c);
    }
    // A close may still be queued on the io_context: such a connection must not be reused.
    if (call.cancel.cancelled()) out.keep = false;
    if (out.retry && attempt == 0 && !call.cancel.cancelled()) continue;
    if (out.keep) put_idle(std::move(c));
    return std::move(out.result);
  }
}

// ---- Exchanges ----------------------------------------------------------------------------------

template <class Stream>
Outcome TransportImpl::send_on(Stream& s, Connection& c, const Call& call,
                               const RequestMessage& msg, Clock::time_point deadline) {
  Outcome out;
  beast::error_code ec;
  c.lowest().expires_at(deadline);
  http::async_write(s, msg, IoDone{&ec});
  c.run();
  if (ec) {
    out.retry = c.reused && connection_lost(ec);
    out.result = tl::unexpected(io_error(call, "write to", ec, call.on_timeout));
    return out;
  }

  http::response_parser<http::string_body> p;
  p.header_limit(kMaxHeaderBytes);
  p.body_limit(std::uint64_t{o_.max_response_bytes});
  if (msg.method() == http::verb::head) p.skip(true);
  http::async_read(s, c.buffer, p, IoDone{&ec});
  c.run();
  accept_truncation(p, ec);
  if (ec || call.cancel.cancelled()) {
    out.retry = c.reused && call.idempotent && !p.got_some() && connection_lost(ec);
    out.result = tl::unexpected(io_error(call, "read from", ec, call.on_timeout));
    return out;
  }
  HttpResponse response;
  response.status = static_cast<int>(p.get().result_int());
  copy_headers(p.get(), response);
  response.body = std::move(p.get().body());
  // `Connection: close` (keep_alive() false) means the server is closing this socket.
  out.keep = p.is_done() && !p.need_eof() && p.get().keep_alive() && c.buffer.size() == 0;
  out.result = std::move(response);
  return out;
}

template <class Stream>
Outcome TransportImpl::write_and_read_header(Stream& s, Connection& c, const Call& call,
                                             const RequestMessage& msg,
                                             http::response_parser<http::buffer_body>& p,
                                             const std::function<void()>& arm) {
  Outcome out;
  beast::error_code ec;
  arm();
  http::async_write(s, msg, IoDone{&ec});
  c.run();
  if (ec) {
    out.retry = c.reused && connection_lost(ec);
    out.result = tl::unexpected(io_error(call, "write to", ec, call.on_timeout));
    return out;
  }
  arm();
  http::async_read_header(s, c.buffer, p, IoDone{&ec});
  c.run();
  if (ec || call.cancel.cancelled()) {
    out.retry = c.reused && call.idempotent && !p.got_some() && connection_lost(ec);
    out.result = tl::unexpected(io_error(call, "read from", ec, call.on_timeout));
  }
  return out;
}

template <class Stream>
Outcome TransportImpl::stream_on(Stream& s, Connection& c, const Call& call,
                                 const RequestMessage& msg, const ChunkHandler& on_chunk,
                                 milliseconds idle_timeout) {
  const std::function<void()> arm = [&] {
    if (idle_timeout.count() > 0) {
      c.lowest().expires_after(idle_timeout);
    } else {
      c.lowest().expires_never();
    }
  };
  http::response_parser<http::buffer_body> p;
  p.header_limit(kMaxHeaderBytes);
  p.body_limit(boost::none);  // a watch has no end; non-2xx bodies are bounded below
  if (msg.method() == http::verb::head) p.skip(true);
  Outcome out = write_and_read_header(s, c, call, msg, p, arm);
  if (!out.result) return out;

  HttpResponse response;
  response.status = static_cast<int>(p.get().result_int());
  copy_headers(p.get(), response);
  const bool success = response.status / 100 == 2;
  std::vector<char> buf(kStreamBufferBytes);
  bool stopped = false;
  while (!p.is_done() && !stopped) {
    p.get().body().data = buf.data();
    p.get().body().size = buf.size();
    beast::error_code ec;
    arm();
    http::async_read_some(s, c.buffer, p, IoDone{&ec});
    c.run();
    if (ec == http::error::need_buffer) ec = {};
    accept_truncation(p, ec);
    if (call.cancel.cancelled()) {
      out.result = tl::unexpected(cancelled(call));
      return out;
    }
    const std::size_t got = buf.size() - p.get().body().size;
    if (got > 0 && success) {
      stopped = !on_chunk(std::string_view(buf.data(), got));
    } else if (got > 0) {
      const std::size_t room = kMaxErrorBodyBytes - response.body.size();
      response.body.append(buf.data(), std::min(got, room));
      stopped = got >= room;  // truncated: the rest is not worth reading
    }
    if (ec) {
      out.result = tl::unexpected(io_error(call, "read from", ec, call.on_timeout));
      return out;
    }
  }
  // `Connection: close` (keep_alive() false) means the server is closing this socket.
  out.keep = p.is_done() && !p.need_eof() && p.get().keep_alive() && c.buffer.size() == 0;
  out.result = std::move(response);
  return out;
}

std::string describe(const HttpRequest& request) {
  return request.method + " " + request.target.substr(0, request.target.find('?'));
}

Result<HttpResponse> TransportImpl::send(const HttpRequest& request, const CancelToken& cancel) {
  try {
    const milliseconds timeout = request.timeout.value_or(o_.request_timeout);
    const auto deadline = deadline_after(timeout);
    auto msg = build(request);
    if (!msg) return tl::unexpected(msg.error());
    requests_.fetch_add(1);
    const Call call{cancel, describe(request),
                    "timed out after " + std::to_string(timeout.count()) + "ms",
                    idempotent(msg->method())};
    if (cancel.cancelled()) return tl::unexpected(cancelled(call));
    return with_connection(call, std::min(deadline, deadline_after(o_.connect_timeout)),
                           [&](Connection& c) {
                             return c.tls ? send_on(*c.tls, c, call, *msg, deadline)
                                          : send_on(*c.plain, c, call, *msg, deadline);
                           });
  } catch (const std::exception& e) {
    return make_error(ErrorKind::kTransport, describe(request) + ": " + e.what());
  }
}

Result<HttpResponse> TransportImpl::stream(const HttpRequest& request, const ChunkHandler& on_chunk,
                                           const CancelToken& cancel, milliseconds idle_timeout) {
  try {
    auto msg = build(request);
    if (!msg) return tl::unexpected(msg.error());
    requests_.fetch_add(1);
    const Call call{cancel, describe(request),
                    "no data for " + std::to_string(idle_timeout.count()) + "ms",
                    idempotent(msg->method())};
    if (cancel.cancelled()) return tl::unexpected(cancelled(call));
    return with_connection(call, deadline_after(o_.connect_timeout), [&](Connection& c) {
      return c.tls ? stream_on(*c.tls, c, call, *msg, on_chunk, idle_timeout)
                   : stream_on(*c.plain, c, call, *msg, on_chunk, idle_timeout);
    });
  } catch (const std::exception& e) {
    return make_error(ErrorKind::kTransport, describe(request) + ": " + e.what());
  }
}

// ---- Construction -----------------------------------------------------------------------------

// The policy lives in kube/tls_context.cpp, shared with exec; Asio takes the context over.
Result<std::unique_ptr<ssl::context>> make_ssl_context(const TlsOptions& options) {
  auto native = tls::make_client_context(options);
  if (!native) return tl::unexpected(native.error());
  auto ctx = std::make_unique<ssl::context>(native->get());
  static_cast<void>(native->release());  // owned by ctx now
  return ctx;
}

}  // namespace

Result<std::unique_ptr<Transport>> make_transport(TransportOptions options) {
  try {
    if (options.scheme != "https" && options.scheme != "http") {
      return make_error(ErrorKind::kInvalidArgument,
                        "transport: scheme must be http or https, not \"" + options.scheme + "\"");
    }
    if (options.host.size() > 2 && options.host.front() == '[' && options.host.back() == ']') {
      options.host = options.host.substr(1, options.host.size() - 2);  // [::1] -> ::1
    }
    if (options.host.empty())
      return make_error(ErrorKind::kInvalidArgument, "transport: host is empty");
    if (options.port == 0) return make_error(ErrorKind::kInvalidArgument, "transport: port is 0");
    std::unique_ptr<ssl::context> ctx;
    if (options.scheme == "https") {
      auto made = make_ssl_context(options.tls);
      if (!made) return tl::unexpected(made.error());
      ctx = std::move(*made);
    }
    return std::make_unique<TransportImpl>(std::move(options), std::move(ctx));
  } catch (const std::exception& e) {
    return make_error(ErrorKind::kTransport, std::string("transport: ") + e.what());
  }
}

}  // namespace kstack::kube
