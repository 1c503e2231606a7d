#include "validator/rules/config_rules.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/memory_catalog.h"
#include "catalog/yaml.h"

namespace kstack::validator {
namespace {
namespace json = boost::json;

json::value config(std::string_view spec_yaml, std::string_view name = "kstack-config",
                   std::string_view ns = "kstack-system") {
  auto v = catalog::parse_yaml(std::string("kind: KStackConfig\nspec:\n") + std::string(spec_yaml));
  EXPECT_TRUE(v.has_value()) << (v ? "" : v.error().message);
  json::value out = v ? *v : json::value{};
  out.as_object()["metadata"] = json::object{{"name", name}, {"namespace", ns}};
  return out;
}

struct Fixture {
  catalog::MemoryCatalog memory;
  Fixture() {
    memory.add(json::object{{"kind", "StorageClass"}, {"metadata", {{"name", "fast"}}}});
  }
  Violations check(const json::value& c) {
    return validate_kstack_config_object(c, memory.catalog());
  }
};

std::string first(const Violations& v) { return v.empty() ? "" : v[0].to_string(); }

TEST(KStackConfigRules, AcceptsAFullValidConfig) {
  Fixture f;
  auto v = f.check(config(R"(  defaultStorageClassName: fast
  defaultServiceType: NodePort
  defaultNamingScheme: UID
  clusterSvcDomainBase: .svc.example.org
  podLabels: {team: platform}
  podAnnotations: {prometheus.io/scrape: "true"}
  serviceLabels: {a: b}
  serviceAnnotations: {c: d}
)"));
  EXPECT_TRUE(v.empty()) << catalog::join(v);
}

TEST(KStackConfigRules, NameMustBeKStackConfig) {
  Fixture f;
  EXPECT_EQ(first(f.check(config("  {}\n", "my-config"))),
            "metadata.name: must be \"kstack-config\": the operator reads only that object");
}

TEST(KStackConfigRules, NamespaceMustBeTheOperators) {
  Fixture f;
  EXPECT_EQ(first(f.check(config("  {}\n", "kstack-config", "default"))),
            "metadata.namespace: must be the operator's namespace \"kstack-system\"");
}

TEST(KStackConfigRules, EnumsAreChecked) {
  Fixture f;
  auto v = f.check(config("  defaultServiceType: Headless\n  defaultNamingScheme: Pretty\n"));
  ASSERT_EQ(v.size(), 2u) << catalog::join(v);
  EXPECT_EQ(v[0].field, "spec.defaultServiceType");
  EXPECT_EQ(v[1].field, "spec.defaultNamingScheme");
}

TEST(KStackConfigRules, ClusterSvcDomainBaseStartsWithADot) {
  Fixture f;
  EXPECT_EQ(first(f.check(config("  clusterSvcDomainBase: svc.cluster.local\n"))).substr(0, 27),
            "spec.clusterSvcDomainBase: ");
  EXPECT_FALSE(f.check(config("  clusterSvcDomainBase: .Bad_Domain\n")).empty());
}

TEST(KStackConfigRules, DefaultStorageClassMustExist) {
  Fixture f;
  EXPECT_EQ(first(f.check(config("  defaultStorageClassName: gold\n"))),
            "spec.defaultStorageClassName: StorageClass \"gold\" not found");
  catalog::MemoryCatalog offline(catalog::CatalogOptions{}, false);
  EXPECT_TRUE(
      validate_kstack_config_object(config("  defaultStorageClassName: gold\n"), offline.catalog())
          .empty());
}

TEST(KStackConfigRules, LabelMapsAreValidAndUnreserved) {
  Fixture f;
  auto v = f.check(config(R"(  podLabels: {"kstack.io/stack": x}
  serviceLabels: {ok: "not ok"}
  podAnnotations: {"/bad": x}
)"));
  std::string msg = catalog::join(v);
  EXPECT_NE(msg.find("spec.podLabels[kstack.io/stack]: the prefix kstack.io/ is reserved"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("spec.serviceLabels[ok]: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("spec.podAnnotations[/bad]: prefix part must be non-empty"), std::string::npos)
      << msg;
}

TEST(KStackConfigRules, TypeErrorsComeFromTheDecoder) {
  Fixture f;
  EXPECT_EQ(first(f.check(config("  defaultServiceType: 3\n"))),
            "spec.defaultServiceType: must be a string, not a number");
}

TEST(KStackConfigRules, MemberRecoveryValuesAreCheckedNamingTheField) {
  Fixture f;
  EXPECT_TRUE(f.check(config("  memberRecovery: {policy: \"Off\", nodeLostGraceSeconds: 0, "
                             "localStorage: Recreate}\n"))
                  .empty());
  EXPECT_TRUE(f.check(config("  memberRecovery: {policy: Reschedule, nodeLostGraceSeconds: 86400, "
                             "localStorage: Keep}\n"))
                  .empty());
  auto v = f.check(config(
      "  memberRecovery: {policy: Never, nodeLostGraceSeconds: 90000, localStorage: Delete}\n"));
  ASSERT_EQ(v.size(), 3u) << catalog::join(v);
  EXPECT_EQ(v[0].to_string(),
            "spec.memberRecovery.policy: must be one of \"Reschedule\", \"Off\" (not \"Never\")");
  EXPECT_EQ(v[1].to_string(),
            "spec.memberRecovery.nodeLostGraceSeconds: must be between 0 and 86400 (seconds), "
            "not 90000");
  EXPECT_EQ(v[2].to_string(),
            "spec.memberRecovery.localStorage: must be one of \"Keep\", \"Recreate\" (not "
            "\"Delete\")");
  EXPECT_EQ(first(f.check(config("  memberRecovery: {nodeLostGraceSeconds: \"60\"}\n"))),
            "spec.memberRecovery.nodeLostGraceSeconds: must be an integer, not a string");
}

}  // namespace
}  // namespace kstack::validator
