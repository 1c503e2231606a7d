// The kubelet's streaming endpoint: HTTPS + WebSocket at /exec/{namespace}/{pod}/{container}
// (the path kube-apiserver forwards pods/exec to), running the argv inside the container's
// sandbox and streaming stdin/stdout/stderr as *.channel.k8s.io frames, then the exit status
// on channel 3. Boost.Beast stays inside exec_server.cpp; one io_context, a strand per
// connection, no thread per exec.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <tl/expected.hpp>

#include "tests/nodesim/exec_protocol.h"
#include "tests/nodesim/runtime.h"

namespace kstack::nodesim {

// After the client disconnects, a command still running gets this long before SIGKILL.
inline constexpr std::chrono::milliseconds kDisconnectGrace{5'000};
// After the command exits, output still buffered (or held open by background processes) is
// forwarded for at most this long before the status is sent.
inline constexpr std::chrono::milliseconds kExitDrain{2'000};
// Largest WebSocket message accepted from a client (golang.org/x/net/websocket's default).
inline constexpr std::size_t kMaxMessageBytes = 32u << 20;

struct ExecServerOptions {
  std::string address = "127.0.0.1";
  int port = 0;  // 0 = any free port
  int threads = 2;
  std::string cert_pem;
  std::string key_pem;
  // Subprotocols served; a client offering none of them is refused with 400.
  ProtocolSet protocols = all_protocols();
  // While it returns true, exec requests are refused with 503 (the node is lost: an API server
  // cut off from its kubelet cannot reach the endpoint either). Unset: never.
  std::function<bool()> unreachable = nullptr;
};

class ExecServer {
 public:
  static tl::expected<std::unique_ptr<ExecServer>, std::string> start(Runtime& runtime,
                                                                      ExecServerOptions options);
  ~ExecServer();  // stop()
  ExecServer(const ExecServer&) = delete;
  ExecServer& operator=(const ExecServer&) = delete;

  int port() const;
  // Stops accepting, ends every session (killing running commands) and joins the threads.
  void stop();

  struct Impl;

 private:
  explicit ExecServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kstack::nodesim
