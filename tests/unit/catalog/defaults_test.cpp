#include "catalog/defaults.h"

#include <gtest/gtest.h>

#include "catalog/names.h"
#include "catalog/parse.h"

namespace kstack::catalog {
namespace {

AppType app(std::string_view yaml) {
  auto r = parse_apptype_yaml(yaml);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? *r : AppType{};
}

struct CardinalityCase {
  std::string_view text;
  bool ok;
  std::int64_t min;
  bool at_least;
};

class CardinalityParse : public ::testing::TestWithParam<CardinalityCase> {};

TEST_P(CardinalityParse, Table) {
  const auto& c = GetParam();
  auto r = parse_cardinality(c.text);
  ASSERT_EQ(r.has_value(), c.ok) << c.text;
  if (!c.ok) return;
  EXPECT_EQ(r->min, c.min);
  EXPECT_EQ(r->at_least, c.at_least);
  EXPECT_EQ(r->to_string(), c.text);
}

INSTANTIATE_TEST_SUITE_P(
    Table, CardinalityParse,
    ::testing::Values(CardinalityCase{"3", true, 3, false}, CardinalityCase{"0+", true, 0, true},
                      CardinalityCase{"12+", true, 12, true}, CardinalityCase{"", false, 0, false},
                      CardinalityCase{"+", false, 0, false}, CardinalityCase{"-1", false, 0, false},
                      CardinalityCase{"3++", false, 0, false},
                      CardinalityCase{"a", false, 0, false}, CardinalityCase{" 3", false, 0, false},
                      CardinalityCase{"1234567", false, 0, false}));

TEST(Cardinality, AllowsExactOrAtLeast) {
  EXPECT_TRUE((Cardinality{3, false}).allows(3));
  EXPECT_FALSE((Cardinality{3, false}).allows(4));
  EXPECT_TRUE((Cardinality{3, true}).allows(4));
  EXPECT_FALSE((Cardinality{3, true}).allows(2));
}

constexpr std::string_view kApp = R"(kind: AppType
metadata: {name: a, namespace: ns}
spec:
  label: {name: A}
  distroID: a
  version: "1"
  configSchemaVersion: 1
  defaultImageRepoTag: img:default
  defaultConfigPackage: {packageURL: "file:///opt/default.tgz"}
  defaultPersistDirs: [/default]
  defaultEventList: [configure]
  services:
    - {id: web, endpoint: {port: 80}}
    - {id: ssh, endpoint: {port: 22}}
  roles:
    - {id: own, cardinality: "2", imageRepoTag: img:own, configPackage: {packageURL: "file:///own.tgz"},
       persistDirs: [/own], eventList: [addnodes, delnodes]}
    - {id: nopkg, cardinality: "1+", configPackage: null}
    - {id: inherit, cardinality: "0+"}
  config:
    roleServices: [{roleID: own, serviceIDs: [ssh, web, missing]}]
)";

TEST(RoleDefaults, RoleValuesWinOverAppDefaults) {
  auto a = app(kApp);
  const auto& own = *find_role(a, "own");
  EXPECT_EQ(role_image(a, own), "img:own");
  EXPECT_EQ(role_package(a, own)->package_url, "file:///own.tgz");
  EXPECT_EQ(role_persist_dirs(a, own), std::vector<std::string>{"/own"});
  EXPECT_EQ(role_event_list(a, own), (std::vector<std::string>{"addnodes", "delnodes"}));
  EXPECT_FALSE(role_handles_event(a, own, kEventConfigure));
  EXPECT_EQ(default_members(own), 2);
}

TEST(RoleDefaults, AbsentInheritsAndExplicitNullMeansNoPackage) {
  auto a = app(kApp);
  const auto& inherit = *find_role(a, "inherit");
  EXPECT_EQ(role_image(a, inherit), "img:default");
  EXPECT_EQ(role_package(a, inherit)->package_url, "file:///opt/default.tgz");
  EXPECT_EQ(role_persist_dirs(a, inherit), std::vector<std::string>{"/default"});
  EXPECT_EQ(role_event_list(a, inherit), std::vector<std::string>{"configure"});
  EXPECT_FALSE(role_package(a, *find_role(a, "nopkg")).has_value());
}

TEST(RoleDefaults, NothingAnywhereMeansAllEventsNoDirsNoImage) {
  auto a = app(R"(kind: AppType
metadata: {name: a}
spec:
  label: {name: A}
  distroID: a
  version: "1"
  configSchemaVersion: 1
  defaultConfigPackage: null
  roles: [{id: r, cardinality: "1"}]
)");
  const auto& r = a.spec.roles[0];
  EXPECT_FALSE(role_image(a, r).has_value());
  EXPECT_FALSE(role_package(a, r).has_value());
  EXPECT_TRUE(role_persist_dirs(a, r).empty());
  EXPECT_EQ(role_event_list(a, r).size(), 3u);
}

TEST(RoleDefaults, RoleServicesFollowConfigOrderAndSkipUnknownIds) {
  auto a = app(kApp);
  auto services = role_services(a, "own");
  ASSERT_EQ(services.size(), 2u);
  EXPECT_EQ(services[0]->id, "ssh");
  EXPECT_EQ(services[1]->id, "web");
  EXPECT_TRUE(role_services(a, "inherit").empty());
}

TEST(StackDefaults, ServiceTypeNamingAndDomainComeFromStackThenConfigThenBuiltIn) {
  Stack s;
  KStackConfig cfg;
  EXPECT_EQ(effective_service_type(s, nullptr), "ClusterIP");
  EXPECT_EQ(effective_naming_scheme(s, nullptr), "CrNameRole");
  EXPECT_EQ(cluster_svc_domain_base(nullptr), ".svc.cluster.local");
  cfg.spec.default_service_type = "NodePort";
  cfg.spec.default_naming_scheme = "UID";
  cfg.spec.cluster_svc_domain_base = ".svc.example";
  EXPECT_EQ(effective_service_type(s, &cfg), "NodePort");
  EXPECT_EQ(effective_naming_scheme(s, &cfg), "UID");
  EXPECT_EQ(cluster_svc_domain_base(&cfg), ".svc.example");
  s.spec.service_type = "LoadBalancer";
  s.spec.naming_scheme = "CrNameRole";
  EXPECT_EQ(effective_service_type(s, &cfg), "LoadBalancer");
  EXPECT_EQ(effective_naming_scheme(s, &cfg), "CrNameRole");
}

TEST(StackDefaults, MembersDefaultToTheCardinalityMinimum) {
  auto a = app(kApp);
  StackRole r;
  r.id = "own";
  EXPECT_EQ(effective_members(find_role(a, "own"), r), 2);
  EXPECT_EQ(effective_members(nullptr, r), 0);
  r.members = 5;
  EXPECT_EQ(effective_members(find_role(a, "own"), r), 5);
}

TEST(StackDefaults, MemberRecoveryResolvesEachFieldFromRoleThenConfigThenBuiltIn) {
  StackRole role;
  role.id = "member";
  auto built_in = effective_recovery(role, nullptr);
  EXPECT_EQ(built_in.policy, "Reschedule");
  EXPECT_EQ(built_in.node_lost_grace_seconds, 60);
  EXPECT_EQ(built_in.local_storage, "Keep");

  KStackConfig cfg;
  auto empty_config = effective_recovery(role, &cfg);
  EXPECT_EQ(empty_config.policy, "Reschedule");
  EXPECT_EQ(empty_config.node_lost_grace_seconds, 60);
  EXPECT_EQ(empty_config.local_storage, "Keep");

  cfg.spec.member_recovery.policy = "Off";
  cfg.spec.member_recovery.node_lost_grace_seconds = 300;
  auto from_config = effective_recovery(role, &cfg);
  EXPECT_EQ(from_config.policy, "Off");
  EXPECT_EQ(from_config.node_lost_grace_seconds, 300);
  EXPECT_EQ(from_config.local_storage, "Keep");

  // Per field: the role's grace (0 included) wins, the config's policy still applies.
  role.member_recovery.node_lost_grace_seconds = 0;
  role.member_recovery.local_storage = "Recreate";
  auto mixed = effective_recovery(role, &cfg);
  EXPECT_EQ(mixed.policy, "Off");
  EXPECT_EQ(mixed.node_lost_grace_seconds, 0);
  EXPECT_EQ(mixed.local_storage, "Recreate");
  role.member_recovery.policy = "Reschedule";
  EXPECT_EQ(effective_recovery(role, &cfg).policy, "Reschedule");
}

TEST(Names, DerivedNamesFollowCrNameRole) {
  EXPECT_EQ(headless_service_name("db"), "db");
  EXPECT_EQ(statefulset_name("db", "seed"), "db-seed");
  EXPECT_EQ(member_name("db", "seed", 2), "db-seed-2");
  EXPECT_EQ(pvc_name("db", "seed", 2), "data-db-seed-2");
}

TEST(Names, UidSchemeNamesAreShortHashesOfTheUid) {
  const std::string uid = "6f1c2e0d-7c55-4a57-9a3c-1d2e3f405162";
  ObjectNames names(/*uid_scheme=*/true, std::string(63, 'a'), uid);
  EXPECT_EQ(names.headless_service(), "kshs-" + short_hash(uid));
  const std::string sts = names.statefulset("seed");
  EXPECT_EQ(sts.size(), 15u);
  EXPECT_EQ(sts.rfind("ksss-", 0), 0u);
  EXPECT_EQ(names.member("seed", 999), sts + "-999");
  EXPECT_EQ(names.pvc("seed", 999), "data-" + sts + "-999");
  EXPECT_NE(names.statefulset("worker"), sts);
  EXPECT_EQ(short_hash(""), "cbf29ce484");  // FNV-1a 64 of nothing is its offset basis
  EXPECT_EQ(short_hash(uid).size(), 10u);

  ObjectNames crname(false, "db", uid);
  EXPECT_EQ(crname.headless_service(), "db");
  EXPECT_EQ(crname.pvc("seed", 2), "data-db-seed-2");
}

}  // namespace
}  // namespace kstack::catalog
