// `kstack import compose` (catalog/compose.h): the realistic Compose files of
// testdata/compose/ convert, pass the webhook's rules as `kstack validate` runs them and render
// as `kstack render` does, with the golden list of warnings each (<file>.warnings); the mapping
// of each supported key; and one table row per construct that is not carried over.
#include "catalog/compose.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/parse.h"
#include "catalog/yaml.h"
#include "reconciler/desired_state.h"
#include "validator/rules/offline.h"

namespace kstack::catalog {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

fs::path testdata() { return fs::path(KSTACK_COMPOSE_TESTDATA); }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

json::value yaml(std::string_view text) {
  auto parsed = parse_yaml(text);
  EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error().to_string());
  return parsed ? *parsed : json::value();
}

ComposeResult convert(std::string_view text, std::string name = "app") {
  ComposeOptions o;
  o.name = std::move(name);
  return convert_compose(yaml(text), o);
}

std::vector<std::string> lines(const ComposeResult& r) {
  std::vector<std::string> out;
  for (const auto& w : r.warnings) out.push_back(format_warning(w));
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& l : v) s += l + "\n";
  return s;
}

// What `kstack validate` says about the two objects (empty = both OK, no warnings), and the
// objects `kstack render` would print; render problems are returned as text.
struct Checked {
  std::string problems;
  reconciler::DesiredState desired;
};

Checked validate_and_render(const ComposeResult& r) {
  Checked out;
  std::vector<validator::SourceDocument> docs;
  for (const auto* o : {&r.apptype, &r.stack}) {
    YamlDocument d;
    d.index = docs.size() + 1;
    d.value = *o;
    docs.push_back(validator::SourceDocument{"converted", std::move(d)});
  }
  auto run = validator::run_offline(docs);
  for (const auto& res : run.results) {
    if (res.status != validator::OfflineResult::Status::kOk || !res.warnings.empty()) {
      for (const auto& l : validator::format_text(res)) out.problems += l + "\n";
    }
  }
  if (!out.problems.empty()) return out;
  auto stack = parse_stack(run.objects[1]);
  if (!stack) return {stack.error().to_string(), {}};
  stack->metadata.uid = "00000000-0000-0000-0000-000000000000";
  auto found = run.memory->catalog().find_app(*stack);
  if (!found) return {"the Stack's AppType is not found", {}};
  auto desired = reconciler::desired_state(*stack, found->app, nullptr);
  if (!desired) return {desired.error().to_string(), {}};
  out.desired = std::move(*desired);
  return out;
}

const json::value& container(const reconciler::DesiredState& d, std::size_t role) {
  return d.roles.at(role).stateful_set.at_pointer("/spec/template/spec/containers/0");
}

// ---- the realistic files ----

std::vector<fs::path> compose_files() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(testdata())) {
    if (e.path().extension() == ".yml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ComposeFiles, EachConvertsValidatesRendersAndWarnsAsItsGoldenList) {
  auto files = compose_files();
  ASSERT_GE(files.size(), 10u);
  for (const auto& f : files) {
    SCOPED_TRACE(f.filename().string());
    const std::string name = f.stem().string();
    auto r = convert(slurp(f), name);
    ASSERT_EQ(r.error, "");
    auto checked = validate_and_render(r);
    EXPECT_EQ(checked.problems, "");
    const auto file = yaml(slurp(f));
    EXPECT_EQ(checked.desired.roles.size(), file.at("services").as_object().size());
    auto golden = slurp(fs::path(f).replace_extension(".warnings"));
    EXPECT_EQ(joined(lines(r)), golden);
  }
}

TEST(ComposeFiles, WordPressMapsEveryKeyItUses) {
  auto r = convert(slurp(testdata() / "wordpress-mysql.yml"), "blog");
  ASSERT_EQ(r.error, "");
  const auto& app = r.apptype.as_object();
  // Ports of both services become AppType services, listed per role.
  EXPECT_EQ(json::serialize(app.at("spec").at("services")),
            R"([{"id":"port-80","label":{"name":"port 80"},"endpoint":{"port":80}},)"
            R"({"id":"port-3306","label":{"name":"port 3306"},"endpoint":{"port":3306}},)"
            R"({"id":"port-33060","label":{"name":"port 33060"},"endpoint":{"port":33060}}])");
  EXPECT_EQ(json::serialize(app.at("spec").at("config").at("roleServices")),
            R"([{"roleID":"db","serviceIDs":["port-3306","port-33060"]},)"
            R"({"roleID":"wordpress","serviceIDs":["port-80"]}])");
  const auto& db = app.at("spec").at("roles").at(0).as_object();
  EXPECT_EQ(db.at("imageRepoTag"), "mysql:8.0");
  EXPECT_EQ(json::serialize(db.at("args")),
            R"(["--default-authentication-plugin=mysql_native_password"])");
  EXPECT_FALSE(db.contains("command"));
  EXPECT_EQ(json::serialize(db.at("readinessProbe")),
            R"({"exec":{"command":["mysqladmin","ping","-h","localhost"]},"periodSeconds":10,)"
            R"("timeoutSeconds":5,"failureThreshold":5})");
  EXPECT_EQ(json::serialize(db.at("persistDirs")), R"(["/var/lib/mysql"])");
  const auto& wp = app.at("spec").at("roles").at(1).as_object();
  EXPECT_EQ(json::serialize(wp.at("dependsOn")), R"(["db"])");

  const auto& stack = r.stack.as_object();
  EXPECT_EQ(stack.at("metadata").at("name"), "blog");
  EXPECT_EQ(stack.at("spec").at("app"), "blog");
  const auto& sdb = stack.at("spec").at("roles").at(0).as_object();
  EXPECT_EQ(sdb.at("members"), 1);
  EXPECT_EQ(json::serialize(sdb.at("storage")), R"({"size":"1Gi"})");
  EXPECT_EQ(json::serialize(sdb.at("env").at(1)),
            R"({"name":"MYSQL_DATABASE","value":"wordpress"})");

  // Rendered: the probe, env, ports and the claim are on the StatefulSets.
  auto checked = validate_and_render(r);
  ASSERT_EQ(checked.problems, "");
  const auto& c = container(checked.desired, 0);
  EXPECT_EQ(c.at_pointer("/readinessProbe/exec/command/0"), "mysqladmin");
  EXPECT_EQ(c.at_pointer("/env/0/name"), "MYSQL_ROOT_PASSWORD");
  EXPECT_EQ(c.at_pointer("/ports/0/containerPort"), 3306);
  EXPECT_EQ(checked.desired.roles[0].stateful_set.at_pointer(
                "/spec/volumeClaimTemplates/0/spec/resources/requests/storage"),
            "1Gi");
}

TEST(ComposeFiles, ReplicasAndResourcesGoToTheStackRole) {
  auto r = convert(slurp(testdata() / "rabbitmq.yml"));
  ASSERT_EQ(r.error, "");
  const auto& consumer = r.stack.at_pointer("/spec/roles/1").as_object();
  EXPECT_EQ(consumer.at("members"), 3);
  EXPECT_EQ(json::serialize(consumer.at("resources")),
            R"({"requests":{"memory":"64Mi"},"limits":{"cpu":"0.25","memory":"128Mi"}})");
  // A string health check is CMD-SHELL: the user's own shell line.
  EXPECT_EQ(json::serialize(r.apptype.at_pointer("/spec/roles/0/readinessProbe/exec/command")),
            R"(["/bin/sh","-c","rabbitmq-diagnostics -q ping"])");
}

// ---- the mapping, key by key ----

TEST(ComposeMapping, EntrypointIsCommandAndCommandIsArgsSplitAsComposeDoes) {
  auto r = convert(R"(
services:
  s:
    image: busybox
    entrypoint: /bin/sh -c
    command: 'echo "a b" it\''s $$HOME $(date)'
)");
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(json::serialize(r.apptype.at_pointer("/spec/roles/0/command")), R"(["/bin/sh","-c"])");
  // $$ is Compose's literal $; "$(" and "$$" are escaped for the kubelet, which expands $(VAR).
  EXPECT_EQ(json::serialize(r.apptype.at_pointer("/spec/roles/0/args")),
            R"js(["echo","a b","it's","$HOME","$$(date)"])js");
  EXPECT_TRUE(r.warnings.empty()) << joined(lines(r));
  // Rendered onto the member's container as they are.
  auto checked = validate_and_render(r);
  ASSERT_EQ(checked.problems, "");
  EXPECT_EQ(json::serialize(container(checked.desired, 0).at("command")), R"(["/bin/sh","-c"])");
  EXPECT_EQ(json::serialize(container(checked.desired, 0).at("args")),
            R"js(["echo","a b","it's","$HOME","$$(date)"])js");
}

TEST(ComposeMapping, EnvironmentListAndMapFormsAreStrings) {
  auto list = convert("services: {s: {image: x, environment: [A=1, 'B=x=y', C=]}}");
  EXPECT_EQ(json::serialize(list.stack.at_pointer("/spec/roles/0/env")),
            R"([{"name":"A","value":"1"},{"name":"B","value":"x=y"},{"name":"C","value":""}])");
  auto map = convert("services: {s: {image: x, environment: {N: 8080, T: true, F: 0.5}}}");
  EXPECT_EQ(json::serialize(map.stack.at_pointer("/spec/roles/0/env")),
            R"([{"name":"N","value":"8080"},{"name":"T","value":"true"},)"
            R"({"name":"F","value":"0.5"}])");
  EXPECT_TRUE(list.warnings.empty() && map.warnings.empty());
}

TEST(ComposeMapping, PortsShortAndLongSyntaxAndExposeAreContainerPorts) {
  auto r = convert(R"(
services:
  s:
    image: x
    ports: ["3000", "8000-8002", {target: 9000, name: admin, app_protocol: http}]
    expose: [5000, "3000"]
)");
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(r.warnings.empty()) << joined(lines(r));
  std::vector<std::string> ids;
  for (const auto& s : r.apptype.at_pointer("/spec/services").as_array())
    ids.push_back(std::string(s.at("id").as_string()));
  EXPECT_EQ(ids, (std::vector<std::string>{"port-3000", "port-5000", "port-8000", "port-8001",
                                           "port-8002", "port-9000"}));
  EXPECT_EQ(json::serialize(r.apptype.at_pointer("/spec/services/5")),
            R"({"id":"port-9000","label":{"name":"admin"},"endpoint":{"port":9000,)"
            R"("urlScheme":"http"}})");
  EXPECT_EQ(r.apptype.at_pointer("/spec/config/roleServices/0/serviceIDs").as_array().size(), 6u);
}

TEST(ComposeMapping, NamedAndAnonymousVolumesArePersistDirsWithOneClaim) {
  ComposeOptions o;
  o.name = "app";
  o.storage_size = "5Gi";
  auto r = convert_compose(yaml(R"(
services:
  s:
    image: x
    volumes: [data:/var/lib/x/, /cache, {type: volume, source: more, target: /srv}]
)"),
                           o);
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(r.warnings.empty()) << joined(lines(r));
  EXPECT_EQ(json::serialize(r.apptype.at_pointer("/spec/roles/0/persistDirs")),
            R"(["/var/lib/x","/cache","/srv"])");
  EXPECT_EQ(json::serialize(r.stack.at_pointer("/spec/roles/0/storage")), R"({"size":"5Gi"})");
  // Without volumes: no claim.
  auto none = convert("services: {s: {image: x}}");
  EXPECT_FALSE(none.stack.at_pointer("/spec/roles/0").as_object().contains("storage"));
}

TEST(ComposeMapping, HealthcheckDurationsAndForms) {
  auto r = convert(R"(
services:
  a:
    image: x
    healthcheck: {test: [CMD, pg_isready], interval: 1m30s, timeout: 2s, start_period: 45s, retries: 4}
  b:
    image: x
    healthcheck: {test: [CMD-SHELL, "curl -f http://localhost/ || exit 1"]}
  c:
    image: x
    healthcheck: {test: [NONE]}
  d:
    image: x
    healthcheck: {test: [CMD, "true"], disable: true}
)");
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(r.warnings.empty()) << joined(lines(r));
  EXPECT_EQ(json::serialize(r.apptype.at_pointer("/spec/roles/0/readinessProbe")),
            R"({"exec":{"command":["pg_isready"]},"periodSeconds":90,"timeoutSeconds":2,)"
            R"("initialDelaySeconds":45,"failureThreshold":4})");
  // Compose's default timeout (30 s) is written: Kubernetes' is 1 s.
  EXPECT_EQ(json::serialize(r.apptype.at_pointer("/spec/roles/1/readinessProbe")),
            R"({"exec":{"command":["/bin/sh","-c","curl -f http://localhost/ || exit 1"]},)"
            R"("timeoutSeconds":30})");
  EXPECT_FALSE(r.apptype.at_pointer("/spec/roles/2").as_object().contains("readinessProbe"));
  EXPECT_FALSE(r.apptype.at_pointer("/spec/roles/3").as_object().contains("readinessProbe"));
  EXPECT_EQ(validate_and_render(r).problems, "");
}

TEST(ComposeMapping, DependsOnListAndMapForms) {
  auto r = convert(R"(
services:
  db: {image: x}
  cache: {image: x}
  web:
    image: x
    depends_on:
      db: {condition: service_healthy}
      cache: {condition: service_started, required: true}
  worker: {image: x, depends_on: [db, cache]}
)");
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(r.warnings.empty()) << joined(lines(r));
  EXPECT_EQ(json::serialize(r.apptype.at_pointer("/spec/roles/2/dependsOn")), R"(["db","cache"])");
  EXPECT_EQ(json::serialize(r.apptype.at_pointer("/spec/roles/3/dependsOn")), R"(["db","cache"])");
}

TEST(ComposeMapping, ReplicasZeroMakesAnOptionalRole) {
  auto r = convert("services: {a: {image: x, deploy: {replicas: 0}}, b: {image: x, scale: 3}}");
  EXPECT_EQ(r.apptype.at_pointer("/spec/roles/0/cardinality"), "0+");
  EXPECT_EQ(r.stack.at_pointer("/spec/roles/0/members"), 0);
  EXPECT_EQ(r.apptype.at_pointer("/spec/roles/1/cardinality"), "1+");
  EXPECT_EQ(r.stack.at_pointer("/spec/roles/1/members"), 3);
  EXPECT_EQ(json::serialize(r.apptype.at_pointer("/spec/config/selectedRoles")), R"(["b"])");
  EXPECT_EQ(validate_and_render(r).problems, "");
}

TEST(ComposeMapping, MemoryAndCpuUnits) {
  auto r = convert(R"(
services:
  a: {image: x, mem_limit: 1g, mem_reservation: 256m, cpus: 1.5}
  b: {image: x, deploy: {resources: {limits: {memory: 2GB, cpus: "2"}}}, mem_limit: 1g}
  c: {image: x, deploy: {resources: {limits: {memory: 1073741824}}}}
)");
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(json::serialize(r.stack.at_pointer("/spec/roles/0/resources")),
            R"({"requests":{"memory":"256Mi"},"limits":{"cpu":"1.5","memory":"1Gi"}})");
  // deploy.resources wins over the legacy keys.
  EXPECT_EQ(json::serialize(r.stack.at_pointer("/spec/roles/1/resources")),
            R"({"limits":{"cpu":"2","memory":"2Gi"}})");
  EXPECT_EQ(json::serialize(r.stack.at_pointer("/spec/roles/2/resources")),
            R"({"limits":{"memory":"1073741824"}})");
  EXPECT_EQ(validate_and_render(r).problems, "");
}

TEST(ComposeMapping, NameFromFlagThenFileThenDirectory) {
  ComposeOptions o;
  o.directory_name = "My_Project";
  auto from_dir = convert_compose(yaml("services: {s: {image: x}}"), o);
  EXPECT_EQ(from_dir.stack.at_pointer("/metadata/name"), "my-project");
  ASSERT_EQ(from_dir.warnings.size(), 1u);
  EXPECT_EQ(format_warning(from_dir.warnings[0]),
            R"(the AppType and Stack are named "my-project" (from the file's directory )"
            R"("My_Project", made a DNS label))");
  auto from_file = convert_compose(yaml("name: shop\nservices: {s: {image: x}}"), o);
  EXPECT_EQ(from_file.stack.at_pointer("/metadata/name"), "shop");
  o.name = "given";
  o.namespace_name = "team-a";
  auto given = convert_compose(yaml("name: shop\nservices: {s: {image: x}}"), o);
  EXPECT_EQ(given.apptype.at_pointer("/metadata/name"), "given");
  EXPECT_EQ(given.stack.at_pointer("/metadata/namespace"), "team-a");
  EXPECT_EQ(given.apptype.at_pointer("/metadata/namespace"), "team-a");
}

TEST(ComposeMapping, MergeKeysAndExtensionsAreAppliedSilently) {
  auto r = convert(R"(
x-base: &base
  image: busybox:1.36
  environment: {A: "1"}
services:
  s:
    <<: *base
    x-note: tooling only
    command: [sleep, "60"]
)");
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(r.warnings.empty()) << joined(lines(r));
  EXPECT_EQ(r.apptype.at_pointer("/spec/roles/0/imageRepoTag"), "busybox:1.36");
  EXPECT_EQ(r.stack.at_pointer("/spec/roles/0/env/0/value"), "1");
}

TEST(ComposeMapping, RoleIdsAreDnsLabels) {
  auto r = convert("services: {Web_App: {image: x}}");
  EXPECT_EQ(r.apptype.at_pointer("/spec/roles/0/id"), "web-app");
  EXPECT_EQ(joined(lines(r)), "services.Web_App: role id \"web-app\" (a role id is a DNS label)\n");
  EXPECT_EQ(validate_and_render(r).problems, "");
}

// ---- refusals ----

TEST(ComposeErrors, WhatCannotBeConvertedAtAll) {
  struct Row {
    std::string input, error;
  };
  const std::vector<Row> rows{
      {"version: '3'", "not a Compose file: it has no services"},
      {"services: {}", "not a Compose file: it has no services"},
      {"services: {web: {build: .}}",
       "services.web: no image (services.web.build only): kstack runs images and builds none; "
       "build and push the image, then set services.web.image"},
      {"services: {web: {ports: ['80']}}",
       "services.web: no image: kstack runs images and builds none; build and push the image, "
       "then set services.web.image"},
      {"services: {web: nginx}", "services.web: a service must be a mapping"},
      {"services: {a_b: {image: x}, a.b: {image: x}}",
       "services.a.b: its role id \"a-b\" is also the role id of service \"a_b\""},
      {"services: {___: {image: x}}", "services.___: no role id can be made of this name"},
  };
  for (const auto& row : rows) {
    auto r = convert(row.input);
    EXPECT_EQ(r.error, row.error) << row.input;
    EXPECT_TRUE(r.apptype.is_null() && r.stack.is_null()) << row.input;
  }
  ComposeOptions o;  // no name anywhere
  EXPECT_EQ(convert_compose(json::array{1, 2}, o).error,
            "not a Compose file: the document is not a mapping");
  EXPECT_EQ(convert_compose(yaml("services: {s: {image: x}}"), o).error,
            "no usable name from the file's directory (\"\"): give --name");
}

// ---- every construct not carried over: one row each ----

struct WarningRow {
  std::string service_yaml;  // keys of service `s` (image: x is added), or a whole file
  std::string path;
  std::string message;  // the whole message
  bool whole_file = false;
};

std::vector<WarningRow> warning_rows() {
  const std::string published =
      "is not published: kstack serves container port 80 on the Stack's Services (ClusterIP by "
      "default; set the Stack's spec.serviceType to NodePort or LoadBalancer to reach the "
      "members from outside the cluster)";
  std::vector<WarningRow> rows{
      {"build: .", "services.s.build",
       "kstack builds no images: the role runs `image`, which must be pushed where the cluster "
       "pulls from; ignored"},
      {"ports: ['8080:80']", "services.s.ports[0]", "host port 8080 " + published},
      {"ports: ['127.0.0.1::80']", "services.s.ports[0]",
       "host IP 127.0.0.1 is not carried; ignored"},
      {"ports: ['53:53/udp']", "services.s.ports[0]",
       "protocol udp is not carried: kstack's Services and container ports are TCP; the port is "
       "ignored"},
      {"ports: [{target: 80, published: '8080'}]", "services.s.ports[0].published",
       "host port 8080 " + published},
      {"ports: [{target: 80, mode: host}]", "services.s.ports[0].mode",
       "mode host is not carried: kstack's Services route to every member; ignored"},
      {"ports: [{target: 80, protocol: sctp}]", "services.s.ports[0].protocol",
       "protocol sctp is not carried: kstack's Services and container ports are TCP; the port "
       "is ignored"},
      {"ports: ['80-200']", "services.s.ports[0]",
       "the range 80-200 has more than 16 ports: kstack declares each port of a range as a "
       "Service port; ignored"},
      {"expose: ['5000/udp']", "services.s.expose[0]",
       "protocol udp is not carried: kstack's Services and container ports are TCP; the port is "
       "ignored"},
      {"environment: [HOME_DIR]", "services.s.environment[0]",
       "HOME_DIR has no value: Compose takes it from the host environment, which kstack does not "
       "read; left out (set it in the Stack's spec.roles[].env)"},
      {"environment: {TOKEN: }", "services.s.environment.TOKEN",
       "TOKEN has no value: Compose takes it from the host environment, which kstack does not "
       "read; left out (set it in the Stack's spec.roles[].env)"},
      {"environment: {'1BAD': x}", "services.s.environment.1BAD",
       "\"1BAD\" is not a variable name Kubernetes accepts (letters, digits, '_', '-', '.', not "
       "starting with a digit); left out"},
      {"environment: ['=x']", "services.s.environment[0]",
       "\"\" is not a variable name Kubernetes accepts (letters, digits, '_', '-', '.', not "
       "starting with a digit); left out"},
      {"env_file: .env", "services.s.env_file",
       "env files are not read: put the variables in `environment` (or in the Stack's "
       "spec.roles[].env); ignored"},
      {"volumes: ['./conf:/etc/app']", "services.s.volumes[0]",
       "bind mount of host path \"./conf\" on /etc/app is not carried: members have no host "
       "files (put configuration in the image or a setup package); ignored"},
      {"volumes: [{type: bind, source: /srv, target: /srv}]", "services.s.volumes[0]",
       "bind mount of host path \"/srv\" on /srv is not carried: members have no host files (put "
       "configuration in the image or a setup package); ignored"},
      {"volumes: [{type: tmpfs, target: /run}]", "services.s.volumes[0].type",
       "tmpfs mounts are not carried; ignored"},
      {"volumes: ['data:/data:ro']", "services.s.volumes[0]",
       "mode \"ro\" is not carried: the member's claim is mounted read-write"},
      {"volumes: [{type: volume, source: d, target: /d, read_only: true}]",
       "services.s.volumes[0].read_only",
       "read-only mounts are not carried: the member's claim is mounted read-write"},
      {"volumes: [{type: volume, source: d, target: /d, volume: {nocopy: true}}]",
       "services.s.volumes[0].volume", "volume mount options are not carried; ignored"},
      {"volumes: ['data:relative']", "services.s.volumes[0]",
       "target \"relative\" is not an absolute directory kstack can persist; ignored"},
      {"deploy: {mode: global}", "services.s.deploy.mode",
       "mode \"global\" (one container per node) has no kstack equivalent: the role runs "
       "deploy.replicas members (default 1); ignored"},
      {"deploy: {placement: {constraints: [node.role==manager]}}", "services.s.deploy.placement",
       "placement is not carried (use the Stack's spec.roles[].nodeSelector, affinity or "
       "tolerations); ignored"},
      {"deploy: {restart_policy: {condition: on-failure}}", "services.s.deploy.restart_policy",
       "kstack always restarts a member's container (restartPolicy Always); ignored"},
      {"deploy: {update_config: {parallelism: 2}}", "services.s.deploy.update_config",
       "kstack rolls members one at a time (the Stack's spec.roles[].maxUnavailable); ignored"},
      {"deploy: {labels: {a: b}}", "services.s.deploy.labels",
       "service labels are not carried (the Stack's spec.roles[].serviceLabels); ignored"},
      {"deploy: {endpoint_mode: dnsrr}", "services.s.deploy.endpoint_mode",
       "kstack gives each role a headless Service and each member a Service; ignored"},
      {"deploy: {resources: {limits: {pids: 100}}}", "services.s.deploy.resources.limits.pids",
       "pids is not carried (the Stack role's resources hold cpu and memory; add other resources "
       "there yourself); ignored"},
      {"deploy: {resources: {reservations: {devices: [{capabilities: [gpu]}]}}}",
       "services.s.deploy.resources.reservations.devices",
       "devices is not carried (the Stack role's resources hold cpu and memory; add other "
       "resources there yourself); ignored"},
      {"deploy: {resources: {limits: {memory: lots}}}", "services.s.deploy.resources.limits.memory",
       "is not a Compose memory size (e.g. 512m, 1g); ignored"},
      {"deploy: {replicas: -1}", "services.s.deploy.replicas",
       "must be an integer between 0 and 1000; ignored"},
      {"healthcheck: {test: [CMD, 'true'], interval: 500ms}", "services.s.healthcheck.interval",
       "500ms rounded up to 1 s (probes count whole seconds)"},
      {"healthcheck: {test: [CMD, 'true'], timeout: soon}", "services.s.healthcheck.timeout",
       "is not a Compose duration (e.g. 10s, 1m30s); left to the Kubernetes default"},
      {"healthcheck: {test: [CMD, 'true'], retries: 0}", "services.s.healthcheck.retries",
       "must be an integer >= 1; left to the Kubernetes default (3)"},
      {"healthcheck: {test: [CMD, 'true'], start_interval: 5s}",
       "services.s.healthcheck.start_interval",
       "has no probe equivalent (the probe runs every interval from the start); ignored"},
      {"healthcheck: {test: [SHELL, 'x']}", "services.s.healthcheck.test",
       "must start with CMD, CMD-SHELL or NONE and name a command (not \"SHELL\"); no readiness "
       "probe"},
      {"healthcheck: {test: [CMD]}", "services.s.healthcheck.test",
       "names no command; no readiness probe"},
      {"healthcheck: {test: ''}", "services.s.healthcheck.test",
       "names no command; no readiness probe"},
      {"healthcheck: {interval: 5s}", "services.s.healthcheck",
       "has no test: the image's own HEALTHCHECK is not known to kstack; no readiness probe"},
      {"entrypoint: []", "services.s.entrypoint",
       "an empty entrypoint (which clears the image's) cannot be expressed: the image's "
       "entrypoint stays; ignored"},
      {"command: 'echo \"unclosed'", "services.s.command",
       "unclosed quote or trailing backslash: cannot be split into words; ignored"},
      {"restart: on-failure", "services.s.restart",
       "kstack always restarts a member's container (restartPolicy Always), so restart "
       "\"on-failure\" is not carried"},
      {"restart: \"no\"", "services.s.restart",
       "kstack always restarts a member's container (restartPolicy Always), so restart \"no\" is "
       "not carried"},
      {"tty: true", "services.s.tty", "a tty needs stdin in kstack: stdin is opened too"},
      {"frobnicate: 1", "services.s.frobnicate", "unknown Compose service key; ignored"},
      {"image: x:${TAG}", "services.s.image",
       "variable TAG is not interpolated (kstack reads neither the host environment nor .env): "
       "left as \"${TAG}\""},
      {"image: x:$TAG", "services.s.image",
       "variable TAG is not interpolated (kstack reads neither the host environment nor .env): "
       "left as \"$TAG\""},
      {"image: x:${TAG:-1.0}", "services.s.image",
       "variable TAG is not read from the host environment or .env: its default \"1.0\" is used"},
      {"image: x${SUFFIX:+-debug}", "services.s.image",
       "variable SUFFIX is not read from the host environment or .env: taken as unset, so "
       "${SUFFIX:+-debug} is empty"},
      {"depends_on: {t: {condition: service_completed_successfully}}",
       "services.s.depends_on.t.condition",
       "service_completed_successfully has no kstack equivalent (members run until stopped and "
       "are restarted when they exit): the dependency is dropped, the role starts without "
       "waiting"},
      {"depends_on: {t: {condition: service_started, restart: true}}",
       "services.s.depends_on.t.restart",
       "kstack does not restart a role when a role it depends on is updated; ignored"},
      {"depends_on: {t: {condition: service_started, required: false}}",
       "services.s.depends_on.t.required",
       "an optional dependency is not carried: the role waits for it"},
      {"depends_on: [nowhere]", "services.s.depends_on[0]",
       "no service \"nowhere\" in the file; "
       "ignored"},
      {"depends_on: [s]", "services.s.depends_on[0]", "a service cannot depend on itself; ignored"},
      {"environment: {DB_URL: 'postgres://u@t:5432/x'}", "services.s.environment.DB_URL",
       "mentions \"t\", a host name in Compose: kstack makes no host of that name; role \"t\"'s "
       "members are app-t-0.app, app-t-1.app, ... (<stack>-<role>-<n>.<stack>, namingScheme "
       "CrNameRole)"},
      {"command: [redis-server, --replicaof, t, '6379']", "services.s.command[2]",
       "mentions \"t\", a host name in Compose: kstack makes no host of that name; role \"t\"'s "
       "members are app-t-0.app, app-t-1.app, ... (<stack>-<role>-<n>.<stack>, namingScheme "
       "CrNameRole)"},
      {"healthcheck: {test: 'wget -q http://t:8080/ready'}", "services.s.healthcheck.test",
       "mentions \"t\", a host name in Compose: kstack makes no host of that name; role \"t\"'s "
       "members are app-t-0.app, app-t-1.app, ... (<stack>-<role>-<n>.<stack>, namingScheme "
       "CrNameRole)"},
      {"volumes: [shared:/a]\n  t: {image: x, volumes: ['shared:/b']}", "services.t.volumes[0]",
       "volume \"shared\" is also mounted by service \"s\": in kstack every member has a claim of "
       "its own, so they do not share its files"},
      // Values of the wrong shape or out of range.
      {"ports: [{target: 80, frobnicate: 1}]", "services.s.ports[0].frobnicate",
       "unknown key; ignored"},
      {"ports: [{published: 80}]", "services.s.ports[0]",
       "has no integer target (the container port); ignored"},
      {"ports: ['http']", "services.s.ports[0]",
       "container port \"http\" is not a port or a range of ports; ignored"},
      {"ports: ['70000']", "services.s.ports[0]", "port 70000 is not between 1 and 65535; ignored"},
      {"ports: [[1]]", "services.s.ports[0]", "must be a string, a number or a mapping; ignored"},
      {"ports: 80", "services.s.ports", "must be a list; ignored"},
      {"expose: [[1]]", "services.s.expose[0]", "must be a string or a number; ignored"},
      {"volumes: [{type: volume, source: d}]", "services.s.volumes[0]", "has no target; ignored"},
      {"volumes: [[1]]", "services.s.volumes[0]", "must be a string or a mapping; ignored"},
      {"volumes: /data", "services.s.volumes", "must be a list; ignored"},
      {"healthcheck: test", "services.s.healthcheck", "must be a mapping; ignored"},
      {"healthcheck: {test: [CMD, 'true'], interval: 0s}", "services.s.healthcheck.interval",
       "0s is below the probe's minimum of 1 s; 1 s used"},
      {"healthcheck: {test: [CMD, 'true'], interval: 1000000h}", "services.s.healthcheck.interval",
       "is longer than a probe allows; left to the Kubernetes default"},
      {"healthcheck: {test: [CMD, 'true'], frobnicate: 1}", "services.s.healthcheck.frobnicate",
       "unknown key; ignored"},
      {"healthcheck: {test: 42}", "services.s.healthcheck.test",
       "must be a string or a list starting with CMD, CMD-SHELL or NONE; no readiness probe"},
      {"depends_on: [[t]]", "services.s.depends_on[0]", "must be a service name; ignored"},
      {"depends_on: {t: {condition: service_finished}}", "services.s.depends_on.t.condition",
       "unknown condition \"service_finished\"; taken as service_started"},
      {"depends_on: {t: {frobnicate: 1}}", "services.s.depends_on.t.frobnicate",
       "unknown key; ignored"},
      {"depends_on: t", "services.s.depends_on", "must be a list or a mapping; ignored"},
      {"deploy: []", "services.s.deploy", "must be a mapping; ignored"},
      {"deploy: {resources: []}", "services.s.deploy.resources", "must be a mapping; ignored"},
      {"deploy: {resources: {frobnicate: 1}}", "services.s.deploy.resources.frobnicate",
       "unknown key; ignored"},
      {"deploy: {resources: {limits: {cpus: lots}}}", "services.s.deploy.resources.limits.cpus",
       "is not a number of CPUs; ignored"},
      {"deploy: {resources: {limits: []}}", "services.s.deploy.resources.limits",
       "must be a mapping; ignored"},
      {"deploy: {frobnicate: 1}", "services.s.deploy.frobnicate", "unknown deploy key; ignored"},
      {"tty: 'yes please'", "services.s.tty", "must be a boolean; ignored"},
      {"mem_limit: lots", "services.s.mem_limit",
       "is not a Compose memory size (e.g. 512m, 1g); ignored"},
      {"cpus: lots", "services.s.cpus", "is not a number of CPUs; ignored"},
      {"scale: -2", "services.s.scale", "must be a non-negative integer; ignored"},
      {"environment: [[1]]", "services.s.environment[0]",
       "must be a string \"NAME=value\"; ignored"},
      {"environment: {A: [1]}", "services.s.environment.A",
       "must be a string, number or boolean; ignored"},
      {"environment: 5", "services.s.environment", "must be a mapping or a list; ignored"},
      {"command: 5", "services.s.command", "must be a string or a list of strings; ignored"},
      {"command: [echo, [1]]", "services.s.command[1]",
       "must be a string; the whole list is ignored"},
      {"image: 'x${A'", "services.s.image",
       "unclosed \"${\" in a variable reference: left as written"},
      // Whole files: top-level keys.
      {"version: '3.9'\nservices: {s: {image: x}}", "version",
       "obsolete in the Compose Specification; ignored", true},
      {"services: {s: {image: x}}\nnetworks: {front: {driver: bridge}}", "networks",
       "Compose networks have no kstack equivalent: every member can reach every other member of "
       "the cluster; ignored",
       true},
      {"services: {s: {image: x}}\nvolumes: {d: {driver: local}}", "volumes.d.driver",
       "volume driver is not carried: members' claims are made from the Stack role's storage "
       "(size, storageClassName); ignored",
       true},
      {"services: {s: {image: x}}\nvolumes: {d: {driver_opts: {type: nfs}}}",
       "volumes.d.driver_opts",
       "volume driver_opts is not carried: members' claims are made from the Stack role's storage "
       "(size, storageClassName); ignored",
       true},
      {"services: {s: {image: x}}\nvolumes: {d: {external: true}}", "volumes.d.external",
       "kstack makes each member its own claim: an existing volume is not attached; ignored", true},
      {"services: {s: {image: x}}\nvolumes: {d: {name: real}}", "volumes.d.name",
       "claims are named data-<stack>-<role>-<n>; ignored", true},
      {"services: {s: {image: x}}\nsecrets: {k: {file: ./k}}", "secrets",
       "Compose secrets are not carried: create Kubernetes Secrets yourself; ignored", true},
      {"services: {s: {image: x}}\nconfigs: {c: {file: ./c}}", "configs",
       "Compose configs are not carried: create ConfigMaps yourself; ignored", true},
      {"services: {s: {image: x}}\ninclude: [other.yml]", "include",
       "included files are not read: merge them into this file first; ignored", true},
      {"services: {s: {image: x}}\nfoo: bar", "foo", "unknown top-level Compose key; ignored",
       true},
      {"services: {s: {image: x}}\nmodels: {m: {model: x}}", "models",
       "has no kstack equivalent; ignored", true},
  };
  // Every service key kstack does not carry, with its own reason.
  const std::vector<std::pair<std::string, std::string>> keyed{
      {"networks: [front]",
       "Compose networks have no kstack equivalent: every member can reach every other member of "
       "the cluster; ignored"},
      {"network_mode: host", "members use the pod network; ignored"},
      {"extra_hosts: ['db:10.0.0.1']",
       "not carried: the members' /etc/hosts is the pod's; ignored"},
      {"secrets: [k]",
       "Compose secrets are not carried: create a Kubernetes Secret and reference it yourself; "
       "ignored"},
      {"configs: [c]",
       "Compose configs are not carried: put the file in a ConfigMap and mount or deliver it "
       "yourself (or in a setup package); ignored"},
      {"labels: {a: b}",
       "container labels are not carried (pod labels are the Stack's spec.roles[].podLabels); "
       "ignored"},
      {"user: '1000'", "the image's user runs the container (runAsUser is not carried); ignored"},
      {"working_dir: /app", "the image's working directory is used; ignored"},
      {"cap_add: [NET_ADMIN]",
       "capabilities are not carried per role (an AppType's spec.capabilities adds them to every "
       "role); ignored"},
      {"privileged: true", "privileged containers are not carried; ignored"},
      {"logging: {driver: syslog}",
       "logging drivers are not carried: container output goes to the cluster's logs (kubectl "
       "logs); ignored"},
      {"stop_grace_period: 1m", "the pod's termination grace period (30 s) applies; ignored"},
      {"profiles: [debug]", "profiles are not carried: every service becomes a role; ignored"},
      {"container_name: web", "kstack names the member pods <stack>-<role>-<n>; ignored"},
      {"hostname: web", "a member's host name is its pod name, <stack>-<role>-<n>; ignored"},
      {"links: [t]",
       "links are not carried: a service is not a host name in kstack (see the other warnings "
       "and docs/compose.md \"Host names\"); ignored"},
      {"tmpfs: /run", "tmpfs mounts are not carried; ignored"},
      {"read_only: true", "a read-only root file system is not carried; ignored"},
      {"ulimits: {nofile: 65536}", "ulimits are not carried; ignored"},
      {"sysctls: {net.core.somaxconn: 1024}", "sysctls are not carried; ignored"},
      {"init: true", "has no kstack equivalent; ignored"},
      {"platform: linux/amd64", "the node's platform is used; ignored"},
      {"pull_policy: always", "the cluster's image pull policy applies; ignored"},
      {"dns: 8.8.8.8", "members use the cluster's DNS; ignored"},
      {"devices: ['/dev/fuse']", "host devices are not carried; ignored"},
      {"security_opt: ['no-new-privileges:true']", "has no kstack equivalent; ignored"},
      {"shm_size: 1g", "has no kstack equivalent; ignored"},
      {"stop_signal: SIGINT", "members are stopped with SIGTERM; ignored"},
      {"extends: {service: base}",
       "extends is not followed: merge the service into this file first; ignored"},
      {"pid: host", "has no kstack equivalent; ignored"},
      {"volumes_from: [t]", "has no kstack equivalent (each member has its own claim); ignored"},
      {"gpus: all",
       "GPU requests are not carried (add them to the Stack's spec.roles[].resources); ignored"},
  };
  for (const auto& [snippet, message] : keyed) {
    rows.push_back({snippet, "services.s." + snippet.substr(0, snippet.find(':')), message});
  }
  return rows;
}

TEST(ComposeWarnings, EachConstructIsANamedWarning) {
  for (const auto& row : warning_rows()) {
    std::string file = row.whole_file ? row.service_yaml
                                      : "services:\n  s:\n    image: x\n    " + row.service_yaml +
                                            (row.service_yaml.find("\n  t:") == std::string::npos
                                                 ? "\n  t: {image: x}\n"
                                                 : "\n");
    auto r = convert(file);
    ASSERT_EQ(r.error, "") << file;
    std::vector<std::string> got = lines(r);
    // The row's construct is reported once, exactly; nothing else is.
    EXPECT_EQ(joined(got), row.path + ": " + row.message + "\n") << file;
    // --strict refuses on any warning; the objects are still whole and valid otherwise.
    EXPECT_EQ(validate_and_render(r).problems, "") << file;
  }
}

// ---- helpers ----

TEST(ComposeHelpers, SplitCommandAsComposeDoes) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split_command("a  b\tc"), (V{"a", "b", "c"}));
  EXPECT_EQ(split_command(R"(sh -c "echo \"hi\" \$x" 'it''s')"),
            (V{"sh", "-c", "echo \"hi\" $x", "its"}));
  EXPECT_EQ(split_command(R"(--save "")"), (V{"--save", ""}));
  EXPECT_EQ(split_command(R"(a\ b)"), (V{"a b"}));
  EXPECT_EQ(split_command(""), V{});
  EXPECT_FALSE(split_command("'open"));
  EXPECT_FALSE(split_command("\"open"));
  EXPECT_FALSE(split_command("trailing\\"));
}

TEST(ComposeHelpers, DurationsInNanoseconds) {
  constexpr std::int64_t s = 1'000'000'000;
  EXPECT_EQ(parse_compose_duration("1m30s"), 90 * s);
  EXPECT_EQ(parse_compose_duration("10s"), 10 * s);
  EXPECT_EQ(parse_compose_duration("1h"), 3600 * s);
  EXPECT_EQ(parse_compose_duration("500ms"), s / 2);
  EXPECT_EQ(parse_compose_duration("1.5s"), 3 * s / 2);
  EXPECT_EQ(parse_compose_duration("30"), 30 * s);
  EXPECT_FALSE(parse_compose_duration(""));
  EXPECT_FALSE(parse_compose_duration("10 s"));
  EXPECT_FALSE(parse_compose_duration("s"));
  EXPECT_FALSE(parse_compose_duration("1d"));
  EXPECT_FALSE(parse_compose_duration("99999999999999999h"));
}

TEST(ComposeHelpers, SanitizeDnsLabel) {
  EXPECT_EQ(sanitize_dns_label("My_App.v2"), "my-app-v2");
  EXPECT_EQ(sanitize_dns_label("--a--b--"), "a-b");
  EXPECT_EQ(sanitize_dns_label("___"), "");
  EXPECT_EQ(sanitize_dns_label(std::string(70, 'a')), std::string(63, 'a'));
}

TEST(ComposeHelpers, HostileInputIsBounded) {
  // A deep nest of merge keys and a long command line convert without blowing up.
  std::string deep = "services: {s: {image: x, x-deep: ";
  for (int i = 0; i < 60; ++i) deep += "{a: ";
  deep += "1";
  for (int i = 0; i < 60; ++i) deep += "}";
  deep += "}}";
  EXPECT_EQ(convert(deep).error, "");
  std::string nested = "services: {s: {image: 'x";
  for (int i = 0; i < 20; ++i) nested += "${V:-";
  for (int i = 0; i < 20; ++i) nested += "}";
  nested += "'}}";
  auto n = convert(nested);
  EXPECT_EQ(n.error, "");
  EXPECT_NE(joined(lines(n)).find("variable defaults nested more than 8 deep: left as written"),
            std::string::npos);
  // Many services naming each other: one warning per mention, in the services' order.
  std::string many = "services:\n";
  for (int i = 0; i < 2000; ++i) {
    many += fmt::format("  s{}: {{image: x, environment: {{UP: 'tcp://s{}:80'}}}}\n", i, i + 1);
  }
  auto m = convert(many);
  ASSERT_EQ(m.error, "");
  ASSERT_EQ(m.warnings.size(), 1999u);
  EXPECT_EQ(m.warnings.front().path, "services.s0.environment.UP");
  EXPECT_EQ(m.warnings.back().path, "services.s1998.environment.UP");
  auto big = convert("services: {s: {image: x, ports: ['1-65535']}}");
  EXPECT_EQ(big.warnings.size(), 1u);
  EXPECT_FALSE(big.apptype.at_pointer("/spec").as_object().contains("services"));
}

}  // namespace
}  // namespace kstack::catalog
