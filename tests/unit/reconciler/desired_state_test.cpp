#include "reconciler/desired_state.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/parse.h"

namespace kstack::reconciler {
namespace {
namespace json = boost::json;

const char* kApp = R"(
apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: kv, namespace: apps}
spec:
  label: {name: Key-value store}
  distroID: example/kv
  version: "1.0"
  configSchemaVersion: 1
  defaultImageRepoTag: example/kv:1.0
  defaultPersistDirs: [/var/lib/kv, /etc/kv]
  capabilities: [SYS_NICE]
  services:
  - id: client
    label: {name: Client}
    endpoint: {port: 2379, urlScheme: http}
  - id: peer
    label: {name: Peer}
    endpoint: {port: 2380}
  roles:
  - id: server
    cardinality: "3+"
  - id: proxy
    cardinality: "1"
    imageRepoTag: example/kv-proxy:1.0
    persistDirs: []
  config:
    roleServices:
    - {roleID: server, serviceIDs: [client, peer]}
)";

const char* kStack = R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: db, namespace: apps, uid: 1111-2222}
spec:
  app: kv
  roles:
  - id: server
    members: 3
    resources: {requests: {cpu: 500m, memory: 1Gi}}
    storage: {size: 2Gi, storageClassName: fast}
    podLabels: {team: data}
    serviceAnnotations: {note: "x"}
    env: [{name: MODE, value: cluster}]
  - id: proxy
)";

struct DesiredStateTest : ::testing::Test {
  catalog::AppType app = *catalog::parse_apptype_yaml(kApp);
  catalog::Stack stack = *catalog::parse_stack_yaml(kStack);
};

std::string str(const json::value& v, std::string_view pointer) {
  return std::string(v.at_pointer(pointer).as_string());
}

TEST_F(DesiredStateTest, HeadlessServiceIsNamedAfterTheStackAndPublishesNotReadyAddresses) {
  auto d = desired_state(stack, app, nullptr);
  ASSERT_TRUE(d) << d.error().to_string();
  const auto& svc = d->headless_service;
  EXPECT_EQ(str(svc, "/metadata/name"), "db");
  EXPECT_EQ(str(svc, "/spec/clusterIP"), "None");
  EXPECT_TRUE(svc.at_pointer("/spec/publishNotReadyAddresses").as_bool());
  EXPECT_EQ(str(svc, "/spec/selector/kstack.io~1stack"), "db");
  EXPECT_EQ(str(svc, "/metadata/labels/app.kubernetes.io~1managed-by"), "kstack");
  EXPECT_EQ(str(svc, "/metadata/labels/app.kubernetes.io~1name"), "example.kv");
}

TEST_F(DesiredStateTest, EveryOwnedObjectHasAControllerOwnerReferenceToTheStack) {
  auto d = desired_state(stack, app, nullptr);
  ASSERT_TRUE(d);
  std::vector<const json::value*> objects{&d->headless_service};
  for (const auto& r : d->roles) objects.push_back(&r.stateful_set);
  for (const auto& s : d->member_services) objects.push_back(&s);
  for (const auto* o : objects) {
    const auto& ref = o->at_pointer("/metadata/ownerReferences/0");
    EXPECT_EQ(ref.at("kind"), "Stack");
    EXPECT_EQ(ref.at("uid"), "1111-2222");
    EXPECT_EQ(ref.at("controller"), true);
    EXPECT_EQ(str(*o, "/metadata/namespace"), "apps");
  }
}

TEST_F(DesiredStateTest, StatefulSetPerRoleWithReplicasPortsResourcesAndStorage) {
  auto d = desired_state(stack, app, nullptr);
  ASSERT_TRUE(d);
  ASSERT_EQ(d->roles.size(), 2u);
  const auto& server = d->roles[0];
  EXPECT_EQ(server.stateful_set_name, "db-server");
  EXPECT_EQ(server.replicas, 3);
  const auto& sts = server.stateful_set;
  EXPECT_EQ(str(sts, "/spec/serviceName"), "db");
  EXPECT_EQ(str(sts, "/spec/podManagementPolicy"), "Parallel");
  EXPECT_EQ(sts.at_pointer("/spec/replicas").as_int64(), 3);
  const auto& c = sts.at_pointer("/spec/template/spec/containers/0");
  EXPECT_EQ(c.at("name"), "app");
  EXPECT_EQ(c.at("image"), "example/kv:1.0");
  EXPECT_EQ(c.at_pointer("/ports/0/containerPort").as_int64(), 2379);
  EXPECT_EQ(c.at_pointer("/ports/1/name"), "peer");
  EXPECT_EQ(c.at_pointer("/resources/requests/cpu"), "500m");
  EXPECT_EQ(c.at_pointer("/env/0/value"), "cluster");
  EXPECT_EQ(c.at_pointer("/securityContext/capabilities/add/0"), "SYS_NICE");
  EXPECT_EQ(c.at_pointer("/volumeMounts/2/mountPath"), "/var/lib/kv");
  EXPECT_EQ(c.at_pointer("/volumeMounts/2/subPath"), "var/lib/kv");
  EXPECT_EQ(c.at_pointer("/volumeMounts/3/subPath"), "etc/kv");
  const auto& vct = sts.at_pointer("/spec/volumeClaimTemplates/0");
  EXPECT_EQ(vct.at_pointer("/metadata/name"), "data");
  EXPECT_EQ(vct.at_pointer("/spec/resources/requests/storage"), "2Gi");
  EXPECT_EQ(vct.at_pointer("/spec/storageClassName"), "fast");
  EXPECT_EQ(str(sts, "/spec/template/metadata/labels/team"), "data");
  EXPECT_EQ(str(sts, "/spec/template/metadata/labels/kstack.io~1role"), "server");
  EXPECT_EQ(str(sts, "/spec/selector/matchLabels/kstack.io~1role"), "server");
}

TEST_F(DesiredStateTest, RoleWithoutMembersFieldGetsTheCardinalityMinimumAndItsOwnImage) {
  auto d = desired_state(stack, app, nullptr);
  ASSERT_TRUE(d);
  const auto& proxy = d->roles[1];
  EXPECT_EQ(proxy.replicas, 1);
  EXPECT_FALSE(proxy.has_storage);
  EXPECT_FALSE(proxy.has_ports);
  EXPECT_EQ(proxy.stateful_set.at_pointer("/spec/template/spec/containers/0/image"),
            "example/kv-proxy:1.0");
  EXPECT_FALSE(proxy.stateful_set.at_pointer("/spec").as_object().contains("volumeClaimTemplates"));
  ASSERT_EQ(proxy.members.size(), 1u);
  EXPECT_TRUE(proxy.members[0].pvc.empty());
  EXPECT_TRUE(proxy.members[0].service.empty());
}

TEST_F(DesiredStateTest, MembersGetServicesPvcsAndFqdnsByOrdinal) {
  auto d = desired_state(stack, app, nullptr);
  ASSERT_TRUE(d);
  const auto& m = d->roles[0].members;
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[2].pod, "db-server-2");
  EXPECT_EQ(m[2].pvc, "data-db-server-2");
  EXPECT_EQ(m[2].fqdn, "db-server-2.db.apps.svc.cluster.local");
  ASSERT_EQ(d->member_services.size(), 3u);
  const auto& svc = d->member_services[1];
  EXPECT_EQ(str(svc, "/metadata/name"), "db-server-1");
  EXPECT_EQ(str(svc, "/spec/type"), "ClusterIP");
  EXPECT_EQ(str(svc, "/spec/selector/statefulset.kubernetes.io~1pod-name"), "db-server-1");
  EXPECT_EQ(svc.at_pointer("/spec/ports/0/port").as_int64(), 2379);
  EXPECT_EQ(str(svc, "/metadata/annotations/note"), "x");
}

TEST_F(DesiredStateTest, KStackConfigSuppliesServiceTypeDomainStorageClassAndExtraLabels) {
  catalog::KStackConfig cfg = *catalog::parse_kstack_config_yaml(R"(
apiVersion: kstack.io/v1beta1
kind: KStackConfig
metadata: {name: kstack-config, namespace: kstack-system}
spec:
  defaultServiceType: NodePort
  defaultStorageClassName: standard
  clusterSvcDomainBase: .svc.example.org
  podLabels: {team: platform, costcenter: "42"}
  serviceLabels: {exposed: "yes"}
)");
  stack.spec.roles[0].storage->storage_class_name.reset();
  auto d = desired_state(stack, app, &cfg);
  ASSERT_TRUE(d) << d.error().to_string();
  EXPECT_EQ(str(d->member_services[0], "/spec/type"), "NodePort");
  EXPECT_EQ(str(d->member_services[0], "/metadata/labels/exposed"), "yes");
  EXPECT_EQ(d->roles[0].members[0].fqdn, "db-server-0.db.apps.svc.example.org");
  const auto& tmpl = d->roles[0].stateful_set.at_pointer("/spec/template/metadata/labels");
  EXPECT_EQ(tmpl.at("team"), "data");  // the role's own label wins over the config's
  EXPECT_EQ(tmpl.at("costcenter"), "42");
  EXPECT_EQ(str(d->roles[0].stateful_set, "/spec/volumeClaimTemplates/0/spec/storageClassName"),
            "standard");
}

json::array mount_paths(const json::value& sts) {
  json::array paths;
  for (const auto& m : sts.at_pointer("/spec/template/spec/containers/0/volumeMounts").as_array()) {
    paths.push_back(m.at("mountPath"));
  }
  return paths;
}

TEST_F(DesiredStateTest, EveryMemberGetsWritableEmptyDirsAtEtcKStackAndOptKStack) {
  auto d = desired_state(stack, app, nullptr);
  ASSERT_TRUE(d);
  for (const auto& role : d->roles) {
    const auto& pod = role.stateful_set.at_pointer("/spec/template/spec");
    const json::array volumes{json::object{{"name", "kstack-etc"}, {"emptyDir", json::object{}}},
                              json::object{{"name", "kstack-opt"}, {"emptyDir", json::object{}}}};
    EXPECT_EQ(pod.at("volumes"), volumes) << role.id;
    const auto& mounts = pod.at_pointer("/containers/0/volumeMounts").as_array();
    EXPECT_EQ(mounts.at(0), (json::object{{"name", "kstack-etc"}, {"mountPath", "/etc/kstack"}}));
    EXPECT_EQ(mounts.at(1), (json::object{{"name", "kstack-opt"}, {"mountPath", "/opt/kstack"}}));
  }
  // The proxy role has no storage: only kstack's dirs; the server's persisted dirs follow them.
  EXPECT_EQ(mount_paths(d->roles[1].stateful_set), (json::array{"/etc/kstack", "/opt/kstack"}));
  EXPECT_EQ(mount_paths(d->roles[0].stateful_set),
            (json::array{"/etc/kstack", "/opt/kstack", "/var/lib/kv", "/etc/kv"}));
  EXPECT_FALSE(d->roles[0].setup_dir_persisted);
}

TEST_F(DesiredStateTest, APersistedDirUnderAKStackDirMountsOnTopOfItsEmptyDir) {
  app.spec.default_persist_dirs = {"/var/lib/kv", "/opt/kstack/setup"};
  auto d = desired_state(stack, app, nullptr);
  ASSERT_TRUE(d);
  const auto& sts = d->roles[0].stateful_set;
  EXPECT_EQ(mount_paths(sts),
            (json::array{"/etc/kstack", "/opt/kstack", "/var/lib/kv", "/opt/kstack/setup"}));
  EXPECT_EQ(sts.at_pointer("/spec/template/spec/containers/0/volumeMounts/3/subPath"),
            "opt/kstack/setup");
  EXPECT_TRUE(d->roles[0].setup_dir_persisted);
}

TEST_F(DesiredStateTest, AKStackDirThatIsPersistedItselfOrUnderAPersistedDirGetsNoEmptyDir) {
  app.spec.default_persist_dirs = {"/etc/kstack", "/opt"};
  auto d = desired_state(stack, app, nullptr);
  ASSERT_TRUE(d);
  const auto& server = d->roles[0].stateful_set;
  EXPECT_EQ(mount_paths(server), (json::array{"/etc/kstack", "/opt"}));
  EXPECT_FALSE(server.at_pointer("/spec/template/spec").as_object().contains("volumes"));
  EXPECT_EQ(server.at_pointer("/spec/template/spec/containers/0/volumeMounts/0/name"), "data");
  EXPECT_TRUE(d->roles[0].setup_dir_persisted);
  // Without storage nothing is persisted: the role without storage keeps both emptyDirs.
  app.spec.roles[1].persist_dirs = std::vector<std::string>{"/etc/kstack"};
  d = desired_state(stack, app, nullptr);
  ASSERT_TRUE(d);
  EXPECT_EQ(mount_paths(d->roles[1].stateful_set), (json::array{"/etc/kstack", "/opt/kstack"}));
  EXPECT_FALSE(d->roles[1].setup_dir_persisted);
}

TEST_F(DesiredStateTest, TheRolesProbesAreCopiedOntoTheAppContainer) {
  std::string text = kApp;
  const std::string anchor = "    cardinality: \"3+\"\n";
  text.insert(text.find(anchor) + anchor.size(),
              "    readinessProbe: {exec: {command: [test, -f, /tmp/ready]}, periodSeconds: 2}\n"
              "    livenessProbe: {tcpSocket: {port: peer}, failureThreshold: 1}\n"
              "    startupProbe: {httpGet: {path: /health, port: 8080}}\n");
  auto probed = catalog::parse_apptype_yaml(text);
  ASSERT_TRUE(probed) << probed.error().to_string();
  auto d = desired_state(stack, *probed, nullptr);
  ASSERT_TRUE(d) << d.error().to_string();
  const auto& c = d->roles[0].stateful_set.at_pointer("/spec/template/spec/containers/0");
  EXPECT_EQ(c.at("readinessProbe"),
            json::parse(R"({"exec":{"command":["test","-f","/tmp/ready"]},"periodSeconds":2})"));
  EXPECT_EQ(c.at("livenessProbe"),
            json::parse(R"({"tcpSocket":{"port":"peer"},"failureThreshold":1})"));
  EXPECT_EQ(c.at("startupProbe"), json::parse(R"({"httpGet":{"port":8080,"path":"/health"}})"));
  // The named port is one the container declares.
  EXPECT_EQ(c.at_pointer("/ports/1/name"), "peer");
  const auto& proxy = d->roles[1].stateful_set.at_pointer("/spec/template/spec/containers/0");
  EXPECT_FALSE(proxy.as_object().contains("readinessProbe"));
  EXPECT_FALSE(proxy.as_object().contains("livenessProbe"));
  EXPECT_FALSE(proxy.as_object().contains("startupProbe"));
}

TEST_F(DesiredStateTest, TheRolesCommandAndArgsGoOntoTheAppContainerAsTheyAre) {
  std::string text = kApp;
  const std::string anchor = "    cardinality: \"3+\"\n";
  text.insert(text.find(anchor) + anchor.size(),
              "    command: [kv-server, --data, /var/lib/kv]\n"
              "    args: [\"--name=$(POD_NAME)\", \"a b; rm -rf /\", \"\"]\n");
  auto app2 = catalog::parse_apptype_yaml(text);
  ASSERT_TRUE(app2) << app2.error().to_string();
  auto d = desired_state(stack, *app2, nullptr);
  ASSERT_TRUE(d) << d.error().to_string();
  const auto& c = d->roles[0].stateful_set.at_pointer("/spec/template/spec/containers/0");
  EXPECT_EQ(c.at("command"), (json::array{"kv-server", "--data", "/var/lib/kv"}));
  // Words stay words: nothing is joined or handed to a shell.
  EXPECT_EQ(c.at("args"), (json::array{"--name=$(POD_NAME)", "a b; rm -rf /", ""}));
  // A role without them runs the image's entrypoint: no empty lists are written.
  const auto& proxy = d->roles[1].stateful_set.at_pointer("/spec/template/spec/containers/0");
  EXPECT_FALSE(proxy.as_object().contains("command"));
  EXPECT_FALSE(proxy.as_object().contains("args"));
  // The template changes with them, so a new command rolls the members.
  auto plain = desired_state(stack, app, nullptr);
  ASSERT_TRUE(plain);
  EXPECT_NE(
      str(d->roles[0].stateful_set, "/spec/template/metadata/annotations/kstack.io~1template-hash"),
      str(plain->roles[0].stateful_set,
          "/spec/template/metadata/annotations/kstack.io~1template-hash"));
}

TEST_F(DesiredStateTest, RoleUnknownToTheAppIsAnErrorNamingTheField) {
  stack.spec.roles[1].id = "ghost";
  auto d = desired_state(stack, app, nullptr);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().kind, kube::ErrorKind::kInvalid);
  EXPECT_NE(d.error().to_string().find("spec.roles[1].id"), std::string::npos)
      << d.error().to_string();
}

TEST_F(DesiredStateTest, SameInputGivesIdenticalObjects) {
  auto a = desired_state(stack, app, nullptr);
  auto b = desired_state(stack, app, nullptr);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->roles[0].stateful_set, b->roles[0].stateful_set);
  EXPECT_EQ(a->headless_service, b->headless_service);
}

TEST(LabelValue, DistroIdsBecomeValidLabelValues) {
  EXPECT_EQ(label_value("example/kv"), "example.kv");
  EXPECT_EQ(label_value("bluedata/spark-2.4"), "bluedata.spark-2.4");
  EXPECT_EQ(label_value("/lead/"), "lead");
  EXPECT_EQ(label_value(std::string(80, 'a')).size(), 63u);
  EXPECT_EQ(label_value("a b!"), "a.b");
}

}  // namespace
}  // namespace kstack::reconciler
