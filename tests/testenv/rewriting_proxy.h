// A TLS-terminating HTTP/1.1 proxy on 127.0.0.1 in front of the test API server that can
// rewrite response bodies on the way back: the way to hand a client a malformed answer (a 200
// whose body is valid JSON of the wrong shape) from a real server. It serves the apiserver's
// own certificate, so a client configured for the control plane trusts it, and forwards each
// request unchanged (Authorization included) over TLS. Watch requests are relayed as a byte
// stream and never rewritten. Test code: setup failures throw.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "tests/testenv/loopback_server.h"

namespace kstack::testenv {

class RewritingProxy {
 public:
  struct Request {
    std::string method;  // GET, POST, ...
    std::string target;  // path and query, e.g. /api/v1/namespaces/x/configmaps?limit=500
  };
  // Returns the body to send instead of `body`, or std::nullopt to pass the answer through.
  using Rewrite =
      std::function<std::optional<std::string>(const Request&, int status, const std::string&)>;

  // Listens on a free port of 127.0.0.1 with the certificate chain `cert` and key `key`, and
  // forwards to https://127.0.0.1:target_port.
  RewritingProxy(std::uint16_t target_port, const std::filesystem::path& cert,
                 const std::filesystem::path& key);
  ~RewritingProxy();
  RewritingProxy(const RewritingProxy&) = delete;
  RewritingProxy& operator=(const RewritingProxy&) = delete;

  std::string url() const { return "https://127.0.0.1:" + std::to_string(server_->port()); }

  // Applies from the next answer on; an empty function passes everything through.
  void set_rewrite(Rewrite rewrite);
  // How many answers were rewritten so far.
  std::uint64_t rewritten() const { return rewritten_.load(); }

 private:
  struct Tls;
  void serve(int client_fd);
  std::optional<std::string> rewrite(const Request& request, int status, const std::string& body);

  std::uint16_t target_port_;
  std::unique_ptr<Tls> tls_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> rewritten_{0};
  std::mutex mu_;
  Rewrite rewrite_;
  std::unique_ptr<LoopbackServer> server_;  // started last, once TLS is set up
};

}  // namespace kstack::testenv
