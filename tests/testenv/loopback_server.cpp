#include "tests/testenv/loopback_server.h"

#include <algorithm>
#include <cerrno>
#include <system_error>

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace kstack::testenv {
namespace {

[[noreturn]] void fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

sockaddr_in loopback_address(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

LoopbackServer::LoopbackServer(std::function<void(int)> serve) : serve_(std::move(serve)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) fail("loopback server: socket");
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  auto addr = loopback_address(0);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    fail("loopback server: bind");
  }
  if (::listen(listen_fd_, 64) != 0) fail("loopback server: listen");
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) fail("loopback server: pipe");
  acceptor_ = std::thread([this] { accept_loop(); });
}

LoopbackServer::~LoopbackServer() {
  stop();
  ::close(listen_fd_);
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

void LoopbackServer::stop() {
  if (stopping_.exchange(true)) return;
  char c = 0;
  (void)!::write(wake_pipe_[1], &c, 1);
  acceptor_.join();
  // No connection starts any more: shut the live ones down and wait for them.
  shutdown_all();
  for (auto& t : connections_) t.join();
}

void LoopbackServer::track(int fd) {
  std::lock_guard lock(mu_);
  open_fds_.push_back(fd);
  if (stopping_) ::shutdown(fd, SHUT_RDWR);
}

void LoopbackServer::close_tracked(int fd) {
  std::lock_guard lock(mu_);
  std::erase(open_fds_, fd);
  ::close(fd);
}

void LoopbackServer::shutdown_all() {
  std::lock_guard lock(mu_);
  for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
}

void LoopbackServer::accept_loop() {
  while (!stopping_) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (stopping_ || (fds[1].revents & POLLIN) != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    track(fd);
    std::lock_guard lock(mu_);
    connections_.emplace_back([this, fd] {
      serve_(fd);
      close_tracked(fd);
    });
  }
}

}  // namespace kstack::testenv
