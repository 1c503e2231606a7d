#include "validator/rules/apptype_rules.h"

#include <functional>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/yaml.h"

namespace kstack::validator {
namespace {
namespace json = boost::json;

constexpr std::string_view kSha =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

json::value base_app() {
  auto v = catalog::parse_yaml(R"(apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: cassandra, namespace: team-a}
spec:
  label: {name: Cassandra}
  distroID: cassandra
  version: "4.0"
  configSchemaVersion: 8
  defaultImageRepoTag: cassandra:4.0
  defaultConfigPackage: {packageURL: "file:///opt/setup.tgz"}
  defaultPersistDirs: [/var/lib/cassandra]
  defaultEventList: [configure, addnodes]
  services:
    - {id: cql, endpoint: {port: 9042, urlScheme: cql}}
    - {id: ui, endpoint: {port: 8080, urlScheme: http, isDashboard: true}}
  roles:
    - id: seed
      cardinality: "2+"
      minResources: {cpu: 500m, memory: 1Gi}
      minStorage: {size: 10Gi}
      containerSpec: {stdin: true, tty: false}
      eventList: [configure]
      persistDirs: [/data]
      configPackage:
        packageURL: configmap://setup/seed.tgz
        sha256: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    - {id: worker, cardinality: "0+"}
  config:
    roleServices:
      - {roleID: seed, serviceIDs: [cql, ui]}
      - {roleID: worker, serviceIDs: [cql]}
    selectedRoles: [seed]
)");
  EXPECT_TRUE(v.has_value());
  return *v;
}

// Sets the member at a JSON pointer (its parent must exist); "-" appends to an array.
void put(json::value& doc, std::string_view ptr, json::value v) {
  auto slash = ptr.rfind('/');
  auto& parent = slash == 0 ? doc : doc.at_pointer(ptr.substr(0, slash));
  std::string key(ptr.substr(slash + 1));
  if (parent.is_array()) {
    if (key == "-") {
      parent.as_array().push_back(std::move(v));
    } else {
      parent.as_array().at(std::stoul(key)) = std::move(v);
    }
  } else {
    parent.as_object()[key] = std::move(v);
  }
}

void drop(json::value& doc, std::string_view ptr) {
  auto slash = ptr.rfind('/');
  auto& parent = slash == 0 ? doc : doc.at_pointer(ptr.substr(0, slash));
  parent.as_object().erase(ptr.substr(slash + 1));
}

std::string joined(const Violations& v) { return catalog::join(v); }

struct Case {
  std::string name;
  std::function<void(json::value&)> mutate;
  std::string field;   // exact field path expected in the message
  std::string reason;  // a part of the reason
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class AppTypeRefuses : public ::testing::TestWithParam<Case> {};

TEST_P(AppTypeRefuses, NamingTheFieldPath) {
  const auto& c = GetParam();
  json::value app = base_app();
  c.mutate(app);
  auto violations = validate_apptype_object(app);
  std::string want = c.field + ": ";
  bool found = false;
  for (const auto& v : violations) {
    found = found || (v.field == c.field && v.to_string().starts_with(want) &&
                      v.reason.find(c.reason) != std::string::npos);
  }
  EXPECT_TRUE(found) << "want \"" << c.field << ": ..." << c.reason
                     << "...\" in: " << joined(violations);
}

auto set(std::string ptr, json::value v) {
  return [ptr, v](json::value& doc) { put(doc, ptr, v); };
}
auto remove(std::string ptr) {
  return [ptr](json::value& doc) { drop(doc, ptr); };
}

INSTANTIATE_TEST_SUITE_P(
    Rules, AppTypeRefuses,
    ::testing::Values(
        Case{"MinAvailableZero", set("/spec/roles/0/minAvailable", 0), "spec.roles[0].minAvailable",
             "must be between 1 and 1000 (or a percentage \"N%\"), not 0"},
        Case{"MinAvailableAboveTheMemberLimit", set("/spec/roles/0/minAvailable", 1001),
             "spec.roles[0].minAvailable", "must be between 1 and 1000"},
        Case{"MinAvailableZeroPercent", set("/spec/roles/1/minAvailable", "0%"),
             "spec.roles[1].minAvailable",
             "must be an integer or a percentage \"N%\" with N between 1 and 100, not \"0%\""},
        Case{"MinAvailableOverAHundredPercent", set("/spec/roles/1/minAvailable", "101%"),
             "spec.roles[1].minAvailable", "with N between 1 and 100"},
        Case{"MinAvailableNumberAsString", set("/spec/roles/1/minAvailable", "2"),
             "spec.roles[1].minAvailable", "not \"2\""},
        Case{"MinAvailableFractionalPercent", set("/spec/roles/1/minAvailable", "50.5%"),
             "spec.roles[1].minAvailable", "with N between 1 and 100"},
        Case{"MinAvailableBoolean", set("/spec/roles/0/minAvailable", true),
             "spec.roles[0].minAvailable", "must be an integer or a string, not a boolean"},
        Case{"CommandWithoutWords", set("/spec/roles/0/command", json::array{}),
             "spec.roles[0].command", "must name the program to run"},
        Case{"CommandWithAnEmptyProgram", set("/spec/roles/1/command", json::array{"", "x"}),
             "spec.roles[1].command", "must name the program to run"},
        Case{"CommandAsOneString", set("/spec/roles/0/command", "redis-server --port 1"),
             "spec.roles[0].command", "must be an array"},
        Case{"ArgsNotStrings", set("/spec/roles/0/args", json::array{"--port", 6379}),
             "spec.roles[0].args[1]", "must be a string"},
        Case{"DependsOnItself", set("/spec/roles/0/dependsOn", json::array{"seed"}),
             "spec.roles[0].dependsOn[0]", "role \"seed\" cannot depend on itself"},
        Case{"DependsOnAnUnknownRole", set("/spec/roles/1/dependsOn", json::array{"seed", "db"}),
             "spec.roles[1].dependsOn[1]", "\"db\" is not a role of this AppType"},
        Case{"DependsOnTwice", set("/spec/roles/1/dependsOn", json::array{"seed", "seed"}),
             "spec.roles[1].dependsOn[1]", "duplicate role \"seed\""},
        Case{"DependsOnInACycle",
             [](json::value& a) {
               put(a, "/spec/roles/0/dependsOn", json::array{"worker"});
               put(a, "/spec/roles/1/dependsOn", json::array{"seed"});
             },
             "spec.roles[1].dependsOn", "cycle: seed -> worker -> seed"},
        Case{"DuplicateRoleId", set("/spec/roles/1/id", "seed"), "spec.roles[1].id",
             "duplicate role id \"seed\""},
        Case{"DuplicateServiceId", set("/spec/services/1/id", "cql"), "spec.services[1].id",
             "duplicate service id \"cql\""},
        Case{"RoleIdNotDnsLabel", set("/spec/roles/1/id", "Worker_1"), "spec.roles[1].id",
             "RFC 1123 label"},
        Case{"ServiceIdTooLong", set("/spec/services/0/id", "a-very-long-service"),
             "spec.services[0].id", "no more than 15 characters"},
        Case{"ServiceIdWithoutLetter", set("/spec/services/0/id", "8080"), "spec.services[0].id",
             "at least one letter"},
        Case{"CardinalitySyntax", set("/spec/roles/0/cardinality", "two"),
             "spec.roles[0].cardinality", "must be \"N\" or \"N+\""},
        Case{"CardinalityOverLimit", set("/spec/roles/0/cardinality", "1001+"),
             "spec.roles[0].cardinality", "exceeds the limit of 1000"},
        Case{"CardinalityNotString", set("/spec/roles/0/cardinality", 3),
             "spec.roles[0].cardinality", "must be a string"},
        Case{"RoleServicesUnknownRole", set("/spec/config/roleServices/0/roleID", "nope"),
             "spec.config.roleServices[0].roleID", "role \"nope\" is not defined"},
        Case{"RoleServicesUnknownService", set("/spec/config/roleServices/0/serviceIDs/1", "nope"),
             "spec.config.roleServices[0].serviceIDs[1]", "service \"nope\" is not defined"},
        Case{"RoleServicesRoleTwice", set("/spec/config/roleServices/1/roleID", "seed"),
             "spec.config.roleServices[1].roleID", "duplicate roleID \"seed\""},
        Case{"RoleServicesServiceTwice", set("/spec/config/roleServices/0/serviceIDs/1", "cql"),
             "spec.config.roleServices[0].serviceIDs[1]", "duplicate service id"},
        Case{"SelectedRoleUnknown", set("/spec/config/selectedRoles/-", "nope"),
             "spec.config.selectedRoles[1]", "role \"nope\" is not defined"},
        Case{"SelectedRoleTwice", set("/spec/config/selectedRoles/-", "seed"),
             "spec.config.selectedRoles[1]", "duplicate role \"seed\""},
        Case{"RoleWithoutImage", remove("/spec/defaultImageRepoTag"), "spec.roles[0].imageRepoTag",
             "is required when spec.defaultImageRepoTag is not set"},
        Case{"TtyWithoutStdin", set("/spec/roles/0/containerSpec", json::object{{"tty", true}}),
             "spec.roles[0].containerSpec.tty", "requires containerSpec.stdin"},
        Case{"MinResourcesUnparsable", set("/spec/roles/0/minResources/memory", "2 GB"),
             "spec.roles[0].minResources[memory]", "quantity \"2 GB\""},
        Case{"MinResourcesNegative", set("/spec/roles/0/minResources/cpu", "-1"),
             "spec.roles[0].minResources[cpu]", "must not be negative"},
        Case{"MinStorageUnparsable", set("/spec/roles/0/minStorage/size", "ten"),
             "spec.roles[0].minStorage.size", "quantity \"ten\""},
        Case{"PersistDirRelative", set("/spec/roles/0/persistDirs/0", "data"),
             "spec.roles[0].persistDirs[0]", "must be an absolute path"},
        Case{"PersistDirDotDot", set("/spec/defaultPersistDirs/0", "/var/../etc"),
             "spec.defaultPersistDirs[0]", "'.' or '..'"},
        Case{"PersistDirTrailingSlash", set("/spec/defaultPersistDirs/0", "/var/lib/"),
             "spec.defaultPersistDirs[0]", "must not end with '/'"},
        Case{"PersistDirRoot", set("/spec/defaultPersistDirs/0", "/"), "spec.defaultPersistDirs[0]",
             "root directory"},
        Case{"EventUnknown", set("/spec/roles/0/eventList/-", "reconnect"),
             "spec.roles[0].eventList[1]", "unsupported event \"reconnect\""},
        Case{"EventDuplicate", set("/spec/defaultEventList/1", "configure"),
             "spec.defaultEventList[1]", "duplicate event \"configure\""},
        Case{"PackageSchemeNotAllowed",
             set("/spec/defaultConfigPackage/packageURL", "ftp://host/x.tgz"),
             "spec.defaultConfigPackage.packageURL", "unsupported scheme"},
        Case{"ConfigMapUrlWithoutKey",
             set("/spec/roles/0/configPackage/packageURL", "configmap://setup"),
             "spec.roles[0].configPackage.packageURL", "must be configmap://<name>/<key>"},
        Case{"ConfigMapUrlBadName",
             set("/spec/roles/0/configPackage/packageURL", "configmap://Bad_Name/k"),
             "spec.roles[0].configPackage.packageURL", "ConfigMap name \"Bad_Name\""},
        Case{"ConfigMapUrlBadKey",
             set("/spec/roles/0/configPackage/packageURL", "configmap://setup/a/b"),
             "spec.roles[0].configPackage.packageURL", "ConfigMap key \"a/b\""},
        Case{"FileUrlRelative", set("/spec/defaultConfigPackage/packageURL", "file://opt/x.tgz"),
             "spec.defaultConfigPackage.packageURL", "absolute path"},
        Case{"HttpUrlWithoutHost", set("/spec/defaultConfigPackage/packageURL", "https:///x.tgz"),
             "spec.defaultConfigPackage.packageURL", "must name a host"},
        Case{"PackageUrlWithSpace",
             set("/spec/defaultConfigPackage/packageURL", "https://h/x y.tgz"),
             "spec.defaultConfigPackage.packageURL", "spaces"},
        Case{"PackageUrlRequired", set("/spec/defaultConfigPackage", json::object{}),
             "spec.defaultConfigPackage.packageURL", "is required"},
        Case{"Sha256NotHex", set("/spec/roles/0/configPackage/sha256", "xyz"),
             "spec.roles[0].configPackage.sha256", "64 hexadecimal"},
        Case{"DashboardWithoutScheme", remove("/spec/services/1/endpoint/urlScheme"),
             "spec.services[1].endpoint.urlScheme", "is required when isDashboard is true"},
        Case{"PortZero", set("/spec/services/0/endpoint/port", 0), "spec.services[0].endpoint.port",
             "between 1 and 65535"},
        Case{"PortTooHigh", set("/spec/services/0/endpoint/port", 65536),
             "spec.services[0].endpoint.port", "between 1 and 65535"},
        Case{"PortRequired", remove("/spec/services/0/endpoint/port"),
             "spec.services[0].endpoint.port", "is required"},
        Case{"ConfigSchemaVersionZero", set("/spec/configSchemaVersion", 0),
             "spec.configSchemaVersion", "greater than or equal to 1"},
        Case{"ConfigSchemaVersionRequired", remove("/spec/configSchemaVersion"),
             "spec.configSchemaVersion", "is required"},
        Case{"DistroIdRequired", remove("/spec/distroID"), "spec.distroID", "is required"},
        Case{"DistroIdWithWhitespace", set("/spec/distroID", "bluedata cassandra"), "spec.distroID",
             "whitespace"},
        Case{"VersionRequired", remove("/spec/version"), "spec.version", "is required"},
        Case{"LabelNameRequired", set("/spec/label", json::object{{"description", "x"}}),
             "spec.label.name", "is required"},
        Case{"RolesRequired", remove("/spec/roles"), "spec.roles", "is required"},
        Case{"RolesEmpty", set("/spec/roles", json::array{}), "spec.roles", "at least one role"},
        Case{"RoleIdRequired", remove("/spec/roles/1/id"), "spec.roles[1].id", "is required"},
        Case{"SpecRequired", remove("/spec"), "spec", "is required"},
        Case{"MetadataNameSyntax", set("/metadata/name", "Cassandra"), "metadata.name",
             "RFC 1123 subdomain"},
        Case{"UpgradeFromNotAName", set("/spec/upgradeFrom", json::array{"cassandra-3", "Old_1"}),
             "spec.upgradeFrom[1]", "RFC 1123 subdomain"},
        Case{"UpgradeFromEmptyName", set("/spec/upgradeFrom", json::array{""}),
             "spec.upgradeFrom[0]", "must be the name of an AppType"},
        Case{"UpgradeFromDuplicate",
             set("/spec/upgradeFrom", json::array{"cassandra-3", "cassandra-2", "cassandra-3"}),
             "spec.upgradeFrom[2]", "duplicate AppType \"cassandra-3\""},
        Case{"UpgradeFromItself", set("/spec/upgradeFrom", json::array{"cassandra"}),
             "spec.upgradeFrom[0]", "cannot upgrade from itself"},
        Case{"UpgradeFromNotAList", set("/spec/upgradeFrom", "cassandra-3"), "spec.upgradeFrom",
             "must be an array"},
        Case{"UpgradeEventTwice",
             set("/spec/roles/0/eventList", json::array{"preupgrade", "preupgrade"}),
             "spec.roles[0].eventList[1]", "duplicate event \"preupgrade\""}));

class AppTypeAccepts : public ::testing::TestWithParam<Case> {};

TEST_P(AppTypeAccepts, WithoutViolations) {
  json::value app = base_app();
  GetParam().mutate(app);
  auto violations = validate_apptype_object(app);
  EXPECT_TRUE(violations.empty()) << joined(violations);
}

INSTANTIATE_TEST_SUITE_P(
    Rules, AppTypeAccepts,
    ::testing::Values(
        Case{"TheBaseApp", [](json::value&) {}, "", ""},
        Case{"KubeDirectorStyleDistroId", set("/spec/distroID", "bluedata/cassandra"), "", ""},
        Case{"ImageOnTheRolesOnly",
             [](json::value& a) {
               drop(a, "/spec/defaultImageRepoTag");
               put(a, "/spec/roles/0/imageRepoTag", "seed:1");
               put(a, "/spec/roles/1/imageRepoTag", "worker:1");
             },
             "", ""},
        Case{"HttpsPackage",
             set("/spec/defaultConfigPackage/packageURL", "https://h.example/x.tgz"), "", ""},
        Case{"HttpPackage", set("/spec/defaultConfigPackage/packageURL", "http://10.0.0.1:80/x"),
             "", ""},
        Case{"NullPackage", set("/spec/defaultConfigPackage", nullptr), "", ""},
        Case{"UppercaseSha",
             set("/spec/roles/0/configPackage/sha256",
                 "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"),
             "", ""},
        Case{"TtyWithStdin",
             set("/spec/roles/0/containerSpec", json::object{{"stdin", true}, {"tty", true}}), "",
             ""},
        Case{"HighestPort", set("/spec/services/0/endpoint/port", 65535), "", ""},
        Case{"ExactCardinality", set("/spec/roles/0/cardinality", "3"), "", ""},
        Case{"CommandAndArgs",
             [](json::value& a) {
               put(a, "/spec/roles/0/command", json::array{"redis-server"});
               put(a, "/spec/roles/0/args", json::array{"--port", "6379", ""});
               put(a, "/spec/roles/1/args", json::array{});
             },
             "", ""},
        Case{"DependsOnAnotherRole", set("/spec/roles/1/dependsOn", json::array{"seed"}), "", ""},
        Case{"IntegerQuantities", set("/spec/roles/0/minResources/cpu", 2), "", ""},
        Case{"UpgradeFromOtherAppTypes",
             set("/spec/upgradeFrom", json::array{"cassandra-3", "cassandra.v2"}), "", ""},
        Case{"UpgradeEventsOnARole",
             set("/spec/roles/0/eventList",
                 json::array{"configure", "addnodes", "delnodes", "preupgrade", "upgradenodes"}),
             "", ""},
        Case{"UpgradeEventsByDefault",
             set("/spec/defaultEventList", json::array{"configure", "preupgrade", "upgradenodes"}),
             "", ""},
        Case{"NoServicesNoConfig",
             [](json::value& a) {
               drop(a, "/spec/services");
               drop(a, "/spec/config");
             },
             "", ""}));

TEST(AppTypeRules, MinAvailableBoundsAreInclusive) {
  for (json::value ok : {json::value(1), json::value(1000), json::value("1%"), json::value("100%"),
                         json::value(nullptr)}) {
    json::value app = base_app();
    put(app, "/spec/roles/0/minAvailable", ok);
    auto v = validate_apptype_object(app);
    EXPECT_TRUE(v.empty()) << json::serialize(ok) << ": " << joined(v);
  }
  for (json::value bad : {json::value(0), json::value(1001), json::value("0%"), json::value("101%"),
                          json::value("%")}) {
    json::value app = base_app();
    put(app, "/spec/roles/0/minAvailable", bad);
    auto v = validate_apptype_object(app);
    ASSERT_EQ(v.size(), 1u) << json::serialize(bad) << ": " << joined(v);
    EXPECT_EQ(v[0].field, "spec.roles[0].minAvailable");
  }
}

TEST(AppTypeRules, ReportsEveryViolationAtOnce) {
  json::value app = base_app();
  put(app, "/spec/roles/1/id", "seed");
  put(app, "/spec/services/0/endpoint/port", 0);
  put(app, "/spec/roles/0/persistDirs/0", "data");
  put(app, "/spec/configSchemaVersion", 0);
  drop(app, "/spec/distroID");
  auto v = validate_apptype_object(app);
  std::string msg = joined(v);
  for (std::string_view field :
       {"spec.roles[1].id: ", "spec.services[0].endpoint.port: ", "spec.roles[0].persistDirs[0]: ",
        "spec.configSchemaVersion: ", "spec.distroID: "}) {
    EXPECT_NE(msg.find(field), std::string::npos) << field << " not in " << msg;
  }
  EXPECT_GE(v.size(), 5u);
}

json::value with_version(std::string_view version) {
  json::value app = base_app();
  put(app, "/spec/version", json::string(version));
  return app;
}

TEST(AppTypeInUse, DeleteIsRefusedListingTheStacks) {
  auto v = validate_apptype_in_use(base_app(), nullptr, {"team-a/db", "team-b/db2"});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(),
            "metadata.name: AppType team-a/cassandra cannot be deleted while used by 2 stacks "
            "(team-a/db, "
            "team-b/db2)");
}

TEST(AppTypeInUse, SpecChangeIsRefusedPerChangedField) {
  json::value changed = with_version("5.0");
  put(changed, "/spec/roles/1/cardinality", "1+");
  auto v = validate_apptype_in_use(base_app(), &changed, {"team-a/db"});
  ASSERT_EQ(v.size(), 2u) << joined(v);
  EXPECT_EQ(v[0].to_string(),
            "spec.roles: cannot be changed while the AppType is used by 1 stack (team-a/db)");
  EXPECT_EQ(v[1].field, "spec.version");
}

TEST(AppTypeInUse, IdenticalSpecAndMetadataChangesAreAllowed) {
  json::value same = base_app();
  put(same, "/metadata/labels", json::object{{"tier", "db"}});
  EXPECT_TRUE(validate_apptype_in_use(base_app(), &same, {"team-a/db"}).empty());
}

TEST(AppTypeInUse, UnreferencedAppsMayChangeAndBeDeleted) {
  json::value changed = with_version("5.0");
  EXPECT_TRUE(validate_apptype_in_use(base_app(), &changed, {}).empty());
  EXPECT_TRUE(validate_apptype_in_use(base_app(), nullptr, {}).empty());
}

}  // namespace
}  // namespace kstack::validator
