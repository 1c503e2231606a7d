// kstack-testenv: runs the test control plane by hand, e.g. to try kubectl against it or to
// check that a machine can run the integration tests (`kstack-testenv up --check`), and, for
// scripts/run.sh, what the e2e binaries run it in: the pod network (`kstack-testenv
// pod-network -- CMD...`) and the cluster DNS (`up --cluster-dns`).
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "kube/client.h"
#include "tests/nodesim/testing/cluster_dns.h"
#include "tests/nodesim/testing/pod_network.h"
#include "tests/testenv/control_plane.h"

namespace {

using kstack::testenv::ControlPlane;
using kstack::testenv::TestUser;

struct UpArgs {
  bool controller_manager = false;
  bool cluster_dns = false;
  bool check = false;
  bool keep = false;
  std::string dir;
  std::string bin_dir;
  std::vector<std::string> users;  // NAME[:GROUP,GROUP...]
  std::vector<std::string> apply;  // manifests applied before the controller-manager starts
  int timeout_seconds = 60;
};

TestUser parse_user(const std::string& spec) {
  TestUser user;
  auto colon = spec.find(':');
  user.name = spec.substr(0, colon);
  if (colon != std::string::npos) {
    std::string_view groups = std::string_view(spec).substr(colon + 1);
    while (!groups.empty()) {
      auto comma = groups.find(',');
      if (comma != 0) user.groups.emplace_back(groups.substr(0, comma));
      groups = comma == std::string_view::npos ? std::string_view{} : groups.substr(comma + 1);
    }
  }
  return user;
}

void print_command(const char* title, const kstack::testenv::CommandResult& r) {
  fmt::print("--- {} (exit {})\n{}", title, r.exit_code, r.out);
  if (!r.err.empty()) fmt::print("{}", r.err);
  if (!r.out.empty() && r.out.back() != '\n') fmt::print("\n");
}

// Prints where the control plane is and how healthy it is; true if everything answered.
bool report(ControlPlane& cp, const UpArgs& args, std::chrono::milliseconds took) {
  fmt::print("control plane ready in {:.1f} s\n", static_cast<double>(took.count()) / 1000);
  fmt::print("server:     {}\n", cp.server());
  fmt::print("kubeconfig: {}\n", cp.kubeconfig().string());
  fmt::print("etcd:       {}\n", cp.etcd_endpoint());
  fmt::print("work dir:   {}\n", cp.work_dir().string());
  fmt::print("bin dir:    {}\n", cp.bin_dir().string());
  if (args.cluster_dns) {
    fmt::print("cluster dns: {}:53 (cluster.local)\n", kstack::testenv::e2e::kClusterDnsAddress);
  }
  for (const auto& spec : args.users) {
    auto name = parse_user(spec).name;
    fmt::print("user {}: {}\n", name, cp.kubeconfig_for(name).string());
  }
  auto [code, body] = cp.get("/readyz");
  fmt::print("/readyz:    {} {}\n", code, body);
  auto version = cp.kubectl({"version"});
  print_command("kubectl version", version);
  auto verbose = cp.kubectl({"get", "--raw=/readyz?verbose"});
  print_command("kubectl get --raw=/readyz?verbose", verbose);
  (void)std::fflush(stdout);
  return code == 200 && body == "ok" && version.ok() && verbose.ok();
}

// The cluster DNS of the e2e binaries (dnsmasq on the pod network's address, fed from the
// headless Services' Endpoints) for this control plane.
tl::expected<std::unique_ptr<kstack::testenv::e2e::ClusterDns>, std::string> start_cluster_dns(
    ControlPlane& cp) {
  namespace e2e = kstack::testenv::e2e;
  if (!e2e::in_pod_network()) {
    return tl::unexpected(
        std::string("--cluster-dns needs the pod network: run under `kstack-testenv "
                    "pod-network -- ...`"));
  }
  kstack::kube::Config c;
  c.server = cp.server();
  c.ca_pem = cp.ca_pem();
  c.credentials = kstack::kube::static_token(cp.admin_token());
  c.source = "kstack-testenv control plane";
  c.qps = 0;
  auto client = kstack::kube::Client::create(std::move(c));
  if (!client) return tl::unexpected(client.error().to_string());
  return e2e::ClusterDns::start(*client, cp.work_dir());
}

// `pod-network -- CMD...`: CMD in the e2e binaries' pod network (pod_network.h), its own
// network namespace with 10.244.0.0/16 local. Only returns on failure.
int run_in_pod_network(const std::vector<std::string>& command) {
  if (auto failed = kstack::testenv::e2e::enter_pod_network(); !failed.empty()) {
    std::cerr << "kstack-testenv: " << failed << "\n";
    return 1;
  }
  std::vector<char*> argv;
  argv.reserve(command.size() + 1);
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  std::cerr << "kstack-testenv: cannot run " << command[0] << ": " << std::strerror(errno)
            << "\n";
  return 127;
}

int run_up(const UpArgs& args) {
  // Still single-threaded here.
  if (args.keep) ::setenv("KSTACK_TESTENV_KEEP", "1", 1);  // NOLINT(concurrency-mt-unsafe)
  ControlPlane::Options options;
  options.controller_manager = args.controller_manager;
  options.work_dir = args.dir;
  options.bin_dir = args.bin_dir;
  options.ready_timeout = std::chrono::seconds(args.timeout_seconds);
  for (const auto& spec : args.users) options.users.push_back(parse_user(spec));
  // CRDs must exist before the controller-manager starts: its garbage collector only learns
  // resource types created later at its next discovery resync (~30 s).
  options.before_controller_manager = [&args](ControlPlane& cp) -> tl::expected<void, std::string> {
    for (const auto& path : args.apply) {
      const bool kustomize =
          std::filesystem::is_directory(path) &&
          std::filesystem::exists(std::filesystem::path(path) / "kustomization.yaml");
      auto r = cp.kubectl({"apply", kustomize ? "-k" : "-f", path});
      if (!r.ok()) return tl::unexpected("kubectl apply " + path + ": " + r.err);
      print_command(("kubectl apply " + path).c_str(), r);
    }
    return {};
  };

  auto begin = std::chrono::steady_clock::now();
  auto started = ControlPlane::start(options);
  if (!started) {
    std::cerr << "kstack-testenv: " << started.error() << "\n";
    return 1;
  }
  auto& cp = **started;
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - begin);
  // Block before reporting so that a Ctrl-C from now on is taken by sigwait() and leads to a
  // clean stop (an earlier one kills us; the servers then die through PR_SET_PDEATHSIG).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // After the mask: the DNS watcher's thread inherits it, so sigwait() gets the signal.
  std::unique_ptr<kstack::testenv::e2e::ClusterDns> dns;
  if (args.cluster_dns) {
    auto started_dns = start_cluster_dns(cp);
    if (!started_dns) {
      std::cerr << "kstack-testenv: cluster DNS: " << started_dns.error() << "\n";
      cp.stop();
      return 1;
    }
    dns = std::move(*started_dns);
  }

  bool healthy = report(cp, args, took);
  if (args.check) {
    dns.reset();
    cp.stop();
    fmt::print("{}\n", healthy ? "check: ok" : "check: FAILED");
    return healthy ? 0 : 1;
  }
  fmt::print("export KUBECONFIG={}\nrunning; Ctrl-C (SIGINT) or SIGTERM stops everything\n",
             cp.kubeconfig().string());
  (void)std::fflush(stdout);
  int sig = 0;
  ::sigwait(&signals, &sig);
  std::cerr << "kstack-testenv: signal " << sig << ", stopping\n";
  dns.reset();
  cp.stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kstack-testenv: the test control plane (etcd, kube-apiserver, "
      "kube-controller-manager) of kstack's integration tests"};
  app.require_subcommand(1);
  UpArgs args;
  auto* up = app.add_subcommand("up",
                                "start a control plane, print where it is, and keep it "
                                "running until SIGINT/SIGTERM");
  up->add_flag("--controller-manager", args.controller_manager,
               "also run kube-controller-manager (waits for the default ServiceAccount)");
  up->add_flag("--cluster-dns", args.cluster_dns,
               "also serve cluster.local on 10.244.0.1:53 as the e2e binaries do (dnsmasq; "
               "needs the pod network)");
  up->add_flag("--check", args.check, "print health, stop everything and exit (0 if healthy)");
  up->add_option("--dir", args.dir, "work directory (must be new or empty; default: mkdtemp)");
  up->add_flag("--keep", args.keep, "keep the work directory afterwards (KSTACK_TESTENV_KEEP=1)");
  up->add_option("--bin-dir", args.bin_dir,
                 "binaries (default: ${KSTACK_TESTENV_DIR:-~/.cache/kstack-testenv}/bin)");
  up->add_option("--user", args.users, "extra test user NAME[:GROUP,GROUP...] (repeatable)");
  up->add_option("--apply", args.apply,
                 "manifest file or directory (kustomization: -k) applied before the "
                 "controller-manager starts, e.g. CRDs (repeatable)");
  up->add_option("--timeout", args.timeout_seconds, "seconds to wait for readiness")
      ->capture_default_str();
  std::vector<std::string> command;
  auto* pod_network = app.add_subcommand(
      "pod-network",
      "run a command in the e2e binaries' pod network: a new network namespace with "
      "10.244.0.1/16 on its loopback (the host's network is not touched)");
  pod_network->add_option("command", command, "the command and its arguments (after --)")
      ->required();
  CLI11_PARSE(app, argc, argv);
  if (pod_network->parsed()) return run_in_pod_network(command);
  return run_up(args);
}
