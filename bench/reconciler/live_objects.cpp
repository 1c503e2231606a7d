#include "bench/reconciler/live_objects.h"

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/names.h"

namespace kstack::bench {
namespace json = boost::json;

namespace {

constexpr std::string_view kCreated = "2026-01-01T00:00:00Z";
constexpr std::string_view kNode = "bench-node";

std::string uid(std::uint64_t n) { return fmt::format("00000000-0000-4000-8000-{:012x}", n); }

// metadata as the API server returns it: uid, resourceVersion, creationTimestamp.
void stored(json::object& object, std::uint64_t& serial) {
  auto& md = object["metadata"].as_object();
  ++serial;
  md["uid"] = uid(serial);
  md["resourceVersion"] = std::to_string(1000 + serial);
  md["creationTimestamp"] = kCreated;
}

json::value service(const json::value& desired, std::uint64_t& serial) {
  json::object o = desired.as_object();
  stored(o, serial);
  auto& spec = o["spec"].as_object();
  if (!spec.contains("clusterIP")) {
    const auto ip = fmt::format("10.96.{}.{}", (serial >> 8) & 0xff, serial & 0xff);
    spec["clusterIP"] = ip;
    spec["clusterIPs"] = json::array{json::string(ip)};
  } else {
    spec["clusterIPs"] = json::array{"None"};
  }
  if (!spec.contains("type")) spec["type"] = "ClusterIP";
  spec["sessionAffinity"] = "None";
  spec["ipFamilies"] = json::array{"IPv4"};
  spec["ipFamilyPolicy"] = "SingleStack";
  o["status"] = json::object{{"loadBalancer", json::object{}}};
  return o;
}

// Server defaults of a pod template's spec, applied in place.
void default_pod_spec(json::object& spec) {
  spec["restartPolicy"] = "Always";
  spec["terminationGracePeriodSeconds"] = 30;
  spec["dnsPolicy"] = "ClusterFirst";
  spec["securityContext"] = json::object{};
  spec["schedulerName"] = "default-scheduler";
  for (auto& c : spec["containers"].as_array()) {
    auto& co = c.as_object();
    co["imagePullPolicy"] = "IfNotPresent";
    co["terminationMessagePath"] = "/dev/termination-log";
    co["terminationMessagePolicy"] = "File";
    if (!co.contains("resources")) co["resources"] = json::object{};
  }
}

json::value stateful_set(const reconciler::DesiredRole& role, std::uint64_t& serial) {
  json::object o = role.stateful_set.as_object();
  stored(o, serial);
  o["metadata"].as_object()["generation"] = 1;
  auto& spec = o["spec"].as_object();
  spec["revisionHistoryLimit"] = 10;
  spec["updateStrategy"] =
      json::object{{"type", "RollingUpdate"}, {"rollingUpdate", json::object{{"partition", 0}}}};
  auto& tmpl = spec["template"].as_object();
  tmpl["metadata"].as_object()["creationTimestamp"] = nullptr;
  default_pod_spec(tmpl["spec"].as_object());
  if (auto* vcts = spec.if_contains("volumeClaimTemplates"); vcts != nullptr) {
    for (auto& t : vcts->as_array()) {
      auto& to = t.as_object();
      to["apiVersion"] = "v1";
      to["kind"] = "PersistentVolumeClaim";
      to["spec"].as_object()["volumeMode"] = "Filesystem";
      to["status"] = json::object{{"phase", "Pending"}};
    }
  }
  const auto revision = fmt::format("{}-7d9c8b6f5", role.stateful_set_name);
  o["status"] = json::object{{"observedGeneration", 1},          {"replicas", role.replicas},
                             {"readyReplicas", role.replicas},   {"currentReplicas", role.replicas},
                             {"updatedReplicas", role.replicas}, {"currentRevision", revision},
                             {"updateRevision", revision},       {"collisionCount", 0}};
  return o;
}

json::value pod(const catalog::Stack& stack, const reconciler::DesiredRole& role,
                const reconciler::DesiredMember& member, const json::value& sts,
                std::uint64_t& serial) {
  const auto& tmpl = sts.at("spec").at("template").as_object();
  json::object labels = tmpl.at("metadata").at("labels").as_object();
  const auto* annotations = tmpl.at("metadata").as_object().if_contains("annotations");
  labels["controller-revision-hash"] = fmt::format("{}-7d9c8b6f5", role.stateful_set_name);
  labels[std::string(reconciler::kLabelPodName)] = member.pod;
  json::object spec = tmpl.at("spec").as_object();
  spec["hostname"] = member.pod;
  spec["subdomain"] = sts.at("spec").at("serviceName");
  spec["nodeName"] = kNode;
  spec["serviceAccountName"] = "default";
  spec["enableServiceLinks"] = true;
  spec["priority"] = 0;
  json::array volumes;
  if (!member.pvc.empty()) {
    volumes.push_back(json::object{{"name", catalog::kDataVolumeName},
                                   {"persistentVolumeClaim", {{"claimName", member.pvc}}}});
  }
  volumes.push_back(
      json::object{{"name", "default-token-abcde"},
                   {"secret", {{"secretName", "default-token-abcde"}, {"defaultMode", 420}}}});
  spec["volumes"] = std::move(volumes);
  json::object o{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", member.pod},
        {"generateName", role.stateful_set_name + "-"},
        {"namespace", stack.metadata.namespace_name},
        {"labels", std::move(labels)},
        {"annotations", annotations != nullptr ? *annotations : json::object{}},
        {"ownerReferences", json::array{json::object{{"apiVersion", "apps/v1"},
                                                     {"kind", "StatefulSet"},
                                                     {"name", role.stateful_set_name},
                                                     {"uid", sts.at("metadata").at("uid")},
                                                     {"controller", true},
                                                     {"blockOwnerDeletion", true}}}}}},
      {"spec", std::move(spec)}};
  stored(o, serial);
  json::array conditions;
  for (const char* type : {"Initialized", "Ready", "ContainersReady", "PodScheduled"}) {
    conditions.push_back(json::object{{"type", type},
                                      {"status", "True"},
                                      {"lastProbeTime", nullptr},
                                      {"lastTransitionTime", kCreated}});
  }
  const auto& container = tmpl.at("spec").at("containers").as_array().at(0).as_object();
  o["status"] =
      json::object{{"phase", "Running"},
                   {"conditions", std::move(conditions)},
                   {"hostIP", "127.0.0.1"},
                   {"podIP", fmt::format("127.0.0.{}", 2 + serial % 253)},
                   {"startTime", kCreated},
                   {"qosClass", "BestEffort"},
                   {"containerStatuses",
                    json::array{json::object{
                        {"name", reconciler::kContainerName},
                        {"state", {{"running", {{"startedAt", kCreated}}}}},
                        {"lastState", json::object{}},
                        {"ready", true},
                        {"restartCount", 0},
                        {"image", container.at("image")},
                        {"imageID", fmt::format("sim://{}", container.at("image").as_string())},
                        {"containerID", fmt::format("sim://{}", uid(serial))},
                        {"started", true}}}}};
  return o;
}

json::value claim(const catalog::Stack& stack, const catalog::AppType& app,
                  const reconciler::DesiredRole& role, const reconciler::DesiredMember& member,
                  std::uint64_t& serial) {
  json::object o{{"apiVersion", "v1"},
                 {"kind", "PersistentVolumeClaim"},
                 {"metadata",
                  {{"name", member.pvc},
                   {"namespace", stack.metadata.namespace_name},
                   {"labels", reconciler::common_labels(stack, app, role.id)},
                   {"annotations",
                    {{"pv.kubernetes.io/bind-completed", "yes"},
                     {"pv.kubernetes.io/bound-by-controller", "yes"},
                     {"volume.beta.kubernetes.io/storage-provisioner", "kstack.io/nodesim"}}},
                   {"finalizers", json::array{"kubernetes.io/pvc-protection"}},
                   {"ownerReferences", json::array{reconciler::owner_reference(stack)}}}}};
  stored(o, serial);
  const std::string size = role.stateful_set.at("spec")
                               .at("volumeClaimTemplates")
                               .at(0)
                               .at("spec")
                               .at("resources")
                               .at("requests")
                               .at("storage")
                               .as_string()
                               .c_str();
  o["spec"] = json::object{{"accessModes", json::array{"ReadWriteOnce"}},
                           {"resources", {{"requests", {{"storage", size}}}}},
                           {"storageClassName", "standard"},
                           {"volumeMode", "Filesystem"},
                           {"volumeName", fmt::format("pvc-{}", uid(serial))}};
  o["status"] = json::object{{"phase", "Bound"},
                             {"accessModes", json::array{"ReadWriteOnce"}},
                             {"capacity", {{"storage", size}}}};
  return o;
}

}  // namespace

LiveObjects live_objects(const catalog::Stack& stack, const catalog::AppType& app,
                         const reconciler::DesiredState& desired, std::uint64_t& serial) {
  LiveObjects live;
  live.services.push_back(service(desired.headless_service, serial));
  for (const auto& svc : desired.member_services) live.services.push_back(service(svc, serial));
  for (const auto& role : desired.roles) {
    live.stateful_sets.push_back(stateful_set(role, serial));
    const auto& sts = live.stateful_sets.back();
    for (const auto& member : role.members) {
      live.pods.push_back(pod(stack, role, member, sts, serial));
      if (!member.pvc.empty()) live.pvcs.push_back(claim(stack, app, role, member, serial));
    }
  }
  return live;
}

}  // namespace kstack::bench
