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

std::optional<tl::expected<HttpGetProbe, std::string>> http_get_probe(const json::value& container,
                                                                      std::string_view which,
                                                                      const std::string& pod_ip) {
  const std::string base = "/" + std::string(which);
  const auto* get = find(container, base + "/httpGet");
  if (get == nullptr || !get->is_object()) return std::nullopt;
  const std::string field = std::string(which) + ".httpGet";
  if (auto scheme = str(*get, "/scheme"); !scheme.empty() && scheme != "HTTP") {
    return tl::unexpected(fmt::format("{}.scheme {}: only HTTP is probed", field, scheme));
  }
  const auto* port = find(*get, "/port");
  if (port == nullptr) return tl::unexpected(field + ".port is missing");
  auto number = resolve_port(container, *port, field + ".port");
  if (!number) return tl::unexpected(number.error());
  HttpGetProbe probe;
  probe.host = str(*get, "/host").empty() ? pod_ip : str(*get, "/host");
  probe.port = *number;
  if (auto path = str(*get, "/path"); !path.empty()) probe.path = path;
  probe.period = std::chrono::seconds(seconds_at(container, base + "/periodSeconds", 10));
  probe.timeout = std::chrono::seconds(seconds_at(container, base + "/timeoutSeconds", 1));
  probe.initial_delay =
      std::chrono::seconds(seconds_at(container, base + "/initialDelaySeconds", 0));
  probe.failure_threshold = static_cast<int>(seconds_at(container, base + "/failureThreshold", 3));
  return probe;
}

tl::expected<void, std::string> run_http_get(const HttpGetProbe& probe) {
  const std::string where = fmt::format("http://{}:{}{}", probe.host, probe.port, probe.path);
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

ReadinessProber::Record ReadinessProber::step(Record record, const HttpGetProbe& probe, bool fresh,
                                              std::chrono::steady_clock::time_point now,
                                              const std::string& what) {
  if (fresh) record.next = now + probe.initial_delay;
  if (now < record.next) return record;
  auto result = run_http_get(probe);
  const bool was_ready = record.ready;
  record.failures = result ? 0 : record.failures + 1;
  record.ready = result || (record.ready && record.failures < probe.failure_threshold);
  if (record.ready != was_ready || fresh) {
    spdlog::info("{} {} (readiness probe: {})", what, record.ready ? "ready" : "not ready",
                 result ? "ok" : result.error());
  }
  record.next = now + probe.period;
  return record;
}

std::optional<std::chrono::milliseconds> ReadinessProber::probe(const json::value& pod,
                                                                PodState& state) {
  const auto* specs = arr(pod, "/spec/containers");
  if (specs == nullptr) return std::nullopt;
  std::optional<std::chrono::milliseconds> next;
  for (auto& c : state.containers) {
    auto spec = std::find_if(specs->begin(), specs->end(),
                             [&](const json::value& s) { return str(s, "/name") == c.name; });
    if (c.terminated || spec == specs->end()) continue;
    auto probe = http_get_probe(*spec, "readinessProbe", state.pod_ip);
    if (!probe) continue;
    const std::string key = state.uid + "/" + c.id;
    const std::string what = fmt::format("pod {}: container {}", informer::object_key(pod), c.name);
    const auto now = std::chrono::steady_clock::now();
    Record record;
    bool fresh = false;
    {
      std::lock_guard lock(mu_);
      auto [it, added] = records_.try_emplace(key);
      fresh = added;
      record = it->second;
    }
    if (!*probe) {  // never ready, as a kubelet that cannot run the probe
      if (fresh) spdlog::warn("{}: {}", what, probe->error());
    } else {
      record = step(record, **probe, fresh, now, what);  // no lock held while probing
      const auto due = std::chrono::duration_cast<std::chrono::milliseconds>(record.next - now);
      next = next ? std::min(*next, due) : due;
    }
    {
      std::lock_guard lock(mu_);
      records_[key] = record;
    }
    c.readiness = record.ready;
  }
  return next;
}

void ReadinessProber::forget(const std::string& pod_uid) {
  std::lock_guard lock(mu_);
  const std::string prefix = pod_uid + "/";
  for (auto it = records_.lower_bound(prefix);
       it != records_.end() && it->first.rfind(prefix, 0) == 0;) {
    it = records_.erase(it);
  }
}

}  // namespace kstack::nodesim
