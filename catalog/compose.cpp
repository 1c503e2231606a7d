// Compose -> AppType + Stack (catalog/compose.h, docs/compose.md): the file as a whole (merge
// keys, interpolation, top-level keys, the name and role ids, the AppType and the Stack made of
// the roles, the warnings' order), the helpers the parts share (catalog/compose_internal.h
// lists the parts) and the public functions.
#include "catalog/compose.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/compose_internal.h"
#include "catalog/model.h"
#include "catalog/names.h"

namespace kstack::catalog {

namespace compose_detail {

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
  if (v.is_string()) return decimal(v.get_string(), 18);
  return std::nullopt;
}

std::optional<std::int64_t> decimal(std::string_view s, std::size_t max_size) {
  if (s.empty() || s.size() > max_size) return std::nullopt;
  std::int64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::string quoted(std::string_view s) { return json::serialize(json::value(json::string(s))); }

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    auto at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return parts;
}

const json::object* mapping(const json::value& v, const std::string& path, Warnings& w) {
  const auto* o = v.if_object();
  if (o == nullptr && !v.is_null()) w.add(path, "must be a mapping; ignored");
  return o;
}

}  // namespace compose_detail

namespace {

using compose_detail::is_extension;
using compose_detail::key;
using compose_detail::quoted;
using compose_detail::Role;
using compose_detail::Warnings;
namespace json = boost::json;

// Bounds on what one file may make (its size is bounded by the caller's read cap).
constexpr std::size_t kMaxMergeDepth = 64;
constexpr std::size_t kMaxInterpolationDepth = 8;  // ${A:-${B:-...}}

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
      interpolate_tree((*a)[i], compose_detail::idx(path, i), w, depth + 1);
  } else if (auto* o = v.if_object()) {
    for (auto& [k, child] : *o) {
      if (is_extension(k)) continue;
      interpolate_tree(child, key(path, k), w, depth + 1);
    }
  }
}

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

std::string role_id_for(const std::string& service) { return sanitize_dns_label(service); }

// Warnings in the file's order: top-level keys as written, each service's together (its
// variables, keys, shared volumes and host names), in discovery order within.
std::vector<ComposeWarning> in_file_order(std::vector<ComposeWarning> list, const json::object& top,
                                          const json::object& services) {
  std::map<std::string, std::size_t> top_rank, service_rank;
  for (const auto& [k, v] : top) top_rank.emplace(k, top_rank.size());
  for (const auto& [k, v] : services) service_rank.emplace(k, service_rank.size());
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
  ranked.reserve(list.size());
  for (auto& cw : list) ranked.emplace_back(rank(cw), std::move(cw));
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  list.clear();
  for (auto& [r, cw] : ranked) list.push_back(std::move(cw));
  return list;
}

}  // namespace

std::string format_warning(const ComposeWarning& warning) {
  return warning.path.empty() ? warning.message
                              : fmt::format("{}: {}", warning.path, warning.message);
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

ComposeResult convert_compose(const boost::json::value& compose, const ComposeOptions& options) {
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
    roles.push_back(compose_detail::convert_service(svc, *so, id_of.at(svc), w));
  }
  if (roles.empty()) return fail("not a Compose file: it has no services");

  compose_detail::shared_volume_warnings(roles, w);
  compose_detail::host_name_warnings(roles, id_of, name, w);

  // The AppType.
  std::map<std::int64_t, compose_detail::PortUse> all_ports;
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
  result.warnings = in_file_order(std::move(w.list), top, services->get_object());
  return result;
}

}  // namespace kstack::catalog
