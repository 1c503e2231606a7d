// The simulator's test controls: a small plain-HTTP server on loopback. It only parses
// requests and writes responses; what a route does is the handler's business (simulator.cpp).
// Handlers run on the server's single thread and may block (they call the API server).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <tl/expected.hpp>

namespace kstack::nodesim {

struct ControlRequest {
  std::string method;
  std::string path;                          // decoded, without the query
  std::map<std::string, std::string> query;  // decoded
  std::string body;
};

struct ControlResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

using ControlHandler = std::function<ControlResponse(const ControlRequest&)>;

class ControlServer {
 public:
  static tl::expected<std::unique_ptr<ControlServer>, std::string> start(const std::string& address,
                                                                         int port,
                                                                         ControlHandler handler);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  int port() const;
  void stop();

  struct Impl;

 private:
  explicit ControlServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kstack::nodesim
