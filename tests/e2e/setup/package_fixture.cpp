// Package and HTTP fixtures of the setup e2e tests (see package_fixture.h).
#include "tests/e2e/setup/package_fixture.h"

#include <array>
#include <cerrno>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace kstack::executor::testing {
namespace fs = std::filesystem;

std::string start_script(std::string_view configure_body, std::string_view other_body) {
  return fmt::format(R"sh(#!/bin/sh
{{ printf '[%s]' "$@"; printf ' %s\n' "$(date +%s.%N)"; }} >>{}
if [ "$1" = --configure ]; then
{}
fi
{}
)sh",
                     kStartScriptLog, configure_body, other_body);
}

namespace {

void run(const std::vector<std::string>& argv) {
  std::vector<char*> c_argv;
  c_argv.reserve(argv.size() + 1);
  for (const auto& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  pid_t pid = 0;
  if (int err = ::posix_spawnp(&pid, c_argv[0], nullptr, nullptr, c_argv.data(), environ);
      err != 0) {
    throw std::runtime_error(
        fmt::format("spawn {}: {}", argv[0], std::system_category().message(err)));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(fmt::format("{} failed (status {})", argv[0], status));
  }
}

}  // namespace

std::string make_package(const std::map<std::string, std::string>& files) {
  std::string pattern = (fs::temp_directory_path() / "kstack-setup-pkg-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  const fs::path dir = pattern;
  const fs::path content = dir / "content";
  fs::create_directory(content);
  std::vector<std::string> argv = {"tar", "-czf", (dir / "pkg.tgz").string(), "-C",
                                   content.string()};
  for (const auto& [name, text] : files) {
    std::ofstream(content / name, std::ios::binary) << text;
    fs::permissions(content / name, fs::perms(0755));
    argv.push_back(name);
  }
  run(argv);
  std::ifstream in(dir / "pkg.tgz", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove_all(dir);
  return bytes;
}

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

HttpServer::HttpServer(std::map<std::string, std::string> files) : files_(std::move(files)) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener_, 16) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error(fmt::format("http server: {}", std::system_category().message(errno)));
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { serve(); });
}

HttpServer::~HttpServer() {
  stopping_ = true;
  ::shutdown(listener_, SHUT_RDWR);  // wakes the blocked accept()
  thread_.join();
  ::close(listener_);
}

std::string HttpServer::url(std::string_view path) const {
  return fmt::format("http://127.0.0.1:{}{}", port_, path);
}

void HttpServer::serve() {
  while (!stopping_) {
    int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return;
    }
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < 65536) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      request.append(buf, static_cast<std::size_t>(n));
    }
    ++requests_;
    // "GET /path HTTP/1.1"
    std::string path;
    if (auto sp = request.find(' '); sp != std::string::npos) {
      path = request.substr(sp + 1, request.find(' ', sp + 1) - sp - 1);
    }
    auto it = files_.find(path);
    const std::string body = it == files_.end() ? std::string("not found\n") : it->second;
    std::string response = fmt::format(
                               "HTTP/1.1 {}\r\nContent-Length: {}\r\nContent-Type: "
                               "application/octet-stream\r\nConnection: close\r\n\r\n",
                               it == files_.end() ? "404 Not Found" : "200 OK", body.size()) +
                           body;
    std::size_t sent = 0;
    while (sent < response.size()) {
      ssize_t n = ::send(fd, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }
}

}  // namespace kstack::executor::testing
