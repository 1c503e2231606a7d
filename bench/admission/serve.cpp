// The admission server for bench/admission_bench.sh: serves /validate and /mutate over TLS
// (validator/server.h, the operator's webhook server) with one of two handlers:
//
//   allow  allows everything (the server still decodes and encodes every review): kstack's
//          TLS + HTTP + AdmissionReview path alone.
//   rules  validator::RulesHandler, exactly what the operator's webhook runs per request, over a
//          catalog::Catalog whose informer::Stores are filled in memory (no API server) at a
//          realistic size: the shipped AppTypes of appdefs/ in the system namespace, --apptypes
//          synthetic AppTypes (copies of the shipped ones under other names, half of them in
//          team namespaces), --stacks Stacks using them, the KStackConfig and StorageClasses
//          (standard, the default; fast-ssd; three more).
//
//   kstack_bench_admission_serve --cert tls.crt --key tls.key [--port 0] [--threads 2]
//                                [--handler allow|rules] [--appdefs DIR] [--apptypes 50]
//                                [--stacks 200]
//   kstack_bench_admission_serve --in-process REVIEW.json --path /validate|/mutate
//                                [--repeat 20000] [--apptypes 50] [--stacks 200]
//
// Prints "listening on 127.0.0.1:PORT" once serving; stops on SIGINT/SIGTERM and prints stats.
// --in-process serves no socket: it runs what a request costs above the transport (decode the
// review, the handler, encode the answer) --repeat times, for the allow-all handler (the
// reference, measured in the same run) and the rules, and prints CPU microseconds per request
// of each and their difference: the rules' own cost, and a steady loop to profile them in.
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <time.h>

#include "catalog/memory_catalog.h"
#include "catalog/yaml.h"
#include "validator/admission.h"
#include "validator/rules/handler.h"
#include "validator/server.h"

#ifndef KSTACK_SOURCE_DIR
#define KSTACK_SOURCE_DIR "."
#endif

namespace {

namespace json = boost::json;
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
               "[--threads N] [--handler allow|rules] [--appdefs DIR] [--apptypes N] "
               "[--stacks N]\n"
               "       kstack_bench_admission_serve --in-process REVIEW.json --path "
               "/validate|/mutate [--repeat N] [--apptypes N] [--stacks N]\n";
  return 2;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// CPU microseconds per request of decode + handler + encode, as the server runs them per
// request (validator/server.cpp). The answer must allow (a denial means the review does not
// fit the catalog: nothing would be measured but the error path).
double per_request_us(kstack::validator::AdmissionHandler& handler, const std::string& body,
                      bool mutate, int repeat) {
  std::size_t bytes = 0;
  const double start = thread_cpu_seconds();
  for (int i = 0; i < repeat; ++i) {
    auto request = kstack::validator::decode_review(body);
    if (!request) throw std::runtime_error("review: " + request.error().message);
    const auto answer = mutate ? handler.mutate(*request) : handler.validate(*request);
    if (!answer.allowed)
      throw std::runtime_error("the handler denied the review: " + answer.message);
    bytes += kstack::validator::encode_review(*request, answer).size();
  }
  const double us = (thread_cpu_seconds() - start) * 1e6 / repeat;
  if (bytes == 0) throw std::runtime_error("no answer encoded");
  return us;
}

json::value read_yaml(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  auto value = kstack::catalog::parse_yaml(text.str());
  if (!value) throw std::runtime_error(file.string() + ": " + value.error().message);
  return std::move(*value);
}

// Sets what the API server would have set on a stored object.
void set_metadata(json::value& object, const std::string& ns, const std::string& name,
                  std::size_t serial) {
  auto& md = object.as_object()["metadata"].as_object();
  md["name"] = name;
  md["namespace"] = ns;
  md["uid"] = "00000000-0000-4000-8000-" + std::to_string(100000000000 + serial);
  md["resourceVersion"] = std::to_string(1000 + serial);
  md["generation"] = 1;
  md["creationTimestamp"] = "2026-11-20T10:14:07Z";
}

struct Fill {
  std::size_t apptypes = 0, stacks = 0;
};

// The catalog described at the top of this file. Stacks use the shipped AppTypes through the
// system catalog, spread over 20 team namespaces.
Fill fill_catalog(kstack::catalog::MemoryCatalog& memory, const std::filesystem::path& appdefs,
                  int synthetic_apptypes, int stacks) {
  const std::string system = std::string(kstack::catalog::kDefaultOperatorNamespace);
  struct App {
    std::string name;
    json::value apptype, stack;
  };
  std::vector<App> apps;
  for (const auto& entry : std::filesystem::directory_iterator(appdefs)) {
    if (!std::filesystem::exists(entry.path() / "apptype.yaml")) continue;
    App app;
    app.name = entry.path().filename().string();
    app.apptype = read_yaml(entry.path() / "apptype.yaml");
    if (std::filesystem::exists(entry.path() / "stack.yaml")) {
      app.stack = read_yaml(entry.path() / "stack.yaml");
    }
    apps.push_back(std::move(app));
  }
  if (apps.empty()) throw std::runtime_error("no */apptype.yaml under " + appdefs.string());
  std::sort(apps.begin(), apps.end(), [](const App& a, const App& b) { return a.name < b.name; });

  Fill fill;
  std::size_t serial = 0;
  for (const auto& app : apps) {
    json::value at = app.apptype;
    set_metadata(at, system, app.name, ++serial);
    memory.add(std::move(at));
    ++fill.apptypes;
  }
  for (int i = 0; i < synthetic_apptypes; ++i) {
    const auto& app = apps[static_cast<std::size_t>(i) % apps.size()];
    json::value at = app.apptype;
    std::string ns = i % 2 == 0 ? system : "team-" + std::to_string(i % 20);
    set_metadata(at, ns, app.name + "-v" + std::to_string(i), ++serial);
    memory.add(std::move(at));
    ++fill.apptypes;
  }
  std::vector<const App*> with_stack;
  for (const auto& app : apps) {
    if (app.stack.is_object()) with_stack.push_back(&app);
  }
  for (int i = 0; i < stacks && !with_stack.empty(); ++i) {
    const auto& app = *with_stack[static_cast<std::size_t>(i) % with_stack.size()];
    json::value st = app.stack;
    set_metadata(st, "team-" + std::to_string(i % 20), app.name + "-" + std::to_string(i),
                 ++serial);
    st.as_object()["spec"].as_object()["appCatalog"] = "system";
    memory.add(std::move(st));
    ++fill.stacks;
  }

  json::value config = {{"apiVersion", "kstack.io/v1beta1"},
                        {"kind", "KStackConfig"},
                        {"metadata", json::object{}},
                        {"spec",
                         {{"defaultStorageClassName", "standard"},
                          {"defaultServiceType", "ClusterIP"},
                          {"defaultNamingScheme", "CrNameRole"},
                          {"podLabels", {{"cost-center", "platform"}}}}}};
  set_metadata(config, system, std::string(kstack::catalog::kConfigName), ++serial);
  memory.add(std::move(config));

  for (std::string_view name : {"standard", "fast-ssd", "slow-hdd", "local-path", "nfs"}) {
    json::value sc = {{"apiVersion", "storage.k8s.io/v1"},
                      {"kind", "StorageClass"},
                      {"metadata", {{"name", name}}},
                      {"provisioner", "example.com/csi"}};
    if (name == "standard") {
      sc.as_object()["metadata"].as_object()["annotations"] = {
          {kstack::catalog::kDefaultClassAnnotation, "true"}};
    }
    memory.add(std::move(sc));
  }
  return fill;
}

}  // namespace

int main(int argc, char** argv) {
  kstack::validator::CertificateFiles files;
  kstack::validator::ServerOptions options;
  options.bind_address = "127.0.0.1";
  options.port = 0;
  std::string handler_name = "allow";
  std::filesystem::path appdefs = std::filesystem::path(KSTACK_SOURCE_DIR) / "appdefs";
  int apptypes = 50;
  int stacks = 200;
  std::filesystem::path in_process;
  std::string path;
  int repeat = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--in-process") {
      in_process = value;
    } else if (flag == "--path") {
      path = value;
    } else if (flag == "--repeat") {
      repeat = std::max(1, std::atoi(value));
    } else if (flag == "--cert") {
      files.cert_file = value;
    } else if (flag == "--key") {
      files.key_file = value;
    } else if (flag == "--port") {
      options.port = static_cast<std::uint16_t>(std::atoi(value));
    } else if (flag == "--threads") {
      options.threads = std::atoi(value);
    } else if (flag == "--handler") {
      handler_name = value;
    } else if (flag == "--appdefs") {
      appdefs = value;
    } else if (flag == "--apptypes") {
      apptypes = std::atoi(value);
    } else if (flag == "--stacks") {
      stacks = std::atoi(value);
    } else {
      return usage("unknown flag");
    }
  }
  if (argc % 2 == 0) return usage("every flag takes a value");
  if (!in_process.empty()) {
    if (path != "/validate" && path != "/mutate") return usage("--path is /validate or /mutate");
    spdlog::set_level(spdlog::level::warn);
    try {
      std::ifstream in(in_process, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      const std::string body = text.str();
      if (body.empty()) return usage("cannot read " + in_process.string());
      kstack::catalog::MemoryCatalog memory;
      fill_catalog(memory, appdefs, apptypes, stacks);
      kstack::validator::RulesHandler rules(memory.catalog());
      AllowAll allow_all;
      const bool mutate = path == "/mutate";
      per_request_us(rules, body, mutate, std::max(1, repeat / 10));  // warm-up
      const double allow_us = per_request_us(allow_all, body, mutate, repeat);
      const double rules_us = per_request_us(rules, body, mutate, repeat);
      std::cout << fmt::format(
          "{} {}: allow {:.2f} us, rules {:.2f} us CPU per request ({} requests each); the "
          "rules' own cost {:.2f} us, {:.2f}x the allow-all path\n",
          in_process.filename().string(), path, allow_us, rules_us, repeat, rules_us - allow_us,
          rules_us / allow_us);
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
      return 1;
    }
    return 0;
  }
  if (files.cert_file.empty() || files.key_file.empty())
    return usage("--cert and --key are required");
  if (handler_name != "allow" && handler_name != "rules")
    return usage("--handler is allow or rules");
  spdlog::set_level(spdlog::level::warn);

  auto pems = kstack::validator::read_certificate_files(files);
  if (!pems) return usage(pems.error().message);
  options.cert_pem = pems->cert_pem;
  options.key_pem = pems->key_pem;

  AllowAll allow_all;
  std::unique_ptr<kstack::catalog::MemoryCatalog> memory;
  std::unique_ptr<kstack::validator::RulesHandler> rules;
  kstack::validator::AdmissionHandler* handler = &allow_all;
  if (handler_name == "rules") {
    memory = std::make_unique<kstack::catalog::MemoryCatalog>();
    try {
      auto fill = fill_catalog(*memory, appdefs, apptypes, stacks);
      std::cerr << "catalog: " << fill.apptypes << " AppTypes, " << fill.stacks
                << " Stacks, 1 KStackConfig, 5 StorageClasses\n";
    } catch (const std::exception& e) {
      return usage(e.what());
    }
    rules = std::make_unique<kstack::validator::RulesHandler>(memory->catalog());
    handler = rules.get();
  }

  // Blocked before the server threads start, so that only sigwait() below sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto server = kstack::validator::start_admission_server(options, *handler);
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
