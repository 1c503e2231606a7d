#include "catalog/kubedirector.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/field_error.h"
#include "catalog/yaml.h"
#include "tests/unit/support/yaml_value.h"
#include "validator/rules/offline.h"

namespace kstack::catalog {
namespace {
namespace json = boost::json;
namespace fs = std::filesystem;
using Severity = ImportIssue::Severity;

using kstack::testing::yaml;

ImportResult convert(std::string_view text, const ImportOptions& options = {}) {
  return import_kubedirector(yaml(text), options);
}

// The value at a JSON pointer, or nullptr.
const json::value* at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  return v.find_pointer(pointer, ec);
}

// "dropped spec.roles[0].maxLogSizeDump", one per issue, sorted: whole lists compare exactly.
std::set<std::string> issue_set(const ImportResult& r) {
  std::set<std::string> out;
  for (const auto& i : r.issues) out.insert(std::string(to_string(i.severity)) + " " + i.field);
  return out;
}

const ImportIssue* find_issue(const ImportResult& r, std::string_view field) {
  for (const auto& i : r.issues) {
    if (i.field == field) return &i;
  }
  return nullptr;
}

std::string all_messages(const ImportResult& r) {
  std::string out;
  for (const auto& i : r.issues) out += format_issue(r, i) + "\n";
  return out;
}

// ---- KubeDirectorApp ----

constexpr std::string_view kFullApp = R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorApp
metadata:
  name: spark
  namespace: example
  labels: {tier: analytics}
  annotations: {owner: data-team}
spec:
  label: {name: Spark, description: Spark with notebooks}
  distroID: bluedata/spark245
  version: "2.4.5"
  configSchemaVersion: 7
  defaultImageRepoTag: bluedata/spark245:5.2
  defaultConfigPackage: {packageURL: "file:///opt/configscripts/appconfig.tgz"}
  services:
    - id: spark-web
      label: {name: Spark UI, description: master web UI}
      endpoint: {port: 8080, urlScheme: http, path: /, isDashboard: true, hasAuthToken: true}
      exported_service: spark-ui
    - id: ssh
      endpoint: {port: 22}
  roles:
    - id: master
      cardinality: "1"
      imageRepoTag: bluedata/spark-master:5.2
      configPackage: null
      persistDirs: [/etc/spark, /home]
      eventList: [configure, addnodes]
      minResources: {cpu: "2", memory: 4Gi, nvidia.com/gpu: 1}
      minStorage: {size: 10Gi, ephemeralModeSupported: true}
      containerSpec: {stdin: true, tty: true}
    - id: worker
      cardinality: 1+
  config:
    roleServices:
      - {roleID: master, serviceIDs: [spark-web, ssh]}
      - {roleID: worker, serviceIDs: [ssh]}
    selectedRoles: [master, worker]
    configMeta: {sparkVersion: "2.4.5", mode: standalone}
  defaultPersistDirs: [/var/log/spark]
  defaultEventList: [configure, addnodes, delnodes]
  capabilities: [SYS_RESOURCE, IPC_LOCK]
  systemdRequired: true
  logoURL: https://example.com/spark.png
)";

TEST(KubeDirectorImport, AppCarriesEveryDocumentedFieldUnchanged) {
  auto source = yaml(kFullApp);
  auto r = import_kubedirector(source);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_FALSE(r.skipped);
  EXPECT_EQ(r.source_kind, "KubeDirectorApp");
  EXPECT_EQ(r.source_name, "example/spark");
  const auto& o = r.object.as_object();
  EXPECT_EQ(o.at("apiVersion"), json::value("kstack.io/v1beta1"));
  EXPECT_EQ(o.at("kind"), json::value("AppType"));
  // Whole-spec equality: a field dropped or altered on the way fails here.
  EXPECT_EQ(o.at("spec"), source.at("spec")) << json::serialize(o.at("spec"));
  EXPECT_EQ(o.at("metadata"), source.at("metadata"));
  // Only the setup-layout warning: nothing dropped.
  EXPECT_EQ(issue_set(r), (std::set<std::string>{"warning spec.defaultConfigPackage.packageURL"}));
}

TEST(KubeDirectorImport, AppDropsKubeDirectorOnlyFieldsNamingEachPath) {
  auto r = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorApp
metadata: {name: app}
spec:
  label: {name: App, icon: x.png}
  distroID: d
  version: "1"
  configSchemaVersion: 7
  defaultMaxLogSizeDump: 512
  defaultConfigPackage: {packageURL: "https://example.com/a.tgz", useNewSetupLayout: true}
  useServiceAccount: true
  services:
    - {id: web, endpoint: {port: 80, proto: tcp}, ui: true}
  roles:
    - id: r
      cardinality: "1"
      imageRepoTag: img
      maxLogSizeDump: 256
      configPackage: {packageURL: "https://example.com/a.tgz", useNewSetupLayout: false}
      sharedDirs: [/shared]
      minStorage: {size: 1Gi, shared: true}
      containerSpec: {stdin: true, privileged: true}
  config: {roleServices: [{roleID: r, serviceIDs: [web], weight: 1}], selectedRoles: [r], extra: 1}
)");
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(issue_set(r), (std::set<std::string>{
                              "dropped spec.label.icon",
                              "dropped spec.defaultMaxLogSizeDump",
                              "dropped spec.defaultConfigPackage.useNewSetupLayout",
                              "warning spec.defaultConfigPackage.packageURL",
                              "dropped spec.useServiceAccount",
                              "dropped spec.services[0].endpoint.proto",
                              "dropped spec.services[0].ui",
                              "dropped spec.roles[0].maxLogSizeDump",
                              "dropped spec.roles[0].configPackage.useNewSetupLayout",
                              "dropped spec.roles[0].sharedDirs",
                              "dropped spec.roles[0].minStorage.shared",
                              "dropped spec.roles[0].containerSpec.privileged",
                              "dropped spec.config.roleServices[0].weight",
                              "dropped spec.config.extra",
                          }));
  const auto& spec = r.object.at("spec");
  EXPECT_EQ(at(spec, "/defaultMaxLogSizeDump"), nullptr);
  EXPECT_EQ(at(spec, "/useServiceAccount"), nullptr);
  EXPECT_EQ(spec.at("defaultConfigPackage"),
            (json::value(json::object{{"packageURL", "https://example.com/a.tgz"}})));
  EXPECT_EQ(at(spec, "/roles/0/maxLogSizeDump"), nullptr);
  EXPECT_EQ(at(spec, "/roles/0/sharedDirs"), nullptr);
  EXPECT_EQ(spec.at_pointer("/roles/0/minStorage"), (json::value(json::object{{"size", "1Gi"}})));
  EXPECT_EQ(spec.at_pointer("/roles/0/containerSpec"),
            (json::value(json::object{{"stdin", true}})));
  // Reasons are given, not just the path.
  const auto* log = find_issue(r, "spec.defaultMaxLogSizeDump");
  ASSERT_NE(log, nullptr);
  EXPECT_TRUE(log->message.starts_with("not carried over: ")) << log->message;
  const auto* unknown = find_issue(r, "spec.roles[0].sharedDirs");
  ASSERT_NE(unknown, nullptr);
  EXPECT_NE(unknown->message.find("KubeDirectorApp role"), std::string::npos) << unknown->message;
}

TEST(KubeDirectorImport, ConfigPackageKeepsAllThreeStates) {
  auto r = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorApp
metadata: {name: app}
spec:
  label: {name: App}
  distroID: d
  version: "1"
  configSchemaVersion: 7
  defaultImageRepoTag: img
  defaultConfigPackage: null
  roles:
    - {id: none, cardinality: "1", configPackage: null}
    - {id: inherit, cardinality: "1"}
    - {id: own, cardinality: "1", configPackage: {packageURL: "file:///opt/p.tgz"}}
  config: {roleServices: [], selectedRoles: []}
)");
  ASSERT_TRUE(r.error.empty()) << r.error;
  const auto& spec = r.object.at("spec").as_object();
  ASSERT_TRUE(spec.contains("defaultConfigPackage"));
  EXPECT_TRUE(spec.at("defaultConfigPackage").is_null());
  const auto& roles = spec.at("roles").as_array();
  ASSERT_TRUE(roles[0].as_object().contains("configPackage"));
  EXPECT_TRUE(roles[0].at("configPackage").is_null());
  EXPECT_FALSE(roles[1].as_object().contains("configPackage"));
  EXPECT_EQ(roles[2].at_pointer("/configPackage/packageURL"), json::value("file:///opt/p.tgz"));
}

TEST(KubeDirectorImport, SetupLayoutWarningComesOncePerPackage) {
  auto r = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorApp
metadata: {name: app}
spec:
  label: {name: App}
  distroID: d
  version: "1"
  configSchemaVersion: 7
  defaultImageRepoTag: img
  defaultConfigPackage: {packageURL: "file:///opt/a.tgz"}
  roles:
    - {id: a, cardinality: "1", configPackage: {packageURL: "file:///opt/a.tgz"}}
    - {id: b, cardinality: "1", configPackage: {packageURL: "file:///opt/b.tgz"}}
    - {id: c, cardinality: "1", configPackage: {packageURL: "file:///opt/b.tgz"}}
  config: {roleServices: [], selectedRoles: []}
)");
  EXPECT_EQ(issue_set(r), (std::set<std::string>{
                              "warning spec.defaultConfigPackage.packageURL",
                              "warning spec.roles[1].configPackage.packageURL",
                          }));
  const auto* w = find_issue(r, "spec.defaultConfigPackage.packageURL");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->message.find("/etc/guestconfig"), std::string::npos);
  EXPECT_NE(w->message.find("/etc/kstack/configmeta.json"), std::string::npos);
  EXPECT_NE(w->message.find("/opt/kstack/setup"), std::string::npos);
}

TEST(KubeDirectorImport, RoleIdsThatAreNoDnsLabelsAreRenamedInTheAppAndItsClusters) {
  auto app = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorApp
metadata: {name: centos7x}
spec:
  label: {name: CentOS}
  distroID: bluedata/centos7x
  version: "2.1"
  configSchemaVersion: 7
  defaultImageRepoTag: bluedata/centos7:4.1
  services: [{id: ssh, endpoint: {port: 22}}]
  roles: [{id: vanilla_centos, cardinality: 1+}, {id: RESTServer, cardinality: "0+"}]
  config:
    roleServices: [{roleID: vanilla_centos, serviceIDs: [ssh]}]
    selectedRoles: [vanilla_centos, RESTServer]
)");
  const auto& spec = app.object.at("spec");
  EXPECT_EQ(spec.at_pointer("/roles/0/id"), json::value("vanilla-centos"));
  EXPECT_EQ(spec.at_pointer("/roles/1/id"), json::value("restserver"));
  EXPECT_EQ(spec.at_pointer("/config/roleServices/0/roleID"), json::value("vanilla-centos"));
  EXPECT_EQ(spec.at_pointer("/config/selectedRoles"),
            (json::value{"vanilla-centos", "restserver"}));
  EXPECT_EQ(issue_set(app),
            (std::set<std::string>{"changed spec.roles[0].id", "changed spec.roles[1].id"}));
  EXPECT_NE(find_issue(app, "spec.roles[0].id")
                ->message.find("\"vanilla_centos\" renamed to "
                               "\"vanilla-centos\""),
            std::string::npos);

  auto cluster = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorCluster
metadata: {name: sandbox}
spec:
  app: centos7x
  serviceType: ClusterIP
  namingScheme: CrNameRole
  roles: [{id: vanilla_centos, members: 1}]
)");
  EXPECT_EQ(cluster.object.at_pointer("/spec/roles/0/id"), json::value("vanilla-centos"));
  EXPECT_EQ(issue_set(cluster), (std::set<std::string>{"changed spec.roles[0].id"}));
}

TEST(KubeDirectorImport, ClusterNamesWithDotsOrUnderscoresAreRenamedAsKubeDirectorDid) {
  auto cluster = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorCluster
metadata: {name: spark.prod_east, namespace: analytics}
spec:
  app: spark
  serviceType: ClusterIP
  namingScheme: CrNameRole
  roles: [{id: master, members: 1}]
)");
  ASSERT_TRUE(cluster.error.empty()) << cluster.error;
  EXPECT_EQ(cluster.object.at_pointer("/metadata/name"), json::value("spark-prod-east"));
  EXPECT_EQ(issue_set(cluster), (std::set<std::string>{"changed metadata.name"}));
  EXPECT_NE(find_issue(cluster, "metadata.name")
                ->message.find("renamed to \"spark-prod-east\" (was \"spark.prod_east\")"),
            std::string::npos)
      << all_messages(cluster);

  // The converted Stack passes kstack's own validation (with its app).
  std::string text = R"(
apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: spark, namespace: analytics}
spec:
  label: {name: Spark}
  distroID: spark
  version: "1"
  configSchemaVersion: 1
  defaultImageRepoTag: spark:1
  roles: [{id: master, cardinality: "1"}]
---
)" + json::serialize(cluster.object) +
                     "\n";
  auto parsed = parse_manifests(text);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  std::vector<validator::SourceDocument> docs;
  for (auto& d : *parsed) docs.push_back({"x.yaml", std::move(d)});
  auto results = validator::validate_offline(docs);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].status, validator::OfflineResult::Status::kOk)
      << (results[1].problems.empty() ? "" : results[1].problems[0]);
}

TEST(KubeDirectorImport, RoleIdsThatCollideOnceRenamedAreRefusedNotEmitted) {
  for (std::string_view kind : {"KubeDirectorApp", "KubeDirectorCluster"}) {
    std::string text = "apiVersion: kubedirector.hpe.com/v1beta1\nkind: " + std::string(kind) +
                       "\nmetadata: {name: es}\nspec:\n  app: es\n"
                       "  roles: [{id: master}, {id: data_node}, {id: data-node}]\n";
    auto r = convert(text);
    EXPECT_TRUE(r.object.is_null()) << kind;
    EXPECT_NE(r.error.find("spec.roles[1].id \"data_node\" and spec.roles[2].id \"data-node\" "
                           "would both become role id \"data-node\""),
              std::string::npos)
        << kind << ": " << r.error;
  }
}

TEST(KubeDirectorImport, RoleIdSanitizerKeepsValidIdsAndMakesDnsLabels) {
  EXPECT_EQ(kubedirector_role_id("worker"), "worker");
  EXPECT_EQ(kubedirector_role_id("spark-master"), "spark-master");
  EXPECT_EQ(kubedirector_role_id("vanilla_centos"), "vanilla-centos");
  EXPECT_EQ(kubedirector_role_id("LoadBalancer"), "loadbalancer");
  EXPECT_EQ(kubedirector_role_id("_edge.node_"), "edge-node");
  EXPECT_EQ(kubedirector_role_id(std::string(62, 'a') + "_b"), std::string(62, 'a'));
  EXPECT_EQ(kubedirector_role_id("___"), "");
}

TEST(KubeDirectorImport, InvalidMinimumQuantitiesAreDroppedNotCopied) {
  auto r = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorApp
metadata: {name: app}
spec:
  label: {name: App}
  distroID: d
  version: "1"
  configSchemaVersion: 7
  defaultImageRepoTag: img
  roles:
    - id: r
      cardinality: "1"
      minResources: {cpu: "1.2.3", memory: 1Gi, nvidia.com/gpu: 5kM}
      minStorage: {size: "1..5G", ephemeralModeSupported: true}
  config: {roleServices: [], selectedRoles: []}
)");
  EXPECT_EQ(issue_set(r), (std::set<std::string>{
                              "dropped spec.roles[0].minResources[cpu]",
                              "dropped spec.roles[0].minResources[nvidia.com/gpu]",
                              "dropped spec.roles[0].minStorage.size",
                          }));
  EXPECT_EQ(r.object.at_pointer("/spec/roles/0/minResources"),
            (json::value(json::object{{"memory", "1Gi"}})));
  EXPECT_EQ(r.object.at_pointer("/spec/roles/0/minStorage"),
            (json::value(json::object{{"ephemeralModeSupported", true}})));
}

// ---- KubeDirectorCluster ----

TEST(KubeDirectorImport, ClusterCarriesEveryRoleSettingKstackHas) {
  auto source = yaml(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorCluster
metadata: {name: spark-instance, namespace: analytics}
spec:
  app: spark245
  appCatalog: local
  serviceType: NodePort
  namingScheme: UID
  roles:
    - id: spark-worker
      members: 3
      resources:
        requests: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "1"}
        limits: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "1"}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: [{matchExpressions: [{key: gpu, operator: Exists}]}]
      storage: {size: 100Gi, storageClassName: fast-ssd}
      env: [{name: SPARK_WORKER_CORES, value: "4"}]
      serviceAccountName: spark
      podLabels: {spark-role: worker}
      podAnnotations: {a: b}
      serviceLabels: {exposed: internal}
      serviceAnnotations: {prometheus.io/scrape: "true"}
)");
  auto r = import_kubedirector(source);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.object.at("apiVersion"), json::value("kstack.io/v1beta1"));
  EXPECT_EQ(r.object.at("kind"), json::value("Stack"));
  EXPECT_EQ(r.object.at("spec"), source.at("spec")) << json::serialize(r.object.at("spec"));
  EXPECT_EQ(r.object.at("metadata"), source.at("metadata"));
  EXPECT_TRUE(r.issues.empty()) << all_messages(r);
}

TEST(KubeDirectorImport, ClusterDropsWhatKstackDoesNotSupportAndNeverPrintsSecrets) {
  auto r = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorCluster
metadata: {name: c}
spec:
  app: a
  serviceType: ClusterIP
  namingScheme: CrNameRole
  connections: {secrets: [auth], configmaps: [cm], clusters: [other]}
  defaultSecret: {name: hpecp-s, mountPath: /etc/s}
  roles:
    - id: r
      members: 1
      blockStorage: {storageClassName: block, pathPrefix: /dev/xvd, size: 1Gi, numDevices: 2}
      sharedMemory: 1Gi
      fileInjections: [{srcURL: "https://example.com/f", destDir: /opt}]
      secret: {name: hpecp-r, mountPath: /etc/r}
      secretKeys: [{name: password, value: hunter2-plaintext}]
      volumeProjections: [{pvcName: data, mountPath: /mnt/data}]
      nodeSelector: {disk: ssd}
)");
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(issue_set(r),
            (std::set<std::string>{
                "dropped spec.connections", "dropped spec.defaultSecret",
                "dropped spec.roles[0].blockStorage", "dropped spec.roles[0].sharedMemory",
                "dropped spec.roles[0].fileInjections", "dropped spec.roles[0].secret",
                "dropped spec.roles[0].secretKeys", "dropped spec.roles[0].volumeProjections",
                "dropped spec.roles[0].nodeSelector",  // not a KubeDirector field
            }));
  EXPECT_EQ(r.object.at("spec"), yaml(R"(
app: a
serviceType: ClusterIP
namingScheme: CrNameRole
roles: [{id: r, members: 1}]
)"));
  EXPECT_EQ(all_messages(r).find("hunter2"), std::string::npos);
}

TEST(KubeDirectorImport, ClusterStatusIsLeftOutWithOneNote) {
  auto r = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorCluster
metadata: {name: c}
spec: {app: a, serviceType: ClusterIP, namingScheme: UID, roles: [{id: r, members: 1}]}
status:
  state: configured
  roles: [{id: r, statefulSet: kdss-x, members: [{pod: kdss-x-0, state: configured}]}]
)");
  EXPECT_EQ(issue_set(r), (std::set<std::string>{"note status"}));
  EXPECT_FALSE(r.object.as_object().contains("status"));
}

TEST(KubeDirectorImport, UnsetDefaultsThatDifferFromKubeDirectorAreNoted) {
  auto r = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorCluster
metadata: {name: c}
spec: {app: a, appCatalog: system, roles: [{id: r}]}
)");
  EXPECT_EQ(issue_set(r), (std::set<std::string>{"note spec.serviceType", "note spec.namingScheme",
                                                 "note spec.appCatalog"}));
  EXPECT_NE(find_issue(r, "spec.serviceType")->message.find("LoadBalancer"), std::string::npos);
  EXPECT_NE(find_issue(r, "spec.namingScheme")->message.find("UID"), std::string::npos);
  // Nothing is invented: the fields stay unset.
  EXPECT_FALSE(r.object.at("spec").as_object().contains("serviceType"));
  EXPECT_FALSE(r.object.at("spec").as_object().contains("namingScheme"));
}

TEST(KubeDirectorImport, AffinityOnKubeDirectorPodLabelsIsCopiedWithAWarning) {
  auto r = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorCluster
metadata: {name: c}
spec:
  app: a
  serviceType: ClusterIP
  namingScheme: UID
  roles:
    - id: r
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {kubedirector.hpe.com/kdcluster: c}}
)");
  EXPECT_EQ(issue_set(r), (std::set<std::string>{"warning spec.roles[0].affinity"}));
  EXPECT_NE(r.object.at_pointer("/spec/roles/0/affinity/podAntiAffinity"), nullptr);
}

// ---- KubeDirectorConfig ----

TEST(KubeDirectorImport, ConfigBecomesTheKStackConfigInTheOperatorNamespace) {
  auto r = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorConfig
metadata: {name: kd-global-config, namespace: kubedirector}
spec:
  defaultStorageClassName: local-path
  defaultServiceType: NodePort
  defaultNamingScheme: CrNameRole
  clusterSvcDomainBase: .svc.example.org
  podLabels: {a: b}
  podAnnotations: {c: d}
  serviceLabels: {e: f}
  serviceAnnotations: {g: h}
  nativeSystemdSupport: true
  requiredSecretPrefix: hpecp-
  masterEncryptionKey: 00112233445566778899aabbccddeeff
  backupClusterStatus: true
  allowRestoreWithoutConnections: true
  forceSharedMemorySizeSupport: false
)",
                   ImportOptions{std::string("apps"), "kstack-operator"});
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.object.at("kind"), json::value("KStackConfig"));
  EXPECT_EQ(
      r.object.at("metadata"),
      (json::value(json::object{{"name", "kstack-config"}, {"namespace", "kstack-operator"}})));
  EXPECT_EQ(r.object.at("spec"), yaml(R"(
defaultStorageClassName: local-path
defaultServiceType: NodePort
defaultNamingScheme: CrNameRole
clusterSvcDomainBase: .svc.example.org
podLabels: {a: b}
podAnnotations: {c: d}
serviceLabels: {e: f}
serviceAnnotations: {g: h}
)"));
  EXPECT_EQ(issue_set(r), (std::set<std::string>{
                              "warning metadata.name",
                              "warning metadata.namespace",
                              "dropped spec.nativeSystemdSupport",
                              "dropped spec.requiredSecretPrefix",
                              "dropped spec.masterEncryptionKey",
                              "dropped spec.backupClusterStatus",
                              "dropped spec.allowRestoreWithoutConnections",
                              "dropped spec.forceSharedMemorySizeSupport",
                          }));
  EXPECT_EQ(all_messages(r).find("00112233"), std::string::npos);
}

TEST(KubeDirectorImport, ConfigWithoutServiceTypeOrNamingSchemeNotesTheDifferentDefaults) {
  auto r = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorConfig
metadata: {name: kstack-config, namespace: kstack-system}
)");
  EXPECT_EQ(issue_set(r), (std::set<std::string>{"note spec.defaultServiceType",
                                                 "note spec.defaultNamingScheme"}));
}

// ---- metadata and documents ----

TEST(KubeDirectorImport, MetadataKeepsIdentityLabelsAndAnnotationsButNotKubeDirectorKeys) {
  auto r = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorCluster
metadata:
  name: tf
  namespace: ml
  uid: 0f1e2d3c
  resourceVersion: "51876"
  generation: 3
  creationTimestamp: "2026-03-21T10:00:00Z"
  managedFields: [{manager: kubectl}]
  selfLink: /apis/kubedirector.hpe.com/v1beta1/namespaces/ml/kubedirectorclusters/tf
  labels: {owner: ds, kubedirector.hpe.com/restoring: ""}
  annotations:
    note: keep me
    kubedirector.hpe.com/connUpdateCounter: "2"
    kubectl.kubernetes.io/last-applied-configuration: "{}"
  finalizers: [kubedirector.hpe.com/cleanup]
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: x, uid: y}]
spec: {app: a, serviceType: ClusterIP, namingScheme: UID, roles: [{id: r}]}
)");
  EXPECT_EQ(r.object.at("metadata"), yaml(R"(
name: tf
namespace: ml
labels: {owner: ds}
annotations: {note: keep me}
)"));
  EXPECT_EQ(issue_set(r),
            (std::set<std::string>{
                "dropped metadata.labels[kubedirector.hpe.com/restoring]",
                "dropped metadata.annotations[kubedirector.hpe.com/connUpdateCounter]",
                "dropped metadata.finalizers",
                "dropped metadata.ownerReferences",
            }));
}

TEST(KubeDirectorImport, NamespaceOptionSetsAppsAndStacksButNotTheConfig) {
  ImportOptions options;
  options.namespace_override = "team-a";
  auto app = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorApp
metadata: {name: app, namespace: kubedirector}
spec: {label: {name: A}, distroID: d, version: "1", configSchemaVersion: 7, roles: []}
)",
                     options);
  EXPECT_EQ(app.object.at_pointer("/metadata/namespace"), json::value("team-a"));
  auto stack = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorCluster
metadata: {name: c}
spec: {app: app, roles: []}
)",
                       options);
  EXPECT_EQ(stack.object.at_pointer("/metadata/namespace"), json::value("team-a"));
  auto config = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorConfig
metadata: {name: kd-global-config}
)",
                        options);
  EXPECT_EQ(config.object.at_pointer("/metadata/namespace"), json::value("kstack-system"));
}

TEST(KubeDirectorImport, DocumentsThatAreNotKubeDirectorObjectsAreUnusable) {
  auto secret = convert("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n");
  EXPECT_NE(secret.error.find("not a KubeDirector object"), std::string::npos) << secret.error;
  EXPECT_TRUE(secret.object.is_null());

  auto legacy = convert(
      "apiVersion: kubedirector.bluedata.io/v1alpha1\nkind: KubeDirectorApp\nmetadata: {name: "
      "a}\n");
  EXPECT_NE(legacy.error.find("v0.4.0"), std::string::npos) << legacy.error;

  auto unknown =
      convert("apiVersion: kubedirector.hpe.com/v1beta1\nkind: KubeDirectorThing\nmetadata: {}\n");
  EXPECT_NE(unknown.error.find("unknown kind \"KubeDirectorThing\""), std::string::npos)
      << unknown.error;

  EXPECT_FALSE(import_kubedirector(json::value(42)).error.empty());
}

TEST(KubeDirectorImport, StatusBackupsAreSkippedWithAReason) {
  auto r = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorStatusBackup
metadata: {name: c, namespace: ml}
spec: {statusBackup: {state: configured}}
)");
  EXPECT_TRUE(r.error.empty());
  EXPECT_TRUE(r.skipped);
  EXPECT_TRUE(r.object.is_null());
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].severity, Severity::kDropped);
}

TEST(KubeDirectorImport, IssuesReadKindNamePathAndReason) {
  auto r = convert(R"(
apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorApp
metadata: {name: spark, namespace: example}
spec:
  label: {name: S}
  distroID: d
  version: "1"
  configSchemaVersion: 7
  defaultImageRepoTag: img
  roles: [{id: a, cardinality: "1"}, {id: b, cardinality: "1", maxLogSizeDump: 10}]
  config: {roleServices: [], selectedRoles: []}
)");
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_TRUE(format_issue(r, r.issues[0])
                  .starts_with("KubeDirectorApp example/spark: spec.roles[1].maxLogSizeDump: not "
                               "carried over: "))
      << format_issue(r, r.issues[0]);
}

}  // namespace
}  // namespace kstack::catalog
