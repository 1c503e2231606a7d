#include "tests/testenv/tcp_proxy.h"

#include <cerrno>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace kstack::testenv {

TcpProxy::TcpProxy(std::uint16_t target_port)
    : target_port_(target_port), server_([this](int client_fd) { serve(client_fd); }) {}

TcpProxy::~TcpProxy() { server_.stop(); }

void TcpProxy::cut() {
  cut_ = true;
  // shutdown() wakes the pumps' poll(); their threads close the descriptors.
  server_.shutdown_all();
}

void TcpProxy::restore() { cut_ = false; }

void TcpProxy::serve(int client_fd) {
  if (cut_) return;  // accepted, then closed
  const int server_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (server_fd < 0) return;
  server_.track(server_fd);
  auto addr = loopback_address(target_port_);
  if (::connect(server_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    ++accepted_;
    pump(client_fd, server_fd);
  }
  server_.close_tracked(server_fd);
}

void TcpProxy::pump(int client_fd, int server_fd) {
  char buf[16384];
  for (;;) {
    pollfd fds[2] = {{client_fd, POLLIN, 0}, {server_fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < 2; ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) return;
      const int to = i == 0 ? server_fd : client_fd;
      for (ssize_t off = 0; off < n;) {
        const ssize_t w = ::send(to, buf + off, static_cast<std::size_t>(n - off), MSG_NOSIGNAL);
        if (w <= 0) return;
        off += w;
      }
    }
  }
}

}  // namespace kstack::testenv
