// configmeta.json and /etc/kstack/env for a member (see configmeta.h). The JSON mirrors
// KubeDirector's pkg/catalog/configmeta.go field for field, with deliberate differences: roles
// without members are left out everywhere (KubeDirector #317); an endpoint of a service without
// urlScheme is "<fqdn>:<port>" rather than "://<fqdn>:<port>"; flavor falls back to the requests
// when a role sets no limits (and says "n/a" when it sets neither); a service has no authToken
// (kstack issues none yet); connections are always empty.
#include "reconciler/configmeta.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <initializer_list>
#include <map>
#include <optional>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <openssl/evp.h>

#include "catalog/defaults.h"
#include "catalog/quantity.h"

namespace kstack::reconciler {
namespace {
namespace json = boost::json;
using catalog::AppService;

// Salted into the fingerprint: bump it when the content or layout of either file changes, so
// members configured by an older operator get the new files.
constexpr std::string_view kFormatVersion = "kstack-configmeta/1";
constexpr std::int64_t kMiB = std::int64_t{1024} * 1024;

struct RoleGroup {
  std::string id;
  std::vector<const ConfigMember*> members;
};

// Members grouped by role, roles in order of first appearance, members in input order.
std::vector<RoleGroup> group_by_role(const ConfigInput& in) {
  std::vector<RoleGroup> out;
  for (const auto& m : in.members) {
    auto it =
        std::find_if(out.begin(), out.end(), [&](const RoleGroup& g) { return g.id == m.role; });
    if (it == out.end()) it = out.insert(out.end(), RoleGroup{m.role, {}});
    it->members.push_back(&m);
  }
  return out;
}

json::object refkeys(std::initializer_list<std::string_view> path) {
  json::array keys;
  for (auto p : path) keys.emplace_back(p);
  return json::object{{"bdvlibrefkey", std::move(keys)}};
}

// A role's limit for `resource`, else its request; nullopt when neither parses.
std::optional<catalog::Quantity> limit_or_request(const catalog::StackRole* role,
                                                  const std::string& resource) {
  if (role == nullptr) return std::nullopt;
  for (const auto* list : {&role->resources.limits, &role->resources.requests}) {
    if (auto it = list->find(resource); it != list->end()) {
      if (auto q = catalog::Quantity::parse(it->second)) return *q;
    }
  }
  return std::nullopt;
}

json::object flavor(const catalog::StackRole* role) {
  const auto cpu = limit_or_request(role, "cpu");
  const auto memory = limit_or_request(role, "memory");
  // Cores round up (Quantity.Value()); MiB round down, as KubeDirector.
  return json::object{
      {"storage", kNotApplicable},
      {"name", kNotApplicable},
      {"memory",
       memory ? json::value(std::to_string(memory->value() / kMiB)) : json::value(kNotApplicable)},
      {"description", kNotApplicable},
      {"cores", cpu ? json::value(std::to_string(cpu->value())) : json::value(kNotApplicable)},
  };
}

std::string endpoint(const AppService& service, std::string_view fqdn) {
  const auto& e = *service.endpoint;
  if (e.url_scheme.empty()) return fmt::format("{}:{}", fqdn, *e.port);
  return fmt::format("{}://{}:{}", e.url_scheme, fqdn, *e.port);
}

bool has_port(const AppService& s) { return s.endpoint && s.endpoint->port; }

json::object role_services_json(const catalog::AppType& app, const RoleGroup& g) {
  json::object out;
  for (const AppService* s : catalog::role_services(app, g.id)) {
    json::array endpoints;
    if (has_port(*s)) {
      for (const auto* m : g.members) endpoints.emplace_back(endpoint(*s, m->fqdn));
    }
    out[s->id] = json::object{
        {"qualifiers", json::array{}},
        {"name", s->label.name},
        {"id", s->id},
        {"hostnames", refkeys({"nodegroups", kNodegroupId, "roles", g.id, "hostnames"})},
        {"global_id", fmt::format("{}_{}_{}", kNodegroupId, g.id, s->id)},
        {"fqdns", refkeys({"nodegroups", kNodegroupId, "roles", g.id, "fqdns"})},
        {"exported_service", s->exported_service},
        {"endpoints", std::move(endpoints)},
    };
  }
  return out;
}

json::object role_json(const ConfigInput& in, const RoleGroup& g) {
  json::array node_ids;
  json::array fqdns;
  json::object mappings;
  for (const auto* m : g.members) {
    const std::string id = std::to_string(m->node_id);
    node_ids.emplace_back(id);
    fqdns.emplace_back(m->fqdn);
    mappings[m->fqdn] = id;
  }
  return json::object{
      {"services", role_services_json(*in.app, g)},
      {"node_ids", std::move(node_ids)},
      {"hostnames", fqdns},
      {"fqdns", fqdns},
      {"fqdn_mappings", std::move(mappings)},
      {"flavor", flavor(catalog::find_role(*in.stack, g.id))},
  };
}

// services{<svc>{"1"{<role>{bdvlibrefkey}}}} for services run by roles that have members.
json::object services_json(const catalog::AppType& app, const std::vector<RoleGroup>& groups) {
  json::object out;
  for (const auto& g : groups) {
    for (const AppService* s : catalog::role_services(app, g.id)) {
      auto& by_nodegroup = out[s->id];
      if (!by_nodegroup.is_object()) by_nodegroup = json::object{{kNodegroupId, json::object{}}};
      by_nodegroup.as_object()[kNodegroupId].as_object()[g.id] =
          refkeys({"nodegroups", kNodegroupId, "roles", g.id, "services", s->id});
    }
  }
  return out;
}

json::object config_metadata(const catalog::AppType& app) {
  json::object out;
  for (const auto& [k, v] : app.spec.config.config_meta) out[k] = v;
  return out;
}

// Everything but `node`: the same for every member.
json::object stack_json(const ConfigInput& in) {
  assert(in.stack != nullptr && in.app != nullptr);
  const auto& app = *in.app;
  const auto groups = group_by_role(in);
  json::object roles;
  for (const auto& g : groups) roles[g.id] = role_json(in, g);
  return json::object{
      {"version", std::to_string(app.spec.config_schema_version.value_or(1))},
      {"services", services_json(app, groups)},
      {"nodegroups", json::object{{kNodegroupId,
                                   json::object{
                                       {"roles", std::move(roles)},
                                       {"distro_id", app.spec.distro_id},
                                       {"catalog_entry_version", app.spec.version},
                                       {"config_metadata", config_metadata(app)},
                                   }}}},
      {"distros",
       json::object{{app.spec.distro_id,
                     json::object{{kNodegroupId, refkeys({"nodegroups", kNodegroupId})}}}}},
      {"cluster",
       json::object{
           {"name", in.stack->metadata.name},
           {"isolated", false},
           {"id", in.stack->metadata.uid},
           {"config_metadata",
            json::object{{kNodegroupId, refkeys({"nodegroups", kNodegroupId, "config_metadata"})}}},
       }},
      // KubeDirector always writes this; kstack has no connections yet.
      {"connections", json::object{{"clusters", json::object{}},
                                   {"configmaps", json::object{}},
                                   {"secrets", json::object{}}}},
  };
}

json::object node_json(const ConfigInput& in, const ConfigMember& self,
                       const UpgradeFrom* upgrade) {
  json::object node{
      {"role_id", self.role},
      {"nodegroup_id", kNodegroupId},
      {"id", std::to_string(self.node_id)},
      {"hostname", self.fqdn},
      {"fqdn", self.fqdn},
      {"domain", member_domain(in)},
      {"distro_id", in.app->spec.distro_id},
      {"depends_on", json::object{}},
  };
  if (upgrade != nullptr) {
    node["upgrade_from"] = json::object{{"app", upgrade->app}, {"revision", upgrade->revision}};
  }
  return node;
}

// A copy with every object's keys in byte order, so serialisation is canonical.
json::value sorted(const json::value& v) {
  if (v.is_array()) {
    json::array out;
    for (const auto& e : v.as_array()) out.push_back(sorted(e));
    return out;
  }
  if (!v.is_object()) return v;
  std::vector<const json::key_value_pair*> entries;
  for (const auto& kv : v.as_object()) entries.push_back(&kv);
  std::sort(entries.begin(), entries.end(),
            [](const auto* a, const auto* b) { return a->key() < b->key(); });
  json::object out;
  for (const auto* kv : entries) out.emplace(kv->key(), sorted(kv->value()));
  return out;
}

std::string canonical_text(const json::value& v) { return json::serialize(sorted(v)) + "\n"; }

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  const bool ok = EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_sha256(), nullptr) == 1;
  assert(ok);
  (void)ok;
  std::string out;
  for (unsigned int i = 0; i < len; ++i) out += fmt::format("{:02x}", md[i]);
  return out;
}

// `export NAME='value'`; a value with a NUL byte cannot be a shell variable and is left out.
void assign(std::string& out, std::string_view name, std::string_view value) {
  if (value.find('\0') != std::string_view::npos) return;
  out += fmt::format("export {}={}\n", name, shell_quote(value));
}

std::string join(const std::vector<const ConfigMember*>& members, char sep, bool node_ids) {
  std::string out;
  for (const auto* m : members) {
    if (!out.empty()) out += sep;
    out += node_ids ? std::to_string(m->node_id) : m->fqdn;
  }
  return out;
}

}  // namespace

std::string member_domain(const ConfigInput& in) {
  return fmt::format("{}.{}{}", in.headless_service, in.stack->metadata.namespace_name,
                     catalog::cluster_svc_domain_base(in.config));
}

json::value configmeta(const ConfigInput& in, const ConfigMember& self,
                       const UpgradeFrom* upgrade) {
  json::object out = stack_json(in);
  out["node"] = node_json(in, self, upgrade);
  return out;
}

std::string configmeta_text(const ConfigInput& in, const ConfigMember& self,
                            const UpgradeFrom* upgrade) {
  return canonical_text(configmeta(in, self, upgrade));
}

std::string config_fingerprint(const ConfigInput& in) {
  return sha256_hex(fmt::format("{}\n{}", kFormatVersion, canonical_text(stack_json(in))));
}

std::string shell_quote(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string env_name_part(std::string_view id) {
  std::string out;
  out.reserve(id.size());
  for (char c : id) {
    if (c >= 'a' && c <= 'z') {
      out += static_cast<char>(c - 'a' + 'A');
    } else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      out += c;
    } else {
      out += '_';
    }
  }
  return out;
}

std::string env_file(const ConfigInput& in, const ConfigMember& self, const UpgradeFrom* upgrade) {
  assert(in.stack != nullptr && in.app != nullptr);
  const auto& app = *in.app;
  const auto groups = group_by_role(in);
  std::string out =
      "# Written by kstack for this member; rewritten when the stack changes.\n"
      "# Source it from sh: . /etc/kstack/env\n";
  assign(out, "KSTACK_STACK", in.stack->metadata.name);
  assign(out, "KSTACK_NAMESPACE", in.stack->metadata.namespace_name);
  assign(out, "KSTACK_ROLE", self.role);
  assign(out, "KSTACK_POD", self.pod);
  assign(out, "KSTACK_NODE_ID", std::to_string(self.node_id));
  assign(out, "KSTACK_FQDN", self.fqdn);
  assign(out, "KSTACK_HOSTNAME", self.fqdn);
  assign(out, "KSTACK_DOMAIN", member_domain(in));
  assign(out, "KSTACK_DISTRO_ID", app.spec.distro_id);
  assign(out, "KSTACK_APP_VERSION", app.spec.version);
  if (upgrade != nullptr) {
    assign(out, "KSTACK_UPGRADE_FROM_APP", upgrade->app);
    assign(out, "KSTACK_UPGRADE_FROM_REVISION", upgrade->revision);
  }

  std::string roles;
  for (const auto& g : groups) roles += (roles.empty() ? "" : " ") + g.id;
  assign(out, "KSTACK_ROLES", roles);
  for (const auto& g : groups) {
    const std::string r = env_name_part(g.id);
    assign(out, fmt::format("KSTACK_ROLE_{}_FQDNS", r), join(g.members, ',', false));
    assign(out, fmt::format("KSTACK_ROLE_{}_COUNT", r), std::to_string(g.members.size()));
    assign(out, fmt::format("KSTACK_ROLE_{}_NODE_IDS", r), join(g.members, ',', true));
  }
  for (const AppService* s : catalog::role_services(app, self.role)) {
    if (!has_port(*s)) continue;
    assign(out, fmt::format("KSTACK_SERVICE_{}_PORT", env_name_part(s->id)),
           std::to_string(*s->endpoint->port));
  }

  // Keys that collapse to the same name are ambiguous: none of them is exported.
  std::map<std::string, int> uses;
  for (const auto& [key, value] : app.spec.config.config_meta) ++uses[env_name_part(key)];
  for (const auto& [key, value] : app.spec.config.config_meta) {
    const std::string name = env_name_part(key);
    if (key.empty() || uses[name] > 1) continue;
    assign(out, "KSTACK_CONFIG_" + name, value);
  }
  return out;
}

}  // namespace kstack::reconciler
