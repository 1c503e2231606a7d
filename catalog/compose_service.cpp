// One Compose service -> an AppType role and a Stack role (catalog/compose_internal.h): the
// service's keys, with its command/entrypoint, environment and depends_on; ports, volumes,
// deploy and healthcheck have files of their own. Also split_command (catalog/compose.h).
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <string_view>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/compose.h"
#include "catalog/compose_internal.h"
#include "catalog/model.h"

namespace kstack::catalog {
namespace compose_detail {
namespace {

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

}  // namespace

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

}  // namespace compose_detail

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

}  // namespace kstack::catalog
