// The HTTP(S) transport under the Kubernetes client: a narrow, non-template interface so that
// Boost.Beast/Asio/OpenSSL stay inside kube/transport.cpp (compile time on 2 cores).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/error.h"

namespace kstack::kube {

struct TlsOptions {
  std::string ca_pem;                 // trusted CA bundle (PEM); empty = system trust store
  bool insecure_skip_verify = false;  // kubeconfig insecure-skip-tls-verify
  std::string server_name;            // SNI and name to verify; empty = the host
  std::string client_cert_pem;        // client certificate chain (PEM), optional
  std::string client_key_pem;         // its private key (PEM), required with a cert
};

// Defaults chosen like client-go's: no overall timeout on watches, bounded everything else.
inline constexpr std::chrono::milliseconds kDefaultConnectTimeout{10'000};
inline constexpr std::chrono::milliseconds kDefaultRequestTimeout{60'000};
inline constexpr std::size_t kDefaultMaxResponseBytes = 128u << 20;  // a 10k-object LIST fits
inline constexpr std::size_t kDefaultMaxIdleConnections = 16;

struct TransportOptions {
  std::string scheme = "https";  // "https" or "http"
  std::string host;              // name or IP literal
  std::uint16_t port = 443;
  TlsOptions tls;
  std::chrono::milliseconds connect_timeout = kDefaultConnectTimeout;  // TCP + TLS handshake
  std::chrono::milliseconds request_timeout = kDefaultRequestTimeout;  // default per request
  std::size_t max_response_bytes = kDefaultMaxResponseBytes;
  std::size_t max_idle_connections = kDefaultMaxIdleConnections;
};

struct Header {
  std::string name;
  std::string value;
};

struct HttpRequest {
  std::string method;  // GET, POST, PUT, PATCH, DELETE
  std::string target;  // origin-form: /api/v1/namespaces/x/configmaps?limit=2
  std::vector<Header> headers;
  std::string body;
  // Overrides TransportOptions::request_timeout for this request (whole exchange).
  std::optional<std::chrono::milliseconds> timeout;
};

struct HttpResponse {
  int status = 0;
  std::vector<Header> headers;
  std::string body;
  // Case-insensitive header lookup.
  std::optional<std::string> header(std::string_view name) const;
};

// Lets another thread stop a stream (or a request) in progress. Cheap to copy; copies share state.
class CancelToken {
 public:
  CancelToken();
  void cancel() const;
  bool cancelled() const;
  // Registers the action that interrupts blocked I/O; runs at once if already cancelled.
  // Returns an id for remove_action. Used by the transport, not by callers.
  std::uint64_t add_action(std::function<void()> action) const;
  void remove_action(std::uint64_t id) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Called with each piece of a streamed body as it arrives (arbitrary splits); return false to stop.
using ChunkHandler = std::function<bool(std::string_view)>;

struct TransportStats {
  std::uint64_t connections_opened = 0;  // TCP(+TLS) connections established so far
  std::uint64_t requests = 0;            // exchanges started (send + stream)
};

// Thread-safe: many threads may send at once; connections are pooled and kept alive.
class Transport {
 public:
  virtual ~Transport() = default;

  virtual TransportStats stats() const = 0;

  // One request/response exchange, body bounded by max_response_bytes.
  virtual Result<HttpResponse> send(const HttpRequest& request, const CancelToken& cancel) = 0;
  Result<HttpResponse> send(const HttpRequest& request) { return send(request, CancelToken{}); }

  // Streams the response body (e.g. a watch). For a 2xx status the body is passed to
  // `on_chunk` and the returned response has an empty body; for any other status the body is
  // read (bounded) into the response and `on_chunk` is not called. Returns when the server
  // ends the body, `on_chunk` returns false, `cancel` fires (kCancelled), or no byte arrives
  // for `idle_timeout` (kTimeout). There is no overall deadline.
  virtual Result<HttpResponse> stream(const HttpRequest& request, const ChunkHandler& on_chunk,
                                      const CancelToken& cancel,
                                      std::chrono::milliseconds idle_timeout) = 0;
};

// Validates the options (PEM parses, host set) and returns a transport; connects lazily.
Result<std::unique_ptr<Transport>> make_transport(TransportOptions options);

}  // namespace kstack::kube
