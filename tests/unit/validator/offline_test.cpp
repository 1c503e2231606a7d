#include "validator/rules/offline.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace kstack::validator {
namespace {
namespace json = boost::json;

std::vector<SourceDocument> sources(std::string_view file, std::string_view text) {
  auto docs = catalog::parse_manifests(text);
  EXPECT_TRUE(docs.has_value());
  std::vector<SourceDocument> out;
  for (auto& d : *docs) out.push_back(SourceDocument{std::string(file), std::move(d)});
  return out;
}

constexpr std::string_view kManifests = R"(apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: cassandra}
spec:
  label: {name: C}
  distroID: c
  version: "1"
  configSchemaVersion: 1
  defaultImageRepoTag: c:1
  roles: [{id: seed, cardinality: "2+"}]
---
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: good}
spec:
  app: cassandra
  roles: [{id: seed}]
---
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: bad, namespace: other}
spec:
  app: cassandra
  connections: {}
  roles: [{id: seed, members: 1}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated}
---
apiVersion: kstack.io/v1
kind: Stak
metadata: {name: typo}
---
a: [1,
)";

TEST(Offline, ValidatesEveryDocumentWithTheFilesAsCatalog) {
  auto results = validate_offline(sources("stacks.yaml", kManifests));
  ASSERT_EQ(results.size(), 6u);

  EXPECT_EQ(results[0].status, OfflineResult::Status::kOk);
  EXPECT_EQ(results[0].namespace_name, "default");  // filled in as kubectl would
  EXPECT_EQ(format_text(results[0]),
            std::vector<std::string>{"stacks.yaml:doc1 AppType default/cassandra: OK"});

  // Found `local` (same namespace); members default to the cardinality minimum.
  EXPECT_EQ(results[1].status, OfflineResult::Status::kOk)
      << (results[1].problems.empty() ? "" : results[1].problems[0]);

  // Another namespace: the AppType names none, so it serves this Stack too, whose members
  // then break the cardinality.
  EXPECT_EQ(results[2].status, OfflineResult::Status::kInvalid);
  auto lines = format_text(results[2]);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "stacks.yaml:doc3 Stack other/bad: spec.roles[0].members: must be at least 2 for "
            "cardinality \"2+\"");
  EXPECT_EQ(lines[1],
            "stacks.yaml:doc3 Stack other/bad: warning: spec.connections: not yet "
            "supported by kstack; ignored");

  EXPECT_EQ(results[3].status, OfflineResult::Status::kSkipped);
  EXPECT_EQ(format_text(results[3])[0],
            "stacks.yaml:doc4 ConfigMap unrelated: skipped (not a kstack.io kind)");

  EXPECT_EQ(results[4].status, OfflineResult::Status::kInvalid);
  ASSERT_EQ(results[4].problems.size(), 2u);
  EXPECT_EQ(results[4].problems[0], "apiVersion: must be kstack.io/v1beta1");

  EXPECT_EQ(results[5].status, OfflineResult::Status::kUnreadable);
  EXPECT_NE(format_text(results[5])[0].find("stacks.yaml:doc6: error: line "), std::string::npos);
}

TEST(Offline, AnAppTypeWithABadProbeIsRefusedNamingTheField) {
  auto results = validate_offline(sources("app.yaml", R"(apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: probed}
spec:
  label: {name: P}
  distroID: p
  version: "1"
  configSchemaVersion: 1
  defaultImageRepoTag: p:1
  roles:
  - id: seed
    cardinality: "1"
    readinessProbe: {exec: {command: [sh]}, tcpSocket: {port: 1}}
    livenessProbe: {tcpSocket: {port: 80}, periodSeconds: 0}
)"));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, OfflineResult::Status::kInvalid);
  EXPECT_EQ(format_text(results[0]),
            (std::vector<std::string>{
                "app.yaml:doc1 AppType default/probed: spec.roles[0].readinessProbe: exactly one "
                "of exec, tcpSocket, httpGet",
                "app.yaml:doc1 AppType default/probed: spec.roles[0].livenessProbe.periodSeconds: "
                "must be >= 1"}));
}

TEST(Offline, SystemNamespaceAppsServeEveryNamespace) {
  OfflineOptions opts;
  opts.operator_namespace = "ops";
  auto docs = sources("a.yaml", R"(apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: app, namespace: ops}
spec: {label: {name: A}, distroID: a, version: "1", configSchemaVersion: 1,
       defaultImageRepoTag: a, roles: [{id: r, cardinality: "1"}]}
)");
  auto more = sources("b.yaml", R"(apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: s, namespace: team}
spec: {app: app, roles: [{id: r}]}
)");
  docs.insert(docs.end(), more.begin(), more.end());
  auto results = validate_offline(docs, opts);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].status, OfflineResult::Status::kOk)
      << (results[1].problems.empty() ? "" : results[1].problems[0]);
}

TEST(Offline, AnAppTypeThatNamesItsNamespaceIsLocalToItAndAConfigWithoutOneIsTheOperators) {
  auto docs = sources("a.yaml", R"(apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: app, namespace: team}
spec: {label: {name: A}, distroID: a, version: "1", configSchemaVersion: 1,
       defaultImageRepoTag: a, roles: [{id: r, cardinality: "1"}]}
---
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: s, namespace: elsewhere}
spec: {app: app, roles: [{id: r}]}
---
apiVersion: kstack.io/v1beta1
kind: KStackConfig
metadata: {name: kstack-config}
spec: {defaultNamingScheme: UID}
---
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: a-name-that-crnamerole-would-refuse-as-too-long-for-its-pods, namespace: team}
spec: {app: app, roles: [{id: r}]}
)");
  auto results = validate_offline(docs);
  ASSERT_EQ(results.size(), 4u);
  ASSERT_EQ(results[1].problems.size(), 1u);
  EXPECT_NE(results[1].problems[0].find("not found in namespace \"elsewhere\""), std::string::npos);
  EXPECT_EQ(results[2].status, OfflineResult::Status::kOk)
      << (results[2].problems.empty() ? "" : results[2].problems[0]);
  EXPECT_EQ(results[2].namespace_name, "kstack-system");
  // The config's defaultNamingScheme (UID) applies: no CrNameRole length checks.
  EXPECT_EQ(results[3].status, OfflineResult::Status::kOk)
      << (results[3].problems.empty() ? "" : results[3].problems[0]);
}

TEST(Offline, JsonFormHasEveryField) {
  auto results = validate_offline(sources("x.yaml", kManifests));
  auto v = to_json(results[2]);
  EXPECT_EQ(v.at("file"), json::value("x.yaml"));
  EXPECT_EQ(v.at("document"), json::value(3));
  EXPECT_EQ(v.at("kind"), json::value("Stack"));
  EXPECT_EQ(v.at("namespace"), json::value("other"));
  EXPECT_EQ(v.at("name"), json::value("bad"));
  EXPECT_EQ(v.at("status"), json::value("invalid"));
  EXPECT_EQ(v.at("problems").as_array().size(), 1u);
  EXPECT_EQ(v.at("warnings").as_array().size(), 1u);
}

}  // namespace
}  // namespace kstack::validator
