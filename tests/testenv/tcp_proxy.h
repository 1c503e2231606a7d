// A TCP forwarder on 127.0.0.1 that a test can cut and restore, to disconnect one client
// (e.g. an informer) from the API server while others keep talking to it. TLS passes through
// untouched; the apiserver's certificate is valid for 127.0.0.1 on any port.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kstack::testenv {

class TcpProxy {
 public:
  // Listens on a free port of 127.0.0.1 and forwards to 127.0.0.1:target_port.
  explicit TcpProxy(std::uint16_t target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  std::uint16_t port() const { return port_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

  // Closes every forwarded connection and refuses (accepts then closes) new ones until
  // restore(). Returns once existing connections are closed.
  void cut();
  void restore();
  std::uint64_t connections_accepted() const { return accepted_.load(); }

 private:
  void accept_loop();
  void pump(int client_fd, int server_fd);

  std::uint16_t target_port_;
  std::uint16_t port_ = 0;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> cut_{false};
  std::atomic<std::uint64_t> accepted_{0};
  std::mutex mu_;
  std::vector<int> open_fds_;  // both ends of live connections, for cut()
  std::vector<std::thread> pumps_;
  std::thread acceptor_;
};

}  // namespace kstack::testenv
