// namingScheme UID (docs/spec.md §4, §8): the objects' names derive from the Stack's uid, so a
// Stack name of any accepted length gives short, valid names, and the same Stack always gets
// the same names.
#include <regex>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/names.h"
#include "catalog/parse.h"
#include "reconciler/desired_state.h"

namespace kstack::reconciler {
namespace {
namespace json = boost::json;

const char* kApp = R"(
apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: kv, namespace: apps}
spec:
  label: {name: KV}
  distroID: example/kv
  version: "1.0"
  configSchemaVersion: 1
  defaultImageRepoTag: example/kv:1.0
  services: [{id: client, endpoint: {port: 2379}}]
  roles:
  - {id: server-with-a-rather-long-role-identifier, cardinality: "1+"}
  - {id: proxy, cardinality: "1"}
  config:
    roleServices: [{roleID: server-with-a-rather-long-role-identifier, serviceIDs: [client]}]
)";

catalog::Stack stack_named(const std::string& name, std::string_view scheme, std::string_view uid) {
  std::string yaml = "apiVersion: kstack.io/v1beta1\nkind: Stack\nmetadata: {name: " + name +
                     ", namespace: apps, uid: \"" + std::string(uid) +
                     "\"}\nspec:\n  app: kv\n  namingScheme: " + std::string(scheme) +
                     "\n  roles:\n  - {id: server-with-a-rather-long-role-identifier, "
                     "members: 1000, storage: {size: 1Gi}}\n  - {id: proxy}\n";
  auto s = catalog::parse_stack_yaml(yaml);
  EXPECT_TRUE(s) << s.error().to_string();
  return *s;
}

bool dns1035_label(const std::string& s) {
  static const std::regex re("[a-z]([-a-z0-9]*[a-z0-9])?");
  return s.size() <= 63 && std::regex_match(s, re);
}

struct UidNaming : ::testing::Test {
  catalog::AppType app = *catalog::parse_apptype_yaml(kApp);
  std::string long_name = std::string(63, 'a');
};

TEST_F(UidNaming, ALongStackNameGivesShortValidNamesForEveryObject) {
  auto d = desired_state(stack_named(long_name, "UID", "6f1c2e0d-7c55-4a57-9a3c-1d2e3f405162"), app,
                         nullptr);
  ASSERT_TRUE(d) << d.error().to_string();
  EXPECT_TRUE(dns1035_label(d->headless_service_name)) << d->headless_service_name;
  ASSERT_EQ(d->roles.size(), 2u);
  for (const auto& role : d->roles) {
    EXPECT_LE(role.stateful_set_name.size(), catalog::kMaxStatefulSetName);
    EXPECT_TRUE(dns1035_label(role.stateful_set_name)) << role.stateful_set_name;
    EXPECT_EQ(role.stateful_set.at_pointer("/metadata/name"), json::value(role.stateful_set_name));
    EXPECT_EQ(role.stateful_set.at_pointer("/spec/serviceName"),
              json::value(d->headless_service_name));
    for (const auto& m : role.members) {
      EXPECT_TRUE(dns1035_label(m.pod)) << m.pod;
      EXPECT_EQ(m.pod.rfind(role.stateful_set_name + "-", 0), 0u) << m.pod;
      if (!m.pvc.empty()) {
        EXPECT_EQ(m.pvc, "data-" + m.pod);
      }
      EXPECT_EQ(m.pod.find(long_name), std::string::npos);
    }
  }
  EXPECT_EQ(d->roles[0].members.back().pod, d->roles[0].stateful_set_name + "-999");
  EXPECT_EQ(d->member_services.size(), 1000u);
  // The Stack is still found by its label; only the names change.
  EXPECT_EQ(d->headless_service.at_pointer("/spec/selector/kstack.io~1stack"),
            json::value(long_name));
}

TEST_F(UidNaming, NamesAreStableForOneUidAndDifferForAnother) {
  auto a = desired_state(stack_named("db", "UID", "uid-1"), app, nullptr);
  auto again = desired_state(stack_named("db", "UID", "uid-1"), app, nullptr);
  auto b = desired_state(stack_named("db", "UID", "uid-2"), app, nullptr);
  ASSERT_TRUE(a && again && b);
  EXPECT_EQ(a->headless_service_name, again->headless_service_name);
  EXPECT_EQ(a->roles[0].stateful_set_name, again->roles[0].stateful_set_name);
  EXPECT_NE(a->headless_service_name, b->headless_service_name);
  EXPECT_NE(a->roles[0].stateful_set_name, b->roles[0].stateful_set_name);
  EXPECT_NE(a->roles[0].stateful_set_name, a->roles[1].stateful_set_name);
}

TEST_F(UidNaming, CrNameRoleStillNamesObjectsAfterTheStack) {
  auto d = desired_state(stack_named("db", "CrNameRole", "uid-1"), app, nullptr);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->headless_service_name, "db");
  EXPECT_EQ(d->roles[1].stateful_set_name, "db-proxy");
  EXPECT_EQ(d->roles[1].members[0].pod, "db-proxy-0");
}

TEST_F(UidNaming, KStackConfigDefaultSchemeAppliesWhenTheStackNamesNone) {
  auto s = stack_named("db", "UID", "uid-1");
  s.spec.naming_scheme.reset();
  catalog::KStackConfig cfg;
  cfg.spec.default_naming_scheme = "UID";
  auto d = desired_state(s, app, &cfg);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->headless_service_name, catalog::ObjectNames(true, "db", "uid-1").headless_service());
  EXPECT_NE(d->headless_service_name, "db");
}

TEST_F(UidNaming, AStackWithoutUidIsAnErrorNamingTheField) {
  auto d = desired_state(stack_named("db", "UID", ""), app, nullptr);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().to_string().find("metadata.uid"), std::string::npos) << d.error().to_string();
}

}  // namespace
}  // namespace kstack::reconciler
