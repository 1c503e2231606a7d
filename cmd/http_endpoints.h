// The operator's plain-HTTP endpoints (/healthz, /readyz, /metrics): a small GET-only server
// on Boost.Beast — the only translation unit of cmd/ that includes Beast (compile cost, see
// docs/dependencies.md). Paths map to handlers returning a whole response; bodies are small, so
// there is no streaming. Requests are bounded (header size, no body, read timeouts) because
// the port may be reachable by anything in the cluster network.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "kube/error.h"

namespace kstack::cmd {

inline constexpr std::size_t kMaxEndpointHeaderBytes = 8u << 10;
inline constexpr std::chrono::seconds kEndpointReadTimeout{10};
inline constexpr std::chrono::seconds kEndpointIdleTimeout{60};

struct EndpointResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Called on a server thread for every GET (or HEAD) of its exact path (query ignored); must
// not throw (a throw answers 500) and should be quick.
using EndpointHandler = std::function<EndpointResponse()>;

struct HttpEndpointsOptions {
  std::string bind_address = "0.0.0.0";
  std::uint16_t port = 0;                                         // 0 = any free port (tests)
  std::map<std::string, EndpointHandler> routes;                  // "/healthz" -> handler
  std::chrono::milliseconds read_timeout = kEndpointReadTimeout;  // whole request, and write
  std::chrono::milliseconds idle_timeout = kEndpointIdleTimeout;  // keep-alive wait
  std::size_t max_header_bytes = kMaxEndpointHeaderBytes;
};

class HttpEndpoints {
 public:
  virtual ~HttpEndpoints() = default;
  virtual std::uint16_t port() const = 0;
  // Stops accepting, closes connections, joins the server thread. Idempotent.
  virtual void stop() = 0;
};

// Binds and starts serving on one thread of its own. Other paths get 404, other methods 405,
// a request with a body 400 (413 when declared larger than a small limit), an oversized header
// 431; a client that does not finish its request within read_timeout is disconnected.
kube::Result<std::unique_ptr<HttpEndpoints>> start_http_endpoints(HttpEndpointsOptions options);

}  // namespace kstack::cmd
