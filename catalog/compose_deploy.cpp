// A Compose service's `deploy` and `healthcheck` (catalog/compose_internal.h): replicas become
// the Stack role's members, resource limits and reservations its resources (mem_limit and cpus
// use the same quantities), and the health check the AppType role's readiness probe. Also
// parse_compose_duration (catalog/compose.h).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/compose.h"
#include "catalog/compose_internal.h"
#include "catalog/model.h"

namespace kstack::catalog {
namespace compose_detail {

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

namespace {

void resource_list(const json::value& v, const std::string& path,
                   std::map<std::string, std::string>& into, Warnings& w) {
  const auto* o = mapping(v, path, w);
  if (o == nullptr) return;
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

}  // namespace

void convert_deploy(Role& r, const json::value& v, Warnings& w) {
  const std::string path = key(r.path, "deploy");
  const auto* o = mapping(v, path, w);
  if (o == nullptr) return;
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

void convert_healthcheck(Role& r, const json::value& v, Warnings& w) {
  const std::string path = key(r.path, "healthcheck");
  const auto* o = mapping(v, path, w);
  if (o == nullptr) return;
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

}  // namespace compose_detail

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

}  // namespace kstack::catalog
