#include "reconciler/configmeta.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "catalog/parse.h"

extern char** environ;

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
  version: "1.4.2"
  configSchemaVersion: 7
  defaultImageRepoTag: example/kv:1.0
  services:
  - id: client
    label: {name: Client API}
    endpoint: {port: 2379, urlScheme: http}
    exported_service: kv-client
  - id: peer
    label: {name: Peer}
    endpoint: {port: 2380}
  - id: metrics
    label: {name: Metrics}
  - id: gateway
    label: {name: Gateway}
    endpoint: {port: 8443, urlScheme: https}
  - id: admin
    label: {name: Admin}
    endpoint: {port: 9000, urlScheme: http}
  roles:
  - {id: server, cardinality: "1+"}
  - {id: client-gw, cardinality: "0+"}
  - {id: proxy, cardinality: "0+"}
  config:
    roleServices:
    - {roleID: server, serviceIDs: [client, peer, metrics]}
    - {roleID: client-gw, serviceIDs: [gateway]}
    - {roleID: proxy, serviceIDs: [client, admin]}
    configMeta: {mode: cluster, weird-key.name: w}
)";

const char* kStack = R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: db, namespace: apps, uid: 1111-2222, generation: 4, resourceVersion: "77"}
spec:
  app: kv
  roles:
  - id: server
    members: 3
    resources:
      requests: {cpu: 500m, memory: 1Gi}
      limits: {cpu: 1500m, memory: 2Gi}
  - id: client-gw
    members: 1
    resources: {requests: {cpu: 250m, memory: 512Mi}}
  - id: proxy
    members: 0
)";

const std::string kDomain = "db.apps.svc.cluster.local";

ConfigMember member(std::string role, std::string pod, std::int64_t node_id) {
  std::string fqdn = pod + "." + kDomain;
  return ConfigMember{std::move(role), std::move(pod), std::move(fqdn), node_id};
}

struct ConfigmetaTest : ::testing::Test {
  catalog::AppType app = *catalog::parse_apptype_yaml(kApp);
  catalog::Stack stack = *catalog::parse_stack_yaml(kStack);
  // Node ids out of order on purpose: the input order is what counts.
  std::vector<ConfigMember> members{
      member("server", "db-server-0", 7), member("server", "db-server-1", 3),
      member("server", "db-server-2", 12), member("client-gw", "db-client-gw-0", 5)};

  ConfigInput input() const { return ConfigInput{&stack, &app, nullptr, "db", members}; }
  json::value meta(std::size_t self = 0) const { return configmeta(input(), members[self]); }
};

const json::value& at(const json::value& v, std::string_view pointer) {
  return v.at_pointer(pointer);
}

json::array strings(std::initializer_list<std::string_view> items) {
  json::array out;
  for (auto s : items) out.emplace_back(s);
  return out;
}

TEST_F(ConfigmetaTest, VersionIsTheConfigSchemaVersionAsAString) {
  EXPECT_EQ(at(meta(), "/version"), "7");
}

TEST_F(ConfigmetaTest, ClusterHasTheStackNameUidAndTheConfigMetadataRefKey) {
  const auto m = meta();
  EXPECT_EQ(at(m, "/cluster/name"), "db");
  EXPECT_EQ(at(m, "/cluster/id"), "1111-2222");
  EXPECT_EQ(at(m, "/cluster/isolated"), false);
  EXPECT_EQ(at(m, "/cluster/config_metadata/1/bdvlibrefkey"),
            strings({"nodegroups", "1", "config_metadata"}));
}

TEST_F(ConfigmetaTest, NodegroupCarriesDistroVersionAndConfigMetadata) {
  const auto ng = at(meta(), "/nodegroups/1");
  EXPECT_EQ(ng.as_object().size(), 4u);
  EXPECT_EQ(ng.at("distro_id"), "example/kv");
  EXPECT_EQ(ng.at("catalog_entry_version"), "1.4.2");
  EXPECT_EQ(ng.at("config_metadata"), (json::object{{"mode", "cluster"}, {"weird-key.name", "w"}}));
  EXPECT_EQ(at(meta(), "/nodegroups").as_object().size(), 1u);
}

TEST_F(ConfigmetaTest, DistrosPointAtTheNodegroup) {
  EXPECT_EQ(
      at(meta(), "/distros"),
      (json::object{
          {"example/kv",
           json::object{{"1", json::object{{"bdvlibrefkey", strings({"nodegroups", "1"})}}}}}}));
}

TEST_F(ConfigmetaTest, RolesWithoutMembersAreLeftOut) {
  const auto m = meta();
  const auto& roles = at(m, "/nodegroups/1/roles").as_object();
  EXPECT_EQ(roles.size(), 2u);
  EXPECT_TRUE(roles.contains("server"));
  EXPECT_TRUE(roles.contains("client-gw"));
  EXPECT_FALSE(roles.contains("proxy"));
  // `admin` runs only on the memberless proxy; `client` runs on proxy too but is listed for
  // server alone.
  const auto& services = at(m, "/services").as_object();
  EXPECT_FALSE(services.contains("admin"));
  EXPECT_EQ(at(m, "/services/client/1").as_object().size(), 1u);
}

TEST_F(ConfigmetaTest, TopLevelServicesReferToEachRoleThatRunsThem) {
  const auto m = meta();
  EXPECT_EQ(at(m, "/services").as_object().size(), 4u);  // client, peer, metrics, gateway
  EXPECT_EQ(at(m, "/services/client/1/server/bdvlibrefkey"),
            strings({"nodegroups", "1", "roles", "server", "services", "client"}));
  EXPECT_EQ(at(m, "/services/metrics/1/server/bdvlibrefkey"),
            strings({"nodegroups", "1", "roles", "server", "services", "metrics"}));
  EXPECT_EQ(at(m, "/services/gateway/1/client-gw/bdvlibrefkey"),
            strings({"nodegroups", "1", "roles", "client-gw", "services", "gateway"}));
}

TEST_F(ConfigmetaTest, NodeIdsFqdnsHostnamesAndMappingsFollowTheMemberOrder) {
  const auto role = at(meta(), "/nodegroups/1/roles/server");
  const std::string f0 = "db-server-0." + kDomain;
  const std::string f1 = "db-server-1." + kDomain;
  const std::string f2 = "db-server-2." + kDomain;
  EXPECT_EQ(role.at("node_ids"), strings({"7", "3", "12"}));
  EXPECT_EQ(role.at("fqdns"), strings({f0, f1, f2}));
  EXPECT_EQ(role.at("hostnames"), strings({f0, f1, f2}));
  EXPECT_EQ(role.at("fqdn_mappings"), (json::object{{f0, "7"}, {f1, "3"}, {f2, "12"}}));
  EXPECT_EQ(at(meta(), "/nodegroups/1/roles/client-gw/node_ids"), strings({"5"}));
}

TEST_F(ConfigmetaTest, EndpointsUseTheUrlSchemeWhenThereIsOne) {
  const auto m = meta();
  EXPECT_EQ(
      at(m, "/nodegroups/1/roles/server/services/client/endpoints"),
      strings({"http://db-server-0." + kDomain + ":2379", "http://db-server-1." + kDomain + ":2379",
               "http://db-server-2." + kDomain + ":2379"}));
  EXPECT_EQ(at(m, "/nodegroups/1/roles/client-gw/services/gateway/endpoints"),
            strings({"https://db-client-gw-0." + kDomain + ":8443"}));
}

TEST_F(ConfigmetaTest, EndpointsWithoutSchemeAreHostPortAndWithoutPortThereAreNone) {
  const auto m = meta();
  EXPECT_EQ(at(m, "/nodegroups/1/roles/server/services/peer/endpoints"),
            strings({"db-server-0." + kDomain + ":2380", "db-server-1." + kDomain + ":2380",
                     "db-server-2." + kDomain + ":2380"}));
  EXPECT_EQ(at(m, "/nodegroups/1/roles/server/services/metrics/endpoints"), json::array{});
}

TEST_F(ConfigmetaTest, RoleServiceEntryHasKubeDirectorsFields) {
  const auto s = at(meta(), "/nodegroups/1/roles/server/services/client");
  EXPECT_EQ(s.at("name"), "Client API");
  EXPECT_EQ(s.at("id"), "client");
  EXPECT_EQ(s.at("qualifiers"), json::array{});
  EXPECT_EQ(s.at("global_id"), "1_server_client");
  EXPECT_EQ(s.at("exported_service"), "kv-client");
  EXPECT_EQ(at(s, "/hostnames/bdvlibrefkey"),
            strings({"nodegroups", "1", "roles", "server", "hostnames"}));
  EXPECT_EQ(at(s, "/fqdns/bdvlibrefkey"), strings({"nodegroups", "1", "roles", "server", "fqdns"}));
  EXPECT_FALSE(s.as_object().contains("authToken"));
  EXPECT_EQ(at(meta(), "/nodegroups/1/roles/server/services").as_object().size(), 3u);
}

TEST_F(ConfigmetaTest, FlavorComesFromTheLimitsRoundingCoresUp) {
  const auto f = at(meta(), "/nodegroups/1/roles/server/flavor");
  EXPECT_EQ(f.at("cores"), "2");      // 1500m
  EXPECT_EQ(f.at("memory"), "2048");  // 2Gi in MiB
  EXPECT_EQ(f.at("storage"), "n/a");
  EXPECT_EQ(f.at("name"), "n/a");
  EXPECT_EQ(f.at("description"), "n/a");
}

TEST_F(ConfigmetaTest, FlavorFallsBackToTheRequests) {
  const auto f = at(meta(), "/nodegroups/1/roles/client-gw/flavor");
  EXPECT_EQ(f.at("cores"), "1");     // 250m
  EXPECT_EQ(f.at("memory"), "512");  // 512Mi
}

TEST_F(ConfigmetaTest, FlavorIsNotApplicableWithoutResources) {
  stack.spec.roles[1].resources = {};
  const auto f = at(meta(), "/nodegroups/1/roles/client-gw/flavor");
  EXPECT_EQ(f.at("cores"), "n/a");
  EXPECT_EQ(f.at("memory"), "n/a");
  // Each field on its own.
  stack.spec.roles[1].resources.limits["memory"] = "1Gi";
  const auto memory_only = at(meta(), "/nodegroups/1/roles/client-gw/flavor");
  EXPECT_EQ(memory_only.at("cores"), "n/a");
  EXPECT_EQ(memory_only.at("memory"), "1024");
  stack.spec.roles[1].resources = {};
  stack.spec.roles[1].resources.requests["cpu"] = "3";
  const auto cpu_only = at(meta(), "/nodegroups/1/roles/client-gw/flavor");
  EXPECT_EQ(cpu_only.at("cores"), "3");
  EXPECT_EQ(cpu_only.at("memory"), "n/a");
}

TEST_F(ConfigmetaTest, NodeDescribesTheMember) {
  const auto node = at(meta(1), "/node");
  EXPECT_EQ(node.as_object().size(), 8u);
  EXPECT_EQ(node.at("role_id"), "server");
  EXPECT_EQ(node.at("nodegroup_id"), "1");
  EXPECT_EQ(node.at("id"), "3");
  EXPECT_EQ(node.at("hostname").as_string(), "db-server-1." + kDomain);
  EXPECT_EQ(node.at("fqdn").as_string(), "db-server-1." + kDomain);
  EXPECT_EQ(node.at("domain").as_string(), kDomain);
  EXPECT_EQ(node.at("distro_id"), "example/kv");
  EXPECT_EQ(node.at("depends_on"), json::object{});
}

TEST_F(ConfigmetaTest, DomainUsesTheConfiguredClusterDomainBase) {
  auto config = *catalog::parse_kstack_config_yaml(R"(
apiVersion: kstack.io/v1beta1
kind: KStackConfig
metadata: {name: kstack-config, namespace: kstack-system}
spec: {clusterSvcDomainBase: .svc.example.org}
)");
  auto in = input();
  in.config = &config;
  EXPECT_EQ(member_domain(in), "db.apps.svc.example.org");
  EXPECT_EQ(at(configmeta(in, members[0]), "/node/domain"), "db.apps.svc.example.org");
}

TEST_F(ConfigmetaTest, DocumentsOfTwoMembersDifferOnlyInNode) {
  auto a = meta(0).as_object();
  auto b = meta(3).as_object();
  EXPECT_NE(a.at("node"), b.at("node"));
  a.erase("node");
  b.erase("node");
  EXPECT_EQ(a, b);
}

TEST_F(ConfigmetaTest, KeepsKubeDirectorsTopLevelKeysIncludingEmptyConnections) {
  const auto m = meta();
  std::vector<std::string> keys;
  for (const auto& kv : m.as_object()) keys.emplace_back(kv.key());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"cluster", "connections", "distros", "node",
                                            "nodegroups", "services", "version"}));
  EXPECT_EQ(m.at("connections"), (json::object{{"clusters", json::object{}},
                                               {"configmaps", json::object{}},
                                               {"secrets", json::object{}}}));
}

TEST_F(ConfigmetaTest, TextIsTheDocumentWithEveryObjectsKeysSorted) {
  const std::string text = configmeta_text(input(), members[0]);
  EXPECT_EQ(text, configmeta_text(input(), members[0]));
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  const json::value parsed = json::parse(text);
  EXPECT_EQ(parsed, meta());
  auto check_sorted = [](const json::value& v, auto& self) -> void {
    if (v.is_array()) {
      for (const auto& e : v.as_array()) self(e, self);
    }
    if (!v.is_object()) return;
    std::string_view prev;
    for (const auto& kv : v.as_object()) {
      EXPECT_LT(prev, kv.key()) << "key order in " << json::serialize(v);
      prev = kv.key();
      self(kv.value(), self);
    }
  };
  check_sorted(parsed, check_sorted);
}

TEST_F(ConfigmetaTest, FingerprintIsStableAndIgnoresObjectMetadataChurn) {
  const std::string f = config_fingerprint(input());
  EXPECT_EQ(f.size(), 64u);
  EXPECT_EQ(f.find_first_not_of("0123456789abcdef"), std::string::npos);
  stack.metadata.generation = 9;
  stack.metadata.resource_version = "1234";
  EXPECT_EQ(config_fingerprint(input()), f);
}

TEST_F(ConfigmetaTest, FingerprintMovesWhenMembershipChanges) {
  const std::string before = config_fingerprint(input());
  members.pop_back();
  const std::string removed = config_fingerprint(input());
  EXPECT_NE(removed, before);
  members.push_back(member("client-gw", "db-client-gw-0", 6));  // same pod, new node id
  EXPECT_NE(config_fingerprint(input()), before);
  EXPECT_NE(config_fingerprint(input()), removed);
}

TEST_F(ConfigmetaTest, FingerprintMovesWhenTheAppSettingsOrFlavorChange) {
  const std::string before = config_fingerprint(input());
  app.spec.config.config_meta["mode"] = "standalone";
  const std::string meta_changed = config_fingerprint(input());
  EXPECT_NE(meta_changed, before);
  stack.spec.roles[0].resources.limits["cpu"] = "4";
  EXPECT_NE(config_fingerprint(input()), meta_changed);
}

// ---- env ----

TEST(ShellQuote, WrapsInSingleQuotesAndEscapesSingleQuotes) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("plain"), "'plain'");
  EXPECT_EQ(shell_quote("a'b"), "'a'\\''b'");
  EXPECT_EQ(shell_quote("$(x) `y`"), "'$(x) `y`'");
}

TEST(EnvNamePart, UpperCasesAndMapsEverythingElseToUnderscore) {
  EXPECT_EQ(env_name_part("client-gw"), "CLIENT_GW");
  EXPECT_EQ(env_name_part("a.b/C9"), "A_B_C9");
  EXPECT_EQ(env_name_part("\xc3\xa9t\xc3\xa9"), "__T__");
}

// Sources `env` with /bin/sh and returns the value of `name`, nullopt when unset. The env text
// goes to a file whose path is passed as an argument; nothing the generator produced is ever
// part of a command line.
std::optional<std::string> sourced(const std::string& env, const std::string& name) {
  char path_template[] = "/tmp/kstack-env-test-XXXXXX";
  const int fd = mkstemp(path_template);
  if (fd < 0) ADD_FAILURE() << "mkstemp failed";
  const std::string path = path_template;
  EXPECT_EQ(write(fd, env.data(), env.size()), static_cast<ssize_t>(env.size()));
  close(fd);

  // `name` is chosen by the test, never by the code under test.
  const std::string script = ". \"$1\" || exit 90\n[ \"${" + name +
                             "+set}\" = set ] || exit 91\nprintf %s \"$" + name + "\"";
  int out[2];
  EXPECT_EQ(pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addclose(&actions, out[1]);
  std::vector<std::string> args{"/bin/sh", "-c", script, "sh", path};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/bin/sh", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  std::string output;
  char buf[4096];
  ssize_t n = 0;
  while (spawned == 0 && (n = read(out[0], buf, sizeof buf)) > 0) output.append(buf, n);
  close(out[0]);
  int status = 0;
  if (spawned == 0) waitpid(pid, &status, 0);
  std::filesystem::remove(path);
  EXPECT_EQ(spawned, 0);
  EXPECT_TRUE(WIFEXITED(status));
  const int code = WEXITSTATUS(status);
  EXPECT_NE(code, 90) << "sourcing failed:\n" << env;
  if (code == 91) return std::nullopt;
  EXPECT_EQ(code, 0);
  return output;
}

TEST_F(ConfigmetaTest, EnvDescribesTheMember) {
  const std::string env = env_file(input(), members[1]);
  const std::string fqdn = "db-server-1." + kDomain;
  EXPECT_EQ(sourced(env, "KSTACK_STACK"), "db");
  EXPECT_EQ(sourced(env, "KSTACK_NAMESPACE"), "apps");
  EXPECT_EQ(sourced(env, "KSTACK_ROLE"), "server");
  EXPECT_EQ(sourced(env, "KSTACK_POD"), "db-server-1");
  EXPECT_EQ(sourced(env, "KSTACK_NODE_ID"), "3");
  EXPECT_EQ(sourced(env, "KSTACK_FQDN"), fqdn);
  EXPECT_EQ(sourced(env, "KSTACK_HOSTNAME"), fqdn);
  EXPECT_EQ(sourced(env, "KSTACK_DOMAIN"), kDomain);
  EXPECT_EQ(sourced(env, "KSTACK_DISTRO_ID"), "example/kv");
  EXPECT_EQ(sourced(env, "KSTACK_APP_VERSION"), "1.4.2");
}

TEST_F(ConfigmetaTest, EnvListsRolesWithMembersOnly) {
  const std::string env = env_file(input(), members[0]);
  EXPECT_EQ(sourced(env, "KSTACK_ROLES"), "server client-gw");
  EXPECT_EQ(sourced(env, "KSTACK_ROLE_SERVER_FQDNS"),
            "db-server-0." + kDomain + ",db-server-1." + kDomain + ",db-server-2." + kDomain);
  EXPECT_EQ(sourced(env, "KSTACK_ROLE_SERVER_COUNT"), "3");
  EXPECT_EQ(sourced(env, "KSTACK_ROLE_SERVER_NODE_IDS"), "7,3,12");
  EXPECT_EQ(sourced(env, "KSTACK_ROLE_CLIENT_GW_FQDNS"), "db-client-gw-0." + kDomain);
  EXPECT_EQ(sourced(env, "KSTACK_ROLE_CLIENT_GW_COUNT"), "1");
  EXPECT_EQ(sourced(env, "KSTACK_ROLE_CLIENT_GW_NODE_IDS"), "5");
  EXPECT_EQ(sourced(env, "KSTACK_ROLE_PROXY_COUNT"), std::nullopt);
  EXPECT_EQ(sourced(env, "KSTACK_ROLE_PROXY_FQDNS"), std::nullopt);
}

TEST_F(ConfigmetaTest, EnvHasThePortsOfTheMembersOwnRoleServices) {
  const std::string server = env_file(input(), members[0]);
  EXPECT_EQ(sourced(server, "KSTACK_SERVICE_CLIENT_PORT"), "2379");
  EXPECT_EQ(sourced(server, "KSTACK_SERVICE_PEER_PORT"), "2380");
  EXPECT_EQ(sourced(server, "KSTACK_SERVICE_METRICS_PORT"), std::nullopt);  // no port
  EXPECT_EQ(sourced(server, "KSTACK_SERVICE_GATEWAY_PORT"), std::nullopt);  // other role
  const std::string gw = env_file(input(), members[3]);
  EXPECT_EQ(sourced(gw, "KSTACK_SERVICE_GATEWAY_PORT"), "8443");
  EXPECT_EQ(sourced(gw, "KSTACK_SERVICE_CLIENT_PORT"), std::nullopt);
}

TEST_F(ConfigmetaTest, EnvConfigValuesReachTheShellByteForByte) {
  const std::filesystem::path marker =
      std::filesystem::temp_directory_path() / ("kstack-env-marker-" + std::to_string(getpid()));
  std::filesystem::remove(marker);
  const std::vector<std::string> values{
      "a'b $(id) ;rm -rf /",
      "$(touch " + marker.string() + ") `touch " + marker.string() + "`; touch " + marker.string(),
      "line1\nline2\n\n",
      "'' \"quoted\" \\n \\' '\\''",
      "*  glob? [x] ~ $HOME ${PATH} !1 # not a comment",
      "-n",
      "\t lead and trail \t",
      "\xff\xfe not utf-8",
      "",
  };
  for (std::size_t i = 0; i < values.size(); ++i) {
    app.spec.config.config_meta["x"] = values[i];
    const std::string env = env_file(input(), members[0]);
    EXPECT_EQ(sourced(env, "KSTACK_CONFIG_X"), values[i]) << "value #" << i;
    EXPECT_EQ(sourced(env, "KSTACK_CONFIG_MODE"), "cluster") << "value #" << i;
  }
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a value was executed";
}

TEST_F(ConfigmetaTest, EnvConfigKeysAreMappedAndAmbiguousOrEmptyOnesLeftOut) {
  app.spec.config.config_meta["a-b"] = "1";
  app.spec.config.config_meta["a.b"] = "2";
  app.spec.config.config_meta[""] = "empty";
  app.spec.config.config_meta["nul"] = std::string("a\0b", 3);
  const std::string env = env_file(input(), members[0]);
  EXPECT_EQ(sourced(env, "KSTACK_CONFIG_WEIRD_KEY_NAME"), "w");
  EXPECT_EQ(sourced(env, "KSTACK_CONFIG_A_B"), std::nullopt);
  EXPECT_EQ(sourced(env, "KSTACK_CONFIG_"), std::nullopt);
  EXPECT_EQ(sourced(env, "KSTACK_CONFIG_NUL"), std::nullopt);
  EXPECT_EQ(env.find('\0'), std::string::npos);
  // configmeta.json still carries every entry.
  EXPECT_EQ(at(meta(), "/nodegroups/1/config_metadata").as_object().size(), 6u);
}

TEST_F(ConfigmetaTest, EnvEveryAssignmentIsExportedAndSingleQuoted) {
  app.spec.config.config_meta["x"] = "a'b\nc";
  const std::string env = env_file(input(), members[0]);
  std::size_t assignments = 0;
  std::size_t pos = 0;
  while ((pos = env.find("export ", pos)) != std::string::npos) {
    if (pos != 0 && env[pos - 1] != '\n') {
      pos += 7;
      continue;
    }
    const auto eq = env.find('=', pos);
    ASSERT_NE(eq, std::string::npos);
    EXPECT_EQ(env[eq + 1], '\'') << env.substr(pos, 40);
    ++assignments;
    pos = eq;
  }
  EXPECT_GE(assignments, 20u);
}

}  // namespace
}  // namespace kstack::reconciler
