#include "reconciler/desired_state.h"

#include <algorithm>
#include <cctype>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/defaults.h"
#include "catalog/field_error.h"
#include "catalog/names.h"
#include "catalog/probe.h"
#include "executor/setup.h"

namespace kstack::reconciler {
namespace json = boost::json;
using catalog::AppType;
using catalog::KStackConfig;
using catalog::Stack;

namespace {

json::object to_object(const catalog::StringMap& m) {
  json::object o;
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

json::array to_array(const std::vector<std::string>& words) {
  json::array out;
  for (const auto& w : words) out.push_back(json::string(w));
  return out;
}

// Later maps win: KStackConfig's defaults, then the role's own.
json::object merged(std::initializer_list<const catalog::StringMap*> maps) {
  json::object o;
  for (const auto* m : maps) {
    if (m == nullptr) continue;
    for (const auto& [k, v] : *m) o[k] = v;
  }
  return o;
}

json::array container_ports(const AppType& app, std::string_view role) {
  json::array ports;
  for (const auto* svc : catalog::role_services(app, role)) {
    if (!svc->endpoint || !svc->endpoint->port) continue;
    // Port names are IANA_SVC_NAME (≤ 15 chars, DNS label): service ids are limited to 15.
    ports.push_back(json::object{
        {"name", svc->id}, {"containerPort", *svc->endpoint->port}, {"protocol", "TCP"}});
  }
  return ports;
}

json::array service_ports(const json::array& container) {
  json::array ports;
  for (const auto& p : container) {
    const auto& o = p.as_object();
    ports.push_back(json::object{{"name", o.at("name")},
                                 {"port", o.at("containerPort")},
                                 {"targetPort", o.at("containerPort")},
                                 {"protocol", "TCP"}});
  }
  return ports;
}

json::object resources_json(const catalog::ResourceRequirements& r) {
  json::object o;
  if (!r.requests.empty()) o["requests"] = to_object(r.requests);
  if (!r.limits.empty()) o["limits"] = to_object(r.limits);
  return o;
}

// kstack's emptyDirs first, then each persisted directory in its own sub-directory of the
// member's claim; runtimes mount parents first, so a persisted dir under /etc/kstack or
// /opt/kstack lands on top of the emptyDir. A kstack dir that is persisted itself (or under a
// persisted dir) gets no emptyDir: the user asked for it to be on the volume.
json::array volume_mounts(const std::vector<std::string>& persist_dirs, bool has_storage,
                          json::array& volumes) {
  json::array mounts;
  for (const auto& dir : kKStackDirs) {
    if (has_storage && catalog::persisted(persist_dirs, dir.path)) continue;
    volumes.push_back(json::object{{"name", dir.volume}, {"emptyDir", json::object{}}});
    mounts.push_back(json::object{{"name", dir.volume}, {"mountPath", dir.path}});
  }
  if (!has_storage) return mounts;
  for (const auto& dir : persist_dirs) {
    std::string sub = dir;
    while (!sub.empty() && sub.front() == '/') sub.erase(sub.begin());
    mounts.push_back(
        json::object{{"name", catalog::kDataVolumeName}, {"mountPath", dir}, {"subPath", sub}});
  }
  return mounts;
}

// 64-bit FNV-1a in hex: the same bytes give the same digest in every build and on every
// machine (std::hash does not promise that), which a value stored in the cluster needs. Not a
// security property: it only tells templates apart.
std::string template_digest(std::string_view text) {
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

json::object metadata(std::string_view name, const Stack& stack, json::object labels,
                      json::object annotations = {}) {
  json::object md{{"name", name},
                  {"namespace", stack.metadata.namespace_name},
                  {"labels", std::move(labels)},
                  {"ownerReferences", json::array{owner_reference(stack)}}};
  if (!annotations.empty()) md["annotations"] = std::move(annotations);
  return md;
}

// The member's `app` container; `volumes` gets the pod volumes its mounts need.
json::object app_container(const AppType& app, const catalog::StackRole& role,
                           const catalog::AppRole& app_role, const std::string& image,
                           const json::array& ports, json::array& volumes) {
  json::object container{{"name", kContainerName}, {"image", image}};
  if (app_role.command) container["command"] = to_array(*app_role.command);
  if (app_role.args) container["args"] = to_array(*app_role.args);
  if (!ports.empty()) container["ports"] = ports;
  auto res = resources_json(role.resources);
  if (!res.empty()) container["resources"] = std::move(res);
  if (role.env->is_array() && !role.env->as_array().empty()) container["env"] = *role.env;
  if (app_role.container_spec.stdin_open) container["stdin"] = true;
  if (app_role.container_spec.tty) container["tty"] = true;
  if (app_role.readiness_probe) container["readinessProbe"] = probe_json(*app_role.readiness_probe);
  if (app_role.liveness_probe) container["livenessProbe"] = probe_json(*app_role.liveness_probe);
  if (app_role.startup_probe) container["startupProbe"] = probe_json(*app_role.startup_probe);
  if (!app.spec.capabilities.empty()) {
    json::array caps;
    for (const auto& c : app.spec.capabilities) caps.push_back(json::string(c));
    container["securityContext"] = json::object{{"capabilities", {{"add", std::move(caps)}}}};
  }
  const bool has_storage = role.storage.has_value();
  auto mounts = volume_mounts(catalog::role_persist_dirs(app, app_role), has_storage, volumes);
  if (!mounts.empty()) container["volumeMounts"] = std::move(mounts);

  return container;
}

json::value statefulset(const Stack& stack, const AppType& app, const KStackConfig* config,
                        const catalog::StackRole& role, const catalog::AppRole& app_role,
                        const std::string& image, std::int64_t replicas, const std::string& name,
                        const std::string& headless, const json::array& ports) {
  json::object selector{{std::string(kLabelStack), stack.metadata.name},
                        {std::string(kLabelRole), role.id}};
  json::object pod_labels = merged({config ? &config->spec.pod_labels : nullptr, &role.pod_labels});
  for (auto& [k, v] : common_labels(stack, app, role.id)) pod_labels[k] = v;
  json::object pod_annotations =
      merged({config ? &config->spec.pod_annotations : nullptr, &role.pod_annotations});
  pod_annotations[kAnnotationApp] = app.metadata.name;
  if (const auto package = catalog::role_package(app, app_role)) {
    pod_annotations[kAnnotationSetupPackage] = package_annotation(*package);
  }

  json::array volumes;
  json::object container = app_container(app, role, app_role, image, ports, volumes);
  json::object pod_spec{{"containers", json::array{std::move(container)}}};
  if (!volumes.empty()) pod_spec["volumes"] = std::move(volumes);
  if (!role.node_selector.empty()) pod_spec["nodeSelector"] = to_object(role.node_selector);
  if (!role.affinity->is_null()) pod_spec["affinity"] = *role.affinity;
  if (role.tolerations->is_array() && !role.tolerations->as_array().empty()) {
    pod_spec["tolerations"] = *role.tolerations;
  }
  if (!role.service_account_name.empty())
    pod_spec["serviceAccountName"] = role.service_account_name;

  json::object template_md{{"labels", std::move(pod_labels)},
                           {"annotations", std::move(pod_annotations)}};
  const json::object pod_template{{"metadata", template_md}, {"spec", pod_spec}};
  template_md["annotations"].as_object()[kAnnotationTemplateHash] =
      template_digest(json::serialize(pod_template));

  // kstack moves the partition (plan_rollout.cpp): members below it keep their template until
  // kstack lets them go, one at a time.
  json::object spec{
      {"replicas", replicas},
      {"serviceName", headless},
      {"podManagementPolicy", "Parallel"},
      {"updateStrategy", {{"type", "RollingUpdate"}, {"rollingUpdate", {{"partition", 0}}}}},
      {"selector", {{"matchLabels", selector}}},
      {"template", {{"metadata", std::move(template_md)}, {"spec", std::move(pod_spec)}}}};
  if (role.storage.has_value()) {
    json::object pvc_spec{{"accessModes", json::array{"ReadWriteOnce"}},
                          {"resources", {{"requests", {{"storage", role.storage->size}}}}}};
    std::optional<std::string> cls = role.storage->storage_class_name;
    if (!cls && config && config->spec.default_storage_class_name) {
      cls = config->spec.default_storage_class_name;
    }
    if (cls) pvc_spec["storageClassName"] = *cls;
    spec["volumeClaimTemplates"] = json::array{json::object{
        {"metadata",
         {{"name", catalog::kDataVolumeName}, {"labels", common_labels(stack, app, role.id)}}},
        {"spec", std::move(pvc_spec)}}};
  }
  return json::object{{"apiVersion", "apps/v1"},
                      {"kind", "StatefulSet"},
                      {"metadata", metadata(name, stack, common_labels(stack, app, role.id))},
                      {"spec", std::move(spec)}};
}

}  // namespace

std::string package_annotation(const catalog::SetupPackage& package) {
  return package.package_url + (package.sha256 ? "@" + *package.sha256 : std::string());
}

std::optional<catalog::SetupPackage> package_from_annotation(std::string_view text) {
  if (text.empty()) return std::nullopt;
  catalog::SetupPackage package;
  // A URL may hold '@' (user@host): only a final "@<64 hex digits>" is a digest.
  const auto at = text.rfind('@');
  const auto digest = at == std::string_view::npos ? std::string_view() : text.substr(at + 1);
  const bool hex = digest.size() == 64 && std::all_of(digest.begin(), digest.end(), [](char c) {
                     return std::isxdigit(static_cast<unsigned char>(c)) != 0;
                   });
  package.package_url = std::string(hex ? text.substr(0, at) : text);
  if (hex) package.sha256 = std::string(digest);
  return package;
}

std::string label_value(std::string_view text) {
  // Label values: ≤ 63 of [A-Za-z0-9-_.], alphanumeric at both ends. distroIDs are often
  // "vendor/app" (KubeDirector's convention), so '/' and any other character become '.'.
  std::string out;
  for (char ch : text) {
    const bool ok =
        std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '-' || ch == '_' || ch == '.';
    out += ok ? ch : '.';
  }
  if (out.size() > 63) out.resize(63);
  auto alnum = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; };
  while (!out.empty() && !alnum(out.back())) out.pop_back();
  std::size_t start = 0;
  while (start < out.size() && !alnum(out[start])) ++start;
  return out.substr(start);
}

json::object owner_reference(const Stack& stack) {
  return json::object{{"apiVersion", catalog::kApiVersion},
                      {"kind", catalog::kStackKind},
                      {"name", stack.metadata.name},
                      {"uid", stack.metadata.uid},
                      {"controller", true},
                      {"blockOwnerDeletion", true}};
}

json::object common_labels(const Stack& stack, const AppType& app, std::string_view role) {
  json::object labels{{std::string(kLabelManagedBy), kManagedByValue},
                      {std::string(kLabelStack), stack.metadata.name},
                      {std::string(kLabelName), label_value(app.spec.distro_id)}};
  if (!role.empty()) labels[std::string(kLabelRole)] = role;
  return labels;
}

namespace {

// The member's own Service (named as its pod, selecting only it) with the role's ports.
json::value member_service(const Stack& stack, const AppType& app, const KStackConfig* config,
                           const catalog::StackRole& role, const std::string& pod,
                           const std::string& service_type, const json::array& ports) {
  json::object labels =
      merged({config ? &config->spec.service_labels : nullptr, &role.service_labels});
  for (auto& [k, v] : common_labels(stack, app, role.id)) labels[k] = v;
  json::object annotations =
      merged({config ? &config->spec.service_annotations : nullptr, &role.service_annotations});
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Service"},
                      {"metadata", metadata(pod, stack, std::move(labels), std::move(annotations))},
                      {"spec",
                       {{"type", service_type},
                        {"selector", {{std::string(kLabelPodName), pod}}},
                        {"ports", service_ports(ports)}}}};
}

}  // namespace

kube::Result<DesiredState> desired_state(const Stack& stack, const AppType& app,
                                         const KStackConfig* config) {
  DesiredState out;
  const std::string& s = stack.metadata.name;
  const std::string& ns = stack.metadata.namespace_name;
  const std::string domain = catalog::cluster_svc_domain_base(config);
  const std::string service_type = catalog::effective_service_type(stack, config);
  const auto names = catalog::ObjectNames::of(stack, config);
  if (names.uid_scheme() && stack.metadata.uid.empty()) {
    return tl::unexpected(catalog::invalid_error(
        fmt::format("Stack {}/{}", ns, s),
        {{"metadata.uid", "is required: namingScheme UID derives the object names from it"}}));
  }
  out.headless_service_name = names.headless_service();
  out.member_domain = fmt::format("{}.{}{}", out.headless_service_name, ns, domain);

  catalog::FieldErrors errors;
  for (std::size_t i = 0; i < stack.spec.roles.size(); ++i) {
    const auto& role = stack.spec.roles[i];
    const std::string path = fmt::format("spec.roles[{}]", i);
    const auto* app_role = catalog::find_role(app, role.id);
    if (app_role == nullptr) {
      errors.push_back({path + ".id", fmt::format("role \"{}\" is not in app \"{}\"", role.id,
                                                  app.metadata.name)});
      continue;
    }
    const auto image = catalog::role_image(app, *app_role);
    if (!image) {
      errors.push_back({path + ".id", fmt::format("role \"{}\" of app \"{}\" has no image", role.id,
                                                  app.metadata.name)});
      continue;
    }
    DesiredRole dr;
    dr.id = role.id;
    dr.stateful_set_name = names.statefulset(role.id);
    dr.replicas = catalog::effective_members(app_role, role);
    dr.has_storage = role.storage.has_value();
    dr.setup_dir_persisted =
        dr.has_storage &&
        catalog::persisted(catalog::role_persist_dirs(app, *app_role), executor::kSetupDir);
    const json::array ports = container_ports(app, role.id);
    dr.has_ports = !ports.empty();
    dr.stateful_set = statefulset(stack, app, config, role, *app_role, *image, dr.replicas,
                                  dr.stateful_set_name, out.headless_service_name, ports);
    for (std::int64_t ordinal = 0; ordinal < dr.replicas; ++ordinal) {
      DesiredMember m;
      m.role = role.id;
      m.ordinal = ordinal;
      m.pod = names.member(role.id, ordinal);
      m.fqdn = fmt::format("{}.{}.{}{}", m.pod, out.headless_service_name, ns, domain);
      if (dr.has_storage) m.pvc = names.pvc(role.id, ordinal);
      if (dr.has_ports) {
        m.service = m.pod;
        out.member_services.push_back(
            member_service(stack, app, config, role, m.pod, service_type, ports));
      }
      dr.members.push_back(std::move(m));
    }
    out.roles.push_back(std::move(dr));
  }
  if (!errors.empty()) {
    return tl::unexpected(catalog::invalid_error(fmt::format("Stack {}/{}", ns, s), errors));
  }

  // The headless Service publishes every member's DNS record, ready or not, so that setup
  // scripts can reach peers while they are still configuring.
  out.headless_service = json::object{
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata", metadata(out.headless_service_name, stack, common_labels(stack, app, ""))},
      {"spec",
       {{"clusterIP", "None"},
        {"publishNotReadyAddresses", true},
        {"selector", {{std::string(kLabelStack), s}}}}}};
  return out;
}

}  // namespace kstack::reconciler
