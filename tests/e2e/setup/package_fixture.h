// Fixtures for the setup e2e tests (setup_test.cpp): real tar.gz setup packages built with the
// host's tar, their sha256, and a minimal blocking HTTP/1.1 server on 127.0.0.1 that a simulated
// container (which shares the host's network) can fetch them from.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <thread>

namespace kstack::executor::testing {

// The startscript every test package carries: it appends its arguments (each in brackets) and a
// timestamp as one line to kStartScriptLog, then runs `configure_body` for --configure and
// `other_body` for anything else.
inline constexpr std::string_view kStartScriptLog = "/tmp/startscript.log";
std::string start_script(std::string_view configure_body, std::string_view other_body = "exit 0");

// A tar.gz (built with `tar -czf`, spawned with an argv) holding `files` (name -> content, all
// mode 0755). Throws std::runtime_error when tar fails.
std::string make_package(const std::map<std::string, std::string>& files);

std::string sha256_hex(std::string_view data);

// Serves `files` (URL path -> body) with 200, anything else with 404, one connection at a time.
class HttpServer {
 public:
  explicit HttpServer(std::map<std::string, std::string> files);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // "http://127.0.0.1:<port><path>"
  std::string url(std::string_view path) const;
  int requests() const { return requests_.load(); }

 private:
  void serve();

  std::map<std::string, std::string> files_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

}  // namespace kstack::executor::testing
