// Informer memory and sync time: N ConfigMaps of ~1 KiB in a real kube-apiserver (the test
// control plane), then, each in a fresh process so that RSS deltas are clean:
//   informer   — an Informer lists them into its Store: RSS delta per object, time to synced
//   reference  — a plain paginated LIST of the same objects kept as one Boost.JSON document
// Figures print side by side with their ratio. Not part of CI; count via --objects.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include "informer/informer.h"
#include "kube/client.h"
#include "tests/testenv/control_plane.h"

namespace {

using namespace kstack;

long rss_kib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

std::shared_ptr<kube::Client> client_for(const std::string& server, const std::string& ca_pem,
                                         const std::string& token) {
  kube::Config c;
  c.server = server;
  c.ca_pem = ca_pem;
  c.credentials = kube::static_token(token);
  c.qps = 0;
  auto client = kube::Client::create(c);
  if (!client) throw std::runtime_error(client.error().to_string());
  return *client;
}

int measure(const std::string& mode, const std::string& server, const std::string& ca_file,
            const std::string& token, int objects) {
  std::ifstream in(ca_file);
  std::string ca((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto client = client_for(server, ca, token);
  const long before = rss_kib();
  const auto start = std::chrono::steady_clock::now();
  std::size_t count = 0;
  if (mode == "informer") {
    informer::ReflectorOptions ro;
    ro.type = kube::resources::kConfigMaps;
    ro.namespace_name = "bench";
    informer::Informer inf(client, ro, {.resync_period = std::chrono::milliseconds(0)});
    inf.start();
    if (!inf.wait_for_sync(std::chrono::minutes(5))) return 1;
    const auto synced = std::chrono::steady_clock::now() - start;
    count = inf.store().size();
    const long after = rss_kib();
    fmt::print("{} {} {:.1f} {}\n", count, after - before,
               std::chrono::duration<double, std::milli>(synced).count(), mode);
    inf.stop();
    return 0;
  }
  auto list = client->list_all(kube::resources::kConfigMaps, "bench");
  if (!list) return 1;
  const auto took = std::chrono::steady_clock::now() - start;
  count = list->at("items").as_array().size();
  const long after = rss_kib();
  fmt::print("{} {} {:.1f} {}\n", count, after - before,
             std::chrono::duration<double, std::milli>(took).count(), mode);
  (void)objects;
  return 0;
}

struct Figures {
  std::size_t count = 0;
  long rss_kib = 0;
  double ms = 0;
};

Figures run_child(const std::string& mode, const testenv::ControlPlane& cp, int objects) {
  const std::string cmd =
      fmt::format("/proc/{}/exe --measure {} --server {} --ca-file {} --token {} --objects {}",
                  getpid(), mode, cp.server(), cp.ca_file().string(), cp.admin_token(), objects);
  Figures f;
  FILE* p = popen(cmd.c_str(), "r");  // all arguments are ours, none from users
  if (p == nullptr) return f;
  char name[32] = {};
  unsigned long count = 0;
  if (std::fscanf(p, "%lu %ld %lf %31s", &count, &f.rss_kib, &f.ms, name) == 4) f.count = count;
  pclose(p);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"informer memory per cached object and time to synced"};
  int objects = 10000;
  std::string measure_mode, server, ca_file, token;
  app.add_option("--objects", objects, "ConfigMaps to create (~1 KiB each)");
  app.add_option("--measure", measure_mode, "internal: informer|reference");
  app.add_option("--server", server);
  app.add_option("--ca-file", ca_file);
  app.add_option("--token", token);
  CLI11_PARSE(app, argc, argv);
  if (!measure_mode.empty()) return measure(measure_mode, server, ca_file, token, objects);

  auto cp = testenv::ControlPlane::start({});
  if (!cp) {
    fmt::print(stderr, "control plane: {}\n", cp.error());
    return 1;
  }
  auto client = client_for((*cp)->server(), (*cp)->ca_pem(), (*cp)->admin_token());
  boost::json::value ns = {
      {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "bench"}}}};
  (void)client->create(kube::resources::kNamespaces, "", ns);
  const std::string payload(1000, 'x');
  const auto create_start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  constexpr int kThreads = 8;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < objects; i += kThreads) {
        boost::json::value cm = {
            {"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", fmt::format("cm-{:05}", i)}, {"labels", {{"app", "bench"}}}}},
            {"data", {{"payload", payload}}}};
        auto r = client->create(kube::resources::kConfigMaps, "bench", cm);
        if (!r) fmt::print(stderr, "create: {}\n", r.error().to_string());
      }
    });
  }
  for (auto& t : threads) t.join();
  fmt::print(
      "created {} ConfigMaps in {:.1f} s\n", objects,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - create_start).count());

  const auto inf = run_child("informer", **cp, objects);
  const auto ref = run_child("reference", **cp, objects);
  fmt::print("\n{:<34} {:>10} {:>14} {:>12}\n", "", "objects", "KiB/object", "time (ms)");
  auto row = [](const char* name, const Figures& f) {
    fmt::print("{:<34} {:>10} {:>14.2f} {:>12.1f}\n", name, f.count,
               f.count ? static_cast<double>(f.rss_kib) / static_cast<double>(f.count) : 0.0, f.ms);
  };
  row("informer (store, synced)", inf);
  row("reference (one LIST as JSON DOM)", ref);
  if (ref.rss_kib > 0 && ref.ms > 0) {
    fmt::print("{:<34} {:>10} {:>14.2f} {:>12.2f}\n", "ratio informer/reference", "",
               static_cast<double>(inf.rss_kib) / static_cast<double>(ref.rss_kib),
               inf.ms / ref.ms);
  }
  return inf.count == static_cast<std::size_t>(objects) ? 0 : 1;
}
