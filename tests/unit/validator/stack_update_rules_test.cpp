#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/parse.h"
#include "catalog/yaml.h"
#include "validator/rules/stack_rules.h"

namespace kstack::validator {
namespace {
namespace json = boost::json;

json::value old_stack_json() {
  auto v = catalog::parse_yaml(R"(kind: Stack
metadata: {name: db, namespace: team-a}
spec:
  app: cassandra
  appCatalog: local
  serviceType: ClusterIP
  namingScheme: CrNameRole
  roles:
    - id: seed
      members: 3
      resources: {requests: {cpu: "1"}}
      storage: {size: 20Gi, storageClassName: fast}
      podLabels: {team: a}
    - id: worker
      members: 0
      resources: {requests: {cpu: "1"}}
)");
  EXPECT_TRUE(v.has_value());
  return *v;
}

Violations update(const std::function<void(json::value&)>& mutate) {
  json::value before = old_stack_json();
  json::value after = before;
  mutate(after);
  catalog::FieldErrors errors;
  auto a = catalog::decode_stack(before, errors);
  auto b = catalog::decode_stack(after, errors);
  EXPECT_TRUE(errors.empty()) << catalog::join(errors);
  return validate_stack_update(a, b);
}

json::object& role(json::value& s, std::size_t i) {
  return s.at("spec").at("roles").as_array().at(i).as_object();
}

TEST(StackUpdate, AppIsImmutable) {
  auto v = update([](json::value& s) { s.at("spec").as_object()["app"] = "spark"; });
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(), "spec.app: field is immutable (was \"cassandra\")");
}

TEST(StackUpdate, AppCatalogIsImmutableOnceSet) {
  auto v = update([](json::value& s) { s.at("spec").as_object()["appCatalog"] = "system"; });
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(), "spec.appCatalog: field is immutable (was \"local\")");
  // Left out of the new object: the defaulting webhook puts the old value back.
  EXPECT_TRUE(update([](json::value& s) { s.at("spec").as_object().erase("appCatalog"); }).empty());
}

TEST(StackUpdate, NamingSchemeIsImmutableOnceSet) {
  auto v = update([](json::value& s) { s.at("spec").as_object()["namingScheme"] = "UID"; });
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].field, "spec.namingScheme");
}

TEST(StackUpdate, RunningRoleFieldsAreFrozenNamingEachField) {
  auto v = update([](json::value& s) {
    role(s, 0)["resources"] = json::object{{"requests", {{"cpu", "2"}}}};
    role(s, 0)["storage"] = json::object{{"size", "40Gi"}, {"storageClassName", "fast"}};
    role(s, 0)["serviceAccountName"] = "other";
  });
  ASSERT_EQ(v.size(), 3u) << catalog::join(v);
  EXPECT_EQ(v[0].field, "spec.roles[0].resources");
  EXPECT_NE(v[0].reason.find("cannot be changed while role \"seed\" has members"),
            std::string::npos);
  EXPECT_EQ(v[1].field, "spec.roles[0].serviceAccountName");
  EXPECT_EQ(v[2].field, "spec.roles[0].storage");
}

TEST(StackUpdate, RunningRolesMayScaleAndRelabel) {
  EXPECT_TRUE(update([](json::value& s) {
                role(s, 0)["members"] = 5;
                role(s, 0)["podLabels"] = json::object{{"team", "b"}};
                role(s, 0)["podAnnotations"] = json::object{{"x", "y"}};
                role(s, 0)["serviceLabels"] = json::object{{"s", "t"}};
                role(s, 0)["serviceAnnotations"] = json::object{{"u", "v"}};
                s.at("spec").as_object()["serviceType"] = "NodePort";
              }).empty());
}

TEST(StackUpdate, RolesWithoutMembersAddedOrRemovedRolesAreFree) {
  EXPECT_TRUE(update([](json::value& s) {
                role(s, 1)["resources"] = json::object{{"requests", {{"cpu", "4"}}}};
                s.at("spec").at("roles").as_array().push_back(
                    json::object{{"id", "arbiter"}, {"members", 1}});
              }).empty());
  EXPECT_TRUE(update([](json::value& s) {
                auto& roles = s.at("spec").at("roles").as_array();
                roles.erase(roles.begin());  // removing a running role scales it to zero
              }).empty());
}

TEST(StackUpdate, ReorderedRolesAreComparedById) {
  EXPECT_TRUE(update([](json::value& s) {
                auto& roles = s.at("spec").at("roles").as_array();
                std::swap(roles[0], roles[1]);
              }).empty());
}

}  // namespace
}  // namespace kstack::validator
