// `kstack import` on a KubeDirector catalog written from KubeDirector's documented format
// (testdata/kubedirector: example_catalog, example_clusters, example_configs, as in
// KubeDirector's deploy/): exact issue lists per file, a check that no source field vanishes
// without an issue, and kstack's own offline validation of the result.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/field_error.h"
#include "catalog/kubedirector.h"
#include "catalog/yaml.h"
#include "validator/rules/offline.h"

#ifndef KSTACK_KUBEDIRECTOR_TESTDATA
#error "KSTACK_KUBEDIRECTOR_TESTDATA must name tests/unit/catalog/testdata/kubedirector"
#endif

namespace kstack::catalog {
namespace {
namespace json = boost::json;
namespace fs = std::filesystem;

struct Fixture {
  std::string name;  // path relative to the testdata directory
  json::value source;
  ImportResult result;
};

std::vector<Fixture> load_fixtures() {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(KSTACK_KUBEDIRECTOR_TESTDATA)) {
    auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".json")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Fixture> out;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    auto docs = parse_manifests(text.str());
    EXPECT_TRUE(docs.has_value()) << f;
    if (!docs) continue;
    for (auto& d : *docs) {
      EXPECT_TRUE(d.error.empty()) << f << ": " << d.error;
      Fixture fx{fs::relative(f, KSTACK_KUBEDIRECTOR_TESTDATA).string(), d.value, {}};
      fx.result = import_kubedirector(fx.source);
      out.push_back(std::move(fx));
    }
  }
  return out;
}

const std::vector<Fixture>& fixtures() {
  static const std::vector<Fixture> all = load_fixtures();
  return all;
}

std::set<std::string> issue_set(const ImportResult& r) {
  std::set<std::string> out;
  for (const auto& i : r.issues) out.insert(std::string(to_string(i.severity)) + " " + i.field);
  return out;
}

// ---- "nothing lost silently" ----

// The API server's bookkeeping, which the importer drops without an issue by design.
bool silent(const std::string& path) {
  static const std::set<std::string> kSilent = {
      "apiVersion",
      "kind",
      "metadata.uid",
      "metadata.resourceVersion",
      "metadata.generation",
      "metadata.creationTimestamp",
      "metadata.managedFields",
      "metadata.selfLink",
      "metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]",
  };
  return kSilent.contains(path);
}

bool has_issue_at(const ImportResult& r, const std::string& path) {
  return std::any_of(r.issues.begin(), r.issues.end(),
                     [&](const ImportIssue& i) { return i.field == path; });
}

// Role references follow the role renaming reported at spec.roles[i].id.
bool role_reference(const std::string& path) {
  return path.starts_with("spec.config.selectedRoles[") ||
         (path.starts_with("spec.config.roleServices[") && path.ends_with(".roleID"));
}

// Walks the source: every value must reach the output at the same path with the same value,
// unless an issue names the path (or an ancestor: the walk stops there).
void lost_fields(const ImportResult& r, const json::value& src, const json::value* out,
                 const std::string& path, std::string_view map_path,
                 std::vector<std::string>& lost) {
  if (silent(path) || (!map_path.empty() &&
                       (silent(std::string(map_path)) || has_issue_at(r, std::string(map_path))))) {
    return;
  }
  if (has_issue_at(r, path)) return;
  // Containers are followed even when the output lacks them: issues on every member cover
  // a container the importer left out because nothing in it was kept.
  if (const auto* o = src.if_object(); o && !o->empty() && (!out || out->is_object())) {
    for (const auto& [k, v] : *o) {
      lost_fields(r, v, out ? out->as_object().if_contains(k) : nullptr, child_path(path, k),
                  key_path(path, k), lost);
    }
    return;
  }
  if (const auto* a = src.if_array(); a && !a->empty() && (!out || out->is_array())) {
    for (std::size_t i = 0; i < a->size(); ++i) {
      const auto* oa = out ? &out->as_array() : nullptr;
      lost_fields(r, (*a)[i], oa && i < oa->size() ? &(*oa)[i] : nullptr, index_path(path, i), {},
                  lost);
    }
    return;
  }
  if (out == nullptr) {
    lost.push_back(path + ": missing from the output and named by no issue");
    return;
  }
  if (role_reference(path) && src.is_string() && out->is_string()) {
    if (kubedirector_role_id(src.as_string()) == out->as_string()) return;
  }
  if (src != *out) {
    lost.push_back(path + ": changed from " + json::serialize(src) + " to " +
                   json::serialize(*out) + " without an issue");
  }
}

std::vector<std::string> lost_fields(const ImportResult& r, const json::value& source,
                                     const json::value& output) {
  std::vector<std::string> lost;
  for (const auto& [k, v] : source.as_object()) {
    lost_fields(r, v, output.as_object().if_contains(k), std::string(k), {}, lost);
  }
  return lost;
}

TEST(KubeDirectorFixtures, CoverAppsClustersAndAConfig) {
  std::map<std::string, int> kinds;
  for (const auto& f : fixtures()) ++kinds[f.result.source_kind];
  EXPECT_GE(kinds["KubeDirectorApp"], 6);
  EXPECT_GE(kinds["KubeDirectorCluster"], 3);
  EXPECT_GE(kinds["KubeDirectorConfig"], 1);
}

TEST(KubeDirectorFixtures, EachFileConvertsWithExactlyTheExpectedIssues) {
  using S = std::set<std::string>;
  const std::map<std::string, S> expected = {
      {"example_catalog/cr-app-cassandra-3.11.json",
       S{"dropped spec.defaultConfigPackage.useNewSetupLayout",
         "warning spec.defaultConfigPackage.packageURL"}},
      {"example_catalog/cr-app-centos7.json", S{"changed spec.roles[0].id"}},
      {"example_catalog/cr-app-jupyter-notebook.json",
       S{"dropped spec.defaultMaxLogSizeDump", "dropped spec.roles[0].maxLogSizeDump",
         "dropped spec.roles[0].configPackage.useNewSetupLayout",
         "warning spec.roles[0].configPackage.packageURL"}},
      {"example_catalog/cr-app-ngc.yaml", S{}},
      {"example_catalog/cr-app-qwen2-exported.yaml", S{"dropped spec.roles[0].maxLogSizeDump"}},
      {"example_catalog/cr-app-spark245.json", S{"warning spec.defaultConfigPackage.packageURL"}},
      {"example_catalog/cr-app-tensorflow-gpu-dockerhub.json", S{}},
      {"example_catalog/cr-app-training-engine.json",
       S{"changed spec.roles[0].id", "changed spec.roles[1].id",
         "dropped spec.roles[0].configPackage.useNewSetupLayout",
         "dropped spec.roles[1].configPackage.useNewSetupLayout",
         "warning spec.roles[0].configPackage.packageURL",
         "warning spec.roles[1].configPackage.packageURL"}},
      {"example_clusters/cr-cluster-cassandra311-stor.yaml",
       S{"note spec.serviceType", "note spec.namingScheme"}},
      {"example_clusters/cr-cluster-centos7.yaml",
       S{"changed spec.roles[0].id", "dropped spec.roles[0].blockStorage",
         "dropped spec.roles[0].sharedMemory", "dropped spec.roles[0].fileInjections",
         "dropped spec.roles[0].volumeProjections", "warning spec.roles[0].affinity",
         "note spec.namingScheme"}},
      {"example_clusters/cr-cluster-spark245.yaml",
       S{"dropped spec.connections", "dropped spec.defaultSecret", "dropped spec.roles[3].secret",
         "dropped spec.roles[3].secretKeys"}},
      {"example_clusters/cr-cluster-tensorflow-gpu-exported.yaml",
       S{"dropped metadata.annotations[kubedirector.hpe.com/connUpdateCounter]",
         "dropped metadata.annotations[kubedirector.hpe.com/hashChangeCounter]",
         "dropped metadata.labels[kubedirector.hpe.com/restoring]", "dropped metadata.finalizers",
         "dropped spec.roles[0].secretKeys", "note status"}},
      {"example_clusters/cr-cluster-training-engine.json",
       S{"changed spec.roles[0].id", "changed spec.roles[1].id", "note spec.namingScheme"}},
      {"example_configs/cr-config-onprem.yaml",
       S{"warning metadata.name", "warning metadata.namespace", "dropped spec.nativeSystemdSupport",
         "dropped spec.requiredSecretPrefix", "dropped spec.masterEncryptionKey",
         "dropped spec.backupClusterStatus", "dropped spec.allowRestoreWithoutConnections",
         "note status"}},
  };
  std::set<std::string> seen;
  for (const auto& f : fixtures()) {
    SCOPED_TRACE(f.name);
    ASSERT_TRUE(f.result.error.empty()) << f.result.error;
    EXPECT_FALSE(f.result.skipped);
    auto it = expected.find(f.name);
    ASSERT_NE(it, expected.end()) << "no expected issues listed for " << f.name;
    EXPECT_EQ(issue_set(f.result), it->second);
    seen.insert(f.name);
  }
  EXPECT_EQ(seen.size(), expected.size());
}

TEST(KubeDirectorFixtures, NoSourceFieldIsLostOrChangedWithoutAnIssue) {
  for (const auto& f : fixtures()) {
    SCOPED_TRACE(f.name);
    auto lost = lost_fields(f.result, f.source, f.result.object);
    EXPECT_TRUE(lost.empty()) << lost.front();
  }
}

// The check above must notice a silent drop: remove one carried field from an output (or
// change a value) and it reports that path.
TEST(KubeDirectorFixtures, TheLostFieldCheckCatchesASilentDrop) {
  for (const auto& f : fixtures()) {
    if (f.name != "example_clusters/cr-cluster-spark245.yaml") continue;
    json::value tampered = f.result.object;
    tampered.as_object()["spec"].as_object()["roles"].as_array()[0].as_object().erase("env");
    auto lost = lost_fields(f.result, f.source, tampered);
    ASSERT_FALSE(lost.empty());
    for (const auto& l : lost) EXPECT_TRUE(l.starts_with("spec.roles[0].env[0].")) << l;

    tampered = f.result.object;
    tampered.as_object()["spec"].as_object()["serviceType"] = "ClusterIP";
    lost = lost_fields(f.result, f.source, tampered);
    ASSERT_EQ(lost.size(), 1u);
    EXPECT_TRUE(lost[0].starts_with("spec.serviceType:")) << lost[0];
    return;
  }
  FAIL() << "fixture cr-cluster-spark245.yaml not found";
}

TEST(KubeDirectorFixtures, ConvertedObjectsPassKstacksOfflineValidation) {
  std::vector<validator::SourceDocument> docs;
  for (const auto& f : fixtures()) {
    YamlDocument d;
    d.index = docs.size() + 1;
    d.value = f.result.object;
    docs.push_back(validator::SourceDocument{f.name, std::move(d)});
  }
  auto results = validator::validate_offline(docs);
  ASSERT_EQ(results.size(), docs.size());
  for (const auto& r : results) {
    std::string lines;
    for (const auto& l : validator::format_text(r)) lines += l + "\n";
    EXPECT_EQ(r.status, validator::OfflineResult::Status::kOk) << lines;
    EXPECT_TRUE(r.warnings.empty()) << lines;
  }
}

TEST(KubeDirectorFixtures, SecretValuesNeverAppearInIssues) {
  for (const auto& f : fixtures()) {
    for (const auto& i : f.result.issues) {
      std::string text = format_issue(f.result, i);
      EXPECT_EQ(text.find("s3cr3t"), std::string::npos) << text;
      EXPECT_EQ(text.find("6368616e67"), std::string::npos) << text;
      EXPECT_EQ(text.find("9f86d0818"), std::string::npos) << text;
    }
  }
}

}  // namespace
}  // namespace kstack::catalog
