// A TCP forwarder on 127.0.0.1 that a test can cut and restore, to disconnect one client
// (e.g. an informer) from the API server while others keep talking to it. TLS passes through
// untouched; the apiserver's certificate is valid for 127.0.0.1 on any port.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "tests/testenv/loopback_server.h"

namespace kstack::testenv {

class TcpProxy {
 public:
  // Listens on a free port of 127.0.0.1 and forwards to 127.0.0.1:target_port.
  explicit TcpProxy(std::uint16_t target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  std::uint16_t port() const { return server_.port(); }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port()); }

  // Closes every forwarded connection and refuses (accepts then closes) new ones until
  // restore(). Existing connections are shut down (their threads close them).
  void cut();
  void restore();
  std::uint64_t connections_accepted() const { return accepted_.load(); }

 private:
  void serve(int client_fd);
  void pump(int client_fd, int server_fd);

  std::uint16_t target_port_;
  std::atomic<bool> cut_{false};
  std::atomic<std::uint64_t> accepted_{0};
  LoopbackServer server_;  // last: stopped before the rest is destroyed
};

}  // namespace kstack::testenv
