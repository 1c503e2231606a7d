// The admission webhook's HTTPS server on Boost.Beast — the only translation unit of validator/
// that includes Beast (compile cost, see docs/dependencies.md).
//
// N io_contexts, each run by one thread (as nginx's workers: no lock handoffs, no strands, no
// thread waking another per completion); the listener hands connections out in turn. Each
// connection is a Session living on one of them, moving through
// do_x/on_x steps: handshake -> wait for a request -> read header -> read body -> answer -> write,
// then back to waiting (keep-alive) or closing. Every step has a deadline (tcp_stream expiry),
// so a slow or silent client costs a socket and a timer, never a thread.
//
// Certificates: the listener gives each new connection the ssl::context current at accept time
// (a shared_ptr, swapped under a mutex by set_certificate); a connection keeps its context for
// its whole life, so a swap neither restarts anything nor disturbs established connections.
#include "validator/server.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <malloc.h>
#include <spdlog/spdlog.h>

#include "validator/tls_context.h"

namespace kstack::validator {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using Tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
// Sockets and timers bound to their io_context's own executor type rather than
// any_io_executor: every operation and completion otherwise goes through the type-erased
// executor (copies, indirect calls); about 1.4 of the allow-all server's 35 µs per request
// (docs/benchmarks.md, "Admission", fourth round).
using Executor = asio::io_context::executor_type;
using Socket = asio::basic_stream_socket<Tcp, Executor>;
using TcpStream = beast::basic_stream<Tcp, Executor, beast::unlimited_rate_policy>;
using Request = http::request<http::string_body>;

constexpr std::uint32_t kMaxHeaderBytes = 64u << 10;  // the API server sends well under 1 KiB
constexpr std::size_t kFirstReadBytes = 16u << 10;
// After an error answered before the body was read (413, 404...), the unread request bytes are
// drained for at most this long, so that the client reads the answer instead of a TCP reset.
constexpr std::chrono::milliseconds kMaxLinger{2000};
constexpr std::size_t kDrainBufferBytes = 64u << 10;
constexpr std::chrono::milliseconds kTlsShutdownTimeout{1000};  // waiting for close_notify
constexpr std::chrono::milliseconds kAcceptRetryDelay{100};     // after EMFILE and the like
constexpr std::size_t kIdleBufferBytes = 64u << 10;             // kept between requests
constexpr std::size_t kResponseHeaderBytes = 96;  // the fixed part of an answer's header
// Allocations this large are mmap()ed, and so returned to the system when freed. glibc's
// default (128 KiB) rises to the size of any such block freed, after which request bodies
// (up to 3 MiB) come from the heap and its pages stay with the process.
constexpr int kMmapThresholdBytes = 256 << 10;
// Once this many connections were open, the heap's free pages are handed back (malloc_trim)
// when the count falls to a quarter of that peak: a burst of connections leaves ~50 KiB of
// small blocks each, freed but kept by the allocator.
constexpr std::size_t kTrimPeakConnections = 64;
// How often a refused connection is logged: the first, then every this many.
constexpr std::uint64_t kRefusalLogEvery = 1000;

class Session;

// What the server, its listener and its sessions share; outlives all of them.
struct Shared {
  Shared(ServerOptions o, AdmissionHandler& h, std::shared_ptr<ssl::context> ctx)
      : options(std::move(o)), handler(h), context_(std::move(ctx)) {}

  const ServerOptions options;
  AdmissionHandler& handler;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> requests{0}, rejected{0}, connections{0}, timeouts{0};
  std::atomic<std::uint64_t> refused_connections{0}, admitted_bodies{0}, busy{0}, trims{0};
  std::atomic<std::uint64_t> body_bytes_held{0};

  // Takes `bytes` of the body budget; false (nothing taken) when they do not fit.
  bool reserve_body(std::size_t bytes) {
    std::size_t taken = inflight_body_bytes.load();
    do {
      if (bytes >
          options.max_inflight_body_bytes - std::min(taken, options.max_inflight_body_bytes))
        return false;
    } while (!inflight_body_bytes.compare_exchange_weak(taken, taken + bytes));
    return true;
  }
  void release_body(std::size_t bytes) { inflight_body_bytes.fetch_sub(bytes); }
  std::atomic<std::size_t> inflight_body_bytes{0};

  std::shared_ptr<ssl::context> context() {
    std::lock_guard lock(context_mu_);
    return context_;
  }
  void set_context(std::shared_ptr<ssl::context> ctx) {
    std::shared_ptr<ssl::context> old;  // released outside the lock
    std::lock_guard lock(context_mu_);
    old = std::exchange(context_, std::move(ctx));
  }

  std::uint64_t add_session(std::weak_ptr<Session> s) {
    std::lock_guard lock(sessions_mu);
    const std::uint64_t id = next_session_id++;
    sessions.emplace(id, std::move(s));
    peak_sessions = std::max(peak_sessions, sessions.size());
    return id;
  }
  // True when the heap should be trimmed now (see kTrimPeakConnections).
  bool remove_session(std::uint64_t id) {
    std::lock_guard lock(sessions_mu);
    sessions.erase(id);
    if (sessions.empty()) sessions_cv.notify_all();
    if (peak_sessions < kTrimPeakConnections || sessions.size() > peak_sessions / 4) return false;
    peak_sessions = sessions.size();
    return true;
  }
  std::uint64_t active_sessions() {
    std::lock_guard lock(sessions_mu);
    return sessions.size();
  }

  std::mutex sessions_mu;
  std::condition_variable sessions_cv;
  std::unordered_map<std::uint64_t, std::weak_ptr<Session>> sessions;
  std::uint64_t next_session_id = 1;
  std::size_t peak_sessions = 0;  // since the last trim

 private:
  std::mutex context_mu_;
  std::shared_ptr<ssl::context> context_;
};

std::string status_body(int code, std::string_view reason, std::string_view message) {
  boost::json::object status;
  status["kind"] = "Status";
  status["apiVersion"] = "v1";
  status["metadata"] = boost::json::object{};
  status["status"] = "Failure";
  status["message"] = message;
  status["reason"] = reason;
  status["code"] = code;
  return boost::json::serialize(status);
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// application/json, with optional parameters (charset=utf-8).
bool is_json(std::string_view content_type) {
  const std::string_view media = content_type.substr(0, content_type.find(';'));
  const auto first = media.find_first_not_of(" \t");
  const auto last = media.find_last_not_of(" \t");
  return first != std::string_view::npos &&
         iequals(media.substr(first, last - first + 1), "application/json");
}

// The peer went away: nothing to answer, nothing to log above debug.
bool peer_gone(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::operation_aborted || ec == ssl::error::stream_truncated;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Socket&& socket, std::shared_ptr<Shared> shared, std::shared_ptr<ssl::context> ctx)
      : shared_(std::move(shared)), ctx_(std::move(ctx)), stream_(std::move(socket), *ctx_) {}
  ~Session() {
    release_body_budget();
    if (id_ != 0 && shared_->remove_session(id_)) {
      malloc_trim(0);
      shared_->trims.fetch_add(1);
    }
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void run() {
    id_ = shared_->add_session(weak_from_this());
    asio::dispatch(stream_.get_executor(),
                   beast::bind_front_handler(&Session::do_handshake, shared_from_this()));
  }

  // Server stopping (any thread): idle connections close now, busy ones after their answer.
  void stop() {
    asio::post(stream_.get_executor(),
               beast::bind_front_handler(&Session::on_stop, shared_from_this()));
  }

 private:
  enum class Phase { kHandshake, kIdle, kBusy, kClosing };

  TcpStream& lowest() { return beast::get_lowest_layer(stream_); }
  const ServerOptions& options() const { return shared_->options; }

  void on_stop() {
    if (phase_ == Phase::kHandshake || phase_ == Phase::kIdle) lowest().cancel();
  }

  void do_handshake() {
    phase_ = Phase::kHandshake;
    if (shared_->stopping) return;
    lowest().expires_after(options().header_timeout);
    stream_.async_handshake(ssl::stream_base::server,
                            beast::bind_front_handler(&Session::on_handshake, shared_from_this()));
  }

  void on_handshake(beast::error_code ec) {
    if (ec) return end(ec, "TLS handshake");
    do_wait_request();
  }

  // Waits for the first byte of the next request: header_timeout for a connection's first
  // request, idle_timeout between kept-alive requests.
  void do_wait_request() {
    phase_ = Phase::kIdle;
    if (shared_->stopping) return do_shutdown();
    if (buffer_.size() > 0) {  // pipelined: the next request is already here
      header_deadline_ = Clock::now() + options().header_timeout;
      return do_read_header();
    }
    if (buffer_.capacity() > kIdleBufferBytes) buffer_.shrink_to_fit();
    if (first_request_) {
      header_deadline_ = Clock::now() + options().header_timeout;
      lowest().expires_at(header_deadline_);
    } else {
      lowest().expires_after(options().idle_timeout);
    }
    stream_.async_read_some(
        buffer_.prepare(kFirstReadBytes),
        beast::bind_front_handler(&Session::on_request_start, shared_from_this()));
  }

  void on_request_start(beast::error_code ec, std::size_t bytes) {
    if (ec) {
      // An idle keep-alive connection expiring is normal; a new one that never asks is not.
      if (ec == beast::error::timeout && !first_request_) return;
      return end(ec, "waiting for a request");
    }
    buffer_.commit(bytes);
    if (!first_request_) header_deadline_ = Clock::now() + options().header_timeout;
    do_read_header();
  }

  void do_read_header() {
    phase_ = Phase::kBusy;
    started_ = Clock::now();
    endpoint_ = "other";
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(std::uint64_t{options().max_body_bytes});
    if (const auto ec = parse_buffered(true); ec || parser_->is_header_done()) {
      return on_read_header(ec, 0);
    }
    lowest().expires_at(header_deadline_);
    http::async_read_header(
        stream_, buffer_, *parser_,
        beast::bind_front_handler(&Session::on_read_header, shared_from_this()));
  }

  void on_read_header(beast::error_code ec, std::size_t /*bytes*/) {
    if (ec == http::error::body_limit) {  // Content-Length over the limit, seen with the header
      endpoint_ = endpoint_of(parser_->get().target());
      return reply_too_large();
    }
    if (ec == http::error::header_limit) {
      return reply_error(http::status::request_header_fields_too_large,
                         "RequestHeaderFieldsTooLarge",
                         "request header exceeds " + std::to_string(kMaxHeaderBytes) + " bytes");
    }
    if (ec == beast::error::timeout || peer_gone(ec)) return end(ec, "reading a request header");
    if (ec)
      return reply_error(http::status::bad_request, "BadRequest",
                         "malformed HTTP request: " + ec.message());
    route();
  }

  // The endpoint label of a request target (bounded set, for metrics).
  static std::string_view endpoint_of(std::string_view target) {
    const std::string_view path = target.substr(0, target.find('?'));
    for (std::string_view known : {"/validate", "/mutate", "/healthz"}) {
      if (path == known) return known;
    }
    return "other";
  }

  void route() {
    const Request& req = parser_->get();
    endpoint_ = endpoint_of(req.target());
    if (endpoint_ == "/healthz") {
      if (req.method() != http::verb::get) return refuse_not_allowed("GET");
      if (!parser_->is_done())
        return refuse_unread(http::status::bad_request, "BadRequest", "GET /healthz takes no body");
      return reply(http::status::ok, "text/plain", "ok");
    }
    if (endpoint_ == "other") {
      const std::string_view path = req.target().substr(0, req.target().find('?'));
      return refuse_unread(http::status::not_found, "NotFound",
                           "no such path " + std::string(path.substr(0, 256)) +
                               ": the admission endpoints are /validate and /mutate");
    }
    if (req.method() != http::verb::post) return refuse_not_allowed("POST");
    if (const auto type = req[http::field::content_type]; !is_json(type)) {
      return refuse_unread(http::status::unsupported_media_type, "UnsupportedMediaType",
                           "Content-Type must be application/json, not \"" +
                               std::string(type.substr(0, 128)) + "\"");
    }
    if (!admit_body()) return refuse_busy();
    do_read_body();
  }

  // An error for a request whose body may still be unread: answered at once, without reading
  // (nor holding) the body; the connection then closes after a bounded drain (do_linger).
  void refuse_unread(http::status status, std::string_view reason, std::string message) {
    reply_error(status, reason, std::move(message));
  }

  // Takes the request's share of the body budget: its Content-Length, or the most a chunked
  // body may grow to.
  bool admit_body() {
    const auto length = parser_->content_length();
    const std::size_t bytes = length ? static_cast<std::size_t>(*length) : options().max_body_bytes;
    if (!shared_->reserve_body(bytes)) return false;
    reserved_ = bytes;
    shared_->admitted_bodies.fetch_add(1);
    return true;
  }

  void refuse_busy() {
    shared_->busy.fetch_add(1);
    extra_headers_ = "Retry-After: " + std::to_string(kBusyRetryAfter.count()) + "\r\n";
    refuse_unread(http::status::service_unavailable, "ServiceUnavailable",
                  "admission server busy: request bodies being read already take the budget of " +
                      std::to_string(options().max_inflight_body_bytes) +
                      " bytes (this one announces " +
                      std::to_string(parser_->content_length().value_or(options().max_body_bytes)) +
                      "); retry after " + std::to_string(kBusyRetryAfter.count()) + " s");
  }

  // Bytes of the body held now, for ServerStats::body_bytes_held.
  void note_body_progress() {
    const std::size_t held = parser_ ? parser_->get().body().size() : 0;
    if (held >= held_) {
      shared_->body_bytes_held.fetch_add(held - held_);
    } else {
      shared_->body_bytes_held.fetch_sub(held_ - held);
    }
    held_ = held;
  }

  void release_body_budget() {
    if (held_ > 0) shared_->body_bytes_held.fetch_sub(std::exchange(held_, 0));
    if (reserved_ > 0) shared_->release_body(std::exchange(reserved_, 0));
  }

  void refuse_not_allowed(std::string_view allow) {
    extra_headers_ = "Allow: " + std::string(allow) + "\r\n";
    refuse_unread(http::status::method_not_allowed, "MethodNotAllowed",
                  std::string(to_string(parser_->get().method())) + " is not allowed here, only " +
                      std::string(allow));
  }

  // Feeds the bytes already buffered to the parser, without I/O: most requests come whole with
  // their first read and then need no further asynchronous step (each one costs a queued
  // completion, a timer, and often waking another thread). Lacking bytes is not an error here.
  beast::error_code parse_buffered(bool header_only) {
    beast::error_code ec;
    while (buffer_.size() > 0 && !(header_only ? parser_->is_header_done() : parser_->is_done())) {
      const std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more) return {};
      if (ec || used == 0) break;
    }
    return ec;
  }

  void do_read_body() {
    if (const auto ec = parse_buffered(false); ec || parser_->is_done()) return on_read_body(ec, 0);
    lowest().expires_after(options().body_timeout);
    do_read_body_some();
  }

  // Piece by piece (rather than http::async_read) to count the bytes held as they come.
  void do_read_body_some() {
    http::async_read_some(
        stream_, buffer_, *parser_,
        beast::bind_front_handler(&Session::on_read_body_some, shared_from_this()));
  }

  void on_read_body_some(beast::error_code ec, std::size_t bytes) {
    note_body_progress();
    if (!ec && !parser_->is_done()) return do_read_body_some();
    on_read_body(ec, bytes);
  }

  void on_read_body(beast::error_code ec, std::size_t /*bytes*/) {
    note_body_progress();
    if (ec == http::error::body_limit) return reply_too_large();
    if (ec == beast::error::timeout || peer_gone(ec)) return end(ec, "reading a request body");
    if (ec)
      return reply_error(http::status::bad_request, "BadRequest",
                         "malformed HTTP request body: " + ec.message());
    answer_review();
  }

  // Decode -> handler -> encode. Handlers must not throw; if one does anyway, 500.
  void answer_review() {
    auto request = decode_review(parser_->get().body());
    if (!request)
      return reply_error(http::status::bad_request, "BadRequest", request.error().message);
    std::string body;
    try {
      const AdmissionResponse answer = endpoint_ == "/mutate" ? shared_->handler.mutate(*request)
                                                              : shared_->handler.validate(*request);
      body = encode_review(*request, answer);
    } catch (const std::exception& e) {
      spdlog::error("admission: {} handler threw for uid {}: {}", endpoint_, request->uid,
                    e.what());
      return reply_error(http::status::internal_server_error, "InternalError",
                         std::string("admission handler failed: ") + e.what());
    } catch (...) {
      spdlog::error("admission: {} handler threw for uid {}", endpoint_, request->uid);
      return reply_error(http::status::internal_server_error, "InternalError",
                         "admission handler failed");
    }
    reply(http::status::ok, "application/json", std::move(body));
  }

  void reply_too_large() {
    reply_error(http::status::payload_too_large, "RequestEntityTooLarge",
                "request body exceeds " + std::to_string(options().max_body_bytes) + " bytes");
  }

  void reply_error(http::status status, std::string_view reason, std::string message) {
    shared_->rejected.fetch_add(1);
    reply(status, "application/json", status_body(static_cast<int>(status), reason, message));
  }

  // Keeps the connection only when the request was read whole and both sides want it.
  // The answer is written as one buffer, header and body, formatted here: Beast's serializer
  // (a variant of buffer sequences walked piece by piece) cost more CPU than this server's
  // whole HTTP parse (docs/benchmarks.md, "Admission"). No header value comes from the request.
  void reply(http::status status, std::string_view content_type, std::string body) {
    const bool request_complete = parser_ && parser_->is_done();
    keep_ = request_complete && parser_->get().keep_alive() && !shared_->stopping;
    linger_ = !request_complete;
    status_ = static_cast<int>(status);
    const std::string_view phrase = http::obsolete_reason(status);
    const std::string length = std::to_string(body.size());
    out_.clear();
    out_.reserve(kResponseHeaderBytes + extra_headers_.size() + content_type.size() +
                 phrase.size() + body.size());
    out_.append("HTTP/1.1 ").append(std::to_string(status_)).append(" ").append(phrase);
    out_.append("\r\nServer: kstack\r\nContent-Type: ").append(content_type);
    out_.append("\r\n").append(extra_headers_);
    out_.append("Content-Length: ").append(length).append("\r\n");
    if (!keep_) out_.append("Connection: close\r\n");
    out_.append("\r\n").append(body);
    // Counted before the write, so that a client that has its answer also sees it counted.
    shared_->requests.fetch_add(1);
    observe();
    do_write();
  }

  // The write is not started at once but posted, twice. Asio runs one thread's handlers in
  // turn, polling epoll when it reaches its place in the queue, and a posted handler goes to the
  // queue's end: once posted, the answer waits for the handlers of the other connections the
  // last poll found readable; twice, also for those the next poll finds. The answers of a
  // batch then go out together, so a client waiting on several of them (on 2 cores shared with
  // it, bench/admission_bench.sh) is woken fewer times and preempts this thread less often
  // between them. Measured against writing at once: the client slept 0.41 times a request
  // instead of 0.55, this thread was preempted 0.4 times instead of 0.5, and the real handlers'
  // CPU per request fell 9-16 %; the second post kept the rate and lowered their p99 in 11 of
  // 12 A/B pairs, to 1.0-2.1 ms (docs/benchmarks.md, "Admission", ninth round). An answer alone
  // costs two polls that find nothing (microseconds).
  void do_write() {
    lowest().expires_after(options().body_timeout);
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      asio::post(self->stream_.get_executor(), [self] {
        asio::async_write(self->stream_, asio::buffer(self->out_),
                          beast::bind_front_handler(&Session::on_write, self));
      });
    });
  }

  void on_write(beast::error_code ec, std::size_t /*bytes*/) {
    extra_headers_.clear();
    if (out_.capacity() > kIdleBufferBytes) std::string().swap(out_);
    parser_.reset();  // frees the request body before an idle wait
    release_body_budget();
    if (ec) return end(ec, "writing a response");
    if (linger_) return do_linger();
    if (!keep_) return do_shutdown();
    first_request_ = false;
    do_wait_request();
  }

  void observe() {
    if (!options().on_request) return;
    try {
      options().on_request(endpoint_, status_, Clock::now() - started_);
    } catch (...) {  // an observer must not end the connection
    }
  }

  // Half-closes (the client sees the end of the answer) and discards what the client still
  // sends, bounded in time, before closing: closing with unread data would reset the
  // connection and could destroy the answer before the client read it.
  void do_linger() {
    phase_ = Phase::kClosing;
    beast::error_code ignored;
    lowest().socket().shutdown(Tcp::socket::shutdown_send, ignored);
    lowest().expires_after(std::min<std::chrono::milliseconds>(options().body_timeout, kMaxLinger));
    drain_.resize(kDrainBufferBytes);
    do_drain();
  }

  void do_drain() {
    lowest().async_read_some(asio::buffer(drain_),
                             beast::bind_front_handler(&Session::on_drain, shared_from_this()));
  }

  void on_drain(beast::error_code ec, std::size_t /*bytes*/) {
    if (!ec) do_drain();
  }

  // Sends close_notify and waits (bounded) for the client's; when the server is stopping, just
  // closes: the answer was delimited by Content-Length, and stop() should not wait on clients.
  void do_shutdown() {
    phase_ = Phase::kClosing;
    if (shared_->stopping) return;
    lowest().expires_after(kTlsShutdownTimeout);
    stream_.async_shutdown(beast::bind_front_handler(&Session::on_shutdown, shared_from_this()));
  }

  void on_shutdown(beast::error_code /*ec*/) {}  // the socket closes with the session

  // The connection ends here (the session is released with its last handler).
  void end(const beast::error_code& ec, std::string_view during) {
    phase_ = Phase::kClosing;
    if (ec == beast::error::timeout) {
      shared_->timeouts.fetch_add(1);
      spdlog::debug("admission: connection cut off: timed out {}", during);
    } else if (!peer_gone(ec)) {
      spdlog::debug("admission: connection closed while {}: {}", during, ec.message());
    }
  }

  std::shared_ptr<Shared> shared_;
  std::shared_ptr<ssl::context> ctx_;  // before stream_, which uses it
  beast::ssl_stream<TcpStream> stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::size_t reserved_ = 0;   // of the body budget, for the request being served
  std::size_t held_ = 0;       // body bytes counted in body_bytes_held
  std::string out_;            // the answer being written: header and body
  std::string extra_headers_;  // "Allow: ...\r\n" and the like, for the next answer
  int status_ = 0;
  bool keep_ = false;
  std::vector<char> drain_;
  std::uint64_t id_ = 0;
  Phase phase_ = Phase::kHandshake;
  bool first_request_ = true;
  bool linger_ = false;
  Clock::time_point header_deadline_{};
  Clock::time_point started_{};
  std::string_view endpoint_ = "other";
};

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // The acceptor lives on the first context; connections go to each context in turn.
  Listener(std::vector<asio::io_context*> contexts, std::shared_ptr<Shared> shared)
      : contexts_(std::move(contexts)),
        acceptor_(*contexts_.front()),
        retry_(acceptor_.get_executor()),
        shared_(std::move(shared)) {}

  kube::Result<std::uint16_t> listen(const std::string& address, std::uint16_t port) {
    beast::error_code ec;
    const auto ip = asio::ip::make_address(address, ec);
    if (ec) {
      return kube::make_error(
          kube::ErrorKind::kInvalidArgument,
          "admission server: bind address \"" + address + "\" is not an IP address");
    }
    const Tcp::endpoint endpoint(ip, port);
    const auto fail = [&](std::string_view step) {
      return kube::make_error(kube::ErrorKind::kTransport,
                              "admission server: cannot " + std::string(step) + " " + address +
                                  ":" + std::to_string(port) + ": " + ec.message());
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

  void stop() {
    asio::post(acceptor_.get_executor(), [self = shared_from_this()] {
      beast::error_code ignored;
      self->acceptor_.close(ignored);
      self->retry_.cancel();
    });
  }

 private:
  void do_accept() {
    if (shared_->stopping || !acceptor_.is_open()) return;
    asio::io_context& next = *contexts_[next_context_++ % contexts_.size()];
    acceptor_.async_accept(next,
                           beast::bind_front_handler(&Listener::on_accept, shared_from_this()));
  }

  void on_accept(beast::error_code ec, Socket socket) {
    if (ec == asio::error::operation_aborted || shared_->stopping) return;
    if (ec) {  // out of descriptors, aborted handshake...: pause rather than spin
      spdlog::warn("admission: accept failed: {}", ec.message());
      retry_.expires_after(kAcceptRetryDelay);
      retry_.async_wait(beast::bind_front_handler(&Listener::on_retry, shared_from_this()));
      return;
    }
    if (shared_->active_sessions() >= shared_->options.max_connections) {
      // Closed before the TLS handshake, which would cost the memory this limit protects.
      const auto refused = shared_->refused_connections.fetch_add(1) + 1;
      if (refused % kRefusalLogEvery == 1) {
        spdlog::warn("admission: {} connections open (the limit): closing new ones ({} so far)",
                     shared_->options.max_connections, refused);
      }
      socket.close(ec);
      return do_accept();
    }
    shared_->connections.fetch_add(1);
    socket.set_option(Tcp::no_delay(true), ec);
    std::make_shared<Session>(std::move(socket), shared_, shared_->context())->run();
    do_accept();
  }

  void on_retry(beast::error_code ec) {
    if (!ec) do_accept();
  }

  const std::vector<asio::io_context*> contexts_;
  std::size_t next_context_ = 0;
  Tcp::acceptor acceptor_;
  asio::steady_timer retry_;
  std::shared_ptr<Shared> shared_;
};

kube::Result<std::shared_ptr<ssl::context>> make_context(const std::string& cert_pem,
                                                         const std::string& key_pem) {
  auto native = detail::make_server_tls_context(cert_pem, key_pem);
  if (!native) return tl::unexpected(native.error());
  return std::make_shared<ssl::context>(native->release());  // takes ownership
}

class ServerImpl final : public AdmissionServer {
 public:
  ServerImpl(ServerOptions options, AdmissionHandler& handler, std::shared_ptr<ssl::context> ctx)
      : contexts_(make_contexts(options.threads)),
        shared_(std::make_shared<Shared>(std::move(options), handler, std::move(ctx))),
        listener_(std::make_shared<Listener>(pointers(contexts_), shared_)) {}

  ~ServerImpl() override { stop(); }
  ServerImpl(const ServerImpl&) = delete;
  ServerImpl& operator=(const ServerImpl&) = delete;

  kube::Result<void> start() {
    auto bound = listener_->listen(shared_->options.bind_address, shared_->options.port);
    if (!bound) return tl::unexpected(bound.error());
    port_ = *bound;
    listener_->run();
    for (auto& ioc : contexts_) {
      guards_.push_back(asio::make_work_guard(*ioc));  // a context without connections waits
      threads_.emplace_back([this, ioc = ioc.get()] { run_loop(*ioc); });
    }
    serving_ = true;
    spdlog::info("admission: serving HTTPS on {}:{} ({} threads)", shared_->options.bind_address,
                 port_, contexts_.size());
    return {};
  }

  std::uint16_t port() const override { return port_; }

  kube::Result<void> set_certificate(const std::string& cert_pem,
                                     const std::string& key_pem) override {
    try {
      auto ctx = make_context(cert_pem, key_pem);
      if (!ctx) return tl::unexpected(ctx.error());
      shared_->set_context(std::move(*ctx));
      return {};
    } catch (const std::exception& e) {
      return kube::make_error(kube::ErrorKind::kTls,
                              std::string("serving certificate: ") + e.what());
    }
  }

  void stop() override {
    std::lock_guard lock(stop_mu_);
    if (stopped_) return;
    stopped_ = true;
    shared_->stopping = true;
    listener_->stop();
    std::vector<std::shared_ptr<Session>> live;
    {
      std::lock_guard sessions_lock(shared_->sessions_mu);
      for (auto& [id, weak] : shared_->sessions) {
        if (auto s = weak.lock()) live.push_back(std::move(s));
      }
    }
    for (auto& s : live) s->stop();
    live.clear();  // outside sessions_mu: this may destroy a session, which takes it
    {
      std::unique_lock sessions_lock(shared_->sessions_mu);
      const bool drained =
          shared_->sessions_cv.wait_for(sessions_lock, shared_->options.shutdown_timeout,
                                        [&] { return shared_->sessions.empty(); });
      if (!drained) {
        spdlog::warn("admission: {} connections still busy after {} ms, dropping them",
                     shared_->sessions.size(), shared_->options.shutdown_timeout.count());
      }
    }
    guards_.clear();
    for (auto& ioc : contexts_) ioc->stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
    serving_ = false;
  }

  ServerStats stats() const override {
    ServerStats s;
    s.requests = shared_->requests.load();
    s.rejected = shared_->rejected.load();
    s.connections = shared_->connections.load();
    s.active_connections = shared_->active_sessions();
    s.timeouts = shared_->timeouts.load();
    s.refused_connections = shared_->refused_connections.load();
    s.admitted_bodies = shared_->admitted_bodies.load();
    s.busy = shared_->busy.load();
    s.inflight_body_bytes = shared_->inflight_body_bytes.load();
    s.body_bytes_held = shared_->body_bytes_held.load();
    s.memory_trims = shared_->trims.load();
    return s;
  }

  bool serving() const override { return serving_.load(); }

 private:
  // Handlers do not throw; this is the net under them, so that one bug cannot stop a thread.
  static void run_loop(asio::io_context& ioc) {
    for (;;) {
      try {
        ioc.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("admission: unexpected exception in the server loop: {}", e.what());
      }
    }
  }

  // Each run by one thread: the concurrency hint 1 lets asio skip its cross-thread handoffs.
  static std::vector<std::unique_ptr<asio::io_context>> make_contexts(int threads) {
    std::vector<std::unique_ptr<asio::io_context>> contexts;
    for (int i = 0; i < threads; ++i) contexts.push_back(std::make_unique<asio::io_context>(1));
    return contexts;
  }
  static std::vector<asio::io_context*> pointers(
      const std::vector<std::unique_ptr<asio::io_context>>& contexts) {
    std::vector<asio::io_context*> out;
    for (const auto& c : contexts) out.push_back(c.get());
    return out;
  }

  // First: destroyed last, after everything bound to them.
  std::vector<std::unique_ptr<asio::io_context>> contexts_;
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<Listener> listener_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;
  std::atomic<bool> serving_{false};
  std::mutex stop_mu_;
  bool stopped_ = false;
};

}  // namespace

kube::Result<std::unique_ptr<AdmissionServer>> start_admission_server(ServerOptions options,
                                                                      AdmissionHandler& handler) {
  const auto invalid = [](std::string message) {
    return kube::make_error(kube::ErrorKind::kInvalidArgument,
                            "admission server: " + std::move(message));
  };
  if (options.threads < 1) return invalid("threads must be at least 1");
  if (options.max_body_bytes == 0) return invalid("max_body_bytes must be positive");
  if (options.max_connections == 0) return invalid("max_connections must be positive");
  if (options.max_inflight_body_bytes < options.max_body_bytes) {
    return invalid("max_inflight_body_bytes (" + std::to_string(options.max_inflight_body_bytes) +
                   ") must be at least max_body_bytes (" + std::to_string(options.max_body_bytes) +
                   ")");
  }
  if (options.header_timeout.count() <= 0 || options.body_timeout.count() <= 0 ||
      options.idle_timeout.count() <= 0) {
    return invalid("header, body and idle timeouts must be positive");
  }
  // Process-wide, and meant so: request bodies and their documents are the big blocks.
  mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
  try {
    auto ctx = make_context(options.cert_pem, options.key_pem);
    if (!ctx) return tl::unexpected(ctx.error());
    auto server = std::make_unique<ServerImpl>(std::move(options), handler, std::move(*ctx));
    if (auto started = server->start(); !started) return tl::unexpected(started.error());
    return server;
  } catch (const std::exception& e) {
    return kube::make_error(kube::ErrorKind::kTransport,
                            std::string("admission server: ") + e.what());
  }
}

}  // namespace kstack::validator
