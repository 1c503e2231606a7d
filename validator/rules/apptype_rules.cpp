#include "validator/rules/apptype_rules.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "catalog/defaults.h"
#include "catalog/parse.h"
#include "catalog/quantity.h"
#include "kube/json_equal.h"
#include "kube/json_member.h"

namespace kstack::validator {
namespace json = boost::json;
using catalog::child_path;
using catalog::index_path;
using catalog::key_path;

namespace {

bool has_control_or_space(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return true;
  }
  return false;
}

// The check_* functions below take a field's path as a callable that spells it, called only
// for an error: an object admitted has none, and building every path it could have had one
// at was a tenth of an AppType's validation (a string allocated and freed per field).
void check_persist_dir(const std::string& dir, const auto& path, Violations& out) {
  if (dir.empty() || dir.front() != '/') {
    out.push_back({path(), "must be an absolute path"});
    return;
  }
  if (dir == "/") {
    out.push_back({path(), "must not be the root directory"});
    return;
  }
  if (dir.back() == '/') out.push_back({path(), "must not end with '/'"});
  std::size_t start = 1;
  while (start <= dir.size()) {
    std::size_t end = dir.find('/', start);
    std::string_view part(dir.data() + start,
                          (end == std::string::npos ? dir.size() : end) - start);
    if (part == "." || part == "..") {
      out.push_back({path(), "must not contain '.' or '..' components"});
      return;
    }
    if (part.empty() && end != std::string::npos) {
      out.push_back({path(), "must not contain '//'"});
      return;
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

void check_persist_dirs(const std::optional<std::vector<std::string>>& dirs, const auto& path,
                        Violations& out) {
  if (!dirs) return;
  for (std::size_t i = 0; i < dirs->size(); ++i)
    check_persist_dir((*dirs)[i], [&] { return index_path(path(), i); }, out);
}

void check_events(const std::optional<std::vector<std::string>>& events, const auto& path,
                  Violations& out) {
  if (!events) return;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < events->size(); ++i) {
    const auto& e = (*events)[i];
    if (e != catalog::kEventConfigure && e != catalog::kEventAddNodes &&
        e != catalog::kEventDelNodes && e != catalog::kEventPreUpgrade &&
        e != catalog::kEventUpgradeNodes) {
      out.push_back({index_path(path(), i), fmt::format("unsupported event \"{}\": must be one of "
                                                        "configure, addnodes, delnodes, "
                                                        "preupgrade, upgradenodes",
                                                        e)});
    } else if (!seen.insert(e).second) {
      out.push_back({index_path(path(), i), fmt::format("duplicate event \"{}\"", e)});
    }
  }
}

// spec.upgradeFrom: names of other AppTypes of this namespace, each once.
void check_upgrade_from(const catalog::AppType& app, Violations& out) {
  const auto& from = app.spec.upgrade_from;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < from.size(); ++i) {
    std::string p = index_path("spec.upgradeFrom", i);
    if (from[i].empty()) {
      out.push_back({p, "must be the name of an AppType"});
      continue;
    }
    add_errors(out, p, dns1123_subdomain_errors(from[i]));
    if (!app.metadata.name.empty() && from[i] == app.metadata.name) {
      out.push_back({p, fmt::format("an AppType cannot upgrade from itself (\"{}\")", from[i])});
    } else if (!seen.insert(from[i]).second) {
      out.push_back({p, fmt::format("duplicate AppType \"{}\"", from[i])});
    }
  }
}

// configmap://<name>/<key>: the operator reads binaryData[key] of ConfigMap <name>.
void check_configmap_url(std::string_view rest, const auto& path, Violations& out) {
  auto slash = rest.find('/');
  if (slash == std::string_view::npos) {
    out.push_back({path(), "must be configmap://<name>/<key>"});
    return;
  }
  std::string_view name = rest.substr(0, slash), key = rest.substr(slash + 1);
  for (const auto& e : dns1123_subdomain_errors(name)) {
    out.push_back({path(), fmt::format("ConfigMap name \"{}\": {}", name, e)});
  }
  bool key_ok = !key.empty() && key.size() <= 253 && key != "." && key != "..";
  for (char c : key) {
    key_ok = key_ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.');
  }
  if (!key_ok) {
    out.push_back({path(), fmt::format("ConfigMap key \"{}\" must consist of alphanumeric "
                                       "characters, '-', '_' or '.' (at most 253)",
                                       key)});
  }
}

void check_package(const catalog::PackageField& field, const auto& path, Violations& out) {
  if (field.state != catalog::PackageField::State::kPackage) return;
  const auto& url = field.package.package_url;
  const auto url_path = [&] { return child_path(path(), "packageURL"); };
  if (url.empty()) return;  // reported as required by the decoder
  if (has_control_or_space(url)) {
    out.push_back({url_path(), "must not contain spaces or control characters"});
  } else if (url.starts_with("file://")) {
    if (url.size() <= 8 || url[7] != '/') {
      out.push_back({url_path(),
                     "a file:// URL must name an absolute path in the image "
                     "(file:///path)"});
    }
  } else if (url.starts_with("http://") || url.starts_with("https://")) {
    std::string_view rest = std::string_view(url).substr(url.find("://") + 3);
    if (rest.empty() || rest.front() == '/') out.push_back({url_path(), "must name a host"});
  } else if (url.starts_with("configmap://")) {
    check_configmap_url(std::string_view(url).substr(12), url_path, out);
  } else {
    out.push_back({url_path(),
                   "unsupported scheme: must be file://, http://, https:// or "
                   "configmap://<name>/<key>"});
  }
  if (const auto& sha = field.package.sha256) {
    bool ok = sha->size() == 64;
    for (char c : *sha)
      ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'));
    if (!ok) out.push_back({child_path(path(), "sha256"), "must be 64 hexadecimal characters"});
  }
}

void check_quantity(const std::string& text, const auto& path, Violations& out) {
  auto q = catalog::Quantity::parse(text);
  if (!q) {
    out.push_back({path(), q.error().message});
  } else if (q->sign() < 0) {
    out.push_back({path(), "must not be negative"});
  }
}

// An integer 1..kMaxStackMembers or "N%" with N 1..100, as a PodDisruptionBudget's minAvailable
// (0 or 0% would protect nothing; above the member limit it could never be met).
void check_min_available(const boost::json::value& v, const auto& path, Violations& out) {
  if (v.is_int64()) {
    if (v.get_int64() < 1 || v.get_int64() > catalog::kMaxStackMembers) {
      out.push_back(
          {path(), fmt::format("must be between 1 and {} (or a percentage \"N%\"), not {}",
                               catalog::kMaxStackMembers, v.get_int64())});
    }
    return;
  }
  if (!v.is_string()) return;  // null: not declared; other kinds: the decoder reported them
  std::string_view text = v.get_string();
  std::string_view digits = text;
  bool ok = digits.size() >= 2 && digits.back() == '%';
  if (ok) digits.remove_suffix(1);
  ok = ok && digits.size() <= 3 &&
       std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  int percent = 0;
  if (ok) {
    for (char c : digits) percent = percent * 10 + (c - '0');
  }
  if (!ok || percent < 1 || percent > 100) {
    out.push_back({path(), fmt::format("must be an integer or a percentage \"N%\" with N between 1 "
                                       "and 100, not \"{}\"",
                                       text)});
  }
}

void check_role(const catalog::AppType& app, const catalog::AppRole& role, const std::string& p,
                Violations& out) {
  if (!role.id.empty()) {
    if (auto e = dns1123_label_errors(role.id); !e.empty()) add_errors(out, child_path(p, "id"), e);
  }
  if (!role.cardinality.empty()) {
    auto c = catalog::parse_cardinality(role.cardinality);
    if (!c) {
      out.push_back({child_path(p, "cardinality"), c.error().message});
    } else if (c->min > catalog::kMaxStackMembers) {
      out.push_back({child_path(p, "cardinality"),
                     fmt::format("minimum {} exceeds the limit of {} members per stack", c->min,
                                 catalog::kMaxStackMembers)});
    }
  }
  if (!catalog::role_image(app, role)) {
    out.push_back(
        {child_path(p, "imageRepoTag"), "is required when spec.defaultImageRepoTag is not set"});
  }
  if (role.command && (role.command->empty() || role.command->front().empty())) {
    out.push_back({child_path(p, "command"),
                   "must name the program to run (a non-empty first word); leave command out to "
                   "run the image's entrypoint"});
  }
  check_package(
      role.config_package, [&] { return child_path(p, "configPackage"); }, out);
  check_persist_dirs(
      role.persist_dirs, [&] { return child_path(p, "persistDirs"); }, out);
  check_events(
      role.event_list, [&] { return child_path(p, "eventList"); }, out);
  for (const auto& resource : role.min_resources) {
    check_quantity(
        resource.second, [&] { return key_path(child_path(p, "minResources"), resource.first); },
        out);
  }
  if (role.min_storage && !role.min_storage->size.empty()) {
    check_quantity(
        role.min_storage->size, [&] { return child_path(p, "minStorage.size"); }, out);
  }
  if (role.container_spec.tty && !role.container_spec.stdin_open) {
    out.push_back({child_path(p, "containerSpec.tty"), "requires containerSpec.stdin to be true"});
  }
  check_min_available(
      role.min_available, [&] { return child_path(p, "minAvailable"); }, out);
}

// dependsOn: other roles of this AppType, each once, and no cycle (a cycle would hold every
// role in it back for ever). A cycle is reported once, at the role where the search meets it.
void check_depends_on(const catalog::AppTypeSpec& s, Violations& out) {
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < s.roles.size(); ++i) index.emplace(s.roles[i].id, i);
  for (std::size_t i = 0; i < s.roles.size(); ++i) {
    const auto& role = s.roles[i];
    std::set<std::string> seen;
    for (std::size_t j = 0; j < role.depends_on.size(); ++j) {
      const auto& dep = role.depends_on[j];
      const auto path = [&] {
        return index_path(child_path(index_path("spec.roles", i), "dependsOn"), j);
      };
      if (dep == role.id) {
        out.push_back({path(), fmt::format("role \"{}\" cannot depend on itself", role.id)});
      } else if (!index.contains(dep)) {
        out.push_back({path(), fmt::format("\"{}\" is not a role of this AppType", dep)});
      } else if (!seen.insert(dep).second) {
        out.push_back({path(), fmt::format("duplicate role \"{}\"", dep)});
      }
    }
  }
  // Depth-first search over the valid edges: 0 unvisited, 1 on the path, 2 done.
  std::vector<int> mark(s.roles.size(), 0);
  std::vector<std::string> path;
  std::function<bool(std::size_t)> visit = [&](std::size_t i) {
    mark[i] = 1;
    path.push_back(s.roles[i].id);
    for (const auto& dep : s.roles[i].depends_on) {
      auto it = index.find(dep);
      if (it == index.end() || it->second == i) continue;
      if (mark[it->second] == 1) {
        path.push_back(dep);
        auto from = std::find(path.begin(), path.end(), dep);
        out.push_back({child_path(index_path("spec.roles", i), "dependsOn"),
                       fmt::format("cycle: {}", fmt::join(from, path.end(), " -> "))});
        return true;
      }
      if (mark[it->second] == 0 && visit(it->second)) return true;
    }
    path.pop_back();
    mark[i] = 2;
    return false;
  };
  for (std::size_t i = 0; i < s.roles.size(); ++i) {
    if (mark[i] == 0 && visit(i)) return;
  }
}

void check_service(const catalog::AppService& s, const std::string& p, Violations& out) {
  if (!s.id.empty()) {
    if (auto e = iana_svc_name_errors(s.id); !e.empty()) add_errors(out, child_path(p, "id"), e);
  }
  if (!s.endpoint) return;
  std::string ep = child_path(p, "endpoint");
  if (s.endpoint->port && (*s.endpoint->port < 1 || *s.endpoint->port > 65535)) {
    out.push_back({child_path(ep, "port"), "must be between 1 and 65535, inclusive"});
  }
  if (s.endpoint->is_dashboard && s.endpoint->url_scheme.empty()) {
    out.push_back({child_path(ep, "urlScheme"), "is required when isDashboard is true"});
  }
}

// Reports ids seen before, at their index: "duplicate role id \"x\"".
void check_unique(const std::vector<std::string>& ids, const std::string& list_path,
                  std::string_view field, std::string_view what, Violations& out) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i].empty()) continue;
    if (!seen.insert(ids[i]).second) {
      std::string path =
          field.empty() ? index_path(list_path, i) : child_path(index_path(list_path, i), field);
      out.push_back({path, fmt::format("duplicate {} \"{}\"", what, ids[i])});
    }
  }
}

void check_config(const catalog::AppType& app, Violations& out) {
  const auto& cfg = app.spec.config;
  std::vector<std::string> role_ids;
  for (const auto& rs : cfg.role_services) role_ids.push_back(rs.role_id);
  check_unique(role_ids, "spec.config.roleServices", "roleID", "roleID", out);
  for (std::size_t i = 0; i < cfg.role_services.size(); ++i) {
    const auto& rs = cfg.role_services[i];
    std::string p = index_path("spec.config.roleServices", i);
    if (!rs.role_id.empty() && catalog::find_role(app, rs.role_id) == nullptr) {
      out.push_back({child_path(p, "roleID"), fmt::format("role \"{}\" is not defined in "
                                                          "spec.roles",
                                                          rs.role_id)});
    }
    check_unique(rs.service_ids, child_path(p, "serviceIDs"), "", "service id", out);
    for (std::size_t j = 0; j < rs.service_ids.size(); ++j) {
      if (catalog::find_service(app, rs.service_ids[j]) == nullptr) {
        out.push_back(
            {index_path(child_path(p, "serviceIDs"), j),
             fmt::format("service \"{}\" is not defined in spec.services", rs.service_ids[j])});
      }
    }
  }
  check_unique(cfg.selected_roles, "spec.config.selectedRoles", "", "role", out);
  for (std::size_t i = 0; i < cfg.selected_roles.size(); ++i) {
    if (catalog::find_role(app, cfg.selected_roles[i]) == nullptr) {
      out.push_back(
          {index_path("spec.config.selectedRoles", i),
           fmt::format("role \"{}\" is not defined in spec.roles", cfg.selected_roles[i])});
    }
  }
}

}  // namespace

Violations validate_apptype(const catalog::AppType& app) {
  Violations out;
  const auto& s = app.spec;
  if (!app.metadata.name.empty()) {
    add_errors(out, "metadata.name", dns1123_subdomain_errors(app.metadata.name));
  }
  // KubeDirector's distroIDs are "vendor/app" (not label values); the reconciler turns the id
  // into a valid app.kubernetes.io/name value, so only text unfit for any label is refused.
  if (s.distro_id.size() > 253) {
    out.push_back({"spec.distroID", "must be no more than 253 characters"});
  } else if (std::any_of(s.distro_id.begin(), s.distro_id.end(), [](char ch) {
               return std::isspace(static_cast<unsigned char>(ch)) != 0 ||
                      std::iscntrl(static_cast<unsigned char>(ch)) != 0;
             })) {
    out.push_back({"spec.distroID", "must not contain whitespace or control characters"});
  }
  if (s.config_schema_version && *s.config_schema_version < 1) {
    out.push_back({"spec.configSchemaVersion", "must be greater than or equal to 1"});
  }
  if (s.roles.empty() && catalog::to_json(app).is_object()) {
    // Present but empty (absent is the decoder's "is required").
    const auto* spec = catalog::to_json(app).get_object().if_contains("spec");
    const auto* roles =
        spec && spec->is_object() ? spec->get_object().if_contains("roles") : nullptr;
    if (roles && roles->is_array()) out.push_back({"spec.roles", "must have at least one role"});
  }
  check_package(
      s.default_config_package, [] { return std::string("spec.defaultConfigPackage"); }, out);
  check_persist_dirs(
      s.default_persist_dirs, [] { return std::string("spec.defaultPersistDirs"); }, out);
  check_events(
      s.default_event_list, [] { return std::string("spec.defaultEventList"); }, out);
  check_upgrade_from(app, out);

  std::vector<std::string> ids;
  for (std::size_t i = 0; i < s.roles.size(); ++i) {
    check_role(app, s.roles[i], index_path("spec.roles", i), out);
    ids.push_back(s.roles[i].id);
  }
  check_unique(ids, "spec.roles", "id", "role id", out);
  check_depends_on(s, out);
  ids.clear();
  for (std::size_t i = 0; i < s.services.size(); ++i) {
    check_service(s.services[i], index_path("spec.services", i), out);
    ids.push_back(s.services[i].id);
  }
  check_unique(ids, "spec.services", "id", "service id", out);
  check_config(app, out);
  return out;
}

Violations validate_apptype_object(const json::value& object) {
  Violations out;
  // raw in the object's own storage (the request's arena in the webhook)
  auto app = catalog::decode_apptype(object, out, catalog::DecodeSource::kBorrow);
  auto more = validate_apptype(app);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

namespace {

// "namespace/name" of a stored object ("name" when it has no namespace).
std::string apptype_key(const json::value& object) {
  const auto* o = object.if_object();
  const auto* md = o ? kube::member(*o, "metadata") : nullptr;
  const auto* mo = md ? md->if_object() : nullptr;
  const auto text = [&](std::string_view key) -> std::string {
    const auto* v = mo ? kube::member(*mo, key) : nullptr;
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
  };
  const std::string ns = text("namespace");
  return ns.empty() ? text("name") : ns + "/" + text("name");
}

}  // namespace

Violations validate_apptype_in_use(const json::value& old_object, const json::value* new_object,
                                   const std::vector<std::string>& referencing_stacks) {
  Violations out;
  if (referencing_stacks.empty()) return out;
  std::string users;
  for (const auto& s : referencing_stacks) users += (users.empty() ? "" : ", ") + s;
  std::string by = fmt::format("{} stack{} ({})", referencing_stacks.size(),
                               referencing_stacks.size() == 1 ? "" : "s", users);
  if (new_object == nullptr) {
    // Named: one collection DELETE refuses each AppType in use separately, and the client
    // sees only this message.
    out.push_back({"metadata.name", fmt::format("AppType {} cannot be deleted while used by {}",
                                                apptype_key(old_object), by)});
    return out;
  }
  static const json::object kEmpty;
  auto spec_of = [](const json::value& o) -> const json::object& {
    const auto* obj = o.if_object();
    const auto* spec = obj ? kube::member(*obj, "spec") : nullptr;
    return spec && spec->is_object() ? spec->get_object() : kEmpty;
  };
  const auto& old_spec = spec_of(old_object);
  const auto& new_spec = spec_of(*new_object);
  std::set<std::string> keys;
  for (const auto& kv : old_spec) keys.emplace(kv.key());
  for (const auto& kv : new_spec) keys.emplace(kv.key());
  for (const auto& k : keys) {
    const auto* a = kube::member(old_spec, k);
    const auto* b = kube::member(new_spec, k);
    if ((a == nullptr) != (b == nullptr) || (a && !kube::json_equal(*a, *b))) {
      out.push_back({child_path("spec", k),
                     fmt::format("cannot be changed while the AppType is used by {}", by)});
    }
  }
  return out;
}

}  // namespace kstack::validator
