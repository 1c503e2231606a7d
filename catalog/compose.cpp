// Compose -> AppType + Stack (catalog/compose.h, docs/compose.md).
#include "catalog/compose.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/model.h"
#include "catalog/names.h"

namespace kstack::catalog {
namespace json = boost::json;

namespace {

constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
// A published port range is expanded into one Service port each up to this many ports.
constexpr std::int64_t kMaxPortRange = 16;
// Bounds on what one file may make (its size is bounded by the caller's read cap).
constexpr std::size_t kMaxMergeDepth = 64;
constexpr std::size_t kMaxInterpolationDepth = 8;  // ${A:-${B:-...}}

std::string key(std::string_view path, std::string_view k) {
  return path.empty() ? std::string(k) : fmt::format("{}.{}", path, k);
}
std::string idx(std::string_view path, std::size_t i) { return fmt::format("{}[{}]", path, i); }

bool is_extension(std::string_view k) { return k.size() >= 2 && k.substr(0, 2) == "x-"; }

// A scalar as Compose reads it into a string field (YAML `8080`, `true`, `0.5`).
std::optional<std::string> scalar_text(const json::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  if (v.is_int64()) return std::to_string(v.get_int64());
  if (v.is_uint64()) return std::to_string(v.get_uint64());
  if (v.is_double()) {
    double d = v.get_double();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15) {
      return std::to_string(static_cast<std::int64_t>(d));
    }
    return fmt::format("{}", d);
  }
  if (v.is_bool()) return v.get_bool() ? "true" : "false";
  return std::nullopt;
}

std::optional<std::int64_t> integer(const json::value& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(kInt32Max)) {
    return static_cast<std::int64_t>(v.get_uint64());
  }
  if (v.is_double() && v.get_double() == std::floor(v.get_double()) &&
      std::fabs(v.get_double()) < 1e15) {
    return static_cast<std::int64_t>(v.get_double());
  }
  if (v.is_string()) {
    const auto& s = v.get_string();
    if (s.empty() || s.size() > 18) return std::nullopt;
    std::int64_t n = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + (c - '0');
    }
    return n;
  }
  return std::nullopt;
}

std::string quoted(std::string_view s) { return json::serialize(json::value(json::string(s))); }

struct Warnings {
  std::vector<ComposeWarning> list;
  void add(std::string path, std::string message) {
    list.push_back({std::move(path), std::move(message)});
  }
};

// ---- YAML merge keys and interpolation (before conversion) ----

// `<<: *anchor` / `<<: [*a, *b]`: keys the mapping lacks come from the merged mappings, the
// first listed winning (YAML 1.1 merge). yaml-cpp leaves `<<` as a plain key.
void apply_merge_keys(json::value& v, std::size_t depth) {
  if (depth > kMaxMergeDepth) return;
  if (auto* a = v.if_array()) {
    for (auto& item : *a) apply_merge_keys(item, depth + 1);
    return;
  }
  auto* o = v.if_object();
  if (o == nullptr) return;
  for (auto& [k, child] : *o) apply_merge_keys(child, depth + 1);
  auto it = o->find("<<");
  if (it == o->end()) return;
  json::value merged = it->value();
  o->erase(it);
  std::vector<const json::object*> sources;
  if (merged.is_object()) sources.push_back(&merged.get_object());
  if (merged.is_array()) {
    for (const auto& s : merged.get_array()) {
      if (s.is_object()) sources.push_back(&s.get_object());
    }
  }
  for (const auto* s : sources) {
    for (const auto& [k, child] : *s) {
      if (!o->contains(k)) o->emplace(k, child);
    }
  }
}

bool var_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool var_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Compose interpolation with an empty environment: `$$` is `$`; `${VAR:-default}` and
// `${VAR-default}` take the default; `${VAR:+alt}` is empty; `$VAR`, `${VAR}`, `${VAR:?err}`
// stay as written. Each variable met is a warning: kstack reads no host environment or .env.
std::string interpolate(std::string_view s, const std::string& path, Warnings& w,
                        std::size_t depth = 0) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c != '$' || i + 1 == s.size()) {
      out += c;
      ++i;
      continue;
    }
    char n = s[i + 1];
    if (n == '$') {
      out += '$';
      i += 2;
      continue;
    }
    if (var_start(n)) {
      std::size_t j = i + 1;
      while (j < s.size() && var_char(s[j])) ++j;
      std::string_view name = s.substr(i + 1, j - i - 1);
      w.add(path, fmt::format("variable {} is not interpolated (kstack reads neither the host "
                              "environment nor .env): left as \"${}\"",
                              name, name));
      out += s.substr(i, j - i);
      i = j;
      continue;
    }
    if (n != '{') {
      out += c;
      ++i;
      continue;
    }
    // ${...}: find the matching brace (defaults may hold nested ${...}).
    std::size_t j = i + 2;
    int braces = 1;
    while (j < s.size() && braces > 0) {
      if (s[j] == '{') ++braces;
      if (s[j] == '}') --braces;
      if (braces > 0) ++j;
    }
    if (j >= s.size()) {  // unclosed: Compose refuses; keep the text and say so
      w.add(path, "unclosed \"${\" in a variable reference: left as written");
      out += s.substr(i);
      break;
    }
    std::string_view body = s.substr(i + 2, j - i - 2);
    std::size_t k = 0;
    while (k < body.size() && var_char(body[k])) ++k;
    std::string_view name = body.substr(0, k);
    std::string_view rest = body.substr(k);
    std::string whole(s.substr(i, j - i + 1));
    if (rest.rfind(":-", 0) == 0 || (!rest.empty() && rest[0] == '-')) {
      std::string_view def = rest.substr(rest[0] == ':' ? 2 : 1);
      if (depth >= kMaxInterpolationDepth) {
        w.add(path, fmt::format("variable defaults nested more than {} deep: left as written",
                                kMaxInterpolationDepth));
        out += s.substr(i);
        break;
      }
      std::string value = interpolate(def, path, w, depth + 1);
      w.add(path, fmt::format("variable {} is not read from the host environment or .env: its "
                              "default {} is used",
                              name, quoted(value)));
      out += value;
    } else if (rest.rfind(":+", 0) == 0 || (!rest.empty() && rest[0] == '+')) {
      w.add(path, fmt::format("variable {} is not read from the host environment or .env: taken "
                              "as unset, so {} is empty",
                              name, whole));
    } else {
      w.add(path, fmt::format("variable {} is not interpolated (kstack reads neither the host "
                              "environment nor .env): left as \"{}\"",
                              name, whole));
      out += whole;
    }
    i = j + 1;
  }
  return out;
}

void interpolate_tree(json::value& v, const std::string& path, Warnings& w, std::size_t depth) {
  if (depth > kMaxMergeDepth) return;
  if (auto* s = v.if_string()) {
    if (s->find('$') != json::string::npos) *s = interpolate(*s, path, w);
  } else if (auto* a = v.if_array()) {
    for (std::size_t i = 0; i < a->size(); ++i)
      interpolate_tree((*a)[i], idx(path, i), w, depth + 1);
  } else if (auto* o = v.if_object()) {
    for (auto& [k, child] : *o) {
      if (is_extension(k)) continue;
      interpolate_tree(child, key(path, k), w, depth + 1);
    }
  }
}

// kubelet expands $(VAR) in command, args and env values, and $$ is its escape: Compose has no
// such expansion, so "$(" and "$$" are escaped to mean themselves.
std::string kubelet_escape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '$' && i + 1 < s.size() && (s[i + 1] == '(' || s[i + 1] == '$')) out += '$';
  }
  return out;
}

// ---- one service ----

struct PortUse {
  std::int64_t port = 0;
  std::string name;  // long syntax `name`
  std::string app_protocol;
};

// A text where a Compose service name may stand as a host name: an environment value (a
// value that is only the name counts), a command word (then `prev` is the word before it) or a
// health check's shell line.
struct HostText {
  std::string path;
  std::string text;
  bool env_value = false;
  std::string prev;
};

struct Role {
  std::string service;  // the Compose name
  std::string id;
  std::string path;  // services.<name>
  json::object app_role;
  json::object stack_role;
  std::vector<PortUse> ports;
  std::vector<std::string> persist_dirs;
  std::vector<std::pair<std::string, std::string>> volumes;  // named volume, path of the use
  std::vector<std::pair<std::string, std::string>> depends;  // service name, path
  // Where a service's name would be a Compose host name (checked after all services).
  std::vector<HostText> texts;
  std::map<std::string, std::string> limits, requests;  // from mem_limit/cpus, then deploy
  std::optional<std::int64_t> members;
};

// Every service key of the Compose Specification kstack does not carry, with the reason.
const std::map<std::string_view, std::string_view>& unsupported_service_keys() {
  static const std::map<std::string_view, std::string_view> keys{
      {"annotations",
       "container annotations are not carried (pod annotations are the Stack's "
       "spec.roles[].podAnnotations)"},
      {"attach", "has no kstack equivalent; ignored"},
      {"blkio_config", "block IO limits have no kstack equivalent; ignored"},
      {"cap_add",
       "capabilities are not carried per role (an AppType's spec.capabilities adds "
       "them to every role); ignored"},
      {"cap_drop", "has no kstack equivalent; ignored"},
      {"cgroup", "has no kstack equivalent; ignored"},
      {"cgroup_parent", "has no kstack equivalent; ignored"},
      {"configs",
       "Compose configs are not carried: put the file in a ConfigMap and mount or "
       "deliver it yourself (or in a setup package); ignored"},
      {"container_name", "kstack names the member pods <stack>-<role>-<n>; ignored"},
      {"cpu_count", "use deploy.resources; ignored"},
      {"cpu_percent", "use deploy.resources; ignored"},
      {"cpu_period", "use deploy.resources; ignored"},
      {"cpu_quota", "use deploy.resources; ignored"},
      {"cpu_rt_period", "has no kstack equivalent; ignored"},
      {"cpu_rt_runtime", "has no kstack equivalent; ignored"},
      {"cpu_shares", "use deploy.resources; ignored"},
      {"cpuset", "has no kstack equivalent; ignored"},
      {"credential_spec", "has no kstack equivalent; ignored"},
      {"develop", "Compose Watch has no kstack equivalent; ignored"},
      {"device_cgroup_rules", "has no kstack equivalent; ignored"},
      {"devices", "host devices are not carried; ignored"},
      {"dns", "members use the cluster's DNS; ignored"},
      {"dns_opt", "members use the cluster's DNS; ignored"},
      {"dns_search", "members use the cluster's DNS; ignored"},
      {"domainname", "has no kstack equivalent; ignored"},
      {"env_file",
       "env files are not read: put the variables in `environment` (or in the "
       "Stack's spec.roles[].env); ignored"},
      {"extends", "extends is not followed: merge the service into this file first; ignored"},
      {"external_links", "has no kstack equivalent; ignored"},
      {"extra_hosts", "not carried: the members' /etc/hosts is the pod's; ignored"},
      {"gpus",
       "GPU requests are not carried (add them to the Stack's spec.roles[].resources); "
       "ignored"},
      {"group_add", "has no kstack equivalent; ignored"},
      {"hostname", "a member's host name is its pod name, <stack>-<role>-<n>; ignored"},
      {"init", "has no kstack equivalent; ignored"},
      {"ipc", "has no kstack equivalent; ignored"},
      {"isolation", "has no kstack equivalent; ignored"},
      {"label_file", "container labels are not carried; ignored"},
      {"labels",
       "container labels are not carried (pod labels are the Stack's "
       "spec.roles[].podLabels); ignored"},
      {"links",
       "links are not carried: a service is not a host name in kstack (see the "
       "other warnings and docs/compose.md \"Host names\"); ignored"},
      {"logging",
       "logging drivers are not carried: container output goes to the cluster's "
       "logs (kubectl logs); ignored"},
      {"mac_address", "has no kstack equivalent; ignored"},
      {"mem_swappiness", "has no kstack equivalent; ignored"},
      {"memswap_limit", "has no kstack equivalent; ignored"},
      {"models", "has no kstack equivalent; ignored"},
      {"network_mode", "members use the pod network; ignored"},
      {"networks",
       "Compose networks have no kstack equivalent: every member can reach every "
       "other member of the cluster; ignored"},
      {"oom_kill_disable", "has no kstack equivalent; ignored"},
      {"oom_score_adj", "has no kstack equivalent; ignored"},
      {"pid", "has no kstack equivalent; ignored"},
      {"pids_limit", "has no kstack equivalent; ignored"},
      {"platform", "the node's platform is used; ignored"},
      {"post_start",
       "lifecycle hooks are not carried (a setup package's startscript runs "
       "after start); ignored"},
      {"pre_stop", "lifecycle hooks are not carried; ignored"},
      {"privileged", "privileged containers are not carried; ignored"},
      {"profiles", "profiles are not carried: every service becomes a role; ignored"},
      {"provider", "has no kstack equivalent; ignored"},
      {"pull_policy", "the cluster's image pull policy applies; ignored"},
      {"read_only", "a read-only root file system is not carried; ignored"},
      {"runtime", "has no kstack equivalent; ignored"},
      {"secrets",
       "Compose secrets are not carried: create a Kubernetes Secret and reference it "
       "yourself; ignored"},
      {"security_opt", "has no kstack equivalent; ignored"},
      {"shm_size", "has no kstack equivalent; ignored"},
      {"stop_grace_period", "the pod's termination grace period (30 s) applies; ignored"},
      {"stop_signal", "members are stopped with SIGTERM; ignored"},
      {"storage_opt", "has no kstack equivalent; ignored"},
      {"sysctls", "sysctls are not carried; ignored"},
      {"tmpfs", "tmpfs mounts are not carried; ignored"},
      {"ulimits", "ulimits are not carried; ignored"},
      {"use_api_socket", "has no kstack equivalent; ignored"},
      {"user", "the image's user runs the container (runAsUser is not carried); ignored"},
      {"userns_mode", "has no kstack equivalent; ignored"},
      {"uts", "has no kstack equivalent; ignored"},
      {"volumes_from", "has no kstack equivalent (each member has its own claim); ignored"},
      {"working_dir", "the image's working directory is used; ignored"},
  };
  return keys;
}

// Variables that hold user names, passwords or database names, where a service's name is
// usually just a name (POSTGRES_USER: postgres, WORDPRESS_DB_NAME: wordpress).
bool not_a_host_variable(std::string_view name) {
  auto cut = name.find_last_of("_.");
  auto last = name.substr(cut == std::string_view::npos ? 0 : cut + 1);
  std::string upper(last);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return upper == "USER" || upper == "USERNAME" || upper == "PASSWORD" || upper == "PASS" ||
         upper == "DB" || upper == "DATABASE" || upper == "NAME";
}

std::optional<std::vector<std::string>> command_words(const json::value& v, const std::string& path,
                                                      Warnings& w) {
  if (v.is_string()) {
    auto words = split_command(v.get_string());
    if (!words)
      w.add(path,
            "unclosed quote or trailing backslash: cannot be split into words; "
            "ignored");
    return words;
  }
  if (const auto* a = v.if_array()) {
    std::vector<std::string> words;
    for (std::size_t i = 0; i < a->size(); ++i) {
      auto t = scalar_text((*a)[i]);
      if (!t) {
        w.add(idx(path, i), "must be a string; the whole list is ignored");
        return std::nullopt;
      }
      words.push_back(*t);
    }
    return words;
  }
  w.add(path, "must be a string or a list of strings; ignored");
  return std::nullopt;
}

void convert_command(Role& r, const json::value& v, std::string_view field, Warnings& w) {
  if (v.is_null()) return;
  const std::string path = key(r.path, field);
  auto words = command_words(v, path, w);
  if (!words) return;
  const bool entrypoint = field == "entrypoint";
  if (words->empty()) {
    if (entrypoint) {
      w.add(path,
            "an empty entrypoint (which clears the image's) cannot be expressed: the "
            "image's entrypoint stays; ignored");
    }
    // An empty command leaves the image's CMD, as no `args`.
    return;
  }
  json::array a;
  for (std::size_t i = 0; i < words->size(); ++i) {
    a.push_back(json::string(kubelet_escape((*words)[i])));
    r.texts.push_back({idx(path, i), (*words)[i], false, i > 0 ? (*words)[i - 1] : ""});
  }
  r.app_role[entrypoint ? "command" : "args"] = std::move(a);
}

// A container environment variable name the API server accepts (C identifiers plus '-' and
// '.', as Kubernetes validates them).
bool env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

void convert_environment(Role& r, const json::value& v, json::array& env, Warnings& w) {
  const std::string path = key(r.path, "environment");
  std::map<std::string, std::size_t> at;  // name -> index in env (a later entry wins)
  auto put = [&](const std::string& name, const std::string& value, const std::string& p) {
    if (!env_name(name)) {
      w.add(p, fmt::format("{} is not a variable name Kubernetes accepts (letters, digits, '_', "
                           "'-', '.', not starting with a digit); left out",
                           quoted(name)));
      return;
    }
    if (!not_a_host_variable(name)) r.texts.push_back({p, value, true, ""});
    json::object e{{"name", name}, {"value", kubelet_escape(value)}};
    if (auto it = at.find(name); it != at.end()) {
      env[it->second] = std::move(e);
    } else {
      at[name] = env.size();
      env.push_back(std::move(e));
    }
  };
  auto from_host = [&](const std::string& name, const std::string& p) {
    w.add(p, fmt::format("{} has no value: Compose takes it from the host environment, which "
                         "kstack does not read; left out (set it in the Stack's "
                         "spec.roles[].env)",
                         name));
  };
  if (const auto* o = v.if_object()) {
    for (const auto& [name, value] : *o) {
      std::string p = key(path, name);
      if (value.is_null()) {
        from_host(name, p);
        continue;
      }
      auto t = scalar_text(value);
      if (!t) {
        w.add(p, "must be a string, number or boolean; ignored");
        continue;
      }
      put(name, *t, p);
    }
  } else if (const auto* a = v.if_array()) {
    for (std::size_t i = 0; i < a->size(); ++i) {
      std::string p = idx(path, i);
      auto t = scalar_text((*a)[i]);
      if (!t) {
        w.add(p, "must be a string \"NAME=value\"; ignored");
        continue;
      }
      auto eq = t->find('=');
      if (eq == std::string::npos) {
        from_host(*t, p);
        continue;
      }
      put(t->substr(0, eq), t->substr(eq + 1), p);
    }
  } else if (!v.is_null()) {
    w.add(path, "must be a mapping or a list; ignored");
  }
}

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
  auto number = [](std::string_view s) -> std::optional<std::int64_t> {
    if (s.empty() || s.size() > 5) return std::nullopt;
    std::int64_t n = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + (c - '0');
    }
    return n;
  };
  auto dash = text.find('-');
  auto lo = number(text.substr(0, dash));
  auto hi = dash == std::string_view::npos ? lo : number(text.substr(dash + 1));
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

void convert_ports(Role& r, const json::value& v, Warnings& w) {
  const std::string path = key(r.path, "ports");
  const auto* a = v.if_array();
  if (a == nullptr) {
    if (!v.is_null()) w.add(path, "must be a list; ignored");
    return;
  }
  for (std::size_t i = 0; i < a->size(); ++i) {
    const std::string p = idx(path, i);
    const auto& item = (*a)[i];
    if (const auto* o = item.if_object()) {  // long syntax
      std::optional<std::int64_t> target;
      std::string name, app_protocol, protocol, published, host_ip;
      for (const auto& [k, val] : *o) {
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
        continue;
      }
      if (!tcp(protocol, key(p, "protocol"), w)) continue;
      if (!published.empty()) {
        published_warning(published, std::to_string(*target), key(p, "published"), w);
      }
      if (!host_ip.empty()) {
        w.add(key(p, "host_ip"), fmt::format("host IP {} is not carried; ignored", host_ip));
      }
      add_port(r, *target, p, w, name, app_protocol);
      continue;
    }
    auto text = scalar_text(item);
    if (!text) {
      w.add(p, "must be a string, a number or a mapping; ignored");
      continue;
    }
    // [HOST_IP:][HOST_PORT:]CONTAINER_PORT[/PROTOCOL]; an IPv6 host IP is in brackets.
    std::string_view s = *text;
    std::string protocol;
    if (auto slash = s.rfind('/'); slash != std::string_view::npos) {
      protocol = std::string(s.substr(slash + 1));
      s = s.substr(0, slash);
    }
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
    if (!tcp(protocol, p, w)) continue;
    if (!host_ip.empty()) {
      w.add(p, fmt::format("host IP {} is not carried; ignored", host_ip));
    }
    if (!host.empty()) published_warning(host, container, p, w);
    container_ports(r, container, p, w);
  }
}

void convert_expose(Role& r, const json::value& v, Warnings& w) {
  const std::string path = key(r.path, "expose");
  const auto* a = v.if_array();
  if (a == nullptr) {
    if (!v.is_null()) w.add(path, "must be a list; ignored");
    return;
  }
  for (std::size_t i = 0; i < a->size(); ++i) {
    const std::string p = idx(path, i);
    auto text = scalar_text((*a)[i]);
    if (!text) {
      w.add(p, "must be a string or a number; ignored");
      continue;
    }
    std::string_view s = *text;
    std::string protocol;
    if (auto slash = s.rfind('/'); slash != std::string_view::npos) {
      protocol = std::string(s.substr(slash + 1));
      s = s.substr(0, slash);
    }
    if (!tcp(protocol, p, w)) continue;
    container_ports(r, s, p, w);
  }
}

// "/data/" -> "/data"; empty if not an absolute path kstack can persist.
std::string persist_dir(std::string_view target) {
  std::string d(target);
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  if (d.empty() || d.front() != '/' || d == "/") return {};
  if (d.find("//") != std::string::npos) return {};
  for (std::size_t start = 1; start <= d.size();) {
    auto end = d.find('/', start);
    auto part =
        std::string_view(d).substr(start, (end == std::string::npos ? d.size() : end) - start);
    if (part == "." || part == "..") return {};
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return d;
}

void add_persist_dir(Role& r, std::string_view target, const std::string& path, Warnings& w) {
  auto d = persist_dir(target);
  if (d.empty()) {
    w.add(path, fmt::format("target {} is not an absolute directory kstack can persist; ignored",
                            quoted(target)));
    return;
  }
  if (std::find(r.persist_dirs.begin(), r.persist_dirs.end(), d) == r.persist_dirs.end()) {
    r.persist_dirs.push_back(d);
  }
}

bool bind_source(std::string_view source) {
  return !source.empty() && (source.front() == '/' || source.front() == '.' ||
                             source.front() == '~' || source.find('/') != std::string_view::npos ||
                             source.find('\\') != std::string_view::npos);
}

void bind_warning(std::string_view source, std::string_view target, const std::string& path,
                  Warnings& w) {
  w.add(path, fmt::format("bind mount of host path {} on {} is not carried: members have no "
                          "host files (put configuration in the image or a setup package); "
                          "ignored",
                          quoted(source), target));
}

// "ro", "rw,z", "nocopy": the options of a short volume syntax.
bool volume_mode(std::string_view text) {
  if (text.empty()) return false;
  for (std::size_t start = 0; start <= text.size();) {
    auto comma = text.find(',', start);
    auto opt = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    if (opt != "ro" && opt != "rw" && opt != "z" && opt != "Z" && opt != "nocopy" &&
        opt != "consistent" && opt != "cached" && opt != "delegated") {
      return false;
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return true;
}

void convert_volumes(Role& r, const json::value& v, Warnings& w) {
  const std::string path = key(r.path, "volumes");
  const auto* a = v.if_array();
  if (a == nullptr) {
    if (!v.is_null()) w.add(path, "must be a list; ignored");
    return;
  }
  for (std::size_t i = 0; i < a->size(); ++i) {
    const std::string p = idx(path, i);
    const auto& item = (*a)[i];
    if (const auto* o = item.if_object()) {  // long syntax
      std::string type = "volume", source, target;
      if (const auto* t = o->if_contains("type"); t && t->is_string()) type = t->get_string();
      if (const auto* s = o->if_contains("source"); s && s->is_string()) source = s->get_string();
      if (const auto* t = o->if_contains("target"); t && t->is_string()) target = t->get_string();
      if (type == "bind") {
        bind_warning(source, target, p, w);
        continue;
      }
      if (type != "volume") {
        w.add(key(p, "type"),
              fmt::format("{} mounts are not carried; ignored", type == "tmpfs" ? "tmpfs" : type));
        continue;
      }
      if (target.empty()) {
        w.add(p, "has no target; ignored");
        continue;
      }
      for (const auto& [k, val] : *o) {
        if (k == "type" || k == "source" || k == "target" || is_extension(k)) continue;
        if (k == "read_only") {
          if (val.is_bool() && val.get_bool()) {
            w.add(key(p, k),
                  "read-only mounts are not carried: the member's claim is mounted "
                  "read-write");
          }
          continue;
        }
        w.add(key(p, k), "volume mount options are not carried; ignored");
      }
      add_persist_dir(r, target, p, w);
      if (!source.empty()) r.volumes.emplace_back(source, p);
      continue;
    }
    if (!item.is_string()) {
      w.add(p, "must be a string or a mapping; ignored");
      continue;
    }
    // [SOURCE:]TARGET[:MODE]
    std::string_view s = item.get_string();
    std::vector<std::string_view> parts;
    for (std::size_t start = 0;;) {
      auto colon = s.find(':', start);
      parts.push_back(s.substr(start, colon == std::string_view::npos ? colon : colon - start));
      if (colon == std::string_view::npos) break;
      start = colon + 1;
    }
    // A Windows drive letter (C:\...) in the source is a bind mount too.
    std::string_view source, target, mode;
    if (parts.size() == 1) {
      target = parts[0];
    } else if (parts.size() == 2) {
      if (volume_mode(parts[1])) {  // TARGET:MODE of an anonymous volume
        target = parts[0];
        mode = parts[1];
      } else {
        source = parts[0];
        target = parts[1];
      }
    } else {
      source = parts[0];
      target = parts[1];
      mode = parts[2];
    }
    if (bind_source(source)) {
      bind_warning(source, target, p, w);
      continue;
    }
    if (!mode.empty() && mode != "rw") {
      w.add(p, fmt::format("mode {} is not carried: the member's claim is mounted read-write",
                           quoted(mode)));
    }
    add_persist_dir(r, target, p, w);
    if (!source.empty()) r.volumes.emplace_back(std::string(source), p);
  }
}

// Compose memory ("512m", "1gb", "1073741824") -> a Kubernetes quantity ("512Mi").
std::optional<std::string> memory_quantity(const json::value& v) {
  if (auto n = integer(v); n && !v.is_string()) return std::to_string(*n);
  if (!v.is_string()) return std::nullopt;
  std::string s(v.get_string());
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  std::string number = s.substr(0, i), unit = s.substr(i);
  if (number.empty() || number.front() == '.' || number.back() == '.' ||
      std::count(number.begin(), number.end(), '.') > 1 || number.size() > 15) {
    return std::nullopt;
  }
  if (unit.size() == 2 && unit[1] == 'b' && unit[0] != 'b') unit.pop_back();
  if (unit.empty() || unit == "b") {
    if (number.find('.') != std::string::npos) return std::nullopt;
    return number;
  }
  static const std::map<std::string, std::string> suffix{
      {"k", "Ki"}, {"m", "Mi"}, {"g", "Gi"}, {"t", "Ti"}};
  auto it = suffix.find(unit);
  if (it == suffix.end()) return std::nullopt;
  return number + it->second;
}

// Compose cpus ("0.5", 2) -> a quantity ("0.5", "2").
std::optional<std::string> cpu_quantity(const json::value& v) {
  auto t = scalar_text(v);
  if (!t || t->empty() || v.is_bool() || t->size() > 15) return std::nullopt;
  int dots = 0;
  for (char c : *t) {
    if (c == '.') {
      ++dots;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return std::nullopt;
    }
  }
  if (dots > 1 || t->front() == '.' || t->back() == '.') return std::nullopt;
  return t;
}

void resource_list(const json::value& v, const std::string& path,
                   std::map<std::string, std::string>& into, Warnings& w) {
  const auto* o = v.if_object();
  if (o == nullptr) {
    if (!v.is_null()) w.add(path, "must be a mapping; ignored");
    return;
  }
  for (const auto& [k, val] : *o) {
    const std::string p = key(path, k);
    if (k == "cpus") {
      if (auto q = cpu_quantity(val)) {
        into["cpu"] = *q;
      } else {
        w.add(p, "is not a number of CPUs; ignored");
      }
    } else if (k == "memory") {
      if (auto q = memory_quantity(val)) {
        into["memory"] = *q;
      } else {
        w.add(p, "is not a Compose memory size (e.g. 512m, 1g); ignored");
      }
    } else if (!is_extension(k)) {
      w.add(p, fmt::format("{} is not carried (the Stack role's resources hold cpu and memory; "
                           "add other resources there yourself); ignored",
                           k));
    }
  }
}

void convert_deploy(Role& r, const json::value& v, Warnings& w) {
  const std::string path = key(r.path, "deploy");
  const auto* o = v.if_object();
  if (o == nullptr) {
    if (!v.is_null()) w.add(path, "must be a mapping; ignored");
    return;
  }
  for (const auto& [k, val] : *o) {
    const std::string p = key(path, k);
    if (k == "replicas") {
      auto n = integer(val);
      if (!n || *n < 0 || *n > kMaxStackMembers) {
        w.add(p, fmt::format("must be an integer between 0 and {}; ignored", kMaxStackMembers));
      } else {
        r.members = *n;
      }
    } else if (k == "resources") {
      const auto* res = val.if_object();
      if (res == nullptr) {
        w.add(p, "must be a mapping; ignored");
        continue;
      }
      for (const auto& [rk, rv] : *res) {
        if (rk == "limits") {
          resource_list(rv, key(p, rk), r.limits, w);
        } else if (rk == "reservations") {
          resource_list(rv, key(p, rk), r.requests, w);
        } else if (!is_extension(rk)) {
          w.add(key(p, rk), "unknown key; ignored");
        }
      }
    } else if (k == "mode") {
      auto t = scalar_text(val).value_or("");
      if (t != "replicated") {
        w.add(p, fmt::format("mode {} (one container per node) has no kstack equivalent: the "
                             "role runs deploy.replicas members (default 1); ignored",
                             quoted(t)));
      }
    } else if (k == "restart_policy") {
      w.add(p, "kstack always restarts a member's container (restartPolicy Always); ignored");
    } else if (k == "placement") {
      w.add(p,
            "placement is not carried (use the Stack's spec.roles[].nodeSelector, affinity "
            "or tolerations); ignored");
    } else if (k == "update_config" || k == "rollback_config") {
      w.add(p,
            "kstack rolls members one at a time (the Stack's spec.roles[].maxUnavailable); "
            "ignored");
    } else if (k == "labels") {
      w.add(p,
            "service labels are not carried (the Stack's spec.roles[].serviceLabels); "
            "ignored");
    } else if (k == "endpoint_mode") {
      w.add(p, "kstack gives each role a headless Service and each member a Service; ignored");
    } else if (!is_extension(k)) {
      w.add(p, "unknown deploy key; ignored");
    }
  }
}

// A Compose duration as whole seconds for a probe field; warnings name what changed.
std::optional<std::int64_t> probe_seconds(const json::value& v, const std::string& path,
                                          std::int64_t min, Warnings& w) {
  auto t = scalar_text(v);
  auto ns = t ? parse_compose_duration(*t) : std::nullopt;
  if (!ns) {
    w.add(path, "is not a Compose duration (e.g. 10s, 1m30s); left to the Kubernetes default");
    return std::nullopt;
  }
  constexpr std::int64_t kSecond = 1'000'000'000;
  std::int64_t s = *ns / kSecond + (*ns % kSecond != 0 ? 1 : 0);
  if (*ns % kSecond != 0) {
    w.add(path, fmt::format("{} rounded up to {} s (probes count whole seconds)", *t, s));
  }
  if (s < min) {
    w.add(path, fmt::format("{} is below the probe's minimum of {} s; {} s used", *t, min, min));
    s = min;
  }
  if (s > kInt32Max) {
    w.add(path, "is longer than a probe allows; left to the Kubernetes default");
    return std::nullopt;
  }
  return s;
}

void convert_healthcheck(Role& r, const json::value& v, Warnings& w) {
  const std::string path = key(r.path, "healthcheck");
  const auto* o = v.if_object();
  if (o == nullptr) {
    if (!v.is_null()) w.add(path, "must be a mapping; ignored");
    return;
  }
  if (const auto* d = o->if_contains("disable"); d && d->is_bool() && d->get_bool()) return;
  json::array command;
  bool none = false;
  if (const auto* t = o->if_contains("test")) {
    const std::string tp = key(path, "test");
    if (t->is_string() && t->get_string().empty()) {
      w.add(tp, "names no command; no readiness probe");
      return;
    }
    if (t->is_string()) {  // a string is CMD-SHELL
      command = {"/bin/sh", "-c", t->get_string()};
      r.texts.push_back({tp, std::string(t->get_string()), false, ""});
    } else if (const auto* a = t->if_array(); a && !a->empty() && (*a)[0].is_string()) {
      std::string_view form = (*a)[0].get_string();
      std::vector<std::string> words;
      for (std::size_t i = 1; i < a->size(); ++i) {
        auto s = scalar_text((*a)[i]);
        if (s) words.push_back(*s);
      }
      if (form == "NONE") {
        none = true;
      } else if (form == "CMD" && !words.empty()) {
        for (std::size_t i = 0; i < words.size(); ++i) {
          command.push_back(json::string(words[i]));
          r.texts.push_back({idx(tp, i + 1), words[i], false, i > 0 ? words[i - 1] : ""});
        }
      } else if (form == "CMD-SHELL" && !words.empty()) {
        std::string line;
        for (const auto& s : words) line += (line.empty() ? "" : " ") + s;
        command = {"/bin/sh", "-c", json::string(line)};
        r.texts.push_back({idx(tp, 1), line, false, ""});
      } else if (form == "CMD" || form == "CMD-SHELL") {
        w.add(tp, "names no command; no readiness probe");
        return;
      } else {
        w.add(tp, fmt::format("must start with CMD, CMD-SHELL or NONE and name a command (not "
                              "{}); no readiness probe",
                              quoted(form)));
        return;
      }
    } else {
      w.add(tp,
            "must be a string or a list starting with CMD, CMD-SHELL or NONE; no readiness "
            "probe");
      return;
    }
  } else {
    w.add(path,
          "has no test: the image's own HEALTHCHECK is not known to kstack; no readiness "
          "probe");
    return;
  }
  if (none) return;
  json::object probe{{"exec", {{"command", std::move(command)}}}};
  bool timeout_set = false;
  for (const auto& [k, val] : *o) {
    const std::string p = key(path, k);
    if (k == "test" || k == "disable" || is_extension(k)) continue;
    if (k == "interval") {
      if (auto s = probe_seconds(val, p, 1, w)) probe["periodSeconds"] = *s;
    } else if (k == "timeout") {
      timeout_set = true;
      if (auto s = probe_seconds(val, p, 1, w)) probe["timeoutSeconds"] = *s;
    } else if (k == "start_period") {
      if (auto s = probe_seconds(val, p, 0, w)) probe["initialDelaySeconds"] = *s;
    } else if (k == "retries") {
      auto n = integer(val);
      if (!n || *n < 1 || *n > kInt32Max) {
        w.add(p, "must be an integer >= 1; left to the Kubernetes default (3)");
      } else {
        probe["failureThreshold"] = *n;
      }
    } else if (k == "start_interval") {
      w.add(p,
            "has no probe equivalent (the probe runs every interval from the start); "
            "ignored");
    } else {
      w.add(p, "unknown key; ignored");
    }
  }
  // Compose's default timeout is 30 s, Kubernetes' 1 s: a slow check must not turn unready.
  if (!timeout_set) probe["timeoutSeconds"] = 30;
  // Keep the probe's fields in the API's order: handler, then the numbers.
  r.app_role["readinessProbe"] = std::move(probe);
}

void convert_depends_on(Role& r, const json::value& v, Warnings& w) {
  const std::string path = key(r.path, "depends_on");
  if (const auto* a = v.if_array()) {
    for (std::size_t i = 0; i < a->size(); ++i) {
      if ((*a)[i].is_string()) {
        r.depends.emplace_back(std::string((*a)[i].get_string()), idx(path, i));
      } else {
        w.add(idx(path, i), "must be a service name; ignored");
      }
    }
    return;
  }
  const auto* o = v.if_object();
  if (o == nullptr) {
    if (!v.is_null()) w.add(path, "must be a list or a mapping; ignored");
    return;
  }
  for (const auto& [name, spec] : *o) {
    const std::string p = key(path, name);
    bool keep = true;
    if (const auto* so = spec.if_object()) {
      for (const auto& [k, val] : *so) {
        const std::string kp = key(p, k);
        if (k == "condition") {
          auto c = scalar_text(val).value_or("");
          if (c == "service_completed_successfully") {
            w.add(kp,
                  "service_completed_successfully has no kstack equivalent (members run "
                  "until stopped and are restarted when they exit): the dependency is "
                  "dropped, the role starts without waiting");
            keep = false;
          } else if (c != "service_started" && c != "service_healthy") {
            w.add(kp, fmt::format("unknown condition {}; taken as service_started", quoted(c)));
          }
        } else if (k == "restart") {
          if (val.is_bool() && val.get_bool()) {
            w.add(kp,
                  "kstack does not restart a role when a role it depends on is updated; "
                  "ignored");
          }
        } else if (k == "required") {
          if (val.is_bool() && !val.get_bool()) {
            w.add(kp, "an optional dependency is not carried: the role waits for it");
          }
        } else if (!is_extension(k)) {
          w.add(kp, "unknown key; ignored");
        }
      }
    }
    if (keep) r.depends.emplace_back(name, p);
  }
}

bool hostish(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

// Whether a command word names a host in the next word: -h, or an option about hosts,
// servers, peers or replication (--host, --replicaof, --bootstrap-server, --join, ...).
bool host_option(std::string_view word) {
  if (word == "-h" || word == "-H") return true;
  if (word.empty() || word.front() != '-') return false;
  std::string lower(word);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* hint : {"host", "replicaof", "slaveof", "server", "connect", "join", "peer",
                           "master", "primary", "addr", "seed", "broker", "upstream"}) {
    if (lower.find(hint) != std::string::npos) return true;
  }
  return false;
}

// The services `t` uses as host names (a heuristic, docs/compose.md "Host names"): an
// environment value that is exactly the name (REDIS_HOST: redis); a word that is exactly it
// after a host option (--replicaof redis, -h db); or the name standing alone within a word after
// "//", '@' or '=' (http://elasticsearch:9200, postgres://u@db/app, --host=db) or before
// ':<digit>' (db:5432). Linear in the text: each run of host characters is looked up once.
std::set<std::string> mentioned(const HostText& t,
                                const std::map<std::string, std::string>& services) {
  std::set<std::string> out;
  if (t.env_value && services.count(t.text)) out.insert(t.text);
  std::string_view text = t.text;
  std::string_view prev = t.prev;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    std::size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    std::string_view word = text.substr(i, j - i);
    i = j;
    if (word.empty()) break;
    if (host_option(prev) && services.count(std::string(word))) out.insert(std::string(word));
    prev = word;
    for (std::size_t k = 0; k < word.size();) {
      while (k < word.size() && !hostish(word[k])) ++k;
      std::size_t start = k;
      while (k < word.size() && hostish(word[k])) ++k;
      std::string_view run = word.substr(start, k - start);
      while (!run.empty() && run.back() == '.') run.remove_suffix(1);
      if (run.empty()) continue;
      auto it = services.find(std::string(run));
      if (it == services.end()) continue;
      const std::size_t end = start + run.size();
      const char before = start == 0 ? ' ' : word[start - 1];
      const char after = end == word.size() ? ' ' : word[end];
      const bool url = before == '/' && start >= 2 && word[start - 2] == '/';
      const bool port_after = after == ':' && end + 1 < word.size() &&
                              std::isdigit(static_cast<unsigned char>(word[end + 1]));
      if (url || before == '@' || before == '=' || port_after) out.insert(it->first);
    }
  }
  return out;
}

Role convert_service(const std::string& name, const json::object& svc, const std::string& id,
                     Warnings& w) {
  Role r;
  r.service = name;
  r.id = id;
  r.path = key("services", name);
  r.app_role["id"] = id;
  r.app_role["cardinality"] = "1+";  // set once the members are known
  json::array env;
  std::optional<bool> tty, stdin_open;
  std::optional<std::int64_t> scale;
  for (const auto& [k, val] : svc) {
    const std::string p = key(r.path, k);
    if (is_extension(k)) continue;
    if (k == "image") {
      if (auto t = scalar_text(val); t && val.is_string()) {
        r.app_role["imageRepoTag"] = *t;
      } else {
        w.add(p, "must be a string; ignored");
      }
    } else if (k == "build") {
      if (svc.contains("image")) {
        w.add(p,
              "kstack builds no images: the role runs `image`, which must be pushed where "
              "the cluster pulls from; ignored");
      }  // without an image the conversion fails (below), naming build
    } else if (k == "command" || k == "entrypoint") {
      convert_command(r, val, k, w);
    } else if (k == "environment") {
      convert_environment(r, val, env, w);
    } else if (k == "ports") {
      convert_ports(r, val, w);
    } else if (k == "expose") {
      convert_expose(r, val, w);
    } else if (k == "volumes") {
      convert_volumes(r, val, w);
    } else if (k == "deploy") {
      convert_deploy(r, val, w);
    } else if (k == "healthcheck") {
      convert_healthcheck(r, val, w);
    } else if (k == "depends_on") {
      convert_depends_on(r, val, w);
    } else if (k == "tty" || k == "stdin_open") {
      if (!val.is_bool()) {
        w.add(p, "must be a boolean; ignored");
      } else {
        (k == "tty" ? tty : stdin_open) = val.get_bool();
      }
    } else if (k == "mem_limit" || k == "mem_reservation") {
      if (auto q = memory_quantity(val)) {
        auto& into = k == "mem_limit" ? r.limits : r.requests;
        into.emplace("memory", *q);  // deploy.resources, read after, wins
      } else {
        w.add(p, "is not a Compose memory size (e.g. 512m, 1g); ignored");
      }
    } else if (k == "cpus") {
      if (auto q = cpu_quantity(val)) {
        r.limits.emplace("cpu", *q);
      } else {
        w.add(p, "is not a number of CPUs; ignored");
      }
    } else if (k == "scale") {
      scale = integer(val);
      if (!scale || *scale < 0 || *scale > kMaxStackMembers) {
        w.add(p, "must be a non-negative integer; ignored");
        scale.reset();
      }
    } else if (k == "restart") {
      auto t = scalar_text(val).value_or("");
      if (t != "always" && t != "unless-stopped") {
        w.add(p, fmt::format("kstack always restarts a member's container (restartPolicy "
                             "Always), so restart {} is not carried",
                             quoted(t)));
      }
    } else if (auto it = unsupported_service_keys().find(k);
               it != unsupported_service_keys().end()) {
      w.add(p, std::string(it->second));
    } else {
      w.add(p, "unknown Compose service key; ignored");
    }
  }
  // deploy.resources was read in key order; mem_limit/cpus only fill what it left unset.
  if (!r.members && scale) r.members = scale;
  if (tty.value_or(false) || stdin_open.value_or(false)) {
    json::object cs;
    if (stdin_open.value_or(false) || tty.value_or(false)) cs["stdin"] = true;
    if (tty.value_or(false)) cs["tty"] = true;
    if (tty.value_or(false) && !stdin_open.value_or(false)) {
      w.add(key(r.path, "tty"), "a tty needs stdin in kstack: stdin is opened too");
    }
    r.app_role["containerSpec"] = std::move(cs);
  }
  if (!env.empty()) r.stack_role["env"] = std::move(env);
  return r;
}

std::string role_id_for(const std::string& service) { return sanitize_dns_label(service); }

void top_level_warnings(const json::object& file, Warnings& w) {
  for (const auto& [k, val] : file) {
    if (is_extension(k) || k == "services" || k == "name") continue;
    if (k == "version") {
      w.add(k, "obsolete in the Compose Specification; ignored");
    } else if (k == "volumes") {
      const auto* o = val.if_object();
      if (o == nullptr) continue;
      for (const auto& [name, spec] : *o) {
        const auto* so = spec.if_object();
        if (so == nullptr) continue;
        for (const auto& [opt, ov] : *so) {
          if (is_extension(opt)) continue;
          std::string p = key(key(k, name), opt);
          if (opt == "external") {
            w.add(p,
                  "kstack makes each member its own claim: an existing volume is not "
                  "attached; ignored");
          } else if (opt == "name") {
            w.add(p, "claims are named data-<stack>-<role>-<n>; ignored");
          } else {
            w.add(p, fmt::format("volume {} is not carried: members' claims are made from the "
                                 "Stack role's storage (size, storageClassName); ignored",
                                 opt));
          }
        }
      }
    } else if (k == "networks") {
      if (val.is_object() && !val.get_object().empty()) {
        w.add(k,
              "Compose networks have no kstack equivalent: every member can reach every "
              "other member of the cluster; ignored");
      }
    } else if (k == "secrets") {
      w.add(k, "Compose secrets are not carried: create Kubernetes Secrets yourself; ignored");
    } else if (k == "configs") {
      w.add(k, "Compose configs are not carried: create ConfigMaps yourself; ignored");
    } else if (k == "include") {
      w.add(k, "included files are not read: merge them into this file first; ignored");
    } else if (k == "models") {
      w.add(k, "has no kstack equivalent; ignored");
    } else {
      w.add(k, "unknown top-level Compose key; ignored");
    }
  }
}

ComposeResult fail(std::string why) {
  ComposeResult r;
  r.error = std::move(why);
  return r;
}

}  // namespace

std::string format_warning(const ComposeWarning& warning) {
  return warning.path.empty() ? warning.message
                              : fmt::format("{}: {}", warning.path, warning.message);
}

std::optional<std::vector<std::string>> split_command(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  std::size_t i = 0;
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (i < text.size()) {
    char c = text[i];
    if (is_space(c)) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      ++i;
    } else if (c == '\\') {
      if (i + 1 == text.size()) return std::nullopt;
      if (text[i + 1] != '\n') word += text[i + 1];  // backslash-newline joins lines
      in_word = true;
      i += 2;
    } else if (c == '\'') {
      auto close = text.find('\'', i + 1);
      if (close == std::string_view::npos) return std::nullopt;
      word += text.substr(i + 1, close - i - 1);
      in_word = true;
      i = close + 1;
    } else if (c == '"') {
      ++i;
      bool closed = false;
      while (i < text.size()) {
        char d = text[i];
        if (d == '"') {
          closed = true;
          ++i;
          break;
        }
        if (d == '\\' && i + 1 < text.size() &&
            (text[i + 1] == '"' || text[i + 1] == '\\' || text[i + 1] == '$' ||
             text[i + 1] == '`' || text[i + 1] == '\n')) {
          if (text[i + 1] != '\n') word += text[i + 1];
          i += 2;
          continue;
        }
        word += d;
        ++i;
      }
      if (!closed) return std::nullopt;
      in_word = true;
    } else {
      word += c;
      in_word = true;
      ++i;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::optional<std::int64_t> parse_compose_duration(std::string_view text) {
  // Go's time.ParseDuration units; a bare number is seconds, as Compose accepts.
  if (text.empty() || text.size() > 64) return std::nullopt;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  bool all_digits = std::all_of(text.begin(), text.end(),
                                [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (all_digits) {
    if (text.size() > 9) return std::nullopt;
    return std::stoll(std::string(text)) * 1'000'000'000;
  }
  static const std::vector<std::pair<std::string_view, double>> units{
      {"ns", 1.0}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
  double total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (i == start) return std::nullopt;
    std::string number(text.substr(start, i - start));
    if (std::count(number.begin(), number.end(), '.') > 1 || number == ".") return std::nullopt;
    std::size_t ustart = i;
    while (i < text.size() && !std::isdigit(static_cast<unsigned char>(text[i])) && text[i] != '.')
      ++i;
    std::string_view unit = text.substr(ustart, i - ustart);
    auto it =
        std::find_if(units.begin(), units.end(), [&](const auto& u) { return u.first == unit; });
    if (it == units.end()) return std::nullopt;
    total += std::stod(number) * it->second;
    if (total > static_cast<double>(kMax) / 2) return std::nullopt;
  }
  return static_cast<std::int64_t>(std::llround(total));
}

std::string sanitize_dns_label(std::string_view text) {
  std::string out;
  for (char c : text) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9');
    if (ok) {
      out += l;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.size() > kMaxDnsLabel) out.resize(kMaxDnsLabel);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

ComposeResult convert_compose(const json::value& compose, const ComposeOptions& options) {
  if (!compose.is_object()) return fail("not a Compose file: the document is not a mapping");
  json::value file = compose;
  apply_merge_keys(file, 0);
  Warnings w;
  interpolate_tree(file, "", w, 0);
  const auto& top = file.get_object();

  // The name.
  std::string name_source, raw_name;
  if (options.name) {
    raw_name = *options.name;
    name_source = "--name";
  } else if (const auto* n = top.if_contains("name"); n && n->is_string()) {
    raw_name = n->get_string();
    name_source = "name";
  } else {
    raw_name = options.directory_name;
    name_source = "the file's directory";
  }
  std::string name = sanitize_dns_label(raw_name);
  if (name.empty()) {
    return fail(
        fmt::format("no usable name from {} ({}): give --name", name_source, quoted(raw_name)));
  }
  if (name != raw_name) {
    w.add(name_source == "name" ? "name" : "",
          fmt::format("the AppType and Stack are named {} (from {} {}, made a DNS label)",
                      quoted(name), name_source, quoted(raw_name)));
  }

  const auto* services = top.if_contains("services");
  if (services == nullptr || !services->is_object() || services->get_object().empty()) {
    return fail("not a Compose file: it has no services");
  }
  top_level_warnings(top, w);

  // Role ids, each once.
  std::map<std::string, std::string> id_of;  // service -> role id
  std::map<std::string, std::string> service_of;
  for (const auto& [svc, spec] : services->get_object()) {
    if (is_extension(svc)) continue;
    std::string id = role_id_for(svc);
    if (id.empty())
      return fail(fmt::format("services.{}: no role id can be made of this name", svc));
    if (auto it = service_of.find(id); it != service_of.end()) {
      return fail(fmt::format("services.{}: its role id {} is also the role id of service {}", svc,
                              quoted(id), quoted(it->second)));
    }
    service_of[id] = svc;
    id_of[svc] = id;
    if (id != std::string(svc)) {
      w.add(key("services", svc), fmt::format("role id {} (a role id is a DNS label)", quoted(id)));
    }
  }

  std::vector<Role> roles;
  for (const auto& [svc, spec] : services->get_object()) {
    if (is_extension(svc)) continue;
    const std::string p = key("services", svc);
    const auto* so = spec.if_object();
    if (so == nullptr) return fail(fmt::format("{}: a service must be a mapping", p));
    if (const auto* img = so->if_contains("image"); img == nullptr || !img->is_string()) {
      return fail(fmt::format(
          "{}: no image{}: kstack runs images and builds none; build and push the image, then "
          "set {}.image",
          p, so->contains("build") ? fmt::format(" ({}.build only)", p) : "", p));
    }
    roles.push_back(convert_service(svc, *so, id_of.at(svc), w));
  }
  if (roles.empty()) return fail("not a Compose file: it has no services");

  // Named volumes used by more than one service are not shared in kstack.
  std::map<std::string, std::string> first_user;  // volume -> service
  for (const auto& r : roles) {
    std::set<std::string> seen;
    for (const auto& [vol, path] : r.volumes) {
      if (!seen.insert(vol).second) continue;
      auto [it, inserted] = first_user.emplace(vol, r.service);
      if (!inserted) {
        w.add(path, fmt::format("volume {} is also mounted by service {}: in kstack every member "
                                "has a claim of its own, so they do not share its files",
                                quoted(vol), quoted(it->second)));
      }
    }
  }

  // Host names: a Compose service name in another text is a host that kstack does not make.
  ObjectNames names(false, name, "");
  for (const auto& r : roles) {
    for (const auto& text : r.texts) {
      for (const auto& svc : mentioned(text, id_of)) {
        const auto& id = id_of.at(svc);
        w.add(text.path,
              fmt::format("mentions {}, a host name in Compose: kstack makes no host of "
                          "that name; role {}'s members are {}, {}, ... (<stack>-<role>-<n>."
                          "<stack>, namingScheme CrNameRole)",
                          quoted(svc), quoted(id),
                          names.member(id, 0) + "." + names.headless_service(),
                          names.member(id, 1) + "." + names.headless_service()));
      }
    }
  }

  // The AppType.
  std::map<std::int64_t, PortUse> all_ports;
  for (const auto& r : roles) {
    for (const auto& p : r.ports) all_ports.emplace(p.port, p);
  }
  json::array app_services;
  for (const auto& [port, use] : all_ports) {
    json::object endpoint{{"port", port}};
    if (!use.app_protocol.empty()) endpoint["urlScheme"] = use.app_protocol;
    app_services.push_back(json::object{
        {"id", fmt::format("port-{}", port)},
        {"label", {{"name", use.name.empty() ? fmt::format("port {}", port) : use.name}}},
        {"endpoint", std::move(endpoint)}});
  }
  json::array app_roles, role_services, selected, stack_roles;
  for (auto& r : roles) {
    std::int64_t members = r.members.value_or(1);
    r.app_role["cardinality"] = members > 0 ? "1+" : "0+";
    if (!r.persist_dirs.empty()) {
      json::array dirs;
      for (const auto& d : r.persist_dirs) dirs.push_back(json::string(d));
      r.app_role["persistDirs"] = std::move(dirs);
    }
    json::array depends;
    std::set<std::string> seen;
    for (const auto& [svc, path] : r.depends) {
      auto it = id_of.find(svc);
      if (it == id_of.end()) {
        w.add(path, fmt::format("no service {} in the file; ignored", quoted(svc)));
        continue;
      }
      if (it->second == r.id) {
        w.add(path, "a service cannot depend on itself; ignored");
        continue;
      }
      if (seen.insert(it->second).second) depends.push_back(json::string(it->second));
    }
    if (!depends.empty()) r.app_role["dependsOn"] = std::move(depends);
    app_roles.push_back(r.app_role);
    json::array ids;
    for (const auto& p : r.ports) ids.push_back(json::string(fmt::format("port-{}", p.port)));
    if (!ids.empty()) {
      role_services.push_back(json::object{{"roleID", r.id}, {"serviceIDs", std::move(ids)}});
    }
    if (members > 0) selected.push_back(json::string(r.id));

    json::object sr{{"id", r.id}, {"members", members}};
    if (!r.limits.empty() || !r.requests.empty()) {
      json::object res;
      auto list = [](const std::map<std::string, std::string>& m) {
        json::object o;
        for (const auto& [k, v] : m) o[k] = v;
        return o;
      };
      if (!r.requests.empty()) res["requests"] = list(r.requests);
      if (!r.limits.empty()) res["limits"] = list(r.limits);
      sr["resources"] = std::move(res);
    }
    if (const auto* env = r.stack_role.if_contains("env")) sr["env"] = *env;
    if (!r.persist_dirs.empty()) sr["storage"] = json::object{{"size", options.storage_size}};
    stack_roles.push_back(std::move(sr));
  }

  auto metadata = [&] {
    json::object md{{"name", name}};
    if (options.namespace_name) md["namespace"] = *options.namespace_name;
    return md;
  };
  json::object config;
  if (!role_services.empty()) config["roleServices"] = std::move(role_services);
  if (!selected.empty()) config["selectedRoles"] = std::move(selected);
  json::object spec{
      {"label",
       {{"name", name}, {"description", "Converted from a Compose file by kstack import compose"}}},
      {"distroID", "compose/" + name},
      {"version", "1"},
      {"configSchemaVersion", 8}};
  if (!app_services.empty()) spec["services"] = std::move(app_services);
  spec["roles"] = std::move(app_roles);
  if (!config.empty()) spec["config"] = std::move(config);

  ComposeResult result;
  result.apptype = json::object{{"apiVersion", kApiVersion},
                                {"kind", kAppTypeKind},
                                {"metadata", metadata()},
                                {"spec", std::move(spec)}};
  result.stack = json::object{{"apiVersion", kApiVersion},
                              {"kind", kStackKind},
                              {"metadata", metadata()},
                              {"spec",
                               {{"app", name},
                                {"appCatalog", kCatalogLocal},
                                {"namingScheme", kNamingCrNameRole},
                                {"roles", std::move(stack_roles)}}}};
  // Warnings in the file's order: top-level keys as written, each service's together (its
  // variables, keys, shared volumes and host names), in discovery order within.
  std::map<std::string, std::size_t> top_rank, service_rank;
  for (const auto& [k, v] : top) top_rank.emplace(k, top_rank.size());
  for (const auto& [k, v] : services->get_object()) service_rank.emplace(k, service_rank.size());
  auto rank = [&](const ComposeWarning& cw) -> std::pair<std::size_t, std::size_t> {
    if (cw.path.empty()) return {0, 0};
    std::string first = cw.path.substr(0, cw.path.find_first_of(".["));
    auto t = top_rank.find(first);
    std::size_t ti = t == top_rank.end() ? top_rank.size() : t->second + 1;
    if (first != "services") return {ti, 0};
    // services.<name>...: a name may hold '.', so the longest name that is a service wins.
    std::size_t si = service_rank.size();
    const std::size_t from = first.size() + 1;
    for (std::size_t end = from; end <= cw.path.size(); ++end) {
      if (end < cw.path.size() && cw.path[end] != '.' && cw.path[end] != '[') continue;
      if (auto it = service_rank.find(cw.path.substr(from, end - from)); it != service_rank.end())
        si = it->second;
    }
    return {ti, si};
  };
  std::vector<std::pair<std::pair<std::size_t, std::size_t>, ComposeWarning>> ranked;
  ranked.reserve(w.list.size());
  for (auto& cw : w.list) ranked.emplace_back(rank(cw), std::move(cw));
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  w.list.clear();
  for (auto& [r, cw] : ranked) w.list.push_back(std::move(cw));
  result.warnings = std::move(w.list);
  return result;
}

}  // namespace kstack::catalog
