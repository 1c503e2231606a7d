#include "tests/testenv/rewriting_proxy.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace kstack::testenv {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), "rewriting proxy: " + what);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// One TLS connection with a read buffer, used by one thread.
class Conn {
 public:
  Conn(SSL* ssl, int fd) : ssl_(ssl), fd_(fd) {}
  ~Conn() {
    if (ssl_ != nullptr) SSL_free(ssl_);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  SSL* ssl() const { return ssl_; }
  int fd() const { return fd_; }
  std::string& buffer() { return buf_; }

  // Reads more bytes into the buffer; false on end of stream or error.
  bool fill() {
    char chunk[16384];
    const int n = SSL_read(ssl_, chunk, sizeof chunk);
    if (n <= 0) return false;
    buf_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }
  // Everything up to and including `delim`, removed from the buffer.
  std::optional<std::string> read_until(std::string_view delim) {
    for (;;) {
      if (auto pos = buf_.find(delim); pos != std::string::npos) return take(pos + delim.size());
      if (!fill()) return std::nullopt;
    }
  }
  std::optional<std::string> read_n(std::size_t n) {
    while (buf_.size() < n) {
      if (!fill()) return std::nullopt;
    }
    return take(n);
  }
  std::string read_to_end() {
    while (fill()) {
    }
    return take(buf_.size());
  }
  bool write(std::string_view bytes) {
    while (!bytes.empty()) {
      const int n = SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

 private:
  std::string take(std::size_t n) {
    std::string out = buf_.substr(0, n);
    buf_.erase(0, n);
    return out;
  }
  SSL* ssl_;
  int fd_;
  std::string buf_;
};

// An HTTP message head: the start line and the headers we act on.
struct Head {
  std::string raw;
  std::string start_line;
  std::optional<std::size_t> content_length;
  bool chunked = false;
  bool connection_close = false;
};

Head parse_head(std::string raw) {
  Head h;
  h.start_line = raw.substr(0, raw.find("\r\n"));
  std::string_view rest(raw);
  rest.remove_prefix(std::min(rest.size(), h.start_line.size() + 2));
  while (!rest.empty()) {
    const auto eol = rest.find("\r\n");
    const std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string name = lower(line.substr(0, colon));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (name == "content-length") {
      std::size_t n = 0;
      std::from_chars(value.data(), value.data() + value.size(), n);
      h.content_length = n;
    } else if (name == "transfer-encoding") {
      h.chunked = lower(value).find("chunked") != std::string::npos;
    } else if (name == "connection") {
      h.connection_close = lower(value).find("close") != std::string::npos;
    }
  }
  h.raw = std::move(raw);
  return h;
}

// Reads a chunked body: its raw bytes (to pass through) and the decoded payload.
bool read_chunked(Conn& c, std::string& raw, std::string& body) {
  for (;;) {
    auto size_line = c.read_until("\r\n");
    if (!size_line) return false;
    raw += *size_line;
    std::size_t size = 0;
    std::from_chars(size_line->data(), size_line->data() + size_line->size(), size, 16);
    if (size == 0) {
      auto trailer = c.read_until("\r\n");  // no trailers from the apiserver
      if (!trailer) return false;
      raw += *trailer;
      return true;
    }
    auto data = c.read_n(size + 2);
    if (!data) return false;
    raw += *data;
    body.append(*data, 0, size);
  }
}

// Copies bytes both ways until either side closes or `stopping` is set (a watch stream).
void relay(Conn& a, Conn& b, const std::atomic<bool>& stopping) {
  if (!a.buffer().empty() && !b.write(a.buffer())) return;
  if (!b.buffer().empty() && !a.write(b.buffer())) return;
  a.buffer().clear();
  b.buffer().clear();
  while (!stopping) {
    pollfd fds[2] = {{a.fd(), POLLIN, 0}, {b.fd(), POLLIN, 0}};
    const bool pending = SSL_pending(a.ssl()) > 0 || SSL_pending(b.ssl()) > 0;
    if (!pending && ::poll(fds, 2, 200) <= 0) continue;
    for (auto [from, to] : {std::pair<Conn*, Conn*>{&a, &b}, {&b, &a}}) {
      const bool readable = SSL_pending(from->ssl()) > 0 ||
                            (fds[from == &a ? 0 : 1].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
      if (!readable) continue;
      if (!from->fill() || !to->write(from->buffer())) return;
      from->buffer().clear();
    }
  }
}

std::string replace_body(const Head& head, const std::string& body) {
  std::string out = head.start_line + "\r\n";
  std::string_view rest(head.raw);
  rest.remove_prefix(head.start_line.size() + 2);
  while (!rest.empty()) {
    const auto eol = rest.find("\r\n");
    const std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 2);
    if (line.empty()) break;
    const std::string name = lower(line.substr(0, line.find(':')));
    if (name == "content-length" || name == "transfer-encoding") continue;
    out.append(line).append("\r\n");
  }
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  return out + body;
}

// Reads one request from `client` and sends it on to `server`; nullopt if either side ended.
std::optional<RewritingProxy::Request> forward_request(Conn& client, Conn& server) {
  auto raw_request = client.read_until("\r\n\r\n");
  if (!raw_request) return std::nullopt;
  const Head request = parse_head(std::move(*raw_request));
  std::string body;
  if (request.content_length) {
    auto b = client.read_n(*request.content_length);
    if (!b) return std::nullopt;
    body = std::move(*b);
  }
  if (!server.write(request.raw) || !server.write(body)) return std::nullopt;
  const auto sp1 = request.start_line.find(' ');
  const auto sp2 = request.start_line.rfind(' ');
  return RewritingProxy::Request{request.start_line.substr(0, sp1),
                                 request.start_line.substr(sp1 + 1, sp2 - sp1 - 1)};
}

// A response read whole: its head, its body as sent (`raw`) and decoded (`body`).
struct Response {
  Head head;
  int status = 0;
  std::string raw;
  std::string body;
};

std::optional<Response> read_response(Conn& server) {
  auto raw_head = server.read_until("\r\n\r\n");
  if (!raw_head) return std::nullopt;
  Response r{parse_head(std::move(*raw_head)), 0, {}, {}};
  if (r.head.chunked) {
    if (!read_chunked(server, r.raw, r.body)) return std::nullopt;
  } else if (r.head.content_length) {
    auto b = server.read_n(*r.head.content_length);
    if (!b) return std::nullopt;
    r.raw = r.body = std::move(*b);
  } else {
    r.raw = r.body = server.read_to_end();
  }
  const std::string& line = r.head.start_line;
  const auto sp = line.find(' ');
  if (sp != std::string::npos)
    std::from_chars(line.data() + sp + 1, line.data() + line.size(), r.status);
  return r;
}

// One request and its response (a watch: the whole stream); false once the connection is done.
bool exchange(Conn& client, Conn& server, const std::atomic<bool>& stopping,
              const RewritingProxy::Rewrite& rewrite) {
  const auto request = forward_request(client, server);
  if (!request) return false;
  if (request->target.find("watch=true") != std::string::npos ||
      request->target.find("watch=1") != std::string::npos) {
    relay(server, client, stopping);
    return false;
  }
  const auto response = read_response(server);
  if (!response) return false;
  const auto replaced = rewrite(*request, response->status, response->body);
  const bool sent = replaced ? client.write(replace_body(response->head, *replaced))
                             : client.write(response->head.raw) && client.write(response->raw);
  return sent && !response->head.connection_close;
}

}  // namespace

struct RewritingProxy::Tls {
  SSL_CTX* server = nullptr;
  SSL_CTX* client = nullptr;
  ~Tls() {
    SSL_CTX_free(server);
    SSL_CTX_free(client);
  }
};

RewritingProxy::RewritingProxy(std::uint16_t target_port, const std::filesystem::path& cert,
                               const std::filesystem::path& key)
    : target_port_(target_port), tls_(std::make_unique<Tls>()) {
  // OpenSSL writes with write(2): a peer that closed while we answer must not end the test
  // binary with SIGPIPE (the write fails with EPIPE and the connection ends instead).
  std::signal(SIGPIPE, SIG_IGN);
  tls_->server = SSL_CTX_new(TLS_server_method());
  tls_->client = SSL_CTX_new(TLS_client_method());
  if (tls_->server == nullptr || tls_->client == nullptr) fail("SSL_CTX_new");
  if (SSL_CTX_use_certificate_chain_file(tls_->server, cert.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(tls_->server, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    fail("load " + cert.string() + " / " + key.string());
  }
  // Upstream is the test apiserver on loopback, whose certificate the client already checked
  // through this proxy's (the same one): nothing to verify twice.
  SSL_CTX_set_verify(tls_->client, SSL_VERIFY_NONE, nullptr);

  server_ = std::make_unique<LoopbackServer>([this](int client_fd) { serve(client_fd); });
}

RewritingProxy::~RewritingProxy() {
  stopping_ = true;  // ends the watch relays and exchanges
  server_->stop();
}

void RewritingProxy::set_rewrite(Rewrite rewrite) {
  std::lock_guard lock(mu_);
  rewrite_ = std::move(rewrite);
}

std::optional<std::string> RewritingProxy::rewrite(const Request& request, int status,
                                                   const std::string& body) {
  Rewrite f;
  {
    std::lock_guard lock(mu_);
    f = rewrite_;
  }
  auto out = f ? f(request, status, body) : std::nullopt;
  if (out) ++rewritten_;
  return out;
}

void RewritingProxy::serve(int client_fd) {
  const int server_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (server_fd < 0) return;
  server_->track(server_fd);
  {
    Conn client(SSL_new(tls_->server), client_fd);
    Conn server(SSL_new(tls_->client), server_fd);
    SSL_set_fd(client.ssl(), client_fd);
    SSL_set_fd(server.ssl(), server_fd);
    auto addr = loopback_address(target_port_);
    const bool connected =
        SSL_accept(client.ssl()) == 1 &&
        ::connect(server_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        SSL_connect(server.ssl()) == 1;
    const auto rewrite_answer = [this](const Request& r, int status, const std::string& body) {
      return rewrite(r, status, body);
    };
    while (connected && !stopping_ && exchange(client, server, stopping_, rewrite_answer)) {
    }
    SSL_shutdown(client.ssl());
  }
  server_->close_tracked(server_fd);
}

}  // namespace kstack::testenv
