// A Compose service's `ports` and `expose` -> the role's container ports (catalog/
// compose_internal.h), which convert_compose makes the AppType's services. Host ports, host IPs
// and protocols other than TCP are not carried: each is a warning.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/compose_internal.h"

namespace kstack::catalog::compose_detail {
namespace {

// A published port range is expanded into one Service port each up to this many ports.
constexpr std::int64_t kMaxPortRange = 16;

void add_port(Role& r, std::int64_t port, const std::string& path, Warnings& w,
              const std::string& name = {}, const std::string& app_protocol = {}) {
  if (port < 1 || port > 65535) {
    w.add(path, fmt::format("port {} is not between 1 and 65535; ignored", port));
    return;
  }
  for (const auto& p : r.ports) {
    if (p.port == port) return;  // the same container port published twice
  }
  r.ports.push_back({port, name, app_protocol});
}

// "80", "8000-8010": the container port(s); empty on a malformed text.
std::vector<std::int64_t> port_range(std::string_view text) {
  auto dash = text.find('-');
  auto lo = decimal(text.substr(0, dash), 5);
  auto hi = dash == std::string_view::npos ? lo : decimal(text.substr(dash + 1), 5);
  if (!lo || !hi || *hi < *lo) return {};
  std::vector<std::int64_t> out;
  for (auto p = *lo; p <= *hi; ++p) {
    out.push_back(p);
    if (static_cast<std::int64_t>(out.size()) > kMaxPortRange) break;
  }
  return out;
}

void container_ports(Role& r, std::string_view text, const std::string& path, Warnings& w) {
  auto ports = port_range(text);
  if (ports.empty()) {
    w.add(path, fmt::format("container port {} is not a port or a range of ports; ignored",
                            quoted(text)));
    return;
  }
  if (static_cast<std::int64_t>(ports.size()) > kMaxPortRange) {
    w.add(path, fmt::format("the range {} has more than {} ports: kstack declares each port of "
                            "a range as a Service port; ignored",
                            text, kMaxPortRange));
    return;
  }
  for (auto p : ports) add_port(r, p, path, w);
}

// "8080/udp": the protocol ("udp", empty when none) cut off `s`.
std::string cut_protocol(std::string_view& s) {
  std::string protocol;
  if (auto slash = s.rfind('/'); slash != std::string_view::npos) {
    protocol = std::string(s.substr(slash + 1));
    s = s.substr(0, slash);
  }
  return protocol;
}

bool tcp(std::string_view protocol, const std::string& path, Warnings& w) {
  if (protocol.empty() || protocol == "tcp") return true;
  w.add(path, fmt::format("protocol {} is not carried: kstack's Services and container ports "
                          "are TCP; the port is ignored",
                          protocol));
  return false;
}

void published_warning(std::string_view host, std::string_view target, const std::string& path,
                       Warnings& w) {
  w.add(path, fmt::format("host port {} is not published: kstack serves container port {} on "
                          "the Stack's Services (ClusterIP by default; set the Stack's "
                          "spec.serviceType to NodePort or LoadBalancer to reach the members "
                          "from outside the cluster)",
                          host, target));
}

void host_ip_warning(std::string_view host_ip, const std::string& path, Warnings& w) {
  w.add(path, fmt::format("host IP {} is not carried; ignored", host_ip));
}

// The long syntax: {target, published, host_ip, protocol, name, app_protocol, mode}.
void long_port(Role& r, const json::object& o, const std::string& p, Warnings& w) {
  std::optional<std::int64_t> target;
  std::string name, app_protocol, protocol, published, host_ip;
  for (const auto& [k, val] : o) {
    std::string kp = key(p, k);
    auto t = scalar_text(val);
    if (k == "target") {
      target = integer(val);
    } else if (k == "published") {
      published = t.value_or("");
    } else if (k == "host_ip") {
      host_ip = t.value_or("");
    } else if (k == "protocol") {
      protocol = t.value_or("");
    } else if (k == "name") {
      name = t.value_or("");
    } else if (k == "app_protocol") {
      app_protocol = t.value_or("");
    } else if (k == "mode") {
      if (t.value_or("") != "ingress") {
        w.add(kp, fmt::format("mode {} is not carried: kstack's Services route to every "
                              "member; ignored",
                              t.value_or("?")));
      }
    } else if (!is_extension(k)) {
      w.add(kp, "unknown key; ignored");
    }
  }
  if (!target) {
    w.add(p, "has no integer target (the container port); ignored");
    return;
  }
  if (!tcp(protocol, key(p, "protocol"), w)) return;
  if (!published.empty()) {
    published_warning(published, std::to_string(*target), key(p, "published"), w);
  }
  if (!host_ip.empty()) host_ip_warning(host_ip, key(p, "host_ip"), w);
  add_port(r, *target, p, w, name, app_protocol);
}

// The short syntax: [HOST_IP:][HOST_PORT:]CONTAINER_PORT[/PROTOCOL]; an IPv6 host IP is in
// brackets.
void short_port(Role& r, std::string_view s, const std::string& p, Warnings& w) {
  std::string protocol = cut_protocol(s);
  std::string host_ip;
  if (!s.empty() && s.front() == '[') {
    auto close = s.find("]:");
    if (close != std::string_view::npos) {
      host_ip = std::string(s.substr(0, close + 1));
      s = s.substr(close + 2);
    }
  }
  std::string_view container = s, host;
  if (auto colon = s.rfind(':'); colon != std::string_view::npos) {
    container = s.substr(colon + 1);
    host = s.substr(0, colon);
    if (auto c2 = host.rfind(':'); c2 != std::string_view::npos) {
      host_ip = std::string(host.substr(0, c2));
      host = host.substr(c2 + 1);
    }
  }
  if (!tcp(protocol, p, w)) return;
  if (!host_ip.empty()) host_ip_warning(host_ip, p, w);
  if (!host.empty()) published_warning(host, container, p, w);
  container_ports(r, container, p, w);
}

}  // namespace

void convert_ports(Role& r, const json::value& v, Warnings& w) {
  for_each_item(v, key(r.path, "ports"), w, [&](const json::value& item, const std::string& p) {
    if (const auto* o = item.if_object()) {
      long_port(r, *o, p, w);
    } else if (auto text = scalar_text(item)) {
      short_port(r, *text, p, w);
    } else {
      w.add(p, "must be a string, a number or a mapping; ignored");
    }
  });
}

void convert_expose(Role& r, const json::value& v, Warnings& w) {
  for_each_item(v, key(r.path, "expose"), w, [&](const json::value& item, const std::string& p) {
    auto text = scalar_text(item);
    if (!text) {
      w.add(p, "must be a string or a number; ignored");
      return;
    }
    std::string_view s = *text;
    std::string protocol = cut_protocol(s);
    if (!tcp(protocol, p, w)) return;
    container_ports(r, s, p, w);
  });
}

}  // namespace kstack::catalog::compose_detail
