#include "tests/testenv/tcp_proxy.h"

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace kstack::testenv {
namespace {

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

[[noreturn]] void fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

TcpProxy::TcpProxy(std::uint16_t target_port) : target_port_(target_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) fail("tcp proxy: socket");
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  auto addr = loopback(0);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    fail("tcp proxy: bind");
  if (::listen(listen_fd_, 64) != 0) fail("tcp proxy: listen");
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) fail("tcp proxy: pipe");
  acceptor_ = std::thread([this] { accept_loop(); });
}

TcpProxy::~TcpProxy() {
  stopping_ = true;
  cut();
  char c = 0;
  (void)!::write(wake_pipe_[1], &c, 1);
  acceptor_.join();
  std::vector<std::thread> pumps;
  {
    std::lock_guard lock(mu_);
    pumps.swap(pumps_);
  }
  for (auto& t : pumps) t.join();
  ::close(listen_fd_);
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

void TcpProxy::cut() {
  cut_ = true;
  std::lock_guard lock(mu_);
  // shutdown() wakes the pumps' poll(); they close the descriptors themselves.
  for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
}

void TcpProxy::restore() { cut_ = false; }

void TcpProxy::accept_loop() {
  while (!stopping_) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if ((fds[1].revents & POLLIN) != 0) return;
    int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    if (cut_) {
      ::close(client);
      continue;
    }
    int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto addr = loopback(target_port_);
    if (server < 0 || ::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      if (server >= 0) ::close(server);
      ::close(client);
      continue;
    }
    ++accepted_;
    std::lock_guard lock(mu_);
    open_fds_.push_back(client);
    open_fds_.push_back(server);
    pumps_.emplace_back([this, client, server] { pump(client, server); });
  }
}

void TcpProxy::pump(int client_fd, int server_fd) {
  char buf[16384];
  for (;;) {
    pollfd fds[2] = {{client_fd, POLLIN, 0}, {server_fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    bool done = false;
    for (int i = 0; i < 2 && !done; ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        done = true;
        break;
      }
      const int to = i == 0 ? server_fd : client_fd;
      for (ssize_t off = 0; off < n;) {
        const ssize_t w = ::send(to, buf + off, static_cast<std::size_t>(n - off), MSG_NOSIGNAL);
        if (w <= 0) {
          done = true;
          break;
        }
        off += w;
      }
    }
    if (done) break;
  }
  std::lock_guard lock(mu_);
  std::erase(open_fds_, client_fd);
  std::erase(open_fds_, server_fd);
  ::close(client_fd);
  ::close(server_fd);
}

}  // namespace kstack::testenv
