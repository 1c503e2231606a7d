// A TCP server on a free port of 127.0.0.1 with a thread per connection: what the test proxies
// (tcp_proxy.h, rewriting_proxy.h) share. It owns the accepted sockets and the sockets a
// connection registers with track(), so that stop() (and the proxies' cut()) can shut them all
// down, which wakes every blocked read and poll.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <netinet/in.h>

namespace kstack::testenv {

// 127.0.0.1:port
sockaddr_in loopback_address(std::uint16_t port);

class LoopbackServer {
 public:
  // Runs `serve(client_fd)` on a new thread for each connection; the socket is closed when it
  // returns. Throws std::system_error when the socket cannot be set up.
  explicit LoopbackServer(std::function<void(int client_fd)> serve);
  ~LoopbackServer();  // stop()
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  std::uint16_t port() const { return port_; }

  // Another socket of a connection (e.g. its upstream), shut down with the others; shut down
  // at once when the server is stopping.
  void track(int fd);
  // Untracks and closes a socket given to track().
  void close_tracked(int fd);
  // Shuts down every live connection's sockets; their serve() calls then return.
  void shutdown_all();
  // Stops accepting, shuts every connection down and waits for their threads. Idempotent.
  void stop();

 private:
  void accept_loop();

  std::function<void(int)> serve_;
  std::uint16_t port_ = 0;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<int> open_fds_;
  std::vector<std::thread> connections_;
  std::thread acceptor_;
};

}  // namespace kstack::testenv
