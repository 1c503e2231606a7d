// The parts of the Compose converter (catalog/compose.h) and what they share (detail, not part
// of the catalog's API):
//   compose.cpp          merge keys, interpolation, top-level keys, convert_compose (the name,
//                        role ids, the AppType and Stack, the warnings' order), the helpers below
//   compose_service.cpp  one service: its keys, command/entrypoint, environment, depends_on
//   compose_ports.cpp    ports and expose
//   compose_volumes.cpp  volumes and shared named volumes
//   compose_deploy.cpp   deploy (replicas, resources), memory and CPU quantities, healthcheck
//   compose_hosts.cpp    service names used as host names in other texts
// Every part adds its warnings to one Warnings list, in discovery order; convert_compose sorts
// them into the file's order at the end.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "catalog/compose.h"

namespace kstack::catalog::compose_detail {

namespace json = boost::json;

inline constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

struct Warnings {
  std::vector<ComposeWarning> list;
  void add(std::string path, std::string message) {
    list.push_back({std::move(path), std::move(message)});
  }
};

// Compose paths: key("services.web", "ports") is "services.web.ports" (key("", "name") is
// "name"), idx("services.web.ports", 0) is "services.web.ports[0]".
std::string key(std::string_view path, std::string_view k);
std::string idx(std::string_view path, std::size_t i);

// `x-*` extension fields, which Compose (and kstack) ignore without a word.
bool is_extension(std::string_view k);

// A scalar as Compose reads it into a string field (YAML `8080`, `true`, `0.5`).
std::optional<std::string> scalar_text(const json::value& v);

// An integer: a JSON integer (an unsigned one up to 2^31-1), a whole double, or a string of up
// to 18 decimal digits; nullopt for anything else.
std::optional<std::int64_t> integer(const json::value& v);

// A non-empty run of at most `max_size` decimal digits as a number; nullopt otherwise.
std::optional<std::int64_t> decimal(std::string_view s, std::size_t max_size);

// Text as a JSON string, quotes and escapes included, for warnings.
std::string quoted(std::string_view s);

// `s` cut at every `sep`: "a:b:" is {"a", "b", ""}; "" is {""}.
std::vector<std::string_view> split(std::string_view s, char sep);

// A mapping field: nullptr when it is not one (a warning "must be a mapping; ignored" unless it
// is null, which Compose takes as absent).
const json::object* mapping(const json::value& v, const std::string& path, Warnings& w);

// Each item of a list field with its path (`path[i]`); anything but a list or null is a
// warning "must be a list; ignored".
template <typename F>
void for_each_item(const json::value& v, const std::string& path, Warnings& w, F&& f) {
  const auto* a = v.if_array();
  if (a == nullptr) {
    if (!v.is_null()) w.add(path, "must be a list; ignored");
    return;
  }
  for (std::size_t i = 0; i < a->size(); ++i) f((*a)[i], idx(path, i));
}

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

// One Compose service on its way to an AppType role and a Stack role.
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

// compose_service.cpp: the role of service `name` (whose role id is `id`), all its keys read.
Role convert_service(const std::string& name, const json::object& svc, const std::string& id,
                     Warnings& w);

// compose_ports.cpp: `ports` and `expose` into r.ports.
void convert_ports(Role& r, const json::value& v, Warnings& w);
void convert_expose(Role& r, const json::value& v, Warnings& w);

// compose_volumes.cpp: `volumes` into r.persist_dirs and r.volumes; then, over all roles, a
// warning for each named volume that more than one service mounts (kstack shares none).
void convert_volumes(Role& r, const json::value& v, Warnings& w);
void shared_volume_warnings(const std::vector<Role>& roles, Warnings& w);

// compose_deploy.cpp: `deploy` into r.members, r.limits and r.requests; `healthcheck` into the
// AppType role's readinessProbe. Compose memory ("512m", "1gb", 1073741824) and cpus ("0.5", 2)
// as Kubernetes quantities ("512Mi", "0.5"); nullopt when malformed.
void convert_deploy(Role& r, const json::value& v, Warnings& w);
void convert_healthcheck(Role& r, const json::value& v, Warnings& w);
std::optional<std::string> memory_quantity(const json::value& v);
std::optional<std::string> cpu_quantity(const json::value& v);

// compose_hosts.cpp: whether an environment variable holds a user, password or database name
// rather than a host (POSTGRES_USER: postgres); and, over all roles, a warning for each text
// that uses a service's name as a host name (`id_of`: service -> role id; `stack`: the name).
bool not_a_host_variable(std::string_view name);
void host_name_warnings(const std::vector<Role>& roles,
                        const std::map<std::string, std::string>& id_of, const std::string& stack,
                        Warnings& w);

}  // namespace kstack::catalog::compose_detail
