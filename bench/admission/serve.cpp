// The admission server for bench/admission_bench.sh: serves /validate and /mutate over TLS with
// a handler that allows everything (the server still decodes and encodes every review), so the
// bench measures kstack's TLS + HTTP + AdmissionReview path against nginx serving static JSON.
//
//   kstack_bench_admission_serve --cert tls.crt --key tls.key [--port 0] [--threads 2]
//
// Prints "listening on 127.0.0.1:PORT" once serving; stops on SIGINT/SIGTERM and prints stats.
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "validator/server.h"

namespace {

using kstack::validator::AdmissionRequest;
using kstack::validator::AdmissionResponse;

class AllowAll final : public kstack::validator::AdmissionHandler {
 public:
  AdmissionResponse validate(const AdmissionRequest& /*request*/) override {
    return AdmissionResponse::allow();
  }
  AdmissionResponse mutate(const AdmissionRequest& /*request*/) override {
    return AdmissionResponse::allow();
  }
};

int usage(std::string_view why) {
  std::cerr << why
            << "\nusage: kstack_bench_admission_serve --cert FILE --key FILE [--port N] "
               "[--threads N]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  kstack::validator::CertificateFiles files;
  kstack::validator::ServerOptions options;
  options.bind_address = "127.0.0.1";
  options.port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--cert") {
      files.cert_file = value;
    } else if (flag == "--key") {
      files.key_file = value;
    } else if (flag == "--port") {
      options.port = static_cast<std::uint16_t>(std::atoi(value));
    } else if (flag == "--threads") {
      options.threads = std::atoi(value);
    } else {
      return usage("unknown flag");
    }
  }
  if (argc % 2 == 0) return usage("every flag takes a value");
  if (files.cert_file.empty() || files.key_file.empty())
    return usage("--cert and --key are required");
  spdlog::set_level(spdlog::level::warn);

  auto pems = kstack::validator::read_certificate_files(files);
  if (!pems) return usage(pems.error().message);
  options.cert_pem = pems->cert_pem;
  options.key_pem = pems->key_pem;

  // Blocked before the server threads start, so that only sigwait() below sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  AllowAll handler;
  auto server = kstack::validator::start_admission_server(options, handler);
  if (!server) {
    std::cerr << server.error().to_string() << "\n";
    return 1;
  }
  std::cout << "listening on 127.0.0.1:" << (*server)->port()
            << std::endl;  // flushed: read by the script
  int signal = 0;
  sigwait(&signals, &signal);
  (*server)->stop();
  const auto stats = (*server)->stats();
  std::cout << "requests " << stats.requests << ", connections " << stats.connections
            << ", rejected " << stats.rejected << "\n";
  return 0;
}
