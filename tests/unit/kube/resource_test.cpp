#include "kube/resource.h"

#include <gtest/gtest.h>

namespace kstack::kube {
namespace {

TEST(ResourcePath, CoreNamespacedObjectAndSubresource) {
  EXPECT_EQ(resource_path(resources::kPods, "ns1", "p", "status"),
            "/api/v1/namespaces/ns1/pods/p/status");
  EXPECT_EQ(resource_path(resources::kConfigMaps, "ns1"), "/api/v1/namespaces/ns1/configmaps");
}

TEST(ResourcePath, GroupResourceAndAllNamespaces) {
  EXPECT_EQ(resource_path(resources::kStatefulSets, "a", "s"),
            "/apis/apps/v1/namespaces/a/statefulsets/s");
  EXPECT_EQ(resource_path(resources::kStatefulSets, ""), "/apis/apps/v1/statefulsets");
}

TEST(ResourcePath, ClusterScopedIgnoresNamespace) {
  EXPECT_EQ(resource_path(resources::kNodes, "ignored", "n1"), "/api/v1/nodes/n1");
  EXPECT_EQ(resources::kCustomResourceDefinitions.api_version(), "apiextensions.k8s.io/v1");
  EXPECT_EQ(resources::kPods.api_version(), "v1");
}

TEST(Query, PercentEncodesSelectorsAndSkipsEmptyValues) {
  Query q;
  q.add("labelSelector", "app in (a,b),tier!=x").add("fieldSelector", "").add("limit", 2);
  EXPECT_EQ(q.str(), "?labelSelector=app%20in%20%28a%2Cb%29%2Ctier%21%3Dx&limit=2");
}

TEST(Query, EmptyQueryIsEmptyStringAndFlagsOnlyWhenTrue) {
  Query q;
  EXPECT_EQ(q.str(), "");
  q.add_flag("force", false);
  EXPECT_EQ(q.str(), "");
  q.add_flag("force", true);
  EXPECT_EQ(q.str(), "?force=true");
}

TEST(CheckPathSegment, RefusesSlashesDotsAndEmpty) {
  EXPECT_TRUE(check_path_segment("name", "ok-name.1"));
  EXPECT_FALSE(check_path_segment("name", ""));
  EXPECT_FALSE(check_path_segment("name", ".."));
  const auto r = check_path_segment("metadata.name", "a/b");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(r.error().message.find("metadata.name"), std::string::npos);
}

}  // namespace
}  // namespace kstack::kube
