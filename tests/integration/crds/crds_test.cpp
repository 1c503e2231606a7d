// kstack's CustomResourceDefinitions (deploy/crds/) against a real kube-apiserver: they are
// structural and become Established, `kubectl explain` documents them, valid objects are
// stored unpruned, schema-invalid ones are refused with a message naming the field, printer
// columns, the status subresource, short names and the `kstack` category work.
// Uses kubectl only (the CRDs are what is under test, not kstack's client).
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testenv/environment.h"

// The repository root, defined by tests/integration/CMakeLists.txt. Without it (an older
// build script) this file's own path is tried, which holds only when __FILE__ is absolute.
#ifndef KSTACK_SOURCE_DIR
#define KSTACK_SOURCE_DIR KSTACK_ROOT_FROM_FILE
#define KSTACK_ROOT_FROM_FILE \
  std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path().string()
#endif

namespace kstack::testenv {
namespace {

using namespace std::chrono_literals;

const std::string kCrdDir = std::string(KSTACK_SOURCE_DIR) + "/deploy/crds";

// Fails the calling test when the CRD files are not where KSTACK_SOURCE_DIR says.
void expect_crd_dir() {
  ASSERT_TRUE(std::filesystem::exists(kCrdDir + "/stacks.yaml"))
      << kCrdDir << " holds no CRDs: define KSTACK_SOURCE_DIR (the repository root) for "
      << "crds_integration_tests in tests/integration/CMakeLists.txt";
}

const std::vector<std::string> kCrdNames = {"apptypes.kstack.io", "stacks.kstack.io",
                                            "kstackconfigs.kstack.io"};

// Polls `condition` until it holds or `timeout` passes. The apiserver publishes a new CRD's
// OpenAPI (which `kubectl explain` reads) shortly after the CRD is Established.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(200ms);
  }
  return true;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string output_of(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

// Applies the three CRDs once per binary and waits until they serve.
void install_crds() {
  static bool installed = false;
  if (installed) return;
  ASSERT_NO_FATAL_FAILURE(expect_crd_dir());
  auto& cp = control_plane();
  std::vector<std::string> apply = {"apply"};
  for (const char* file : {"apptypes.yaml", "stacks.yaml", "kstackconfigs.yaml"}) {
    apply.insert(apply.end(), {"-f", kCrdDir + "/" + file});
  }
  const auto applied = cp.kubectl(apply);
  ASSERT_TRUE(applied.ok()) << output_of(applied);
  std::vector<std::string> wait = {"wait", "--for=condition=Established", "--timeout=60s"};
  for (const auto& name : kCrdNames) wait.push_back("crd/" + name);
  const auto established = cp.kubectl(wait);
  ASSERT_TRUE(established.ok()) << output_of(established);
  installed = true;
}

// A fresh namespace per test: the control plane is shared by the whole binary.
std::string make_namespace(const std::string& name) {
  const auto r = control_plane().kubectl({"create", "namespace", name});
  EXPECT_TRUE(r.ok() || contains(r.err, "AlreadyExists")) << output_of(r);
  return name;
}

CommandResult create(const std::string& ns, const std::string& yaml) {
  // --validate=false: the apiserver, not kubectl's client-side OpenAPI check, must refuse.
  return control_plane().kubectl({"create", "--validate=false", "-n", ns, "-f", "-"}, yaml);
}

std::string get(const std::string& ns, const std::string& what, const std::string& jsonpath) {
  const auto r = control_plane().kubectl({"get", "-n", ns, what, "-o", "jsonpath=" + jsonpath});
  EXPECT_TRUE(r.ok()) << output_of(r);
  return r.out;
}

// Replaces the Stack's status through the status subresource (PUT .../status).
CommandResult put_status(const std::string& ns, const std::string& name,
                         const std::string& spec_json, const std::string& status_json) {
  const std::string rv = get(ns, "stack/" + name, "{.metadata.resourceVersion}");
  const std::string body =
      R"({"apiVersion":"kstack.io/v1beta1","kind":"Stack","metadata":{"name":")" + name +
      R"(","namespace":")" + ns + R"(","resourceVersion":")" + rv + R"("},"spec":)" + spec_json +
      R"(,"status":)" + status_json + "}";
  return control_plane().kubectl(
      {"replace", "--raw",
       "/apis/kstack.io/v1beta1/namespaces/" + ns + "/stacks/" + name + "/status", "-f", "-"},
      body);
}

constexpr const char* kAppType = R"(
apiVersion: kstack.io/v1beta1
kind: AppType
metadata:
  name: spark
spec:
  label: {name: Apache Spark, description: A master and workers}
  distroID: apache/spark
  version: "3.4.1"
  configSchemaVersion: 8
  defaultImageRepoTag: example.org/spark:3.4.1
  defaultConfigPackage:
    packageURL: configmap://spark-setup/package.tgz
    sha256: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  defaultPersistDirs: [/var/lib/spark, /etc/spark]
  defaultEventList: [configure, addnodes, delnodes]
  capabilities: [SYS_RESOURCE]
  systemdRequired: false
  logoURL: https://example.org/spark.png
  services:
    - id: ssh
      label: {name: SSH}
      endpoint: {port: 22, urlScheme: ssh}
    - id: spark-ui
      label: {name: Spark master UI}
      endpoint: {port: 8080, urlScheme: http, path: /, isDashboard: true, hasAuthToken: false}
      exported_service: spark-ui
  roles:
    - id: master
      cardinality: "1"
      configPackage:
        packageURL: file:///opt/setup/master.tgz
      minResources: {cpu: "1", memory: 2Gi}
      minStorage: {size: 10Gi, ephemeralModeSupported: true}
      containerSpec: {stdin: true, tty: true}
    - id: worker
      cardinality: "0+"
      imageRepoTag: example.org/spark-worker:3.4.1
      configPackage: null
      persistDirs: [/data]
      eventList: [configure]
      minResources: {cpu: 500m, memory: 1073741824}
    - id: edge
      cardinality: "2+"
      configPackage: {packageURL: "https://example.org/edge.tgz"}
  config:
    roleServices:
      - {roleID: master, serviceIDs: [ssh, spark-ui]}
      - {roleID: worker, serviceIDs: [ssh]}
    selectedRoles: [master, worker]
    configMeta: {spark.executor.memory: 1g, mode: standalone}
)";

constexpr const char* kStack = R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata:
  name: demo
spec:
  app: spark
  appCatalog: local
  serviceType: NodePort
  namingScheme: CrNameRole
  persistentVolumeClaimRetentionPolicy: {whenScaled: Retain, whenDeleted: Delete}
  connections: {clusters: [other], configmaps: [settings]}
  roles:
    - id: master
      members: 1
      resources:
        requests: {cpu: "1", memory: 2Gi}
        limits: {cpu: 2, memory: 4Gi, nvidia.com/gpu: 1}
      storage: {size: 20Gi, storageClassName: standard}
      env: [{name: SPARK_MODE, value: master}]
      nodeSelector: {kubernetes.io/os: linux}
      tolerations: [{key: dedicated, operator: Equal, value: spark, effect: NoSchedule}]
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector: {matchLabels: {kstack.io/stack: demo}}
      podLabels: {team: data}
      podAnnotations: {example.org/note: hello}
      serviceLabels: {expose: "yes"}
      serviceAnnotations: {service.beta.kubernetes.io/aws-load-balancer-internal: "true"}
      serviceAccountName: spark
      secret: {name: spark-secret, mountPath: /etc/secret}
      secretKeys: [{name: password, value: hunter2}]
    - id: worker
      members: 2
)";

constexpr const char* kStackSpecJson =
    R"({"app":"spark","serviceType":"NodePort","roles":[{"id":"master","members":1},)"
    R"({"id":"worker","members":2}]})";

constexpr const char* kReadyStatusJson = R"({
  "observedGeneration": 1, "state": "ready",
  "memberSummary": "2/3", "readyMembers": 2, "desiredMembers": 3,
  "updateSummary": "1/3", "updatedMembers": 1,
  "conditions": [{"type": "Ready", "status": "True", "reason": "MembersReady",
                  "message": "all members are set up", "observedGeneration": 1,
                  "lastTransitionTime": "2024-01-01T00:00:00Z"}],
  "clusterService": "demo", "lastNodeID": 3, "configGeneration": 2,
  "memberStateRollup": {"membershipChanging": true, "membersDown": false, "configErrors": false},
  "roles": [{"id": "master", "statefulSet": "demo-master", "members": [
    {"pod": "demo-master-0", "service": "demo-master-0", "pvc": "data-demo-master-0",
     "nodeID": 1, "state": "ready",
     "stateDetail": {"lastConfiguredContainer": "containerd://abc", "lastSetupGeneration": 1,
                     "pendingNotifyCmds": [{"arguments": ["--addnodes", "--role", "worker"]}]}}]}]
})";

TEST(Crds, AreStructuralAndEstablished) {
  ASSERT_NO_FATAL_FAILURE(install_crds());
  for (const auto& name : kCrdNames) {
    const auto r = control_plane().kubectl(
        {"get", "crd", name, "-o",
         R"(jsonpath={range .status.conditions[*]}{.type}={.status};{end})"});
    ASSERT_TRUE(r.ok()) << output_of(r);
    EXPECT_TRUE(contains(r.out, "Established=True;")) << name << ": " << r.out;
    EXPECT_TRUE(contains(r.out, "NamesAccepted=True;")) << name << ": " << r.out;
    EXPECT_FALSE(contains(r.out, "NonStructuralSchema")) << name << ": " << r.out;
  }
}

TEST(Crds, KustomizationListsAllThree) {
  ASSERT_NO_FATAL_FAILURE(expect_crd_dir());
  const auto r = control_plane().kubectl({"kustomize", kCrdDir});
  ASSERT_TRUE(r.ok()) << output_of(r);
  for (const auto& name : kCrdNames) EXPECT_TRUE(contains(r.out, "name: " + name)) << r.out;
}

TEST(Crds, ExplainDocumentsStackRoles) {
  ASSERT_NO_FATAL_FAILURE(install_crds());
  CommandResult r;
  ASSERT_TRUE(eventually([&] {
    r = control_plane().kubectl({"explain", "stack.spec.roles"});
    return r.ok();
  })) << output_of(r);
  for (const char* field :
       {"members", "storage", "resources", "env", "affinity", "nodeSelector", "tolerations",
        "podLabels", "serviceAnnotations", "serviceAccountName"}) {
    EXPECT_TRUE(contains(r.out, std::string("   ") + field + "\t")) << field << "\n" << r.out;
  }
  EXPECT_TRUE(contains(r.out, "id\t<string> -required-")) << r.out;
  EXPECT_TRUE(contains(r.out, "cardinality")) << "members names the cardinality rule\n" << r.out;
}

TEST(Crds, ExplainDocumentsAppTypeCardinalityAndConfigAndStatus) {
  ASSERT_NO_FATAL_FAILURE(install_crds());
  auto& cp = control_plane();
  CommandResult r;
  ASSERT_TRUE(eventually([&] {
    r = cp.kubectl({"explain", "apptype.spec.roles.cardinality"});
    return r.ok();
  })) << output_of(r);
  EXPECT_TRUE(contains(r.out, "FIELD:    cardinality <string>")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"N+\" at least N")) << r.out;

  ASSERT_TRUE(eventually([&] {
    r = cp.kubectl({"explain", "kstackconfig.spec"});
    return r.ok();
  })) << output_of(r);
  EXPECT_TRUE(contains(r.out, "clusterSvcDomainBase")) << r.out;
  EXPECT_TRUE(contains(r.out, "defaultServiceType")) << r.out;

  r = cp.kubectl({"explain", "stack.status.roles.members"});
  ASSERT_TRUE(r.ok()) << output_of(r);
  EXPECT_TRUE(contains(r.out, "stateDetail")) << r.out;
  EXPECT_TRUE(contains(r.out, "create_pending")) << r.out;
}

TEST(Crds, ValidAppTypeAndStackAreStoredWithoutPruning) {
  ASSERT_NO_FATAL_FAILURE(install_crds());
  const auto ns = make_namespace("crds-valid");
  auto r = create(ns, kAppType);
  ASSERT_TRUE(r.ok()) << output_of(r);
  r = create(ns, kStack);
  ASSERT_TRUE(r.ok()) << output_of(r);

  EXPECT_EQ(get(ns, "apptype/spark", "{.spec.defaultConfigPackage.packageURL}"),
            "configmap://spark-setup/package.tgz");
  EXPECT_EQ(get(ns, "apptype/spark", "{.spec.roles[0].configPackage.packageURL}"),
            "file:///opt/setup/master.tgz");
  // null (no setup package) is kept, distinct from absent.
  const auto worker = control_plane().kubectl(
      {"get", "-n", ns, "apptype/spark", "-o", "jsonpath={.spec.roles[1]}"});
  EXPECT_TRUE(contains(worker.out, R"("configPackage":null)")) << output_of(worker);
  EXPECT_EQ(get(ns, "apptype/spark", "{.spec.roles[1].minResources.memory}"), "1073741824");
  EXPECT_EQ(get(ns, "apptype/spark", "{.spec.config.configMeta.mode}"), "standalone");
  EXPECT_EQ(get(ns, "apptype/spark", "{.spec.services[1].exported_service}"), "spark-ui");

  EXPECT_EQ(get(ns, "stack/demo", "{.spec.roles[0].resources.limits.nvidia\\.com/gpu}"), "1");
  EXPECT_EQ(get(ns, "stack/demo",
                "{.spec.roles[0].affinity.podAntiAffinity."
                "preferredDuringSchedulingIgnoredDuringExecution[0].weight}"),
            "100");
  EXPECT_EQ(get(ns, "stack/demo", "{.spec.roles[0].tolerations[0].effect}"), "NoSchedule");
  EXPECT_EQ(get(ns, "stack/demo", "{.spec.persistentVolumeClaimRetentionPolicy.whenScaled}"),
            "Retain");
  // "Later" fields are accepted as they are.
  EXPECT_EQ(get(ns, "stack/demo", "{.spec.connections.configmaps[0]}"), "settings");
  EXPECT_EQ(get(ns, "stack/demo", "{.spec.roles[0].secret.mountPath}"), "/etc/secret");
  EXPECT_EQ(get(ns, "stack/demo", "{.spec.roles[0].secretKeys[0].name}"), "password");

  r = create(ns, R"(
apiVersion: kstack.io/v1beta1
kind: KStackConfig
metadata: {name: kstack-config}
spec:
  defaultServiceType: LoadBalancer
  defaultNamingScheme: UID
  defaultStorageClassName: fast
  clusterSvcDomainBase: .svc.example.com
  podLabels: {a: b}
  serviceAnnotations: {c: d}
)");
  ASSERT_TRUE(r.ok()) << output_of(r);
}

TEST(Crds, UnknownFieldsArePruned) {
  ASSERT_NO_FATAL_FAILURE(install_crds());
  const auto ns = make_namespace("crds-prune");
  const auto r = create(ns, R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: pruned}
spec:
  app: spark
  bogusTopLevel: 1
  roles: [{id: master, bogusInRole: x}]
)");
  ASSERT_TRUE(r.ok()) << output_of(r);
  const auto spec =
      control_plane().kubectl({"get", "-n", ns, "stack/pruned", "-o", "jsonpath={.spec}"});
  EXPECT_FALSE(contains(spec.out, "bogus")) << spec.out;
}

struct InvalidCase {
  const char* what;
  const char* yaml;
  std::vector<std::string> messages;  // each must appear in kubectl's error
};

void expect_refused(const std::string& ns, const InvalidCase& c) {
  const auto r = create(ns, c.yaml);
  EXPECT_FALSE(r.ok()) << c.what << " was accepted";
  EXPECT_TRUE(contains(r.err, "is invalid")) << c.what << "\n" << r.err;
  for (const auto& m : c.messages) EXPECT_TRUE(contains(r.err, m)) << c.what << "\n" << r.err;
}

TEST(Crds, SchemaInvalidStacksAreRefusedNamingTheField) {
  ASSERT_NO_FATAL_FAILURE(install_crds());
  const auto ns = make_namespace("crds-invalid-stack");
  const std::vector<InvalidCase> cases = {
      {"unknown serviceType",
       R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: s1}
spec: {app: spark, serviceType: Foo, roles: [{id: master}]}
)",
       {R"(spec.serviceType: Unsupported value: "Foo")",
        R"("ClusterIP", "NodePort", "LoadBalancer")"}},
      {"role id with uppercase",
       R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: s2}
spec: {app: spark, roles: [{id: Master}]}
)",
       {R"(spec.roles.id: Invalid value: "Master")"}},
      {"negative members, bad quantities",
       R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: s3}
spec:
  app: spark
  roles: [{id: master, members: -1, storage: {size: 10Xi}, resources: {limits: {cpu: lots}}}]
)",
       {"spec.roles.members: Invalid value: -1",
        R"(spec.roles.storage.size: Invalid value: "10Xi")",
        R"(spec.roles.resources.limits.cpu: Invalid value: "lots")"}},
      {"missing app, bad enums",
       R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: s4}
spec: {appCatalog: global, namingScheme: Random, roles: [{members: 1}]}
)",
       {"spec.app: Required value", R"(spec.appCatalog: Unsupported value: "global")",
        R"(spec.namingScheme: Unsupported value: "Random")", "spec.roles.id: Required value"}},
      {"duplicate role id",
       R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: s5}
spec: {app: spark, roles: [{id: master}, {id: master}]}
)",
       {"spec.roles[1]: Duplicate value"}},
      {"storage without size, bad toleration",
       R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: s6}
spec:
  app: spark
  roles: [{id: master, storage: {storageClassName: fast}, tolerations: [{operator: Maybe}]}]
)",
       {"spec.roles.storage.size: Required value",
        R"(spec.roles.tolerations.operator: Unsupported value: "Maybe")"}},
  };
  for (const auto& c : cases) expect_refused(ns, c);
}

TEST(Crds, SchemaInvalidAppTypesAndConfigsAreRefusedNamingTheField) {
  ASSERT_NO_FATAL_FAILURE(install_crds());
  const auto ns = make_namespace("crds-invalid-app");
  const std::vector<InvalidCase> cases = {
      {"port out of range, long and uppercase service ids",
       R"(
apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: a1}
spec:
  label: {name: x}
  distroID: x
  version: "1"
  configSchemaVersion: 1
  services:
    - {id: this-is-far-too-long, endpoint: {port: 70000}}
    - {id: UI, endpoint: {port: 0}}
  roles: [{id: r, cardinality: "1"}]
)",
       {"spec.services.endpoint.port: Invalid value: 70000",
        "should be less than or equal to 65535",
        R"(spec.services.id: Invalid value: "this-is-far-too-long")", "at most 15 chars long",
        R"(spec.services.id: Invalid value: "UI")"}},
      {"required fields missing",
       R"(
apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: a2}
spec:
  label: {description: x}
  configSchemaVersion: 0
)",
       {"spec.label.name: Required value", "spec.distroID: Required value",
        "spec.version: Required value", "spec.roles: Required value",
        "spec.configSchemaVersion: Invalid value: 0"}},
      {"bad role id, cardinality, package, events, dirs",
       R"(
apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: a3}
spec:
  label: {name: x}
  distroID: x
  version: "1"
  configSchemaVersion: 1
  defaultConfigPackage: {packageURL: "ftp://example.org/p.tgz", sha256: ABC}
  defaultEventList: [configure, reboot]
  defaultPersistDirs: [relative/dir]
  roles:
    - {id: Master, cardinality: many}
    - {id: w, cardinality: "1+", configPackage: {packageURL: "configmap://name-without-key"}}
    - {id: x, cardinality: "1", configPackage: {sha256: "0123"}}
)",
       {R"(spec.roles.id: Invalid value: "Master")",
        R"(spec.roles.cardinality: Invalid value: "many")",
        R"(spec.defaultConfigPackage.packageURL: Invalid value: "ftp://example.org/p.tgz")",
        R"(spec.defaultConfigPackage.sha256: Invalid value: "ABC")",
        R"(spec.roles.configPackage.packageURL: Invalid value: "configmap://name-without-key")",
        "spec.roles.configPackage.packageURL: Required value",
        R"(spec.defaultEventList: Unsupported value: "reboot")",
        R"(spec.defaultPersistDirs: Invalid value: "relative/dir")"}},
      {"no roles",
       R"(
apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: a4}
spec: {label: {name: x}, distroID: x, version: "1", configSchemaVersion: 1, roles: []}
)",
       {"spec.roles: Invalid value", "at least 1 items"}},
      {"KStackConfig with another name and bad values",
       R"(
apiVersion: kstack.io/v1beta1
kind: KStackConfig
metadata: {name: my-config}
spec: {defaultServiceType: Foo, defaultNamingScheme: Bar, clusterSvcDomainBase: svc.cluster.local}
)",
       {R"(metadata.name: Unsupported value: "my-config")",
        R"(spec.defaultServiceType: Unsupported value: "Foo")",
        R"(spec.defaultNamingScheme: Unsupported value: "Bar")",
        R"(spec.clusterSvcDomainBase: Invalid value: "svc.cluster.local")"}},
  };
  for (const auto& c : cases) expect_refused(ns, c);
}

// Live upgrades (docs/api.md "Upgrades"): upgradeFrom and the upgrade events, spec.paused and
// roles[].maxUnavailable are stored; the rollout status fields survive a status write.
TEST(Crds, UpgradeFieldsAreStoredAndChecked) {
  ASSERT_NO_FATAL_FAILURE(install_crds());
  const auto ns = make_namespace("crds-upgrade");
  auto r = create(ns, R"(
apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: spark-r2}
spec:
  label: {name: Apache Spark}
  distroID: apache/spark
  version: "3.5.0"
  configSchemaVersion: 8
  defaultImageRepoTag: example.org/spark:3.5.0
  upgradeFrom: [spark]
  defaultEventList: [configure, preupgrade, upgradenodes]
  roles: [{id: master, cardinality: "1", eventList: [configure, addnodes, delnodes, preupgrade]}]
)");
  ASSERT_TRUE(r.ok()) << output_of(r);
  EXPECT_EQ(get(ns, "apptype/spark-r2", "{.spec.upgradeFrom[0]}"), "spark");
  EXPECT_EQ(get(ns, "apptype/spark-r2", "{.spec.defaultEventList[2]}"), "upgradenodes");
  EXPECT_EQ(get(ns, "apptype/spark-r2", "{.spec.roles[0].eventList[3]}"), "preupgrade");

  r = create(ns, R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: rolling}
spec:
  app: spark
  paused: true
  roles: [{id: master, members: 1, maxUnavailable: 2}]
)");
  ASSERT_TRUE(r.ok()) << output_of(r);
  EXPECT_EQ(get(ns, "stack/rolling", "{.spec.paused} {.spec.roles[0].maxUnavailable}"), "true 2");

  const std::string status = R"({"state": "updating", "updateSummary": "1/1", "updatedMembers": 1,
    "roles": [{"id": "master", "updateRevision": "rolling-master-7c9a", "updatedMembers": 1,
               "partition": 0, "members": [{"pod": "rolling-master-0", "state": "ready",
      "templateRevision": "rolling-master-7c9a", "app": "spark-r2",
      "stateDetail": {"lastConfiguredRevision": "rolling-master-7c9a",
                      "lastConfiguredApp": "spark-r2", "preupgradeRevision": "rolling-master-7c9a",
                      "preupgradeContainer": "containerd://abc", "preupgradeSucceeded": true,
                      "upgradeError": "x", "preupgradeStdout": "out", "preupgradeStderr": "err"}}]}]})";
  r = put_status(ns, "rolling", R"({"app":"spark","roles":[{"id":"master"}]})", status);
  ASSERT_TRUE(r.ok()) << output_of(r);
  EXPECT_EQ(get(ns, "stack/rolling", "{.status.updateSummary} {.status.updatedMembers}"), "1/1 1");
  EXPECT_EQ(get(ns, "stack/rolling",
                "{.status.roles[0].updateRevision} {.status.roles[0].updatedMembers} "
                "{.status.roles[0].partition}"),
            "rolling-master-7c9a 1 0");
  EXPECT_EQ(get(ns, "stack/rolling",
                "{.status.roles[0].members[0].templateRevision} {.status.roles[0].members[0].app}"),
            "rolling-master-7c9a spark-r2");
  const auto detail = get(ns, "stack/rolling", "{.status.roles[0].members[0].stateDetail}");
  for (const char* field :
       {"lastConfiguredRevision", "lastConfiguredApp", "preupgradeRevision", "preupgradeContainer",
        "preupgradeSucceeded", "upgradeError", "preupgradeStdout", "preupgradeStderr"}) {
    EXPECT_TRUE(contains(detail, field)) << field << " pruned: " << detail;
  }

  expect_refused(ns, {"maxUnavailable 0",
                      R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: u1}
spec: {app: spark, paused: "yes", roles: [{id: master, maxUnavailable: 0}]}
)",
                      {"spec.roles.maxUnavailable: Invalid value: 0",
                       R"(spec.paused: Invalid value: "string")"}});
  expect_refused(ns, {"unknown event, upgradeFrom not a name",
                      R"(
apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: u2}
spec:
  label: {name: x}
  distroID: x
  version: "1"
  configSchemaVersion: 1
  upgradeFrom: [Old_One]
  roles: [{id: r, cardinality: "1", eventList: [upgrade]}]
)",
                      {R"(spec.roles.eventList: Unsupported value: "upgrade")",
                       R"(spec.upgradeFrom: Invalid value: "Old_One")"}});
}

// Lost nodes, stop/resume and disruption budgets (docs/api.md): memberRecovery (Stack roles
// and KStackConfig), spec.stopped and AppType roles[].minAvailable are stored with their
// values' types, refused outside their enums and bounds; the stopped states and the recovery
// status fields survive a status write.
TEST(Crds, RecoveryStopAndQuorumFieldsAreStoredAndChecked) {
  ASSERT_NO_FATAL_FAILURE(install_crds());
  const auto ns = make_namespace("crds-recovery");
  auto r = create(ns, R"(
apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: zk}
spec:
  label: {name: ZooKeeper}
  distroID: zk
  version: "3"
  configSchemaVersion: 1
  defaultImageRepoTag: example.org/zk:3
  roles:
    - {id: server, cardinality: "3+", minAvailable: 2}
    - {id: observer, cardinality: "0+", minAvailable: "51%"}
)");
  ASSERT_TRUE(r.ok()) << output_of(r);
  EXPECT_EQ(get(ns, "apptype/zk", "{.spec.roles[0].minAvailable} {.spec.roles[1].minAvailable}"),
            "2 51%");

  r = create(ns, R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: quiet}
spec:
  app: zk
  stopped: true
  roles:
    - id: server
      members: 3
      memberRecovery: {policy: "Off", nodeLostGraceSeconds: 86400, localStorage: Recreate}
    - id: observer
      memberRecovery: {nodeLostGraceSeconds: 0}
)");
  ASSERT_TRUE(r.ok()) << output_of(r);
  EXPECT_EQ(get(ns, "stack/quiet",
                "{.spec.stopped} {.spec.roles[0].memberRecovery.policy} "
                "{.spec.roles[0].memberRecovery.nodeLostGraceSeconds} "
                "{.spec.roles[0].memberRecovery.localStorage} "
                "{.spec.roles[1].memberRecovery.nodeLostGraceSeconds}"),
            "true Off 86400 Recreate 0");

  r = create(ns, R"(
apiVersion: kstack.io/v1beta1
kind: KStackConfig
metadata: {name: kstack-config}
spec:
  memberRecovery: {policy: Reschedule, nodeLostGraceSeconds: 300, localStorage: Keep}
)");
  ASSERT_TRUE(r.ok()) << output_of(r);
  EXPECT_EQ(get(ns, "kstackconfig/kstack-config",
                "{.spec.memberRecovery.policy} {.spec.memberRecovery.nodeLostGraceSeconds} "
                "{.spec.memberRecovery.localStorage}"),
            "Reschedule 300 Keep");

  const std::string status = R"({"state": "stopped", "roles": [{"id": "server", "members": [
      {"pod": "quiet-server-0", "state": "stopped", "stateDetail": {}},
      {"pod": "quiet-server-1", "state": "creating",
       "stateDetail": {"recovery": "waiting for node n2", "replacing": true}}]}]})";
  r = put_status(ns, "quiet", R"({"app":"zk","roles":[{"id":"server"}]})", status);
  ASSERT_TRUE(r.ok()) << output_of(r);
  EXPECT_EQ(get(ns, "stack/quiet",
                "{.status.state} {.status.roles[0].members[0].state} "
                "{.status.roles[0].members[1].stateDetail.recovery} "
                "{.status.roles[0].members[1].stateDetail.replacing}"),
            "stopped stopped waiting for node n2 true");

  expect_refused(ns, {"memberRecovery outside its enums and bounds, stopped not a boolean",
                      R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: bad}
spec:
  app: zk
  stopped: "yes"
  roles:
    - id: server
      memberRecovery: {policy: Delete, nodeLostGraceSeconds: 86401, localStorage: keep}
    - id: observer
      memberRecovery: {policy: Off, nodeLostGraceSeconds: -1}
)",
                      {R"(spec.stopped: Invalid value: "string")",
                       R"(spec.roles.memberRecovery.policy: Unsupported value: "Delete")",
                       "spec.roles.memberRecovery.nodeLostGraceSeconds: Invalid value: 86401",
                       R"(spec.roles.memberRecovery.localStorage: Unsupported value: "keep")",
                       // A bare YAML Off is the boolean false.
                       R"(spec.roles.memberRecovery.policy: Invalid value: "boolean")",
                       "spec.roles.memberRecovery.nodeLostGraceSeconds: Invalid value: -1"}});
  expect_refused(
      ns,
      {"minAvailable zero, above the limit, not a percentage",
       R"(
apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: bad}
spec:
  label: {name: x}
  distroID: x
  version: "1"
  configSchemaVersion: 1
  roles:
    - {id: a, cardinality: "1", minAvailable: 0}
    - {id: b, cardinality: "1", minAvailable: 1001}
    - {id: c, cardinality: "1", minAvailable: "half"}
    - {id: d, cardinality: "1", minAvailable: true}
)",
       {"spec.roles.minAvailable: Invalid value: 0", "spec.roles.minAvailable: Invalid value: 1001",
        R"(spec.roles.minAvailable: Invalid value: "half")", "spec.roles.minAvailable"}});
  // Another namespace: kstack-config exists in `ns` (the schema is checked first anyway).
  expect_refused(make_namespace("crds-recovery-bad"),
                 {"KStackConfig memberRecovery outside its enums and bounds",
                  R"(
apiVersion: kstack.io/v1beta1
kind: KStackConfig
metadata: {name: kstack-config}
spec:
  memberRecovery: {policy: Never, nodeLostGraceSeconds: 90000, localStorage: Delete}
)",
                  {R"(spec.memberRecovery.policy: Unsupported value: "Never")",
                   "spec.memberRecovery.nodeLostGraceSeconds: Invalid value: 90000",
                   R"(spec.memberRecovery.localStorage: Unsupported value: "Delete")"}});
}

TEST(Crds, StatusSubresourceChangesOnlyStatus) {
  ASSERT_NO_FATAL_FAILURE(install_crds());
  auto& cp = control_plane();
  const auto ns = make_namespace("crds-status");
  ASSERT_TRUE(create(ns, kStack).ok());

  // A status PUT carrying a different spec changes the status only.
  const std::string other_spec = R"({"app":"spark","serviceType":"LoadBalancer"})";
  auto r = put_status(ns, "demo", other_spec, kReadyStatusJson);
  ASSERT_TRUE(r.ok()) << output_of(r);
  EXPECT_EQ(get(ns, "stack/demo", "{.status.state} {.status.memberSummary}"), "ready 2/3");
  EXPECT_EQ(get(ns, "stack/demo",
                "{.status.roles[0].members[0].stateDetail.pendingNotifyCmds[0].arguments[0]}"),
            "--addnodes");
  EXPECT_EQ(get(ns, "stack/demo", "{.spec.serviceType}"), "NodePort");
  EXPECT_EQ(get(ns, "stack/demo", "{.metadata.generation}"), "1");

  // `kubectl wait --for=condition=Ready` works on the standard conditions.
  r = cp.kubectl({"wait", "-n", ns, "--for=condition=Ready", "--timeout=10s", "stack/demo"});
  EXPECT_TRUE(r.ok()) << output_of(r);

  // A main-resource update cannot write status.
  r = cp.kubectl({"patch", "-n", ns, "stack/demo", "--type=merge", "-p",
                  R"({"spec":{"serviceType":"ClusterIP"},"status":{"state":"error"}})"});
  ASSERT_TRUE(r.ok()) << output_of(r);
  EXPECT_EQ(get(ns, "stack/demo", "{.spec.serviceType} {.status.state}"), "ClusterIP ready");

  // The status is validated too.
  r = put_status(ns, "demo", kStackSpecJson,
                 R"({"state":"bogus","roles":[{"id":"m","members":[{"state":"gone"}]}],)"
                 R"("conditions":[{"type":"Ready","status":"Maybe","reason":"not a reason"}]})");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.err, R"(status.state: Unsupported value: "bogus")")) << r.err;
  EXPECT_TRUE(contains(r.err, R"(status.roles.members.state: Unsupported value: "gone")")) << r.err;
  EXPECT_TRUE(contains(r.err, R"(status.conditions.status: Unsupported value: "Maybe")")) << r.err;
  EXPECT_TRUE(contains(r.err, R"(status.conditions.reason: Invalid value: "not a reason")"))
      << r.err;
}

TEST(Crds, GetStacksShowsPrinterColumns) {
  ASSERT_NO_FATAL_FAILURE(install_crds());
  auto& cp = control_plane();
  const auto ns = make_namespace("crds-columns");
  ASSERT_TRUE(create(ns, kAppType).ok());
  ASSERT_TRUE(create(ns, kStack).ok());
  ASSERT_TRUE(put_status(ns, "demo", kStackSpecJson, kReadyStatusJson).ok());

  auto r = cp.kubectl({"get", "stk", "-n", ns});
  ASSERT_TRUE(r.ok()) << output_of(r);
  const auto header = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(header.find("NAME"), 0u) << r.out;
  for (const char* column : {"APP", "STATE", "READY", "UPDATED", "AGE"}) {
    EXPECT_TRUE(contains(header, column)) << column << "\n" << r.out;
  }
  EXPECT_LT(header.find("APP"), header.find("STATE"));
  EXPECT_LT(header.find("STATE"), header.find("READY"));
  EXPECT_LT(header.find("READY"), header.find("UPDATED"));
  EXPECT_LT(header.find("UPDATED"), header.find("AGE"));
  EXPECT_FALSE(contains(header, "SERVICE TYPE")) << "wide-only column in the default view";
  const auto row = r.out.substr(r.out.find('\n') + 1);
  EXPECT_TRUE(contains(row, "demo")) << r.out;
  EXPECT_TRUE(contains(row, "spark")) << r.out;
  EXPECT_TRUE(contains(row, "ready")) << r.out;
  EXPECT_TRUE(contains(row, "2/3")) << r.out;
  EXPECT_TRUE(contains(row, "1/3")) << r.out;

  r = cp.kubectl({"get", "stacks", "-n", ns, "-o", "wide"});
  ASSERT_TRUE(r.ok()) << output_of(r);
  EXPECT_TRUE(contains(r.out, "SERVICE TYPE")) << r.out;
  EXPECT_TRUE(contains(r.out, "NodePort")) << r.out;

  r = cp.kubectl({"get", "apptypes", "-n", ns});
  ASSERT_TRUE(r.ok()) << output_of(r);
  for (const char* text :
       {"DISPLAY NAME", "DISTRO", "VERSION", "Apache Spark", "apache/spark", "3.4.1"}) {
    EXPECT_TRUE(contains(r.out, text)) << text << "\n" << r.out;
  }
}

TEST(Crds, ShortNamesAndCategoryWork) {
  ASSERT_NO_FATAL_FAILURE(install_crds());
  auto& cp = control_plane();
  const auto ns = make_namespace("crds-names");
  ASSERT_TRUE(create(ns, kAppType).ok());
  ASSERT_TRUE(create(ns, kStack).ok());
  ASSERT_TRUE(create(ns,
                     "apiVersion: kstack.io/v1beta1\nkind: KStackConfig\n"
                     "metadata: {name: kstack-config}\nspec: {}\n")
                  .ok());

  const std::vector<std::pair<std::string, std::string>> names = {
      {"apptype", "apptype.kstack.io/spark"},
      {"stk", "stack.kstack.io/demo"},
      {"kscfg", "kstackconfig.kstack.io/kstack-config"},
      {"kstack", "apptype.kstack.io/spark"},
      {"kstack", "stack.kstack.io/demo"},
      {"kstack", "kstackconfig.kstack.io/kstack-config"},
  };
  for (const auto& [resource, expected] : names) {
    const auto r = cp.kubectl({"get", resource, "-n", ns, "-o", "name"});
    ASSERT_TRUE(r.ok()) << resource << "\n" << output_of(r);
    EXPECT_TRUE(contains(r.out, expected)) << resource << "\n" << r.out;
  }
}

}  // namespace
}  // namespace kstack::testenv
