// Decoding of AppType objects (docs/spec.md §2.1).
#include <memory>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/decode_detail.h"
#include "catalog/parse.h"
#include "catalog/probe.h"

namespace kstack::catalog {
namespace json = boost::json;
using detail::Decoder;

namespace {

Label decode_label(const json::object& parent, std::string_view path, Decoder& d,
                   bool name_required) {
  Label l;
  const auto* o = d.object(parent, "label", path, name_required);
  if (o == nullptr) return l;
  std::string p = child_path(path, "label");
  l.name = d.string(*o, "name", p, name_required).value_or("");
  l.description = d.string(*o, "description", p).value_or("");
  return l;
}

// Absent, explicit null and object are three different answers (see PackageField).
PackageField decode_package(const json::object& parent, std::string_view key, std::string_view path,
                            Decoder& d) {
  PackageField f;
  const auto* v = parent.if_contains(key);
  if (v == nullptr) return f;
  if (v->is_null()) {
    f.state = PackageField::State::kNone;
    return f;
  }
  const auto* o = d.object(parent, key, path);
  if (o == nullptr) return f;
  std::string p = child_path(path, key);
  f.state = PackageField::State::kPackage;
  f.package.package_url = d.string(*o, "packageURL", p, /*required=*/true).value_or("");
  f.package.sha256 = d.string(*o, "sha256", p);
  return f;
}

AppService decode_service(const json::object& o, const std::string& p, Decoder& d) {
  AppService s;
  s.id = d.string(o, "id", p, /*required=*/true).value_or("");
  s.label = decode_label(o, p, d, /*name_required=*/false);
  s.exported_service = d.string(o, "exported_service", p).value_or("");
  if (const auto* e = d.object(o, "endpoint", p)) {
    std::string ep = child_path(p, "endpoint");
    Endpoint end;
    end.port = d.integer(*e, "port", ep, /*required=*/true);
    end.url_scheme = d.string(*e, "urlScheme", ep).value_or("");
    end.path = d.string(*e, "path", ep).value_or("");
    end.is_dashboard = d.boolean(*e, "isDashboard", ep).value_or(false);
    end.has_auth_token = d.boolean(*e, "hasAuthToken", ep).value_or(false);
    s.endpoint = std::move(end);
  }
  return s;
}

AppRole decode_role(const json::object& o, const std::string& p, Decoder& d) {
  AppRole r;
  r.id = d.string(o, "id", p, /*required=*/true).value_or("");
  // Cardinality is a string in the schema; a bare YAML `3` arrives as a number and is
  // refused with the type named, as the API server would.
  r.cardinality = d.string(o, "cardinality", p, /*required=*/true).value_or("");
  r.image_repo_tag = d.string(o, "imageRepoTag", p);
  r.command = d.strings(o, "command", p);
  r.args = d.strings(o, "args", p);
  r.depends_on = d.strings(o, "dependsOn", p).value_or(std::vector<std::string>{});
  r.config_package = decode_package(o, "configPackage", p, d);
  r.persist_dirs = d.strings(o, "persistDirs", p);
  r.event_list = d.strings(o, "eventList", p);
  r.min_resources = d.quantity_map(o, "minResources", p);
  if (const auto* ms = d.object(o, "minStorage", p)) {
    std::string mp = child_path(p, "minStorage");
    MinStorage m;
    if (const auto* size = detail::present(*ms, "size"); size && size->is_number()) {
      m.size = detail::number_text(*size);
    } else {
      m.size = d.string(*ms, "size", mp, /*required=*/true).value_or("");
    }
    m.ephemeral_mode_supported = d.boolean(*ms, "ephemeralModeSupported", mp).value_or(false);
    r.min_storage = std::move(m);
  }
  if (const auto* cs = d.object(o, "containerSpec", p)) {
    std::string cp = child_path(p, "containerSpec");
    r.container_spec.stdin_open = d.boolean(*cs, "stdin", cp).value_or(false);
    r.container_spec.tty = d.boolean(*cs, "tty", cp).value_or(false);
  }
  r.readiness_probe = decode_probe(o, kReadinessProbe, p, d);
  r.liveness_probe = decode_probe(o, kLivenessProbe, p, d);
  r.startup_probe = decode_probe(o, kStartupProbe, p, d);
  d.int_or_string(r.min_available, o, "minAvailable", p);
  return r;
}

AppConfig decode_config(const json::object& spec, Decoder& d) {
  AppConfig c;
  const auto* o = d.object(spec, "config", "spec");
  if (o == nullptr) return c;
  const std::string p = "spec.config";
  if (const auto* rs = d.array(*o, "roleServices", p)) {
    std::string base = child_path(p, "roleServices");
    for (std::size_t i = 0; i < rs->size(); ++i) {
      std::string ip = index_path(base, i);
      const auto* item = (*rs)[i].if_object();
      if (item == nullptr) {
        d.error(ip, "must be an object");
        continue;
      }
      RoleServices entry;
      entry.role_id = d.string(*item, "roleID", ip, /*required=*/true).value_or("");
      entry.service_ids = d.strings(*item, "serviceIDs", ip).value_or(std::vector<std::string>{});
      c.role_services.push_back(std::move(entry));
    }
  }
  c.selected_roles = d.strings(*o, "selectedRoles", p).value_or(std::vector<std::string>{});
  c.config_meta = d.string_map(*o, "configMeta", p);
  return c;
}

template <typename T, typename F>
std::vector<T> decode_list(const json::object& spec, std::string_view key, Decoder& d,
                           bool required, F&& decode_item) {
  std::vector<T> out;
  const auto* a = d.array(spec, key, "spec", required);
  if (a == nullptr) return out;
  out.reserve(a->size());
  std::string base = child_path("spec", key);
  for (std::size_t i = 0; i < a->size(); ++i) {
    std::string ip = index_path(base, i);
    const auto* item = (*a)[i].if_object();
    if (item == nullptr) {
      d.error(ip, "must be an object");
      out.emplace_back();  // keep indexes aligned with the JSON for later messages
      continue;
    }
    out.push_back(decode_item(*item, ip, d));
  }
  return out;
}

}  // namespace

AppType decode_apptype(const json::value& object, FieldErrors& errors) {
  return decode_apptype(object, errors, DecodeSource::kCopy);
}

AppType decode_apptype(const json::value& object, FieldErrors& errors, DecodeSource source) {
  AppType a;
  if (source == DecodeSource::kBorrow) {
    a.borrowed = &object;
  } else {
    a.raw = object;
  }
  // Borrowing, the model's JSON values (a role's minAvailable) are put in the object's own
  // storage: they live as long as the object does, no longer.
  Decoder d(errors, source == DecodeSource::kBorrow ? &object : nullptr);
  const auto* o = object.if_object();
  if (o == nullptr) {
    d.error("", "an AppType must be a JSON object");
    return a;
  }
  detail::check_kind(*o, kAppTypeKind, d);
  a.metadata = detail::decode_metadata(object, d);
  const auto* spec = d.object(*o, "spec", "", /*required=*/true);
  if (spec == nullptr) return a;
  auto& s = a.spec;
  s.label = decode_label(*spec, "spec", d, /*name_required=*/true);
  s.distro_id = d.string(*spec, "distroID", "spec", true).value_or("");
  s.version = d.string(*spec, "version", "spec", true).value_or("");
  s.upgrade_from = d.strings(*spec, "upgradeFrom", "spec").value_or(std::vector<std::string>{});
  s.config_schema_version = d.integer(*spec, "configSchemaVersion", "spec", true);
  s.default_image_repo_tag = d.string(*spec, "defaultImageRepoTag", "spec");
  s.default_config_package = decode_package(*spec, "defaultConfigPackage", "spec", d);
  s.services = decode_list<AppService>(*spec, "services", d, false, decode_service);
  s.roles = decode_list<AppRole>(*spec, "roles", d, true, decode_role);
  s.config = decode_config(*spec, d);
  s.default_persist_dirs = d.strings(*spec, "defaultPersistDirs", "spec");
  s.default_event_list = d.strings(*spec, "defaultEventList", "spec");
  s.capabilities = d.strings(*spec, "capabilities", "spec").value_or(std::vector<std::string>{});
  s.systemd_required = d.boolean(*spec, "systemdRequired", "spec").value_or(false);
  s.logo_url = d.string(*spec, "logoURL", "spec").value_or("");
  check_probe_ports(a, errors);
  return a;
}

kube::Result<AppType> parse_apptype(const json::value& object) {
  FieldErrors errors;
  AppType a = decode_apptype(object, errors);
  if (!errors.empty()) return tl::unexpected(invalid_error("invalid AppType", errors));
  return a;
}

}  // namespace kstack::catalog
