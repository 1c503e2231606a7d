#include "validator/rules/stack_rules.h"

#include <functional>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/memory_catalog.h"
#include "catalog/parse.h"
#include "catalog/yaml.h"
#include "tests/unit/support/yaml_value.h"

namespace kstack::validator {
namespace {
namespace json = boost::json;

using kstack::testing::yaml;

constexpr std::string_view kCassandra = R"(apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: cassandra, namespace: team-a}
spec:
  label: {name: Cassandra}
  distroID: cassandra
  version: "4.0"
  configSchemaVersion: 8
  defaultImageRepoTag: cassandra:4.0
  roles:
    - id: seed
      cardinality: "2+"
      minResources: {cpu: 500m, memory: 1Gi}
      minStorage: {size: 10Gi}
    - id: worker
      cardinality: "0+"
      minStorage: {size: 1Gi, ephemeralModeSupported: true}
    - id: arbiter
      cardinality: "1"
  config:
    selectedRoles: [seed]
)";

constexpr std::string_view kSpark = R"(kind: AppType
metadata: {name: spark, namespace: kstack-system}
spec:
  label: {name: Spark}
  distroID: spark
  version: "3"
  configSchemaVersion: 1
  defaultImageRepoTag: spark:3
  roles: [{id: master, cardinality: "1"}]
)";

json::value storage_class(std::string_view name, bool is_default) {
  json::object md{{"name", name}};
  if (is_default) md["annotations"] = {{catalog::kDefaultClassAnnotation, "true"}};
  return json::object{{"kind", "StorageClass"}, {"metadata", std::move(md)}};
}

json::value base_stack() {
  return yaml(R"(apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: db, namespace: team-a}
spec:
  app: cassandra
  appCatalog: local
  serviceType: ClusterIP
  namingScheme: CrNameRole
  roles:
    - id: seed
      members: 3
      resources:
        requests: {cpu: "1", memory: 2Gi}
        limits: {cpu: "2", memory: 4Gi}
      storage: {size: 20Gi, storageClassName: fast}
      podLabels: {team: a}
      podAnnotations: {note: x}
      serviceLabels: {team: a}
      nodeSelector: {disk: ssd}
      env: [{name: HEAP_SIZE, value: 1g}]
      serviceAccountName: runner
    - id: worker
      members: 0
)");
}

struct Fixture {
  catalog::MemoryCatalog memory;
  explicit Fixture(bool with_default_class = true) {
    memory.add(yaml(kCassandra));
    memory.add(yaml(kSpark));
    memory.add(storage_class("fast", false));
    if (with_default_class) memory.add(storage_class("standard", true));
  }
  Violations check(const json::value& stack) {
    return validate_stack_object(stack, memory.catalog());
  }
};

// The last reference token, unescaped (RFC 6901: ~1 is '/', ~0 is '~').
std::string last_token(std::string_view ptr) {
  std::string out;
  std::string_view token = ptr.substr(ptr.rfind('/') + 1);
  for (std::size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size()) {
      out += token[++i] == '1' ? '/' : '~';
    } else {
      out += token[i];
    }
  }
  return out;
}

void put(json::value& doc, std::string_view ptr, json::value v) {
  auto slash = ptr.rfind('/');
  auto& parent = slash == 0 ? doc : doc.at_pointer(ptr.substr(0, slash));
  std::string key = last_token(ptr);
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
  if (parent.is_array()) {
    auto& a = parent.as_array();
    a.erase(a.begin() + std::stol(std::string(ptr.substr(slash + 1))));
  } else {
    parent.as_object().erase(ptr.substr(slash + 1));
  }
}

auto set(std::string ptr, json::value v) {
  return [ptr, v](json::value& doc) { put(doc, ptr, v); };
}
auto remove(std::string ptr) {
  return [ptr](json::value& doc) { drop(doc, ptr); };
}

struct Case {
  std::string name;
  std::function<void(json::value&)> mutate;
  std::string field;
  std::string reason;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

bool has(const Violations& violations, const std::string& field, const std::string& reason) {
  for (const auto& v : violations) {
    if (v.field == field && v.to_string().starts_with(field + ": ") &&
        v.reason.find(reason) != std::string::npos) {
      return true;
    }
  }
  return false;
}

class StackRefuses : public ::testing::TestWithParam<Case> {};

TEST_P(StackRefuses, NamingTheFieldPath) {
  const auto& c = GetParam();
  Fixture f;
  json::value stack = base_stack();
  c.mutate(stack);
  auto v = f.check(stack);
  EXPECT_TRUE(has(v, c.field, c.reason))
      << "want \"" << c.field << ": ..." << c.reason << "...\" in: " << catalog::join(v);
}

const std::string kLongName(58, 'a');

INSTANTIATE_TEST_SUITE_P(
    Rules, StackRefuses,
    ::testing::Values(
        Case{"RecoveryPolicyEnum",
             set("/spec/roles/1/memberRecovery", json::object{{"policy", "Delete"}}),
             "spec.roles[1].memberRecovery.policy",
             "must be one of \"Reschedule\", \"Off\" (not \"Delete\")"},
        Case{"RecoveryLocalStorageEnum",
             set("/spec/roles/1/memberRecovery", json::object{{"localStorage", "keep"}}),
             "spec.roles[1].memberRecovery.localStorage", "must be one of \"Keep\", \"Recreate\""},
        Case{"RecoveryGraceNegative",
             set("/spec/roles/0/memberRecovery", json::object{{"nodeLostGraceSeconds", -1}}),
             "spec.roles[0].memberRecovery.nodeLostGraceSeconds",
             "must be between 0 and 86400 (seconds), not -1"},
        Case{"RecoveryGraceOverADay",
             set("/spec/roles/0/memberRecovery", json::object{{"nodeLostGraceSeconds", 86401}}),
             "spec.roles[0].memberRecovery.nodeLostGraceSeconds", "must be between 0 and 86400"},
        Case{"RecoveryPolicyBareYamlOff",  // kubectl's YAML reads a bare Off as false
             set("/spec/roles/0/memberRecovery", json::object{{"policy", false}}),
             "spec.roles[0].memberRecovery.policy", "must be a string, not a boolean"},
        Case{"StoppedNotABoolean", set("/spec/stopped", "yes"), "spec.stopped",
             "must be a boolean"},
        // The paths of these messages are built only when there is a message to give.
        Case{"QuantityNotAString",
             set("/spec/roles/0/resources", json::object{{"requests", json::object{{"cpu", true}}}}),
             "spec.roles[0].resources.requests[cpu]",
             "must be a quantity (string or number), not a boolean"},
        Case{"LimitNotAQuantity",
             set("/spec/roles/1/resources", json::object{{"limits", json::object{{"memory", "1GB"}}}}),
             "spec.roles[1].resources.limits[memory]", "quantity \"1GB\" has an unknown suffix"},
        Case{"NodeSelectorValueNotAString",
             set("/spec/roles/0/nodeSelector", json::object{{"disk", 1}}),
             "spec.roles[0].nodeSelector[disk]", "must be a string, not a number"},
        Case{"EnvNameMissing",
             set("/spec/roles/0/env", json::array{json::object{{"name", "A"}}, json::object{}}),
             "spec.roles[0].env[1].name", "is required"},
        Case{"AppRequired", remove("/spec/app"), "spec.app", "is required"},
        Case{"AppNotFound",
             [](json::value& s) {
               put(s, "/spec/app", "nope");
               drop(s, "/spec/appCatalog");
             },
             "spec.app",
             "AppType \"nope\" not found in namespace \"team-a\" (local) nor \"kstack-system\" "
             "(system)"},
        Case{"AppNotFoundWhereAppCatalogSays", set("/spec/appCatalog", "system"), "spec.app",
             "not found in namespace \"kstack-system\" (appCatalog system)"},
        Case{"AppCatalogEnum", set("/spec/appCatalog", "global"), "spec.appCatalog",
             "unsupported value \"global\""},
        Case{"ServiceTypeEnum", set("/spec/serviceType", "ExternalName"), "spec.serviceType",
             "supported values: \"ClusterIP\", \"NodePort\", \"LoadBalancer\""},
        Case{"NamingSchemeEnum", set("/spec/namingScheme", "Random"), "spec.namingScheme",
             "unsupported value"},
        Case{
            "PvcRetentionEnum",
            set("/spec/persistentVolumeClaimRetentionPolicy", json::object{{"whenScaled", "Keep"}}),
            "spec.persistentVolumeClaimRetentionPolicy.whenScaled", "unsupported value"},
        Case{"RoleNotInApp", set("/spec/roles/1/id", "client"), "spec.roles[1].id",
             "role \"client\" is not defined by AppType \"cassandra\""},
        Case{"RoleTwice", set("/spec/roles/1/id", "seed"), "spec.roles[1].id",
             "duplicate role id \"seed\""},
        Case{"MembersBelowAtLeast", set("/spec/roles/0/members", 1), "spec.roles[0].members",
             "must be at least 2 for cardinality \"2+\""},
        Case{"MembersNotExact",
             set("/spec/roles/-", json::object{{"id", "arbiter"}, {"members", 2}}),
             "spec.roles[2].members", "must be exactly 1 for cardinality \"1\""},
        Case{"MembersNegative", set("/spec/roles/1/members", -1), "spec.roles[1].members",
             "must be greater than or equal to 0"},
        Case{"MaxUnavailableZero", set("/spec/roles/0/maxUnavailable", 0),
             "spec.roles[0].maxUnavailable", "must be greater than or equal to 1"},
        Case{"MaxUnavailableNegative", set("/spec/roles/1/maxUnavailable", -2),
             "spec.roles[1].maxUnavailable", "must be greater than or equal to 1"},
        Case{"MaxUnavailableNotInteger", set("/spec/roles/0/maxUnavailable", "25%"),
             "spec.roles[0].maxUnavailable", "must be an integer"},
        Case{"PausedNotBoolean", set("/spec/paused", "true"), "spec.paused",
             "must be a boolean"},
        Case{"MembersNotInteger", set("/spec/roles/1/members", "2"), "spec.roles[1].members",
             "must be an integer"},
        Case{"SelectedRoleMissing", remove("/spec/roles/0"), "spec.roles",
             "must include role \"seed\" (selected by the app, cardinality \"2+\")"},
        Case{"TotalMembersOverLimit", set("/spec/roles/1/members", 998), "spec.roles",
             "total members 1001 exceed the limit of 1000"},
        Case{"QuantityUnparsable", set("/spec/roles/0/resources/requests/cpu", "one"),
             "spec.roles[0].resources.requests[cpu]", "quantity \"one\""},
        Case{"LimitUnparsable", set("/spec/roles/0/resources/limits/memory", "4GB"),
             "spec.roles[0].resources.limits[memory]", "quantity \"4GB\""},
        Case{"RequestAboveLimit", set("/spec/roles/0/resources/requests/memory", "5Gi"),
             "spec.roles[0].resources.requests[memory]",
             "must be less than or equal to memory limit of 4Gi"},
        Case{"BelowMinResources", set("/spec/roles/0/resources/requests/cpu", "100m"),
             "spec.roles[0].resources.requests[cpu]",
             "must be at least 500m (minResources of role \"seed\")"},
        Case{"MissingMinResource", remove("/spec/roles/0/resources"),
             "spec.roles[0].resources.requests[memory]",
             "is required: role \"seed\" needs at least 1Gi (minResources)"},
        Case{"BelowMinStorage", set("/spec/roles/0/storage/size", "5Gi"),
             "spec.roles[0].storage.size", "must be at least 10Gi (minStorage of role \"seed\")"},
        Case{"NoStorageWithoutEphemeralMode", remove("/spec/roles/0/storage"),
             "spec.roles[0].storage",
             "is required: role \"seed\" needs persistent storage of at least 10Gi and does not "
             "support ephemeral mode"},
        Case{"StorageSizeZero", set("/spec/roles/1/storage", json::object{{"size", "0"}}),
             "spec.roles[1].storage.size", "must be greater than zero"},
        Case{"StorageSizeUnparsable", set("/spec/roles/0/storage/size", "big"),
             "spec.roles[0].storage.size", "quantity \"big\""},
        Case{"StorageSizeRequired", set("/spec/roles/1/storage", json::object{}),
             "spec.roles[1].storage.size", "is required"},
        Case{"StorageClassNotFound", set("/spec/roles/0/storage/storageClassName", "gold"),
             "spec.roles[0].storage.storageClassName", "StorageClass \"gold\" not found"},
        Case{"PodLabelKeySyntax", set("/spec/roles/0/podLabels/bad key", "x"),
             "spec.roles[0].podLabels[bad key]", "name part must consist of"},
        Case{"PodLabelValueSyntax", set("/spec/roles/0/podLabels/team", "-a-"),
             "spec.roles[0].podLabels[team]", "valid label value"},
        Case{"ServiceLabelValueTooLong",
             set("/spec/roles/0/serviceLabels/team", json::string(std::string(64, 'x'))),
             "spec.roles[0].serviceLabels[team]", "no more than 63 characters"},
        Case{"ReservedLabelPrefix", set("/spec/roles/0/podLabels/kstack.io~1role", "x"),
             "spec.roles[0].podLabels[kstack.io/role]", "prefix kstack.io/ is reserved"},
        Case{"AnnotationKeySyntax", set("/spec/roles/0/podAnnotations/-bad", "x"),
             "spec.roles[0].podAnnotations[-bad]", "name part must consist of"},
        Case{"AnnotationsTooLarge",
             set("/spec/roles/0/serviceAnnotations",
                 json::object{{"big", json::string(std::string(std::size_t{300} * 1024, 'x'))}}),
             "spec.roles[0].serviceAnnotations", "may not have more than 262144 bytes"},
        Case{"NodeSelectorSyntax", set("/spec/roles/0/nodeSelector/disk", "s s d"),
             "spec.roles[0].nodeSelector[disk]", "valid label value"},
        Case{"EnvName", set("/spec/roles/0/env/0/name", "1HEAP"), "spec.roles[0].env[0].name",
             "must not start with a digit"},
        Case{"EnvNameRequired", set("/spec/roles/0/env/0", json::object{{"value", "v"}}),
             "spec.roles[0].env[0].name", "is required"},
        Case{"ServiceAccountName", set("/spec/roles/0/serviceAccountName", "Runner"),
             "spec.roles[0].serviceAccountName", "RFC 1123 subdomain"},
        Case{"HeadlessServiceName", set("/metadata/name", "1db"), "metadata.name",
             "names the headless Service: a DNS-1035 label"},
        Case{"StatefulSetName", set("/metadata/name", json::string(kLongName)), "spec.roles[0].id",
             "StatefulSet name \"" + kLongName + "-seed\" must be no more than 52 characters"},
        Case{"PodName", set("/metadata/name", json::string(kLongName)), "spec.roles[0].id",
             "pod and Service name \"" + kLongName +
                 "-seed-2\" must be no more than 63 characters (DNS-1035 label limit)"},
        Case{"UidNamingStackNameLongerThanALabelValue",
             [](json::value& s) {
               put(s, "/metadata/name", json::string(std::string(80, 'a')));
               put(s, "/spec/namingScheme", "UID");
             },
             "metadata.name",
             "is the value of the label kstack.io/stack on every owned object: must be no more "
             "than 63 characters"},
        Case{"UnknownNamingSchemeStillChecksTheStackLabel",
             [](json::value& s) {
               put(s, "/metadata/name", json::string(std::string(80, 'a')));
               put(s, "/spec/namingScheme", "Random");
             },
             "metadata.name", "is the value of the label kstack.io/stack"}));

class StackAccepts : public ::testing::TestWithParam<Case> {};

TEST_P(StackAccepts, WithoutViolations) {
  Fixture f;
  json::value stack = base_stack();
  GetParam().mutate(stack);
  auto v = f.check(stack);
  EXPECT_TRUE(v.empty()) << catalog::join(v);
}

INSTANTIATE_TEST_SUITE_P(Rules, StackAccepts,
                         ::testing::Values(Case{"TheBaseStack", [](json::value&) {}, "", ""},
                                           Case{"PvcRetentionRetainOnBoth",
                                                set("/spec/persistentVolumeClaimRetentionPolicy",
                                                    json::object{{"whenScaled", "Retain"},
                                                                 {"whenDeleted", "Retain"}}),
                                                "", ""},
                                           Case{"NotYetDefaulted",
                                                [](json::value& s) {
                                                  drop(s, "/spec/appCatalog");
                                                  drop(s, "/spec/serviceType");
                                                  drop(s, "/spec/namingScheme");
                                                  drop(s, "/spec/roles/0/members");
                                                  drop(s, "/spec/roles/0/storage/storageClassName");
                                                },
                                                "", ""},
                                           Case{"RolloutSettings",
                                                [](json::value& s) {
                                                  put(s, "/spec/paused", true);
                                                  put(s, "/spec/roles/0/maxUnavailable", 1);
                                                  put(s, "/spec/roles/1/maxUnavailable", 3);
                                                },
                                                "", ""},
                                           Case{"SystemApp",
                                                [](json::value& s) {
                                                  put(s, "/spec/app", "spark");
                                                  drop(s, "/spec/appCatalog");
                                                  put(s, "/spec/roles",
                                                      json::array{json::object{{"id", "master"}}});
                                                },
                                                "", ""},
                                           Case{
                                               "LimitsOnlyMeetMinResources",
                                               set("/spec/roles/0/resources",
                                                   json::object{{"limits",
                                                                 {{"cpu", 1}, {"memory", "1Gi"}}}}),
                                               "", ""},
                                           Case{"EphemeralRoleWithoutStorage",
                                                set("/spec/roles/1/members", 4), "", ""},
                                           Case{"EmptyStorageClassMeansNone",
                                                set("/spec/roles/0/storage/storageClassName", ""),
                                                "", ""},
                                           Case{"ExactCardinality",
                                                set("/spec/roles/-", json::object{{"id", "arbiter"},
                                                                                  {"members", 1}}),
                                                "", ""},
                                           Case{"UidNamingFitsTheLongestLabelValueName",
                                                [](json::value& s) {
                                                  put(s, "/metadata/name",
                                                      json::string(std::string(63, 'a')));
                                                  put(s, "/spec/namingScheme", "UID");
                                                  put(s, "/spec/roles/1/members", 997);
                                                },
                                                "", ""},
                                           Case{"LongestNameThatFits",
                                                set("/metadata/name",
                                                    json::string(std::string(45, 'a'))),
                                                "", ""}));

TEST(StackRules, MemberRecoveryBoundsAreInclusiveAndEachFieldOptional) {
  Fixture f;
  json::value stack = base_stack();
  put(stack, "/spec/stopped", true);
  put(stack, "/spec/roles/0/memberRecovery",
      json::object{{"policy", "Off"}, {"nodeLostGraceSeconds", 0}, {"localStorage", "Recreate"}});
  put(stack, "/spec/roles/1/memberRecovery", json::object{{"nodeLostGraceSeconds", 86400}});
  auto ok = f.check(stack);
  EXPECT_TRUE(ok.empty()) << catalog::join(ok);
  put(stack, "/spec/roles/1/memberRecovery/nodeLostGraceSeconds", 86401);
  auto v = f.check(stack);
  ASSERT_EQ(v.size(), 1u) << catalog::join(v);
  EXPECT_EQ(v[0].to_string(),
            "spec.roles[1].memberRecovery.nodeLostGraceSeconds: must be between 0 and 86400 "
            "(seconds), not 86401");
}

TEST(StackRules, ReportsEveryViolationAtOnce) {
  Fixture f;
  json::value stack = base_stack();
  put(stack, "/spec/serviceType", "Nope");
  put(stack, "/spec/roles/0/members", 1);
  put(stack, "/spec/roles/0/storage/size", "1Gi");
  put(stack, "/spec/roles/0/podLabels/kstack.io~1stack", "x");
  put(stack, "/spec/roles/1/id", "client");
  auto v = f.check(stack);
  std::string msg = catalog::join(v);
  for (std::string_view field :
       {"spec.serviceType: ", "spec.roles[0].members: must be at least 2 for cardinality \"2+\"",
        "spec.roles[0].storage.size: ", "spec.roles[0].podLabels[kstack.io/stack]: ",
        "spec.roles[1].id: "}) {
    EXPECT_NE(msg.find(field), std::string::npos) << field << " not in " << msg;
  }
  EXPECT_EQ(v.size(), 5u) << msg;
}

// An invalid appCatalog is reported, and the app is still looked up (local, then system) so the
// rules that need it report too.
TEST(StackRules, InvalidAppCatalogDoesNotHideTheAppsRules) {
  Fixture f;
  json::value stack = base_stack();
  put(stack, "/spec/appCatalog", "global");
  put(stack, "/spec/roles/0/members", 1);
  put(stack, "/spec/roles/1/id", "client");
  auto v = f.check(stack);
  std::string msg = catalog::join(v);
  EXPECT_TRUE(has(v, "spec.appCatalog", "unsupported value \"global\"")) << msg;
  EXPECT_TRUE(has(v, "spec.roles[0].members", "must be at least 2 for cardinality \"2+\"")) << msg;
  EXPECT_TRUE(has(v, "spec.roles[1].id", "role \"client\" is not defined by AppType")) << msg;
  EXPECT_EQ(v.size(), 3u) << msg;

  put(stack, "/spec/app", "nope");
  v = f.check(stack);
  EXPECT_TRUE(has(v, "spec.app", "AppType \"nope\" not found in namespace \"team-a\" (local)"))
      << catalog::join(v);
}

// UID names are the ones checked: a Stack name too long for CrNameRole is fine under UID.
TEST(StackRules, UidNamingChecksTheNamesItProduces) {
  Fixture f;
  json::value stack = base_stack();
  put(stack, "/metadata/name", json::string(std::string(60, 'a')));
  EXPECT_FALSE(f.check(stack).empty());
  put(stack, "/spec/namingScheme", "UID");
  EXPECT_TRUE(f.check(stack).empty()) << catalog::join(f.check(stack));
}

TEST(StackRules, StorageWithoutClassNeedsADefault) {
  Fixture f(/*with_default_class=*/false);
  json::value stack = base_stack();
  drop(stack, "/spec/roles/0/storage/storageClassName");
  auto v = f.check(stack);
  EXPECT_TRUE(has(v, "spec.roles[0].storage.storageClassName",
                  "is required: no default "
                  "StorageClass"))
      << catalog::join(v);

  // The KStackConfig's default counts, but must exist.
  f.memory.add(
      yaml("kind: KStackConfig\nmetadata: {name: kstack-config, namespace: "
           "kstack-system}\nspec: {defaultStorageClassName: gold}\n"));
  v = f.check(stack);
  EXPECT_TRUE(has(v, "spec.roles[0].storage.storageClassName",
                  "the default StorageClass \"gold\" does not exist"))
      << catalog::join(v);
  f.memory.add(storage_class("gold", false));
  EXPECT_TRUE(f.check(stack).empty());
}

TEST(StackRules, OfflineCatalogSkipsStorageClassChecks) {
  catalog::MemoryCatalog offline(catalog::CatalogOptions{}, /*know_storage_classes=*/false);
  offline.add(yaml(kCassandra));
  json::value stack = base_stack();
  put(stack, "/spec/roles/0/storage/storageClassName", "whatever");
  EXPECT_TRUE(validate_stack_object(stack, offline.catalog()).empty());
}

TEST(StackRules, NamingSchemeDefaultFromKStackConfigDecidesNameChecks) {
  Fixture f;
  json::value stack = base_stack();
  drop(stack, "/spec/namingScheme");
  put(stack, "/metadata/name", json::string(std::string(60, 'a')));
  EXPECT_FALSE(f.check(stack).empty());
  f.memory.add(
      yaml("kind: KStackConfig\nmetadata: {name: kstack-config, namespace: "
           "kstack-system}\nspec: {defaultNamingScheme: UID}\n"));
  EXPECT_TRUE(f.check(stack).empty()) << catalog::join(f.check(stack));
}

}  // namespace
}  // namespace kstack::validator
