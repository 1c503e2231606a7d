// The kubelet's container probes (docs/nodesim.md): a probe read from a container's spec (pure,
// unit tested), the tcpSocket and httpGet checks, and the Prober that runs a pod's startup,
// liveness and readiness probes when due and turns their results into verdicts (probe_tracker.h
// holds the per-probe state machine). exec checks are run by the caller (they need the
// sandbox): the Prober takes a ProbeRunner.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>
#include <tl/expected.hpp>

#include "tests/nodesim/pod_state.h"
#include "tests/nodesim/probe_tracker.h"

namespace kstack::nodesim {

enum class ProbeAction { kExec, kTcpSocket, kHttpGet };

struct ProbeSpec {
  ProbeAction action = ProbeAction::kHttpGet;
  std::vector<std::string> command;  // exec.command
  std::string host;                  // tcpSocket/httpGet .host, else the pod's IP
  int port = 0;  // tcpSocket/httpGet .port: a number, or the name of one of the container's ports
  std::string path = "/";           // httpGet.path
  std::chrono::seconds timeout{1};  // the probe's defaults, as the API server fills them in
  ProbeTiming timing;
};

// `container.<which>` (e.g. "readinessProbe") on `pod_ip`: nullopt when the container has no
// such probe; an error naming the field when it cannot be run (no action, a port name the
// container does not declare, scheme HTTPS, an empty exec command).
std::optional<tl::expected<ProbeSpec, std::string>> parse_probe(const boost::json::value& container,
                                                                std::string_view which,
                                                                const std::string& pod_ip);

// GET http://host:port/path with the probe's timeout. Success: an HTTP status in [200, 400),
// as the kubelet counts it; else what was answered or why nothing was.
tl::expected<void, std::string> run_http_get(const ProbeSpec& probe);
// A TCP connection to host:port within the timeout.
tl::expected<void, std::string> run_tcp_socket(const ProbeSpec& probe);

// Runs one probe of container `container` (exec needs the sandbox; the kubelet's runner
// handles every action, tests fake it).
using ProbeRunner = std::function<tl::expected<void, std::string>(const ProbeSpec& probe,
                                                                  const std::string& container)>;

// What the Prober decided for a pod.
struct ProbeOutcome {
  std::optional<std::chrono::milliseconds> next;  // until the next probe is due; nullopt: none
  std::vector<std::string> kill;  // containers whose liveness or startup probe failed
};

// The probe verdicts of a node's containers, by container ID, as the kubelet's probe workers:
// while a startupProbe has not succeeded the container is not started, not ready, and no other
// probe runs; a failed startup or liveness probe (failureThreshold in a row) kills it; readiness
// drives `ready` (a new container is unready until successThreshold passes). Thread-safe; one
// pod is probed by one caller at a time (the kubelet's work queue).
class Prober {
 public:
  // `probe_all(container spec)`: whether all of a container's probes run; otherwise only its
  // httpGet readinessProbe does when `idle_http_readiness` (see docs/nodesim.md).
  using Selector = std::function<bool(const boost::json::value& container)>;
  Prober(Selector probe_all, bool idle_http_readiness)
      : probe_all_(std::move(probe_all)), idle_http_readiness_(idle_http_readiness) {}

  // Runs the probes of `pod` due at `now` and writes the verdicts into
  // `state.containers[].readiness` and `.started`.
  ProbeOutcome probe(const boost::json::value& pod, PodState& state,
                     std::chrono::steady_clock::time_point now, const ProbeRunner& run);
  void forget(const std::string& pod_uid);

 private:
  struct Probe {
    ProbeSpec spec;
    std::string error;  // why it cannot be run (it then always fails)
  };
  // One probe of one container: creates its tracker on first sight, runs it when due.
  // Returns the tracker after; `next` is lowered to when it is due again.
  ProbeTracker step(const std::string& key, ProbeType type, const Probe& probe,
                    std::chrono::steady_clock::time_point now, const std::string& container,
                    const std::string& what, const ProbeRunner& run,
                    std::optional<std::chrono::milliseconds>& next);
  bool started_before(const std::string& key);

  Selector probe_all_;
  bool idle_http_readiness_ = false;
  std::mutex mu_;
  std::map<std::string, ProbeTracker> trackers_;  // by "<pod uid>/<container ID>/<type>"
};

}  // namespace kstack::nodesim
