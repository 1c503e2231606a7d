// kstack-nodesim: a simulated Kubernetes node for kstack's tests (docs/nodesim.md). Prints one
// JSON line with its ports once the node is Ready, then runs until SIGTERM or SIGINT.
#include <csignal>
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "tests/nodesim/simulator.h"

namespace {

// "10s", "500ms", "2m", or plain seconds.
std::chrono::milliseconds parse_duration(const std::string& text) {
  std::size_t used = 0;
  double value = std::stod(text, &used);
  std::string unit = text.substr(used);
  double ms = unit == "ms" ? value : unit == "m" ? value * 60'000 : value * 1000;
  if (!(unit.empty() || unit == "s" || unit == "ms" || unit == "m") || ms <= 0) {
    throw CLI::ValidationError("--heartbeat-interval", "expected a duration like 10s or 500ms");
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

std::map<std::string, std::string> parse_labels(const std::string& text) {
  std::map<std::string, std::string> labels;
  std::size_t start = 0;
  while (start < text.size()) {
    auto comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw CLI::ValidationError("--labels", "expected key=value[,key=value...], got " + item);
    }
    labels[item.substr(0, eq)] = item.substr(eq + 1);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return labels;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kstack-nodesim: a simulated Kubernetes node (kubelet, scheduler and volume "
      "provisioner roles) for kstack's tests"};
  kstack::nodesim::Options o;
  std::string labels;
  std::string heartbeat = "10s";
  std::string log_level = "info";
  app.add_option("--kubeconfig", o.kubeconfig, "Kubeconfig (default: KUBECONFIG, ~/.kube/config)");
  app.add_option("--node-name", o.node_name, "Name of the Node to register")->required();
  app.add_option("--state-dir", o.state_dir, "Directory for sandboxes and volumes")->required();
  app.add_option("--port", o.port, "HTTPS exec (kubelet) port; 0 = a free port")
      ->capture_default_str();
  app.add_option("--control-port", o.control_port, "HTTP test-control port; 0 = a free port")
      ->capture_default_str();
  app.add_option("--labels", labels, "Extra node labels: key=value[,key=value...]");
  app.add_option("--cpu", o.cpu, "Allocatable CPU")->capture_default_str();
  app.add_option("--memory", o.memory, "Allocatable memory")->capture_default_str();
  app.add_option("--pods", o.pods, "Maximum number of pods")->capture_default_str();
  app.add_option("--heartbeat-interval", heartbeat, "Lease renewal and node status period")
      ->capture_default_str();
  app.add_option("--storage-class", o.storage_class,
                 "StorageClass to create and serve (default class); empty: none")
      ->capture_default_str();
  app.add_option("--instance-id", o.instance_id,
                 "Value of the kstack.io/nodesim-instance annotation");
  app.add_option("--bwrap", o.bwrap, "Path of bubblewrap")->capture_default_str();
  app.add_option("--kubelet-workers", o.kubelet_workers, "Pods handled at once")
      ->capture_default_str();
  app.add_option("--exec-protocols", o.exec_protocols,
                 "Exec subprotocols served, comma-separated (e.g. v4.channel.k8s.io, as a kubelet "
                 "before 1.30); default: channel.k8s.io and v2 to v5");
  app.add_flag("--http-probes", o.http_probes,
               "Run containers' httpGet readiness probes on the pod IP (default: a running "
               "container is ready)");
  app.add_option("--pod-cidr", o.pod_cidr,
                 "Pod IPs are .2 to .254 of this IPv4 /24, e.g. 10.244.0.0/24")
      ->check([](const std::string& cidr) -> std::string {
        unsigned a = 0, b = 0, c = 0, d = 0, bits = 0;
        char tail = 0;
        const bool ok =
            std::sscanf(cidr.c_str(), "%u.%u.%u.%u/%u%c", &a, &b, &c, &d, &bits, &tail) == 5 &&
            a < 256 && b < 256 && c < 256 && d == 0 && bits == 24;
        return ok ? std::string() : "expected an IPv4 /24 such as 10.244.0.0/24, got " + cidr;
      })
      ->capture_default_str();
  app.add_option("--cluster-dns", o.cluster_dns,
                 "IPv4 address of the cluster DNS server the sandboxes' resolv.conf names "
                 "(default: the host's resolv.conf)");
  std::vector<std::string> images;
  app.add_option("--image", images,
                 "A container image: <ref>=<build context dir>; containers of that image run its "
                 "Dockerfile's ENTRYPOINT/CMD with its COPY'd files, ENV, WORKDIR and USER "
                 "(repeatable)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
    o.heartbeat_interval = parse_duration(heartbeat);
    if (!labels.empty()) o.labels = parse_labels(labels);
    for (const auto& image : images) {
      const auto eq = image.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == image.size()) {
        throw CLI::ValidationError("--image", "expected <ref>=<build context dir>, got " + image);
      }
      o.images[image.substr(0, eq)] = image.substr(eq + 1);
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kstack-nodesim: %s\n", e.what());
    return 2;
  }

  spdlog::set_default_logger(spdlog::stderr_color_mt("nodesim"));  // stdout: the ports line
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %l [nodesim " + o.node_name + "] %v");
  spdlog::set_level(spdlog::level::from_str(log_level));

  // Signals: SIGPIPE ignored (pipes of exited commands), SIGTERM/SIGINT waited for below; the
  // mask is set before any thread starts so that every thread inherits it (children reset it).
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  for (int fd = 0; fd <= 2; ++fd) {  // children rely on 0-2 being open
    if (fcntl(fd, F_GETFD) < 0) open("/dev/null", O_RDWR);
  }

  auto sim = kstack::nodesim::Simulator::start(o);
  if (!sim) {
    spdlog::critical("{}", sim.error());
    return 1;
  }
  fmt::print("{{\"node\":\"{}\",\"port\":{},\"controlPort\":{}}}\n", (*sim)->node_name(),
             (*sim)->exec_port(), (*sim)->control_port());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("signal {}: stopping", sig);
  (*sim)->stop();
  return 0;
}
