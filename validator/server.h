// The admission HTTPS server (Boost.Beast; Beast stays inside server.cpp): TLS 1.2+,
// keep-alive, bounded bodies and read timeouts, a bound on connections and on body bytes in
// flight, /validate, /mutate and /healthz, and a
// serving certificate that can be swapped while it runs.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kube/error.h"
#include "validator/admission.h"

namespace kstack::validator {

inline constexpr std::size_t kMaxRequestBodyBytes = 3u << 20;  // docs/spec.md §3: 3 MiB, 413 beyond
// The process-wide memory budget (the Deployment's limit is 256Mi). An open TLS connection
// costs ~86 KiB while idle (measured; mostly Asio's TLS buffers: a 17 KiB record buffer and a
// 17 KiB BIO pair buffer each way, and the 16 KiB first read), so 512 of them take ~45 MiB;
// beyond, new connections are closed at once (the API server opens a few dozen). Request bodies are
// held whole while they are read: the bytes announced by the bodies being read may add up to 64 MiB
// (21 bodies at the 3 MiB limit); a request that would exceed it is answered 503 with Retry-After
// before its body is read. Decoding runs on the server's threads, so at most `threads` bodies are
// decoded at once on top.
inline constexpr std::size_t kMaxConnections = 512;
inline constexpr std::size_t kMaxInflightBodyBytes = 64u << 20;
inline constexpr std::chrono::seconds kBusyRetryAfter{1};  // Retry-After of a 503
inline constexpr std::chrono::seconds kHeaderReadTimeout{10};
inline constexpr std::chrono::seconds kBodyReadTimeout{10};
inline constexpr std::chrono::seconds kIdleKeepAliveTimeout{90};
// stop(): how long in-flight requests may take to finish before connections are dropped.
inline constexpr std::chrono::seconds kShutdownTimeout{5};
// CertificateFileWatcher: how often the files are re-read (the kubelet refreshes a mounted
// Secret about once a minute, so a few seconds adds nothing noticeable).
inline constexpr std::chrono::seconds kCertificatePollInterval{10};

// Called once per answered request, from a server thread: endpoint is "/validate", "/mutate",
// "/healthz" or "other"; the duration runs from the first header byte until the response is
// ready to be written (before the write, so that a client holding its answer sees it counted).
// Must be cheap and must not throw.
using RequestObserver =
    std::function<void(std::string_view endpoint, int http_status, std::chrono::nanoseconds)>;

struct ServerOptions {
  std::string bind_address = "0.0.0.0";
  std::uint16_t port = 9443;  // 0 = pick a free port (tests)
  int threads = 2;            // this many io_contexts, one thread each; handlers run on them too
  std::size_t max_body_bytes = kMaxRequestBodyBytes;
  std::size_t max_connections = kMaxConnections;  // open at once; more are closed at accept
  // Request bodies being read, by their Content-Length (max_body_bytes when chunked); must be
  // at least max_body_bytes.
  std::size_t max_inflight_body_bytes = kMaxInflightBodyBytes;
  // The TLS handshake, and the wait for the first request of a connection, count against
  // header_timeout too; a request header must be complete within it once its first byte came.
  std::chrono::milliseconds header_timeout = kHeaderReadTimeout;
  // Whole body read; also bounds writing the response.
  std::chrono::milliseconds body_timeout = kBodyReadTimeout;
  // Keep-alive: how long a connection may wait for its next request.
  std::chrono::milliseconds idle_timeout = kIdleKeepAliveTimeout;
  std::chrono::milliseconds shutdown_timeout = kShutdownTimeout;
  std::string cert_pem;  // initial serving certificate chain
  std::string key_pem;
  RequestObserver on_request;  // optional (metrics)
};

struct ServerStats {
  std::uint64_t requests = 0;
  std::uint64_t rejected = 0;     // 4xx/5xx answered by the server itself (bad body, too large...)
  std::uint64_t connections = 0;  // accepted so far
  std::uint64_t active_connections = 0;   // open now
  std::uint64_t timeouts = 0;             // connections cut off by a handshake/header/body timeout
  std::uint64_t refused_connections = 0;  // closed at accept: max_connections were open
  std::uint64_t admitted_bodies = 0;      // requests whose body was admitted under the budget
  std::uint64_t busy = 0;  // requests answered 503: max_inflight_body_bytes was taken
  std::uint64_t inflight_body_bytes = 0;  // now: the budget taken by bodies being read or served
  std::uint64_t body_bytes_held = 0;      // now: bytes of those bodies received so far
  std::uint64_t memory_trims = 0;         // free heap memory returned to the system (all closed)
};

class AdmissionServer {
 public:
  virtual ~AdmissionServer() = default;
  // Bound port (useful with port 0).
  virtual std::uint16_t port() const = 0;
  // Replaces the serving certificate: new handshakes use it at once; connections already
  // established keep theirs. Fails (and keeps the old one) when the PEMs do not parse or match.
  virtual kube::Result<void> set_certificate(const std::string& cert_pem,
                                             const std::string& key_pem) = 0;
  // Stops accepting, lets in-flight requests finish (bounded), then returns.
  virtual void stop() = 0;
  virtual ServerStats stats() const = 0;
  virtual bool serving() const = 0;
};

// Starts serving on its own threads. `handler` must outlive the server.
kube::Result<std::unique_ptr<AdmissionServer>> start_admission_server(ServerOptions options,
                                                                      AdmissionHandler& handler);

// ---- Serving certificate from files (cert-manager, a mounted Secret) ----------------------

struct CertificateFiles {
  std::filesystem::path cert_file;  // PEM chain, leaf first (tls.crt)
  std::filesystem::path key_file;   // PEM private key (tls.key)
};

struct CertificatePems {
  std::string cert_pem;
  std::string key_pem;
};

// Reads both files (bounded size); errors (kConfig) name the file.
kube::Result<CertificatePems> read_certificate_files(const CertificateFiles& files);

struct CertificateWatchOptions {
  CertificateFiles files;
  std::chrono::milliseconds poll_interval = kCertificatePollInterval;
  // Called after every attempt to install changed files (success or the reason it failed).
  std::function<void(const kube::Result<void>&)> on_reload;
};

// Re-reads the certificate and key files every poll_interval and, when their content changed,
// installs them with AdmissionServer::set_certificate. Content is compared rather than mtime:
// a Secret volume swaps a symlink, and a writer may replace the cert before the key, which
// fails once (the old certificate stays) and succeeds at the next poll. Polls on its own
// thread; stops when destroyed. `server` must outlive the watcher.
class CertificateFileWatcher {
 public:
  // Does not load the files at once: the server already serves them (read_certificate_files
  // gives the initial PEMs); the first poll installs them only if they changed since.
  CertificateFileWatcher(AdmissionServer& server, CertificateWatchOptions options,
                         CertificatePems installed);
  ~CertificateFileWatcher();
  CertificateFileWatcher(const CertificateFileWatcher&) = delete;
  CertificateFileWatcher& operator=(const CertificateFileWatcher&) = delete;

  // Checks the files now (thread-safe). True when a new certificate was installed, false
  // when nothing changed, an error when the files are unreadable or were refused.
  kube::Result<bool> check_now();
  std::uint64_t reloads() const;  // certificates installed so far
  void stop();                    // idempotent

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace kstack::validator
