// Serving certificate from files, reloaded when they change (see CertificateFileWatcher in
// server.h). Kept out of server.cpp so that it compiles without Beast.
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "validator/server.h"

namespace kstack::validator {

namespace {

constexpr std::uintmax_t kMaxPemFileBytes = 1u << 20;  // a chain is a few KiB

kube::Result<std::string> read_pem_file(const std::filesystem::path& path, std::string_view what) {
  const auto fail = [&](const std::string& why) {
    return kube::make_error(kube::ErrorKind::kConfig,
                            std::string(what) + " file " + path.string() + ": " + why);
  };
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return fail(ec.message());
  if (size > kMaxPemFileBytes) {
    return fail("larger than " + std::to_string(kMaxPemFileBytes) + " bytes");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot be opened");
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return fail("read error");
  return content.str();
}

}  // namespace

kube::Result<CertificatePems> read_certificate_files(const CertificateFiles& files) {
  auto cert = read_pem_file(files.cert_file, "certificate");
  if (!cert) return tl::unexpected(cert.error());
  auto key = read_pem_file(files.key_file, "key");
  if (!key) return tl::unexpected(key.error());
  return CertificatePems{std::move(*cert), std::move(*key)};
}

struct CertificateFileWatcher::State {
  AdmissionServer& server;
  CertificateWatchOptions options;

  std::mutex check_mu;      // one check at a time
  CertificatePems current;  // last content tried (installed, or refused)
  std::atomic<std::uint64_t> reloads{0};

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::mutex join_mu;
  std::thread poller;

  State(AdmissionServer& s, CertificateWatchOptions o, CertificatePems installed)
      : server(s), options(std::move(o)), current(std::move(installed)) {}

  kube::Result<bool> check() {
    std::lock_guard lock(check_mu);
    auto read = read_certificate_files(options.files);
    if (!read) return tl::unexpected(read.error());
    if (read->cert_pem == current.cert_pem && read->key_pem == current.key_pem) return false;
    // Remembered even when refused: the same bad content is not retried (nor logged) every
    // poll; the next change (e.g. the key following the certificate) is tried again.
    current = *read;
    auto installed = server.set_certificate(read->cert_pem, read->key_pem);
    if (installed) reloads.fetch_add(1);  // before on_reload, which may look at reloads()
    if (options.on_reload) options.on_reload(installed);
    if (!installed) return tl::unexpected(installed.error());
    return true;
  }

  void poll() {
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, options.poll_interval, [this] { return stopping; })) {
      lock.unlock();
      auto checked = check();
      if (checked && *checked) {
        spdlog::info("admission: serving certificate reloaded from {}",
                     options.files.cert_file.string());
      } else if (!checked) {
        spdlog::warn("admission: serving certificate not reloaded, the previous one stays: {}",
                     checked.error().message);
      }
      lock.lock();
    }
  }
};

CertificateFileWatcher::CertificateFileWatcher(AdmissionServer& server,
                                               CertificateWatchOptions options,
                                               CertificatePems installed)
    : state_(std::make_shared<State>(server, std::move(options), std::move(installed))) {
  state_->poller = std::thread([state = state_] { state->poll(); });
}

CertificateFileWatcher::~CertificateFileWatcher() { stop(); }

kube::Result<bool> CertificateFileWatcher::check_now() { return state_->check(); }

std::uint64_t CertificateFileWatcher::reloads() const { return state_->reloads.load(); }

void CertificateFileWatcher::stop() {
  {
    std::lock_guard lock(state_->mu);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  std::lock_guard lock(state_->join_mu);
  if (state_->poller.joinable() && state_->poller.get_id() != std::this_thread::get_id()) {
    state_->poller.join();
  }
}

}  // namespace kstack::validator
