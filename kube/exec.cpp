// Exec over WebSocket (see exec.h for the protocol). The one translation unit that instantiates
// Beast's WebSocket over TLS: keep it the only one (compile time and memory on 2 cores).
//
// Like kube/transport.cpp, each exec owns a one-thread io_context run on the calling thread:
// connect, TLS and WebSocket handshakes, then a read loop and (with stdin) a write loop at once,
// so a command that echoes its input never blocks on a full pipe. One steady_timer bounds the
// whole exec; cancelling posts a close of the socket, which ends every pending operation.
#include "kube/exec.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/json.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "kube/resolve.h"
#include "kube/resource.h"
#include "kube/tls_context.h"

namespace kstack::kube {

// ---- Pure protocol pieces -----------------------------------------------------------------------

namespace {
// The error channel carries one small Status; anything bigger is cut (and fails to parse).
constexpr std::size_t kMaxStatusBytes = 64u << 10;
}  // namespace

namespace exec_detail {

namespace {
// kubelet's message for ExitError (remotecommand.NonZeroExitCodeReason's message prefix).
constexpr std::string_view kNonZeroExitText = "command terminated with non-zero exit code";

std::string string_at(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

Error error_of(ErrorKind kind, std::string message) {
  Error e;
  e.kind = kind;
  e.message = std::move(message);
  return e;
}

// details.causes[{reason: ExitCode, message: "3"}] -> 3; client-go accepts 0..255.
Result<ExitStatus> non_zero_exit(const boost::json::object& status) {
  const auto* details = status.if_contains("details");
  const auto* causes = details != nullptr && details->is_object()
                           ? details->get_object().if_contains("causes")
                           : nullptr;
  if (causes != nullptr && causes->is_array()) {
    for (const auto& c : causes->get_array()) {
      if (!c.is_object() || string_at(c.get_object(), "reason") != "ExitCode") continue;
      const std::string text = string_at(c.get_object(), "message");
      int code = -1;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), code);
      if (ec != std::errc{} || end != text.data() + text.size() || code < 0 || code > 255) {
        return tl::unexpected(
            error_of(ErrorKind::kDecode, "exec status: invalid exit code value \"" + text + "\""));
      }
      return ExitStatus{code, string_at(status, "message")};
    }
  }
  return tl::unexpected(
      error_of(ErrorKind::kDecode, "exec status: NonZeroExitCode without an ExitCode cause"));
}

}  // namespace

std::optional<Protocol> parse_protocol(std::string_view header) {
  if (header == kProtocolV5) return Protocol::kV5;
  if (header == kProtocolV4) return Protocol::kV4;
  if (header.empty() || header == kProtocolV1) return Protocol::kV1;
  return std::nullopt;
}

std::optional<Frame> decode_frame(std::string_view message) {
  if (message.empty()) return std::nullopt;
  return Frame{static_cast<unsigned char>(message.front()), message.substr(1)};
}

std::string encode_frame(unsigned char channel, std::string_view data) {
  std::string out;
  out.reserve(data.size() + 1);
  out.push_back(static_cast<char>(channel));
  out.append(data);
  return out;
}

std::string stdin_eof_frame(Protocol protocol) {
  if (protocol == Protocol::kV5) {
    return std::string{static_cast<char>(kCloseSignal), static_cast<char>(kStdin)};
  }
  return std::string(1, static_cast<char>(kStdin));
}

Result<std::string> exec_path(std::string_view ns, std::string_view pod,
                              const std::vector<std::string>& argv, const ExecOptions& options,
                              bool attach_stdin) {
  if (auto r = check_path_segment("namespace", ns); !r) return tl::unexpected(r.error());
  if (auto r = check_path_segment("pod name", pod); !r) return tl::unexpected(r.error());
  if (argv.empty()) return make_error(ErrorKind::kInvalidArgument, "exec: argv is empty");
  const auto encode = [](std::string_view v) {
    return boost::urls::encode(v, boost::urls::unreserved_chars);
  };
  std::string path = resource_path(resources::kPods, ns, pod, "exec");
  char sep = '?';
  const auto add = [&](std::string_view key, std::string_view value) {
    path += sep;
    path += key;
    path += '=';
    path += encode(value);
    sep = '&';
  };
  if (!options.container.empty()) add("container", options.container);
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i].find('\0') != std::string::npos) {
      return make_error(ErrorKind::kInvalidArgument,
                        "exec: argv[" + std::to_string(i) + "] contains a NUL byte");
    }
    add("command", argv[i]);  // kept when empty: "" is a real argument
  }
  if (attach_stdin) add("stdin", "true");
  add("stdout", "true");
  if (!options.tty) add("stderr", "true");  // the server refuses stderr with a tty
  if (options.tty) add("tty", "true");
  return path;
}

Result<ExitStatus> parse_exit_status(Protocol protocol, std::string_view error_channel) {
  if (error_channel.empty()) return ExitStatus{};
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(error_channel, ec);
  const bool is_status = !ec && v.is_object() && string_at(v.get_object(), "kind") == "Status";
  if (!is_status && protocol == Protocol::kV1) {
    // channel.k8s.io sends only the message text, and only on failure.
    std::string text(error_channel.substr(0, 1024));
    if (error_channel.starts_with(kNonZeroExitText)) return ExitStatus{kExitCodeUnknown, text};
    return tl::unexpected(error_of(ErrorKind::kInternal, text));
  }
  if (ec || !v.is_object()) {
    return tl::unexpected(error_of(
        ErrorKind::kDecode,
        "exec status is not a Status object: " + std::string(error_channel.substr(0, 200))));
  }
  const auto& status = v.get_object();
  const std::string outcome = string_at(status, "status");
  if (outcome == "Success") return ExitStatus{};
  if (outcome != "Failure") {
    return tl::unexpected(
        error_of(ErrorKind::kDecode, "exec status: unknown status \"" + outcome + "\""));
  }
  if (string_at(status, "reason") == "NonZeroExitCode") return non_zero_exit(status);
  // The kubelet's Status has no TypeMeta; error_from_response wants one to read code and reason.
  boost::json::object typed = status;
  typed["kind"] = "Status";
  Error e = error_from_response(0, boost::json::serialize(typed));
  if (e.kind == ErrorKind::kUnexpectedStatus && e.http_status == 0) e.kind = ErrorKind::kInternal;
  return tl::unexpected(std::move(e));
}

std::string container_id(const boost::json::value& pod, std::string_view container) {
  boost::system::error_code ec;
  const auto* statuses = pod.find_pointer("/status/containerStatuses", ec);
  if (statuses == nullptr || !statuses->is_array()) return {};
  for (const auto& s : statuses->get_array()) {
    if (s.is_object() && string_at(s.get_object(), "name") == container) {
      return string_at(s.get_object(), "containerID");
    }
  }
  return {};
}

}  // namespace exec_detail

// ---- The WebSocket exchange ---------------------------------------------------------------------

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace ssl = asio::ssl;
using Tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using WsStream = websocket::stream<beast::ssl_stream<beast::tcp_stream>>;
using WriteBuffers = std::array<asio::const_buffer, 2>;  // one type: one write instantiation
using exec_detail::Protocol;

// How long the closing handshake may take once the server has sent its close frame.
constexpr std::chrono::seconds kCloseTimeout{5};

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

// Where the API server is, from the client's config (as Client::create reads it).
struct Server {
  std::string host;  // name or IP literal, no brackets
  std::uint16_t port = 443;
  std::string authority;    // host:port, for messages
  std::string host_header;  // Host of the upgrade request
  std::string verify_name;  // checked against the certificate
  bool verify_name_is_ip = false;
  std::optional<asio::ip::address> ip;  // the host, when it is an IP literal
  TlsOptions tls;
};

Result<Server> server_of(const Config& config) {
  auto url = boost::urls::parse_uri(config.server);
  if (!url || url->scheme() != "https") {
    return make_error(ErrorKind::kInvalidArgument,
                      "exec needs an https server, not \"" + config.server + "\"");
  }
  Server s;
  s.host = url->host_type() == boost::urls::host_type::ipv6 ? url->host_ipv6_address().to_string()
                                                            : std::string(url->encoded_host());
  s.port = url->has_port() ? url->port_number() : 443;
  beast::error_code ec;
  const auto ip = asio::ip::make_address(s.host, ec);
  if (!ec) s.ip = ip;
  const std::string bracketed = s.ip && s.ip->is_v6() ? "[" + s.host + "]" : s.host;
  s.authority = bracketed + ":" + std::to_string(s.port);
  s.host_header = s.port == 443 ? bracketed : s.authority;
  s.verify_name = config.tls_server_name.empty() ? s.host : config.tls_server_name;
  asio::ip::make_address(s.verify_name, ec);
  s.verify_name_is_ip = !ec;
  s.tls.ca_pem = config.ca_pem;
  s.tls.insecure_skip_verify = config.insecure_skip_tls_verify;
  s.tls.server_name = config.tls_server_name;
  s.tls.client_cert_pem = config.client_cert_pem;
  s.tls.client_key_pem = config.client_key_pem;
  return s;
}

Result<std::vector<Tcp::endpoint>> resolve(const Server& server, Clock::time_point deadline,
                                           const CancelToken& cancel) {
  if (server.ip) return std::vector<Tcp::endpoint>{Tcp::endpoint(*server.ip, server.port)};
  return resolve_host(server.host, server.port, server.authority, deadline, cancel);
}

// What one connection attempt needs, fixed before it starts.
struct AttemptInput {
  const Server& server;
  ssl::context& ssl_ctx;
  const std::vector<Tcp::endpoint>& endpoints;
  const HttpRequest& request;  // target and headers (Authorization, User-Agent)
  const ExecOptions& options;
  const StdinSource* stdin_source;  // null: no stdin
  Clock::time_point connect_deadline;
  Clock::time_point deadline;
};

// One connection: connect, TLS, upgrade, then read and write loops until the server closes.
class Attempt {
 public:
  explicit Attempt(const AttemptInput& in) : in_(in), ws_(ioc_, in.ssl_ctx), timer_(ioc_) {}
  Attempt(const Attempt&) = delete;
  Attempt& operator=(const Attempt&) = delete;

  // Runs everything on the calling thread; returns when the exchange is over.
  void run(const CancelToken& cancel);

  int http_status() const { return http_status_; }  // 0: no response to the upgrade
  // Set when the exchange failed; `declined` when the server answered the upgrade with an error.
  const std::optional<Error>& failure() const { return failure_; }
  bool declined() const { return declined_; }
  bool timed_out() const { return timed_out_; }
  bool cancelled() const { return cancelled_; }
  const std::string& declined_body() const { return response_.body(); }
  Result<ExecResult> result();

 private:
  void do_connect();
  void on_connect(beast::error_code ec, const Tcp::endpoint& peer);
  void on_tls_handshake(beast::error_code ec);
  void on_upgrade(beast::error_code ec);
  void do_read();
  void on_read(beast::error_code ec, std::size_t bytes);
  void do_write();
  void on_write(std::size_t piece_bytes, bool eof_frame, beast::error_code ec, std::size_t bytes);
  void on_deadline(beast::error_code ec);
  void handle_message(std::string_view message);
  void fail(std::string_view phase, const beast::error_code& ec);
  void finish();
  // Ends every pending operation (and the tcp_stream's own timers).
  void close_socket() { beast::get_lowest_layer(ws_).close(); }

  const AttemptInput& in_;
  asio::io_context ioc_{1};  // declared before the objects bound to it: outlives them
  WsStream ws_;
  asio::steady_timer timer_;
  websocket::response_type response_;
  beast::flat_buffer read_buffer_;
  Protocol protocol_ = Protocol::kV4;
  std::string protocol_name_;

  // Stdin: the piece being sent and how much of it is gone.
  std::string_view piece_;
  std::size_t piece_offset_ = 0;
  std::string eof_frame_;
  bool writing_ = false;

  bool reading_ = false;
  bool finished_ = false;
  bool timed_out_ = false;
  bool cancelled_ = false;
  bool close_received_ = false;  // the server sent a WebSocket close frame
  bool declined_ = false;
  int http_status_ = 0;
  std::optional<Error> failure_;
  std::optional<beast::error_code> write_error_;

  std::string stdout_, stderr_, status_;
  bool stdout_truncated_ = false, stderr_truncated_ = false;
  bool status_seen_ = false;
};

void Attempt::run(const CancelToken& cancel) {
  // While running, cancelling closes the socket from this io_context's own thread.
  const std::uint64_t action = cancel.add_action([this] {
    asio::post(ioc_, [this] {
      cancelled_ = true;
      close_socket();
    });
  });
  timer_.expires_at(in_.deadline);
  timer_.async_wait(beast::bind_front_handler(&Attempt::on_deadline, this));
  do_connect();
  try {
    ioc_.run();
  } catch (...) {  // a StdinSource that threw: stop cleanly, then report
    cancel.remove_action(action);
    throw;
  }
  cancel.remove_action(action);
}

void Attempt::on_deadline(beast::error_code ec) {
  if (ec) return;  // cancelled: the exchange ended first
  timed_out_ = true;
  close_socket();
}

void Attempt::fail(std::string_view phase, const beast::error_code& ec) {
  if (!failure_) {
    const bool timeout = ec == beast::error::timeout;
    failure_ = error_of(timeout ? ErrorKind::kTimeout : ErrorKind::kTransport,
                        std::string(phase) + " " + in_.server.authority + ": " +
                            (timeout ? std::string("timed out") : ec.message()));
  }
  finish();
}

// Stops whatever is still pending so that run() returns.
void Attempt::finish() {
  if (finished_) return;
  finished_ = true;
  timer_.cancel();
  close_socket();  // a pending stdin write, if any, ends with it
}

void Attempt::do_connect() {
  if (!tls::prepare_client_connection(ws_.next_layer().native_handle(), in_.server.tls,
                                      in_.server.verify_name, in_.server.verify_name_is_ip)) {
    failure_ = error_of(ErrorKind::kTls, "TLS with " + in_.server.authority + ": cannot use \"" +
                                             in_.server.verify_name +
                                             "\" as the name to verify: " + tls::openssl_reason());
    finish();
    return;
  }
  auto& tcp = beast::get_lowest_layer(ws_);
  tcp.expires_at(std::min(in_.connect_deadline, in_.deadline));
  tcp.async_connect(in_.endpoints, beast::bind_front_handler(&Attempt::on_connect, this));
}

void Attempt::on_connect(beast::error_code ec, const Tcp::endpoint& /*peer*/) {
  if (ec) return fail("connect to", ec);
  beast::get_lowest_layer(ws_).socket().set_option(Tcp::no_delay(true), ec);
  ws_.next_layer().async_handshake(ssl::stream_base::client,
                                   beast::bind_front_handler(&Attempt::on_tls_handshake, this));
}

void Attempt::on_tls_handshake(beast::error_code ec) {
  if (ec) {
    const long verify = SSL_get_verify_result(ws_.next_layer().native_handle());
    if (verify != X509_V_OK && ec != beast::error::timeout) {
      failure_ = error_of(ErrorKind::kTls, "TLS handshake with " + in_.server.authority +
                                               ": certificate verification failed: " +
                                               X509_verify_cert_error_string(verify));
      return finish();
    }
    fail("TLS handshake with", ec);
    if (failure_->kind == ErrorKind::kTransport) failure_->kind = ErrorKind::kTls;
    return;
  }
  // From here the overall deadline (timer_) bounds everything; tcp_stream expiry would also cut
  // the WebSocket's reads and writes.
  beast::get_lowest_layer(ws_).expires_never();
  ws_.set_option(websocket::stream_base::decorator([this](websocket::request_type& req) {
    for (const auto& h : in_.request.headers) req.set(h.name, h.value);
    req.set(http::field::sec_websocket_protocol, exec_detail::kProtocolOffer);
  }));
  ws_.binary(true);
  ws_.auto_fragment(false);           // one stdin piece, one frame
  ws_.write_buffer_bytes(64u << 10);  // masking copies through this buffer
  ws_.read_message_max(kExecMaxMessageBytes);
  ws_.control_callback([this](websocket::frame_type kind, beast::string_view /*payload*/) {
    if (kind == websocket::frame_type::close) close_received_ = true;
  });
  ws_.async_handshake(response_, in_.server.host_header, in_.request.target,
                      beast::bind_front_handler(&Attempt::on_upgrade, this));
}

void Attempt::on_upgrade(beast::error_code ec) {
  http_status_ = static_cast<int>(response_.result_int());
  if (ec == websocket::error::upgrade_declined) {
    declined_ = true;
    return finish();
  }
  if (ec) {
    http_status_ = 0;
    return fail("WebSocket handshake with", ec);
  }
  const auto chosen = response_[http::field::sec_websocket_protocol];
  const auto protocol = exec_detail::parse_protocol(chosen);
  if (!protocol) {
    failure_ =
        error_of(ErrorKind::kTransport, "the server chose the subprotocol \"" +
                                            std::string(chosen) + "\", which was not offered");
    return finish();
  }
  protocol_ = *protocol;
  protocol_name_ = chosen.empty() ? std::string(exec_detail::kProtocolV1) : std::string(chosen);
  // The closing handshake must not hang on a peer that stops answering.
  websocket::stream_base::timeout t{};
  t.handshake_timeout = kCloseTimeout;
  t.idle_timeout = websocket::stream_base::none();
  t.keep_alive_pings = false;
  ws_.set_option(t);
  reading_ = true;
  do_read();
  if (in_.stdin_source != nullptr) {
    eof_frame_ = exec_detail::stdin_eof_frame(protocol_);
    do_write();
  }
}

void Attempt::do_read() {
  ws_.async_read(read_buffer_, beast::bind_front_handler(&Attempt::on_read, this));
}

void Attempt::on_read(beast::error_code ec, std::size_t /*bytes*/) {
  if (!ec) {
    const auto data = read_buffer_.cdata();
    handle_message(std::string_view(static_cast<const char*>(data.data()), data.size()));
    read_buffer_.consume(read_buffer_.size());
    return do_read();
  }
  reading_ = false;
  // Servers end with a close frame; some drop the connection (no close_notify) right after the
  // status, which is as good once the status is in.
  const bool clean = ec == websocket::error::closed || close_received_;
  const bool dropped = ec == asio::error::eof || ec == ssl::error::stream_truncated ||
                       ec == asio::error::connection_reset;
  if (ec == websocket::error::message_too_big) {
    failure_ = error_of(ErrorKind::kResponseTooLarge,
                        "read from " + in_.server.authority + ": a message exceeds " +
                            std::to_string(kExecMaxMessageBytes) + " bytes");
  } else if (!clean && !(status_seen_ && dropped)) {
    fail("read from", ec);
  }
  finish();
}

void Attempt::handle_message(std::string_view message) {
  const auto frame = exec_detail::decode_frame(message);
  if (!frame) return;
  const auto append = [&](std::string& out, std::size_t limit, bool& truncated) {
    const std::size_t room = limit - std::min(limit, out.size());
    out.append(frame->data.substr(0, room));
    if (frame->data.size() > room) truncated = true;
  };
  switch (frame->channel) {
    case exec_detail::kStdout:
      append(stdout_, in_.options.max_stdout_bytes, stdout_truncated_);
      break;
    case exec_detail::kStderr:
      append(stderr_, in_.options.max_stderr_bytes, stderr_truncated_);
      break;
    case exec_detail::kError: {
      bool cut = false;
      append(status_, kMaxStatusBytes, cut);
      status_seen_ = true;
      break;
    }
    default:
      break;  // stdin/resize echoes, v5 close signals from the server: nothing to do
  }
}

// Sends the current piece in frames of at most kExecStdinFrameBytes, taking the next piece from
// the source when it is gone, and the end-of-stdin frame after the last.
void Attempt::do_write() {
  if (finished_ || write_error_) return;
  static constexpr char kStdinByte = static_cast<char>(exec_detail::kStdin);
  while (piece_offset_ == piece_.size() && !eof_frame_.empty()) {
    std::optional<std::string_view> next = (*in_.stdin_source)();
    if (!next) {
      writing_ = true;
      ws_.async_write(WriteBuffers{asio::buffer(eof_frame_), asio::const_buffer()},
                      beast::bind_front_handler(&Attempt::on_write, this, 0, true));
      return;
    }
    piece_ = *next;
    piece_offset_ = 0;
  }
  if (eof_frame_.empty()) return;  // end of stdin already sent
  const std::size_t n = std::min(kExecStdinFrameBytes, piece_.size() - piece_offset_);
  writing_ = true;
  ws_.async_write(
      WriteBuffers{asio::buffer(&kStdinByte, 1), asio::buffer(piece_.data() + piece_offset_, n)},
      beast::bind_front_handler(&Attempt::on_write, this, n, false));
}

void Attempt::on_write(std::size_t piece_bytes, bool eof_frame, beast::error_code ec,
                       std::size_t /*bytes*/) {
  writing_ = false;
  if (ec) {
    // The read side decides: a command may exit without reading all its input.
    write_error_ = ec;
    if (finished_ || !reading_) close_socket();
    return;
  }
  if (eof_frame) {
    eof_frame_.clear();
    return;
  }
  piece_offset_ += piece_bytes;
  do_write();
}

Result<ExecResult> Attempt::result() {
  auto status = exec_detail::parse_exit_status(protocol_, status_);
  if (!status) return tl::unexpected(std::move(status.error()));
  ExecResult r;
  r.exit_code = status->exit_code;
  r.status_message = std::move(status->message);
  r.stdout_data = std::move(stdout_);
  r.stderr_data = std::move(stderr_);
  r.stdout_truncated = stdout_truncated_;
  r.stderr_truncated = stderr_truncated_;
  r.protocol = protocol_name_;
  return r;
}

// docs/spec.md §5: never run a command in a container other than the one being configured.
Result<void> check_container(Client& client, std::string_view ns, std::string_view pod,
                             const std::string& container, const std::string& expected) {
  auto object = client.get(resources::kPods, ns, pod);
  if (!object) return tl::unexpected(std::move(object.error()));
  const std::string actual = exec_detail::container_id(*object, container);
  if (actual == expected) return {};
  Error e = error_of(
      ErrorKind::kConflict,
      "refused: container \"" + container + "\" of pod " + std::string(ns) + "/" +
          std::string(pod) + " is " +
          (actual.empty() ? std::string("not running (no containerID)") : "\"" + actual + "\"") +
          " now, not the expected \"" + expected + "\"");
  e.reason = "ContainerChanged";
  return tl::unexpected(std::move(e));
}

Result<ExecResult> run_exec(Client& client, std::string_view ns, std::string_view pod,
                            const std::vector<std::string>& argv, const StdinSource* stdin_source,
                            const ExecOptions& options, const CancelToken& cancel) {
  const auto deadline = deadline_after(options.timeout);
  auto path = exec_detail::exec_path(ns, pod, argv, options, stdin_source != nullptr);
  if (!path) return tl::unexpected(std::move(path.error()));
  const std::string what = "EXEC " + path->substr(0, path->find('?'));
  const auto failed = [&what](Error e) {
    e.message = what + ": " + e.message;
    return tl::unexpected(std::move(e));
  };
  try {
    if (cancel.cancelled()) return failed(error_of(ErrorKind::kCancelled, "cancelled"));
    auto server = server_of(client.config());
    if (!server) return failed(std::move(server.error()));
    if (options.expected_container_id) {
      auto checked =
          check_container(client, ns, pod, options.container, *options.expected_container_id);
      if (!checked) return failed(std::move(checked.error()));
    }
    // A context per exec: parsing the CA bundle costs far less than the TLS handshake.
    auto native = tls::make_client_context(server->tls);
    if (!native) return failed(std::move(native.error()));
    ssl::context ssl_ctx(native->get());
    static_cast<void>(native->release());  // owned by ssl_ctx now
    const auto connect_deadline = [&] {
      return std::min(deadline, deadline_after(options.connect_timeout));
    };
    auto endpoints = resolve(*server, connect_deadline(), cancel);
    if (!endpoints) return failed(std::move(endpoints.error()));

    for (int attempt = 0;; ++attempt) {
      auto request = client.prepare_request("GET", *path);
      if (!request) return failed(std::move(request.error()));
      const AttemptInput input{*server, ssl_ctx,      *endpoints,         *request,
                               options, stdin_source, connect_deadline(), deadline};
      Attempt exchange(input);
      exchange.run(cancel);
      const int code = exchange.http_status();
      client.metrics().record("EXEC", code != 0 ? std::to_string(code) : "<error>");
      if (exchange.cancelled()) return failed(error_of(ErrorKind::kCancelled, "cancelled"));
      if (exchange.timed_out()) {
        return failed(
            error_of(ErrorKind::kTimeout,
                     "timed out after " + std::to_string(options.timeout.count()) + "ms"));
      }
      if (exchange.declined()) {
        // Rotated credentials (token file, exec plugin): refresh once and retry, as raw() does.
        const auto& credentials = client.config().credentials;
        if (code == 401 && attempt == 0 && credentials) {
          credentials->invalidate();
          continue;
        }
        return failed(error_from_response(code, exchange.declined_body()));
      }
      if (exchange.failure()) return failed(*exchange.failure());
      auto result = exchange.result();
      if (!result) return failed(std::move(result.error()));
      return result;
    }
  } catch (const std::exception& e) {
    return failed(error_of(ErrorKind::kTransport, e.what()));
  }
}

}  // namespace

Result<ExecResult> exec(Client& client, std::string_view ns, std::string_view pod,
                        const std::vector<std::string>& argv, std::string_view stdin_data,
                        const ExecOptions& options, const CancelToken& cancel) {
  if (stdin_data.empty() && !options.attach_stdin) {
    return run_exec(client, ns, pod, argv, nullptr, options, cancel);
  }
  bool given = false;
  const StdinSource once = [&]() -> std::optional<std::string_view> {
    if (given) return std::nullopt;
    given = true;
    return stdin_data;
  };
  return run_exec(client, ns, pod, argv, &once, options, cancel);
}

Result<ExecResult> exec_streaming(Client& client, std::string_view ns, std::string_view pod,
                                  const std::vector<std::string>& argv,
                                  const StdinSource& stdin_source, const ExecOptions& options,
                                  const CancelToken& cancel) {
  if (!stdin_source) return make_error(ErrorKind::kInvalidArgument, "exec: no stdin source");
  return run_exec(client, ns, pod, argv, &stdin_source, options, cancel);
}

}  // namespace kstack::kube
