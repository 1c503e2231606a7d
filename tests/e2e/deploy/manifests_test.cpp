// The kustomization reading of the deploy/ e2e test: document splitting, order, files a
// kustomization leaves out, and the version comparison behind the 1.20 path.
#include "tests/e2e/deploy/manifests.h"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

namespace kstack::testenv::e2e {
namespace {

namespace fs = std::filesystem;

class TempTree : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kstack-manifests-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& file, const std::string& text) {
    fs::create_directories((root_ / file).parent_path());
    std::ofstream(root_ / file) << text;
  }
  fs::path root_;
};

TEST_F(TempTree, DocumentsAreSplitAtDashLinesKeptAsWrittenAndCommentOnlyOnesLeftOut) {
  write("kustomization.yaml", "resources:\n  - b.yaml\n  - sub\n");
  write("b.yaml",
        "# leading comment\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n"
        "---\n# a comment only\n---\napiVersion: policy/v1\nkind: PodDisruptionBudget\n"
        "metadata:\n  name: p\n  namespace: x\n  labels:\n"
        "    kstack.io/min-kubernetes-version: \"1.21\"\n");
  write("sub/kustomization.yaml", "resources: [c.yaml]\n");
  write("sub/c.yaml", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: s, namespace: x}\n");
  auto docs = kustomization_documents(root_);
  ASSERT_TRUE(docs) << docs.error();
  ASSERT_EQ(docs->size(), 3u);
  EXPECT_EQ((*docs)[0].describe(), "v1 Namespace x (b.yaml #1)");
  EXPECT_EQ((*docs)[0].text, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n");
  EXPECT_EQ((*docs)[1].describe(), "policy/v1 PodDisruptionBudget x/p (b.yaml #3)");
  EXPECT_EQ((*docs)[1].min_kubernetes_version, "1.21");
  EXPECT_EQ((*docs)[2].describe(), "v1 ServiceAccount x/s (sub/c.yaml #0)");
  EXPECT_EQ((*docs)[2].min_kubernetes_version, "");
}

TEST_F(TempTree, AManifestNextToAKustomizationThatDoesNotListItIsReported) {
  write("kustomization.yaml", "resources: [a.yaml]\n");
  write("a.yaml", "kind: A\n");
  write("forgotten.yaml", "kind: B\n");
  write("notes.txt", "not a manifest\n");
  write("chart/templates/t.yaml", "{{ .Values.x }}\n");  // no kustomization there
  auto unlisted = unlisted_manifests(root_);
  ASSERT_TRUE(unlisted) << unlisted.error();
  EXPECT_EQ(*unlisted, std::vector<std::string>{"forgotten.yaml"});
}

TEST_F(TempTree, AMissingResourceIsAnErrorNamingIt) {
  write("kustomization.yaml", "resources: [gone.yaml]\n");
  auto docs = kustomization_documents(root_);
  ASSERT_FALSE(docs);
  EXPECT_NE(docs.error().find("gone.yaml"), std::string::npos) << docs.error();
}

TEST(Manifests, TheShippedKustomizationListsEveryManifestOfDeploy) {
  const fs::path deploy = fs::path(KSTACK_SOURCE_DIR) / "deploy";
  auto unlisted = unlisted_manifests(deploy);
  ASSERT_TRUE(unlisted) << unlisted.error();
  EXPECT_TRUE(unlisted->empty());
  auto docs = kustomization_documents(deploy);
  ASSERT_TRUE(docs) << docs.error();
  ASSERT_FALSE(docs->empty());
  EXPECT_EQ(docs->front().kind, "CustomResourceDefinition");  // CRDs before their users
}

TEST(Manifests, KubernetesVersionsCompareAsNumbers) {
  EXPECT_TRUE(version_less("1.20", "1.21"));
  EXPECT_TRUE(version_less("1.9", "1.21"));
  EXPECT_TRUE(version_less("v1.20", "1.21"));
  EXPECT_TRUE(version_less("1.20+", "1.21"));  // a managed cluster's /version minor
  EXPECT_FALSE(version_less("1.21", "1.21"));
  EXPECT_FALSE(version_less("1.100", "1.21"));
  EXPECT_FALSE(version_less("", "1.21"));
  EXPECT_FALSE(version_less("1.20", "one"));
}

}  // namespace
}  // namespace kstack::testenv::e2e
