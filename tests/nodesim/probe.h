// The kubelet's httpGet probes, for nodes started with --http-probes (docs/nodesim.md): the
// probe of a container read from its spec (pure, unit tested) and one HTTP GET against it.
// Only readiness is run: a simulated container is `sleep infinity`, so only a process the test
// runs on the pod's IP ("stand-in", tests/e2e/deploy) answers a probe at all.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>
#include <tl/expected.hpp>

#include "tests/nodesim/pod_state.h"

namespace kstack::nodesim {

struct HttpGetProbe {
  std::string host;  // httpGet.host, else the pod's IP
  int port = 0;      // httpGet.port: a number, or the name of one of the container's ports
  std::string path = "/";
  std::chrono::seconds period{10};  // the probe's defaults, as the API server fills them in
  std::chrono::seconds timeout{1};
  std::chrono::seconds initial_delay{0};
  int failure_threshold = 3;
};

// `container.<which>` (e.g. "readinessProbe") as an httpGet probe on `pod_ip`: nullopt when the
// container has no such probe or it is not httpGet; an error naming the field when it cannot
// be run (a port name the container does not declare, scheme HTTPS).
std::optional<tl::expected<HttpGetProbe, std::string>> http_get_probe(
    const boost::json::value& container, std::string_view which, const std::string& pod_ip);

// GET http://host:port/path with the probe's timeout. Success: an HTTP status in [200, 400),
// as the kubelet counts it; else what was answered or why nothing was.
tl::expected<void, std::string> run_http_get(const HttpGetProbe& probe);

// The readiness verdicts of a node's containers, by container ID: a new container is unready
// until a probe passes, a ready one becomes unready after failureThreshold failures in a row.
// Thread-safe; one pod is probed by one caller at a time (the kubelet's work queue).
class ReadinessProber {
 public:
  // Runs the readiness probes of `pod` that are due and writes the verdicts into
  // `state.containers[].readiness`; the time until the next one is due (nullopt: none).
  std::optional<std::chrono::milliseconds> probe(const boost::json::value& pod, PodState& state);
  void forget(const std::string& pod_uid);

 private:
  struct Record {
    std::chrono::steady_clock::time_point next{};
    bool ready = false;
    int failures = 0;
  };
  // `record` after running `probe` if it is due at `now` (logged when the verdict changes).
  static Record step(Record record, const HttpGetProbe& probe, bool fresh,
                     std::chrono::steady_clock::time_point now, const std::string& what);

  std::mutex mu_;
  std::map<std::string, Record> records_;  // by "<pod uid>/<container ID>"
};

}  // namespace kstack::nodesim
