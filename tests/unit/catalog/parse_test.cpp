#include "catalog/parse.h"

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/yaml.h"

namespace kstack::catalog {
namespace {
namespace json = boost::json;

constexpr std::string_view kAppYaml = R"(apiVersion: kstack.io/v1beta1
kind: AppType
metadata:
  name: cassandra
  namespace: team-a
  labels: {tier: db}
spec:
  label: {name: Cassandra, description: "wide-column store"}
  distroID: cassandra
  version: "4.0"
  configSchemaVersion: 8
  defaultImageRepoTag: docker.io/bluedata/cassandra:4.0
  defaultConfigPackage:
    packageURL: configmap://cassandra-setup/appconfig.tgz
    sha256: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  futureTopLevelField: {keep: me}
  services:
    - id: cql
      label: {name: CQL}
      endpoint: {port: 9042, urlScheme: cql, isDashboard: false, hasAuthToken: true}
      exported_service: cassandra
  roles:
    - id: seed
      cardinality: "2+"
      configPackage: null
      persistDirs: [/var/lib/cassandra]
      eventList: [configure]
      minResources: {cpu: 1, memory: 2Gi}
      minStorage: {size: 10Gi, ephemeralModeSupported: true}
      containerSpec: {stdin: true, tty: true}
      roleExtra: 42
    - id: worker
      cardinality: "0+"
      imageRepoTag: docker.io/bluedata/cassandra-worker:4.0
  config:
    roleServices:
      - {roleID: seed, serviceIDs: [cql]}
    selectedRoles: [seed]
    configMeta: {replication: "3"}
  defaultPersistDirs: [/data]
  defaultEventList: [configure, addnodes]
  capabilities: [SYS_RESOURCE]
  systemdRequired: true
  logoURL: https://example.com/logo.png
)";

TEST(ParseAppType, DecodesEveryField) {
  auto r = parse_apptype_yaml(kAppYaml);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const auto& a = *r;
  EXPECT_EQ(a.metadata.name, "cassandra");
  EXPECT_EQ(a.metadata.namespace_name, "team-a");
  EXPECT_EQ(a.metadata.labels.at("tier"), "db");
  const auto& s = a.spec;
  EXPECT_EQ(s.label.name, "Cassandra");
  EXPECT_EQ(s.label.description, "wide-column store");
  EXPECT_EQ(s.distro_id, "cassandra");
  EXPECT_EQ(s.version, "4.0");
  EXPECT_EQ(s.config_schema_version, 8);
  EXPECT_EQ(s.default_image_repo_tag, "docker.io/bluedata/cassandra:4.0");
  ASSERT_EQ(s.default_config_package.state, PackageField::State::kPackage);
  EXPECT_EQ(s.default_config_package.package.package_url,
            "configmap://cassandra-setup/appconfig.tgz");
  EXPECT_TRUE(s.default_config_package.package.sha256.has_value());
  ASSERT_EQ(s.services.size(), 1u);
  EXPECT_EQ(s.services[0].id, "cql");
  EXPECT_EQ(s.services[0].label.name, "CQL");
  ASSERT_TRUE(s.services[0].endpoint.has_value());
  EXPECT_EQ(s.services[0].endpoint->port, 9042);
  EXPECT_EQ(s.services[0].endpoint->url_scheme, "cql");
  EXPECT_TRUE(s.services[0].endpoint->has_auth_token);
  EXPECT_EQ(s.services[0].exported_service, "cassandra");
  ASSERT_EQ(s.roles.size(), 2u);
  const auto& seed = s.roles[0];
  EXPECT_EQ(seed.id, "seed");
  EXPECT_EQ(seed.cardinality, "2+");
  EXPECT_EQ(seed.config_package.state, PackageField::State::kNone);
  EXPECT_EQ(seed.persist_dirs, std::vector<std::string>{"/var/lib/cassandra"});
  EXPECT_EQ(seed.event_list, std::vector<std::string>{"configure"});
  EXPECT_EQ(seed.min_resources.at("cpu"), "1");  // a YAML int becomes quantity text
  EXPECT_EQ(seed.min_resources.at("memory"), "2Gi");
  ASSERT_TRUE(seed.min_storage.has_value());
  EXPECT_EQ(seed.min_storage->size, "10Gi");
  EXPECT_TRUE(seed.min_storage->ephemeral_mode_supported);
  EXPECT_TRUE(seed.container_spec.stdin_open);
  EXPECT_TRUE(seed.container_spec.tty);
  EXPECT_EQ(s.roles[1].config_package.state, PackageField::State::kAbsent);
  EXPECT_EQ(s.roles[1].image_repo_tag, "docker.io/bluedata/cassandra-worker:4.0");
  ASSERT_EQ(s.config.role_services.size(), 1u);
  EXPECT_EQ(s.config.role_services[0].role_id, "seed");
  EXPECT_EQ(s.config.role_services[0].service_ids, std::vector<std::string>{"cql"});
  EXPECT_EQ(s.config.selected_roles, std::vector<std::string>{"seed"});
  EXPECT_EQ(s.config.config_meta.at("replication"), "3");
  EXPECT_EQ(s.default_persist_dirs, std::vector<std::string>{"/data"});
  EXPECT_EQ(s.default_event_list, (std::vector<std::string>{"configure", "addnodes"}));
  EXPECT_EQ(s.capabilities, std::vector<std::string>{"SYS_RESOURCE"});
  EXPECT_TRUE(s.systemd_required);
  EXPECT_EQ(s.logo_url, "https://example.com/logo.png");
}

TEST(ParseAppType, SerialisationKeepsUnknownFields) {
  auto doc = parse_yaml(kAppYaml);
  ASSERT_TRUE(doc.has_value());
  auto a = parse_apptype(*doc);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(to_json(*a), *doc);
  EXPECT_EQ(to_json(*a).at_pointer("/spec/futureTopLevelField/keep"), json::value("me"));
  EXPECT_EQ(to_json(*a).at_pointer("/spec/roles/0/roleExtra"), json::value(42));
  // And it survives a text round trip.
  auto again = parse_apptype(json::parse(json::serialize(to_json(*a))));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->raw, *doc);
}

TEST(ParseAppType, ErrorsNameEveryFieldPathAtOnce) {
  auto r = parse_apptype_yaml(R"(kind: AppType
metadata: {name: x}
spec:
  label: {description: no name}
  version: 1.0
  configSchemaVersion: "8"
  roles:
    - id: a
      cardinality: 3
    - just-a-string
  services:
    - id: s
      endpoint: {urlScheme: http}
)");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, kube::ErrorKind::kInvalid);
  EXPECT_EQ(r.error().http_status, 422);
  std::vector<std::string> fields;
  for (const auto& c : r.error().causes) fields.push_back(c.field);
  for (std::string_view want :
       {"spec.label.name", "spec.distroID", "spec.version", "spec.configSchemaVersion",
        "spec.roles[0].cardinality", "spec.roles[1]", "spec.services[0].endpoint.port"}) {
    EXPECT_NE(std::find(fields.begin(), fields.end(), want), fields.end())
        << want << " missing from: " << r.error().message;
  }
  EXPECT_NE(r.error().message.find("spec.version: must be a string, not a number"),
            std::string::npos)
      << r.error().message;
}

TEST(ParseAppType, WrongKindAndNonObjectAreRefused) {
  EXPECT_FALSE(parse_apptype(json::parse(R"({"kind":"Stack","metadata":{},"spec":{}})")));
  auto r = parse_apptype(json::value(3));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("JSON object"), std::string::npos);
}

TEST(ParseAppType, DecodesUpgradeFromAndTheUpgradeEvents) {
  auto r = parse_apptype_yaml(R"(kind: AppType
metadata: {name: etcd-r2}
spec:
  label: {name: etcd}
  distroID: etcd
  version: "3.5"
  configSchemaVersion: 1
  upgradeFrom: [etcd, etcd-r1]
  defaultEventList: [configure, preupgrade, upgradenodes]
  roles:
    - {id: member, cardinality: "1+", eventList: [configure, preupgrade]}
)");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->spec.upgrade_from, (std::vector<std::string>{"etcd", "etcd-r1"}));
  EXPECT_EQ(r->spec.default_event_list,
            (std::vector<std::string>{"configure", "preupgrade", "upgradenodes"}));
  EXPECT_EQ(r->spec.roles[0].event_list, (std::vector<std::string>{"configure", "preupgrade"}));
  // Absent means none.
  auto old = parse_apptype_yaml(kAppYaml);
  ASSERT_TRUE(old.has_value());
  EXPECT_TRUE(old->spec.upgrade_from.empty());
}

TEST(ParseAppType, UpgradeFromOfTheWrongTypeIsNamed) {
  for (auto [value, want] : {std::pair{"etcd", "spec.upgradeFrom: must be an array"},
                             std::pair{"[etcd, 3]", "spec.upgradeFrom[1]: must be a string"}}) {
    auto r = parse_apptype_yaml(fmt::format(R"(kind: AppType
metadata: {{name: x}}
spec:
  label: {{name: x}}
  distroID: x
  version: "1"
  configSchemaVersion: 1
  upgradeFrom: {}
  roles: [{{id: a, cardinality: "1"}}]
)",
                                            value));
    ASSERT_FALSE(r.has_value()) << value;
    EXPECT_NE(r.error().message.find(want), std::string::npos) << r.error().message;
  }
}

constexpr std::string_view kStackYaml = R"(apiVersion: kstack.io/v1beta1
kind: Stack
metadata:
  name: db
  namespace: team-a
  finalizers: [kstack.io/cleanup]
  deletionTimestamp: "2024-01-01T00:00:00Z"
spec:
  app: cassandra
  appCatalog: local
  serviceType: NodePort
  namingScheme: CrNameRole
  persistentVolumeClaimRetentionPolicy: {whenScaled: Retain}
  connections: {clusters: [other]}
  roles:
    - id: seed
      members: 3
      resources:
        requests: {cpu: 500m, memory: 4Gi}
        limits: {cpu: 2}
      storage: {size: 20Gi, storageClassName: fast}
      env: [{name: A, value: b}]
      affinity: {nodeAffinity: {}}
      nodeSelector: {disk: ssd}
      tolerations: [{key: k, operator: Exists}]
      podLabels: {team: a}
      podAnnotations: {note: x}
      serviceLabels: {svc: "y"}
      serviceAnnotations: {svc-note: z}
      serviceAccountName: runner
status:
  observedGeneration: 4
  state: ready
  conditions:
    - {type: Ready, status: "True", reason: AllMembersReady, message: ok,
       lastTransitionTime: "2024-01-01T00:00:00Z", observedGeneration: 4}
  clusterService: db
  lastNodeID: 3
  configGeneration: 2
  readyMembers: 2
  desiredMembers: 3
  memberSummary: 2/3
  roles:
    - id: seed
      statefulSet: db-seed
      members:
        - pod: db-seed-0
          service: db-seed-0
          pvc: data-db-seed-0
          nodeID: 1
          state: ready
          stateDetail:
            lastConfigDataGeneration: 2
            lastSetupGeneration: 2
            lastConfiguredContainer: containerd://abc
            lastKnownContainerState: running
            pendingNotifyCmds: [{arguments: [--addnodes, --role, seed]}]
  memberStateRollup: {membershipChanging: false, membersDown: true}
)";

TEST(ParseStack, DecodesSpecAndStatus) {
  auto r = parse_stack_yaml(kStackYaml);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const auto& s = *r;
  EXPECT_TRUE(s.metadata.deleting);
  EXPECT_EQ(s.metadata.finalizers, std::vector<std::string>{"kstack.io/cleanup"});
  EXPECT_EQ(s.spec.app, "cassandra");
  EXPECT_EQ(s.spec.app_catalog, "local");
  EXPECT_EQ(s.spec.service_type, "NodePort");
  EXPECT_EQ(s.spec.naming_scheme, "CrNameRole");
  EXPECT_EQ(s.spec.pvc_retention.when_scaled, "Retain");
  EXPECT_FALSE(s.spec.pvc_retention.when_deleted.has_value());
  ASSERT_EQ(s.spec.roles.size(), 1u);
  const auto& role = s.spec.roles[0];
  EXPECT_EQ(role.members, 3);
  EXPECT_EQ(role.resources.requests.at("cpu"), "500m");
  EXPECT_EQ(role.resources.limits.at("cpu"), "2");
  ASSERT_TRUE(role.storage.has_value());
  EXPECT_EQ(role.storage->size, "20Gi");
  EXPECT_EQ(role.storage->storage_class_name, "fast");
  EXPECT_TRUE(role.env->is_array());
  EXPECT_TRUE(role.affinity->is_object());
  EXPECT_EQ(role.node_selector.at("disk"), "ssd");
  EXPECT_TRUE(role.tolerations->is_array());
  EXPECT_EQ(role.pod_labels.at("team"), "a");
  EXPECT_EQ(role.pod_annotations.at("note"), "x");
  EXPECT_EQ(role.service_labels.at("svc"), "y");
  EXPECT_EQ(role.service_annotations.at("svc-note"), "z");
  EXPECT_EQ(role.service_account_name, "runner");
  ASSERT_TRUE(s.status.has_value());
  const auto& st = *s.status;
  EXPECT_EQ(st.observed_generation, 4);
  EXPECT_EQ(st.state, kStackReady);
  ASSERT_EQ(st.conditions.size(), 1u);
  EXPECT_EQ(st.conditions[0].reason, "AllMembersReady");
  EXPECT_EQ(st.last_node_id, 3);
  EXPECT_EQ(st.ready_members, 2);
  EXPECT_EQ(st.desired_members, 3);
  EXPECT_EQ(st.member_summary, "2/3");
  ASSERT_EQ(st.roles.size(), 1u);
  ASSERT_EQ(st.roles[0].members.size(), 1u);
  const auto& m = st.roles[0].members[0];
  EXPECT_EQ(m.pvc, "data-db-seed-0");
  EXPECT_EQ(m.state_detail.last_setup_generation, 2);
  ASSERT_EQ(m.state_detail.pending_notify_cmds.size(), 1u);
  EXPECT_EQ(m.state_detail.pending_notify_cmds[0].arguments.size(), 3u);
  EXPECT_TRUE(st.member_state_rollup.members_down);
  EXPECT_EQ(to_json(s).at_pointer("/spec/connections/clusters/0"), json::value("other"));
}

TEST(ParseStack, StatusSurvivesEncodeDecode) {
  auto s = parse_stack_yaml(kStackYaml);
  ASSERT_TRUE(s.has_value());
  json::value encoded = to_json(*s->status);
  FieldErrors errors;
  auto decoded = decode_stack_status(encoded, errors);
  EXPECT_TRUE(errors.empty()) << join(errors);
  EXPECT_EQ(to_json(decoded), encoded);
  EXPECT_EQ(decoded.roles[0].members[0].state_detail.last_configured_container, "containerd://abc");
}

TEST(ParseStack, TypeErrorsNameTheirPaths) {
  auto r = parse_stack_yaml(R"(kind: Stack
metadata: {name: s}
spec:
  roles:
    - id: a
      members: "3"
      storage: {storageClassName: x}
      podLabels: {a: 1}
      tolerations: {}
)");
  ASSERT_FALSE(r.has_value());
  const auto& msg = r.error().message;
  for (std::string_view want :
       {"spec.app: is required", "spec.roles[0].members: must be an integer",
        "spec.roles[0].storage.size: is required", "spec.roles[0].podLabels[a]: must be a string",
        "spec.roles[0].tolerations: must be an array"}) {
    EXPECT_NE(msg.find(want), std::string::npos) << want << " not in: " << msg;
  }
}

TEST(ParseStack, DecodesPausedAndMaxUnavailable) {
  auto r = parse_stack_yaml(R"(kind: Stack
metadata: {name: s}
spec:
  app: etcd
  paused: true
  roles:
    - {id: member, members: 3, maxUnavailable: 2}
    - {id: other}
)");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_TRUE(r->spec.paused);
  EXPECT_EQ(r->spec.roles[0].max_unavailable, 2);
  EXPECT_FALSE(r->spec.roles[1].max_unavailable.has_value());
  // Absent: not paused, maxUnavailable unset (1 applies).
  auto old = parse_stack_yaml(kStackYaml);
  ASSERT_TRUE(old.has_value());
  EXPECT_FALSE(old->spec.paused);
  EXPECT_FALSE(old->spec.roles[0].max_unavailable.has_value());
}

TEST(ParseStack, PausedAndMaxUnavailableOfTheWrongTypeAreNamed) {
  auto r = parse_stack_yaml(R"(kind: Stack
metadata: {name: s}
spec:
  app: etcd
  paused: "yes"
  roles:
    - {id: member, maxUnavailable: "50%"}
)");
  ASSERT_FALSE(r.has_value());
  const auto& msg = r.error().message;
  for (std::string_view want :
       {"spec.paused: must be a boolean", "spec.roles[0].maxUnavailable: must be an integer"}) {
    EXPECT_NE(msg.find(want), std::string::npos) << want << " not in: " << msg;
  }
}

TEST(ParseKStackConfig, DecodesAndAcceptsAnEmptySpec) {
  auto r = parse_kstack_config_yaml(R"(kind: KStackConfig
metadata: {name: kstack-config, namespace: kstack-system}
spec:
  defaultStorageClassName: fast
  defaultServiceType: LoadBalancer
  defaultNamingScheme: UID
  clusterSvcDomainBase: .svc.example.org
  podLabels: {a: b}
  serviceAnnotations: {c: d}
)");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->spec.default_storage_class_name, "fast");
  EXPECT_EQ(r->spec.default_service_type, "LoadBalancer");
  EXPECT_EQ(r->spec.default_naming_scheme, "UID");
  EXPECT_EQ(r->spec.cluster_svc_domain_base, ".svc.example.org");
  EXPECT_EQ(r->spec.pod_labels.at("a"), "b");
  EXPECT_EQ(r->spec.service_annotations.at("c"), "d");
  EXPECT_TRUE(parse_kstack_config_yaml("kind: KStackConfig\nmetadata: {name: kstack-config}\n"));
}

TEST(ParseStack, DecodesStoppedAndMemberRecovery) {
  auto r = parse_stack_yaml(R"(kind: Stack
metadata: {name: s}
spec:
  app: etcd
  stopped: true
  roles:
    - id: member
      # Quoted: YAML 1.1 (kubectl's) reads a bare Off as the boolean false.
      memberRecovery: {policy: "Off", nodeLostGraceSeconds: 300, localStorage: Recreate}
    - id: other
      memberRecovery: {nodeLostGraceSeconds: 0}
    - id: third
)");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_TRUE(r->spec.stopped);
  const auto& full = r->spec.roles[0].member_recovery;
  EXPECT_EQ(full.policy, "Off");
  EXPECT_EQ(full.node_lost_grace_seconds, 300);
  EXPECT_EQ(full.local_storage, "Recreate");
  // Fields not written stay unset, so that the KStackConfig's or the built-in default applies.
  const auto& partial = r->spec.roles[1].member_recovery;
  EXPECT_FALSE(partial.policy.has_value());
  EXPECT_EQ(partial.node_lost_grace_seconds, 0);
  EXPECT_FALSE(partial.local_storage.has_value());
  const auto& none = r->spec.roles[2].member_recovery;
  EXPECT_FALSE(none.policy || none.node_lost_grace_seconds || none.local_storage);
  auto old = parse_stack_yaml(kStackYaml);
  ASSERT_TRUE(old.has_value());
  EXPECT_FALSE(old->spec.stopped);
}

TEST(ParseStack, StoppedAndMemberRecoveryOfTheWrongTypeAreNamed) {
  auto r = parse_stack_yaml(R"(kind: Stack
metadata: {name: s}
spec:
  app: etcd
  stopped: "true"
  roles:
    - id: member
      memberRecovery: {policy: 1, nodeLostGraceSeconds: "60", localStorage: [Keep]}
    - id: other
      memberRecovery: Reschedule
)");
  ASSERT_FALSE(r.has_value());
  const auto& msg = r.error().message;
  for (std::string_view want :
       {"spec.stopped: must be a boolean", "spec.roles[0].memberRecovery.policy: must be a string",
        "spec.roles[0].memberRecovery.nodeLostGraceSeconds: must be an "
        "integer",
        "spec.roles[0].memberRecovery.localStorage: must be a string",
        "spec.roles[1].memberRecovery: must be an object"}) {
    EXPECT_NE(msg.find(want), std::string::npos) << want << " not in: " << msg;
  }
}

TEST(ParseKStackConfig, DecodesMemberRecoveryAndNamesItsTypeErrors) {
  auto r = parse_kstack_config_yaml(R"(kind: KStackConfig
metadata: {name: kstack-config}
spec:
  memberRecovery: {policy: Reschedule, nodeLostGraceSeconds: 120, localStorage: Recreate}
)");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->spec.member_recovery.policy, "Reschedule");
  EXPECT_EQ(r->spec.member_recovery.node_lost_grace_seconds, 120);
  EXPECT_EQ(r->spec.member_recovery.local_storage, "Recreate");
  auto bad = parse_kstack_config_yaml(R"(kind: KStackConfig
metadata: {name: kstack-config}
spec:
  memberRecovery: {policy: true, nodeLostGraceSeconds: 1.5}
)");
  ASSERT_FALSE(bad.has_value());
  const auto& msg = bad.error().message;
  for (std::string_view want : {"spec.memberRecovery.policy: must be a string",
                                "spec.memberRecovery.nodeLostGraceSeconds: must be an integer"}) {
    EXPECT_NE(msg.find(want), std::string::npos) << want << " not in: " << msg;
  }
}

TEST(ParseAppType, DecodesMinAvailableAsIntegerOrString) {
  auto r = parse_apptype_yaml(R"(kind: AppType
metadata: {name: etcd}
spec:
  label: {name: etcd}
  distroID: etcd
  version: "3.5"
  configSchemaVersion: 1
  roles:
    - {id: member, cardinality: "3+", minAvailable: 2}
    - {id: worker, cardinality: "0+", minAvailable: "50%"}
    - {id: plain, cardinality: "1"}
    - {id: yamlish, cardinality: "1", minAvailable: 2.0}
)");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const auto& roles = r->spec.roles;
  ASSERT_TRUE(roles[0].min_available.is_int64());
  EXPECT_EQ(roles[0].min_available.get_int64(), 2);
  ASSERT_TRUE(roles[1].min_available.is_string());
  EXPECT_EQ(roles[1].min_available.get_string(), "50%");
  EXPECT_TRUE(roles[2].min_available.is_null());
  ASSERT_TRUE(roles[3].min_available.is_int64());
  EXPECT_EQ(roles[3].min_available.get_int64(), 2);
}

TEST(ParseAppType, MinAvailableOfTheWrongTypeIsNamed) {
  auto r = parse_apptype_yaml(R"(kind: AppType
metadata: {name: etcd}
spec:
  label: {name: etcd}
  distroID: etcd
  version: "3.5"
  configSchemaVersion: 1
  roles:
    - {id: member, cardinality: "3+", minAvailable: true}
    - {id: worker, cardinality: "0+", minAvailable: [1]}
    - {id: half, cardinality: "0+", minAvailable: 1.5}
)");
  ASSERT_FALSE(r.has_value());
  const auto& msg = r.error().message;
  for (std::string_view want :
       {"spec.roles[0].minAvailable: must be an integer or a string, not a boolean",
        "spec.roles[1].minAvailable: must be an integer or a string, not an array",
        "spec.roles[2].minAvailable: must be an integer"}) {
    EXPECT_NE(msg.find(want), std::string::npos) << want << " not in: " << msg;
  }
}

}  // namespace
}  // namespace kstack::catalog
