// AppType role probes (catalog/probe.h): what parse_apptype accepts, every refusal with the exact
// field path, and the core/v1 Probe kstack puts on the member's container.
#include "catalog/probe.h"

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/parse.h"
#include "catalog/yaml.h"
#include "validator/rules/apptype_rules.h"

namespace kstack::catalog {
namespace {
namespace json = boost::json;

// An AppType whose role "server" has the probes given as YAML flow text (empty: none).
std::string app_with(std::string_view probes) {
  return fmt::format(R"(apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {{name: kv, namespace: apps}}
spec:
  label: {{name: KV}}
  distroID: example/kv
  version: "1.0"
  configSchemaVersion: 1
  defaultImageRepoTag: example/kv:1.0
  services:
  - id: client
    endpoint: {{port: 2379}}
  - id: metrics
    label: {{name: no endpoint}}
  roles:
  - id: proxy
    cardinality: "1"
  - id: server
    cardinality: "1+"
    {}
  config:
    roleServices:
    - {{roleID: server, serviceIDs: [client, metrics]}}
)",
                     probes);
}

std::vector<std::string> errors_of(std::string_view probes) {
  auto app = parse_apptype_yaml(app_with(probes));
  std::vector<std::string> out;
  if (app) return out;
  for (const auto& c : app.error().causes) out.push_back(c.field + ": " + c.message);
  return out;
}

TEST(Probe, AllThreeProbesOfTheContractParse) {
  auto app = parse_apptype_yaml(app_with(
      R"(readinessProbe: {exec: {command: [test, -f, /tmp/ready]}, periodSeconds: 2, failureThreshold: 1}
    livenessProbe: {tcpSocket: {port: client}, initialDelaySeconds: 0, timeoutSeconds: 3}
    startupProbe: {httpGet: {path: /health, port: 8080}, successThreshold: 1, failureThreshold: 30})"));
  ASSERT_TRUE(app) << app.error().to_string();
  const auto& server = app->spec.roles[1];
  ASSERT_TRUE(server.readiness_probe && server.liveness_probe && server.startup_probe);
  EXPECT_FALSE(app->spec.roles[0].readiness_probe);
  EXPECT_EQ(server.readiness_probe->handler, Probe::Handler::kExec);
  EXPECT_EQ(server.readiness_probe->command,
            (std::vector<std::string>{"test", "-f", "/tmp/ready"}));
  EXPECT_EQ(server.liveness_probe->port_name, "client");
  EXPECT_EQ(server.startup_probe->port_number, 8080);

  EXPECT_EQ(json::value(probe_json(*server.readiness_probe)),
            json::parse(R"({"exec":{"command":["test","-f","/tmp/ready"]},"periodSeconds":2,
                           "failureThreshold":1})"));
  EXPECT_EQ(json::value(probe_json(*server.liveness_probe)),
            json::parse(R"({"tcpSocket":{"port":"client"},"initialDelaySeconds":0,
                           "timeoutSeconds":3})"));
  EXPECT_EQ(json::value(probe_json(*server.startup_probe)),
            json::parse(R"({"httpGet":{"port":8080,"path":"/health"},"successThreshold":1,
                           "failureThreshold":30})"));
}

TEST(Probe, NullIsNoProbe) {
  auto app = parse_apptype_yaml(app_with("readinessProbe: null"));
  ASSERT_TRUE(app) << app.error().to_string();
  EXPECT_FALSE(app->spec.roles[1].readiness_probe);
}

struct Refusal {
  const char* probes;
  std::vector<std::string> errors;
};

class ProbeRefusal : public ::testing::TestWithParam<Refusal> {};

TEST_P(ProbeRefusal, NamesTheExactField) {
  EXPECT_EQ(errors_of(GetParam().probes), GetParam().errors);
}

const std::string kP = "spec.roles[1].readinessProbe";
const std::string kFields =
    "exec, tcpSocket, httpGet, initialDelaySeconds, periodSeconds, timeoutSeconds, "
    "successThreshold, failureThreshold";

INSTANTIATE_TEST_SUITE_P(
    Catalog, ProbeRefusal,
    ::testing::Values(
        Refusal{"readinessProbe: [exec]", {kP + ": must be an object, not an array"}},
        Refusal{"readinessProbe: {periodSeconds: 1}",
                {kP + ": exactly one of exec, tcpSocket, httpGet"}},
        Refusal{"readinessProbe: {exec: {command: [x]}, tcpSocket: {port: 1}}",
                {kP + ": exactly one of exec, tcpSocket, httpGet"}},
        Refusal{"readinessProbe: {exec: {command: [x]}, perodSeconds: 1}",
                {kP + ".perodSeconds: unknown field (a probe has " + kFields + ")"}},
        Refusal{"readinessProbe: {grpc: {port: 1}}",
                {kP + ".grpc: unknown field (a probe has " + kFields + ")",
                 kP + ": exactly one of exec, tcpSocket, httpGet"}},
        Refusal{"readinessProbe: {exec: {command: [x], shell: true}}",
                {kP + ".exec.shell: unknown field (an exec handler has command)"}},
        Refusal{"readinessProbe: {exec: {}}",
                {kP + ".exec.command: is required (at least one word)"}},
        Refusal{"readinessProbe: {exec: {command: []}}",
                {kP + ".exec.command: is required (at least one word)"}},
        Refusal{"readinessProbe: {exec: {command: [1]}}",
                {kP + ".exec.command[0]: must be a string, not a number",
                 kP + ".exec.command: is required (at least one word)"}},
        Refusal{"readinessProbe: {exec: true}", {kP + ".exec: must be an object, not a boolean"}},
        Refusal{"readinessProbe: {tcpSocket: {}}", {kP + ".tcpSocket.port: is required"}},
        Refusal{"readinessProbe: {tcpSocket: {port: 0}}",
                {kP + ".tcpSocket.port: must be between 1 and 65535"}},
        Refusal{"readinessProbe: {tcpSocket: {port: 65536}}",
                {kP + ".tcpSocket.port: must be between 1 and 65535"}},
        Refusal{"readinessProbe: {tcpSocket: {port: \"8080\"}}",
                {kP + ".tcpSocket.port: \"8080\" must be a port number (1-65535) or a port name "
                      "(the id of one of the role's services)"}},
        Refusal{"readinessProbe: {tcpSocket: {port: Client}}",
                {kP + ".tcpSocket.port: \"Client\" must be a port number (1-65535) or a port name "
                      "(the id of one of the role's services)"}},
        Refusal{"readinessProbe: {tcpSocket: {port: [1]}}",
                {kP + ".tcpSocket.port: must be an integer, not an array"}},
        Refusal{"readinessProbe: {tcpSocket: {port: 1, host: x}}",
                {kP + ".tcpSocket.host: unknown field (a tcpSocket handler has port)"}},
        Refusal{"readinessProbe: {tcpSocket: {port: peer}}",
                {kP + ".tcpSocket.port: \"peer\" is not a port of role \"server\" (its ports: "
                      "client)"}},
        Refusal{"readinessProbe: {httpGet: {port: metrics, path: /m}}",
                {kP + ".httpGet.port: \"metrics\" is not a port of role \"server\" (its ports: "
                      "client)"}},
        Refusal{"readinessProbe: {httpGet: {port: 80, path: health}}",
                {kP + ".httpGet.path: must start with '/'"}},
        Refusal{"readinessProbe: {httpGet: {port: 80, scheme: HTTPS}}",
                {kP + ".httpGet.scheme: unknown field (an httpGet handler has path, port)"}},
        Refusal{"readinessProbe: {httpGet: {path: /}}", {kP + ".httpGet.port: is required"}},
        Refusal{"readinessProbe: {exec: {command: [x]}, initialDelaySeconds: -1}",
                {kP + ".initialDelaySeconds: must be >= 0"}},
        Refusal{"readinessProbe: {exec: {command: [x]}, periodSeconds: 0}",
                {kP + ".periodSeconds: must be >= 1"}},
        Refusal{"readinessProbe: {exec: {command: [x]}, timeoutSeconds: 0}",
                {kP + ".timeoutSeconds: must be >= 1"}},
        Refusal{"readinessProbe: {exec: {command: [x]}, successThreshold: 0}",
                {kP + ".successThreshold: must be >= 1"}},
        Refusal{"readinessProbe: {exec: {command: [x]}, failureThreshold: 0}",
                {kP + ".failureThreshold: must be >= 1"}},
        Refusal{"readinessProbe: {exec: {command: [x]}, periodSeconds: 2147483648}",
                {kP + ".periodSeconds: must be <= 2147483647"}},
        Refusal{"readinessProbe: {exec: {command: [x]}, periodSeconds: \"10\"}",
                {kP + ".periodSeconds: must be an integer, not a string"}},
        Refusal{"livenessProbe: {exec: {command: [x]}, successThreshold: 2}",
                {"spec.roles[1].livenessProbe.successThreshold: must be 1 for a livenessProbe"}},
        Refusal{"startupProbe: {exec: {command: [x]}, successThreshold: 2}",
                {"spec.roles[1].startupProbe.successThreshold: must be 1 for a startupProbe"}}));

TEST(Probe, ANamedPortOfARoleWithoutPortsSaysSo) {
  auto text = app_with("");
  // The proxy role runs no service: any port name is refused there.
  const auto at = text.find("cardinality: \"1\"\n");
  text.insert(at + std::string_view("cardinality: \"1\"\n").size(),
              "    livenessProbe: {tcpSocket: {port: client}}\n");
  auto refused = parse_apptype_yaml(text);
  ASSERT_FALSE(refused);
  ASSERT_EQ(refused.error().causes.size(), 1u);
  EXPECT_EQ(refused.error().causes[0].field, "spec.roles[0].livenessProbe.tcpSocket.port");
  EXPECT_EQ(refused.error().causes[0].message,
            "\"client\" is not a port of role \"proxy\" (its ports: none)");
}

TEST(Probe, SuccessThresholdAboveOneIsAllowedForReadiness) {
  EXPECT_TRUE(errors_of("readinessProbe: {exec: {command: [x]}, successThreshold: 3}").empty());
}

TEST(Probe, AdmissionRulesReportTheProbeErrorsToo) {
  auto object = parse_yaml(app_with("readinessProbe: {exec: {}}"));
  ASSERT_TRUE(object);
  const auto violations = validator::validate_apptype_object(*object);
  bool found = false;
  for (const auto& v : violations) {
    if (v.field == kP + ".exec.command") found = true;
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace kstack::catalog
