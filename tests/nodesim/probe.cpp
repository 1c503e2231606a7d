// httpGet probes (see probe.h).
#include "tests/nodesim/probe.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "informer/store.h"
#include "tests/nodesim/json_util.h"

namespace kstack::nodesim {

namespace json = boost::json;

namespace {

// A whole number of seconds at `pointer`, else `fallback` (the API server's defaults).
std::int64_t seconds_at(const json::value& v, std::string_view pointer, std::int64_t fallback) {
  const auto* n = find(v, pointer);
  return n != nullptr && n->is_int64() && n->get_int64() > 0 ? n->get_int64() : fallback;
}

tl::expected<int, std::string> resolve_port(const json::value& container, const json::value& port,
                                            std::string_view field) {
  if (port.is_int64()) return static_cast<int>(port.get_int64());
  if (port.is_string()) {
    if (const auto* ports = arr(container, "/ports")) {
      for (const auto& p : *ports) {
        const auto* number = find(p, "/containerPort");
        if (str(p, "/name") == port.get_string() && number != nullptr && number->is_int64()) {
          return static_cast<int>(number->get_int64());
        }
      }
    }
    return tl::unexpected(fmt::format("{}: container \"{}\" has no port named \"{}\"", field,
                                      str(container, "/name"), std::string(port.get_string())));
  }
  return tl::unexpected(fmt::format("{}: neither a number nor a port name", field));
}

}  // namespace

namespace {

ProbeTiming timing_of(const json::value& container, const std::string& base) {
  ProbeTiming t;
  t.initial_delay = std::chrono::seconds(seconds_at(container, base + "/initialDelaySeconds", 0));
  t.period = std::chrono::seconds(seconds_at(container, base + "/periodSeconds", 10));
  t.success_threshold = static_cast<int>(seconds_at(container, base + "/successThreshold", 1));
  t.failure_threshold = static_cast<int>(seconds_at(container, base + "/failureThreshold", 3));
  return t;
}

// tcpSocket/httpGet: port (number or name) and host.
tl::expected<void, std::string> read_endpoint(const json::value& container,
                                              const json::value& action, const std::string& field,
                                              const std::string& pod_ip, ProbeSpec& probe) {
  const auto* port = find(action, "/port");
  if (port == nullptr) return tl::unexpected(field + ".port is missing");
  auto number = resolve_port(container, *port, field + ".port");
  if (!number) return tl::unexpected(number.error());
  probe.port = *number;
  probe.host = str(action, "/host").empty() ? pod_ip : str(action, "/host");
  return {};
}

}  // namespace

std::optional<tl::expected<ProbeSpec, std::string>> parse_probe(const json::value& container,
                                                                std::string_view which,
                                                                const std::string& pod_ip) {
  const std::string base = "/" + std::string(which);
  const auto* spec = find(container, base);
  if (spec == nullptr || !spec->is_object()) return std::nullopt;
  ProbeSpec probe;
  probe.timing = timing_of(container, base);
  probe.timeout = std::chrono::seconds(seconds_at(container, base + "/timeoutSeconds", 1));
  const std::string name(which);
  if (const auto* get = find(*spec, "/httpGet"); get != nullptr && get->is_object()) {
    const std::string field = name + ".httpGet";
    if (auto scheme = str(*get, "/scheme"); !scheme.empty() && scheme != "HTTP") {
      return tl::unexpected(fmt::format("{}.scheme {}: only HTTP is probed", field, scheme));
    }
    probe.action = ProbeAction::kHttpGet;
    if (auto r = read_endpoint(container, *get, field, pod_ip, probe); !r) {
      return tl::unexpected(r.error());
    }
    if (auto path = str(*get, "/path"); !path.empty()) probe.path = path;
    return probe;
  }
  if (const auto* tcp = find(*spec, "/tcpSocket"); tcp != nullptr && tcp->is_object()) {
    probe.action = ProbeAction::kTcpSocket;
    if (auto r = read_endpoint(container, *tcp, name + ".tcpSocket", pod_ip, probe); !r) {
      return tl::unexpected(r.error());
    }
    return probe;
  }
  if (const auto* command = arr(*spec, "/exec/command")) {
    probe.action = ProbeAction::kExec;
    for (const auto& a : *command) {
      if (a.is_string()) probe.command.emplace_back(a.get_string());
    }
    if (probe.command.empty()) return tl::unexpected(name + ".exec.command is empty");
    return probe;
  }
  return tl::unexpected(name + ": none of exec, tcpSocket, httpGet (grpc is not probed)");
}

tl::expected<void, std::string> run_http_get(const ProbeSpec& probe) {
  const std::string where = probe.action == ProbeAction::kTcpSocket
                                ? fmt::format("tcp://{}:{}", probe.host, probe.port)
                                : fmt::format("http://{}:{}{}", probe.host, probe.port, probe.path);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(probe.port));
  if (::inet_pton(AF_INET, probe.host.c_str(), &addr.sin_addr) != 1) {
    return tl::unexpected(where + ": the host is not an IPv4 address");
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return tl::unexpected(where + ": socket: " + std::strerror(errno));
  timeval tv{static_cast<time_t>(probe.timeout.count()), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);  // bounds connect() too
  std::string response;
  std::string error;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    error = std::string("connect: ") + std::strerror(errno);
  } else if (probe.action == ProbeAction::kTcpSocket) {
    ::close(fd);
    return {};  // connected: all a tcpSocket probe asks
  } else {
    const std::string request = fmt::format(
        "GET {} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: kube-probe/1.20\r\nConnection: "
        "close\r\n\r\n",
        probe.path, probe.host, probe.port);
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      error = std::string("send: ") + std::strerror(errno);
    }
    // The status line is all a probe needs.
    char buf[512];
    for (ssize_t n; error.empty() && response.find("\r\n") == std::string::npos &&
                    (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) {
      response.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  if (!error.empty()) return tl::unexpected(where + ": " + error);
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) {
    return tl::unexpected(where + ": no HTTP answer");
  }
  const int status = std::atoi(response.substr(9, 3).c_str());
  if (status < 200 || status >= 400) {
    return tl::unexpected(fmt::format("{}: HTTP {}", where, status));
  }
  return {};
}

tl::expected<void, std::string> run_tcp_socket(const ProbeSpec& probe) {
  return run_http_get(probe);  // the same connection, ending once connected
}

ProbeTracker Prober::step(const std::string& key, ProbeType type, const Probe& probe,
                          std::chrono::steady_clock::time_point now, const std::string& container,
                          const std::string& what, const ProbeRunner& run,
                          std::optional<std::chrono::milliseconds>& next) {
  std::optional<ProbeTracker> tracker;
  bool fresh = false;
  {
    std::lock_guard lock(mu_);
    auto it = trackers_.find(key);
    if (it == trackers_.end()) {
      it = trackers_.emplace(key, ProbeTracker(type, probe.spec.timing, now)).first;
      fresh = true;
    }
    tracker = it->second;
  }
  if (tracker->due(now)) {
    // No lock held while probing. A probe that cannot be run fails, as with a kubelet.
    auto result =
        probe.error.empty() ? run(probe.spec, container) : tl::unexpected<std::string>(probe.error);
    const bool changed = tracker->record(result.has_value(), now);
    if (changed || fresh || (!result && type != ProbeType::kReadiness)) {
      spdlog::info("{}: {} probe {} ({}; {} failure(s) in a row)", what, probe_type_name(type),
                   tracker->verdict() ? "passes" : "fails", result ? "ok" : result.error(),
                   tracker->failures());
    }
    std::lock_guard lock(mu_);
    trackers_.insert_or_assign(key, *tracker);
  }
  const auto due = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(tracker->next() - now, std::chrono::steady_clock::duration::zero()));
  next = next ? std::min(*next, due) : due;
  return *tracker;
}

bool Prober::started_before(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = trackers_.find(key);
  return it != trackers_.end() && it->second.verdict();
}

ProbeOutcome Prober::probe(const json::value& pod, PodState& state,
                           std::chrono::steady_clock::time_point now, const ProbeRunner& run) {
  ProbeOutcome outcome;
  const auto* specs = arr(pod, "/spec/containers");
  if (specs == nullptr) return outcome;
  for (auto& c : state.containers) {
    auto spec = std::find_if(specs->begin(), specs->end(),
                             [&](const json::value& s) { return str(s, "/name") == c.name; });
    if (!c.running() || spec == specs->end()) continue;
    const bool all = probe_all_ && probe_all_(*spec);
    const std::string what = fmt::format("pod {}: container {}", informer::object_key(pod), c.name);
    const std::string key = state.uid + "/" + c.id + "/";
    auto probe_of = [&](std::string_view which) -> std::optional<Probe> {
      auto parsed = parse_probe(*spec, which, state.pod_ip);
      if (!parsed) return std::nullopt;
      if (!*parsed) return Probe{ProbeSpec{}, parsed->error()};
      return Probe{**parsed, {}};
    };
    bool started = true;
    if (all) {
      if (auto startup = probe_of("startupProbe")) {
        // Once it passed, a startup probe is not run again for this container.
        const auto key_startup = key + "startup";
        if (!started_before(key_startup)) {
          auto t = step(key_startup, ProbeType::kStartup, *startup, now, c.name, what, run,
                        outcome.next);
          started = t.verdict();
          if (!started && t.failures() >= std::max(1, startup->spec.timing.failure_threshold)) {
            outcome.kill.push_back(c.name);
          }
        }
      }
      c.started = started;
      auto liveness = probe_of("livenessProbe");
      if (started && liveness &&
          !step(key + "liveness", ProbeType::kLiveness, *liveness, now, c.name, what, run,
                outcome.next)
               .verdict()) {
        outcome.kill.push_back(c.name);
      }
    }
    if (!all && !idle_http_readiness_) continue;
    auto readiness = probe_of("readinessProbe");
    if (!started) c.readiness = false;
    if (!started || !readiness) continue;
    // An idle container (no command) only has its httpGet readiness probed (--http-probes).
    if (!all && (!readiness->error.empty() || readiness->spec.action != ProbeAction::kHttpGet)) {
      continue;
    }
    c.readiness = step(key + "readiness", ProbeType::kReadiness, *readiness, now, c.name, what, run,
                       outcome.next)
                      .verdict();
  }
  return outcome;
}

void Prober::forget(const std::string& pod_uid) {
  std::lock_guard lock(mu_);
  const std::string prefix = pod_uid + "/";
  for (auto it = trackers_.lower_bound(prefix);
       it != trackers_.end() && it->first.rfind(prefix, 0) == 0;) {
    it = trackers_.erase(it);
  }
}

}  // namespace kstack::nodesim
