// Role probes (probe.h): decoded strictly, since they go into every member's pod as they are.
#include "catalog/probe.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/defaults.h"

namespace kstack::catalog {
namespace json = boost::json;
using detail::Decoder;

namespace {

constexpr std::int64_t kMaxInt32 = 2147483647;
constexpr std::array<std::string_view, 3> kHandlers = {"exec", "tcpSocket", "httpGet"};
constexpr std::array<std::string_view, 8> kProbeFields = {
    "exec",          "tcpSocket",      "httpGet",          "initialDelaySeconds",
    "periodSeconds", "timeoutSeconds", "successThreshold", "failureThreshold"};

template <std::size_t N>
void refuse_unknown(const json::object& o, std::string_view path,
                    const std::array<std::string_view, N>& known, std::string_view what,
                    Decoder& d) {
  for (const auto& field : o) {
    const std::string_view key = field.key();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    d.error(child_path(path, key), fmt::format("unknown field ({} has {})", what,
                                               fmt::join(known.begin(), known.end(), ", ")));
  }
}

// IANA_SVC_NAME, as Kubernetes checks a named container port: at most 15 of [a-z0-9-], at
// least one letter, no '-' at either end or twice in a row.
bool port_name_ok(std::string_view name) {
  if (name.empty() || name.size() > 15 || name.front() == '-' || name.back() == '-') return false;
  if (name.find("--") != std::string_view::npos) return false;
  bool letter = false;
  for (char c : name) {
    if (c >= 'a' && c <= 'z') {
      letter = true;
    } else if (!(c >= '0' && c <= '9') && c != '-') {
      return false;
    }
  }
  return letter;
}

void decode_port(const json::object& o, std::string_view path, Probe& p, Decoder& d) {
  const std::string field = child_path(path, "port");
  const auto* v = detail::present(o, "port");
  if (v == nullptr) return d.error(field, "is required");
  if (v->is_string()) {
    const std::string name(v->get_string());
    if (!port_name_ok(name)) {
      return d.error(field, fmt::format("\"{}\" must be a port number (1-65535) or a port name "
                                        "(the id of one of the role's services)",
                                        name));
    }
    p.port_name = name;
    return;
  }
  const auto n = d.integer(o, "port", path);
  if (!n) return;
  if (*n < 1 || *n > 65535) return d.error(field, "must be between 1 and 65535");
  p.port_number = *n;
}

void decode_handler(const json::object& probe, std::string_view path, Probe& p, Decoder& d) {
  std::size_t count = 0;
  for (auto h : kHandlers) count += detail::present(probe, h) != nullptr ? 1 : 0;
  if (count != 1) return d.error(std::string(path), "exactly one of exec, tcpSocket, httpGet");
  if (const auto* e = d.object(probe, "exec", path)) {
    const std::string ep = child_path(path, "exec");
    p.handler = Probe::Handler::kExec;
    refuse_unknown(*e, ep, std::array<std::string_view, 1>{"command"}, "an exec handler", d);
    p.command = d.strings(*e, "command", ep).value_or(std::vector<std::string>{});
    if (p.command.empty()) d.error(child_path(ep, "command"), "is required (at least one word)");
  } else if (const auto* t = d.object(probe, "tcpSocket", path)) {
    const std::string tp = child_path(path, "tcpSocket");
    p.handler = Probe::Handler::kTcpSocket;
    refuse_unknown(*t, tp, std::array<std::string_view, 1>{"port"}, "a tcpSocket handler", d);
    decode_port(*t, tp, p, d);
  } else if (const auto* h = d.object(probe, "httpGet", path)) {
    const std::string hp = child_path(path, "httpGet");
    p.handler = Probe::Handler::kHttpGet;
    refuse_unknown(*h, hp, std::array<std::string_view, 2>{"path", "port"}, "an httpGet handler",
                   d);
    p.path = d.string(*h, "path", hp);
    if (p.path && (p.path->empty() || p.path->front() != '/')) {
      d.error(child_path(hp, "path"), "must start with '/'");
    }
    decode_port(*h, hp, p, d);
  }
}

std::optional<std::int64_t> bounded(const json::object& o, std::string_view key,
                                    std::string_view path, std::int64_t min, Decoder& d) {
  auto n = d.integer(o, key, path);
  if (!n) return n;
  if (*n < min) {
    d.error(child_path(path, key), fmt::format("must be >= {}", min));
    return std::nullopt;
  }
  if (*n > kMaxInt32) {
    d.error(child_path(path, key), fmt::format("must be <= {}", kMaxInt32));
    return std::nullopt;
  }
  return n;
}

}  // namespace

std::optional<Probe> decode_probe(const json::object& role, std::string_view key,
                                  std::string_view role_path, Decoder& outer) {
  const auto* o = outer.object(role, key, role_path);
  if (o == nullptr) return std::nullopt;
  const std::string path = child_path(role_path, key);
  // A probe with any problem is dropped whole: half a probe must never reach a pod.
  FieldErrors errors;
  Decoder d(errors);
  refuse_unknown(*o, path, kProbeFields, "a probe", d);
  Probe p;
  decode_handler(*o, path, p, d);
  p.initial_delay_seconds = bounded(*o, "initialDelaySeconds", path, 0, d);
  p.period_seconds = bounded(*o, "periodSeconds", path, 1, d);
  p.timeout_seconds = bounded(*o, "timeoutSeconds", path, 1, d);
  p.success_threshold = bounded(*o, "successThreshold", path, 1, d);
  p.failure_threshold = bounded(*o, "failureThreshold", path, 1, d);
  if (key != kReadinessProbe && p.success_threshold && *p.success_threshold != 1) {
    d.error(child_path(path, "successThreshold"), fmt::format("must be 1 for a {}", key));
  }
  for (auto& e : errors) outer.error(std::move(e.field), std::move(e.reason));
  if (!errors.empty()) return std::nullopt;
  return p;
}

void check_probe_ports(const AppType& app, FieldErrors& errors) {
  for (std::size_t i = 0; i < app.spec.roles.size(); ++i) {
    const auto& role = app.spec.roles[i];
    std::vector<std::string> ports;
    for (const auto* svc : role_services(app, role.id)) {
      if (svc->endpoint && svc->endpoint->port) ports.push_back(svc->id);
    }
    const std::pair<std::string_view, const std::optional<Probe>*> probes[] = {
        {kReadinessProbe, &role.readiness_probe},
        {kLivenessProbe, &role.liveness_probe},
        {kStartupProbe, &role.startup_probe}};
    for (const auto& [key, probe] : probes) {
      if (!*probe || (*probe)->port_name.empty()) continue;
      const auto& name = (*probe)->port_name;
      if (std::find(ports.begin(), ports.end(), name) != ports.end()) continue;
      const auto handler =
          (*probe)->handler == Probe::Handler::kTcpSocket ? "tcpSocket" : "httpGet";
      errors.push_back(
          {fmt::format("spec.roles[{}].{}.{}.port", i, key, handler),
           fmt::format(
               "\"{}\" is not a port of role \"{}\" (its ports: {})", name, role.id,
               ports.empty() ? std::string("none") : fmt::format("{}", fmt::join(ports, ", ")))});
    }
  }
}

json::object probe_json(const Probe& probe) {
  json::object out;
  json::value port = probe.port_name.empty() ? json::value(probe.port_number.value_or(0))
                                             : json::value(probe.port_name);
  switch (probe.handler) {
    case Probe::Handler::kExec: {
      json::array cmd;
      for (const auto& w : probe.command) cmd.emplace_back(w);
      out["exec"] = json::object{{"command", std::move(cmd)}};
      break;
    }
    case Probe::Handler::kTcpSocket:
      out["tcpSocket"] = json::object{{"port", std::move(port)}};
      break;
    case Probe::Handler::kHttpGet: {
      json::object h{{"port", std::move(port)}};
      if (probe.path) h["path"] = *probe.path;
      out["httpGet"] = std::move(h);
      break;
    }
  }
  const std::pair<std::string_view, const std::optional<std::int64_t>*> numbers[] = {
      {"initialDelaySeconds", &probe.initial_delay_seconds},
      {"periodSeconds", &probe.period_seconds},
      {"timeoutSeconds", &probe.timeout_seconds},
      {"successThreshold", &probe.success_threshold},
      {"failureThreshold", &probe.failure_threshold}};
  for (const auto& [key, value] : numbers) {
    if (*value) out[key] = **value;
  }
  return out;
}

}  // namespace kstack::catalog
