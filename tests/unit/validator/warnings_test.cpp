#include "validator/rules/warnings.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/memory_catalog.h"
#include "catalog/parse.h"
#include "catalog/yaml.h"

namespace kstack::validator {
namespace {

boost::json::value yaml(std::string_view text) {
  auto v = catalog::parse_yaml(text);
  EXPECT_TRUE(v.has_value());
  return v ? *v : boost::json::value{};
}

TEST(Warnings, KubeDirectorOnlyStackFieldsAreNotYetSupported) {
  auto w = field_warnings("Stack", yaml(R"(spec:
  app: a
  connections: {secrets: [s]}
  roles:
    - {id: r, secret: {name: s}, fileInjections: []}
)"));
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0], "spec.connections: not yet supported by kstack; ignored");
  EXPECT_EQ(w[1], "spec.roles[0].secret: not yet supported by kstack; ignored");
  EXPECT_EQ(w[2], "spec.roles[0].fileInjections: not yet supported by kstack; ignored");
}

TEST(Warnings, IgnoredAppTypeAndConfigFields) {
  auto app = field_warnings("AppType", yaml(R"(spec:
  defaultMaxLogSizeDump: 512
  defaultConfigPackage: {packageURL: "file:///x", useNewSetupLayout: true}
  roles: [{id: r, maxLogSizeDump: 1}]
)"));
  ASSERT_EQ(app.size(), 3u);
  EXPECT_EQ(app[1],
            "spec.defaultConfigPackage.useNewSetupLayout: has no effect in kstack; ignored");
  auto cfg = field_warnings("KStackConfig", yaml("spec: {masterEncryptionKey: abc}\n"));
  ASSERT_EQ(cfg.size(), 1u);
  EXPECT_EQ(cfg[0], "spec.masterEncryptionKey: has no effect in kstack; ignored");
}

TEST(Warnings, CleanObjectsHaveNone) {
  EXPECT_TRUE(field_warnings("Stack", yaml("spec: {app: a, roles: [{id: r}]}\n")).empty());
  EXPECT_TRUE(field_warnings("Other", yaml("spec: {connections: {}}\n")).empty());
}

// minAvailable (docs/api.md "Disruption budgets"): a role no larger than its integer quorum
// can never have a member evicted; the Stack is still valid.
constexpr std::string_view kQuorumApp = R"(kind: AppType
metadata: {name: zk, namespace: team-a}
spec:
  label: {name: ZooKeeper}
  distroID: zk
  version: "3"
  configSchemaVersion: 1
  defaultImageRepoTag: zk:3
  roles:
    - {id: server, cardinality: "1+", minAvailable: 3}
    - {id: observer, cardinality: "0+", minAvailable: "50%"}
    - {id: client, cardinality: "0+"}
)";

std::vector<std::string> stack_warnings_for(std::string_view roles_yaml) {
  catalog::MemoryCatalog memory;
  memory.add(yaml(kQuorumApp));
  auto v = yaml(std::string("kind: Stack\nmetadata: {name: s, namespace: team-a}\nspec:\n  app: "
                            "zk\n  roles:\n") +
                std::string(roles_yaml));
  catalog::FieldErrors errors;
  auto stack = catalog::decode_stack(v, errors);
  EXPECT_TRUE(errors.empty()) << catalog::join(errors);
  return stack_warnings(stack, memory.catalog());
}

TEST(Warnings, ARoleNoLargerThanItsIntegerMinAvailableIsWarnedAbout) {
  auto w = stack_warnings_for("    - {id: server, members: 2}\n");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0],
            "spec.roles[0].members: 2 members of role \"server\", not more than minAvailable 3 of "
            "AppType \"zk\": the PodDisruptionBudget allows no eviction, so no member of it can "
            "be evicted (node drains wait)");
  // members absent: the cardinality minimum (1) applies.
  auto defaulted = stack_warnings_for("    - {id: server}\n");
  ASSERT_EQ(defaulted.size(), 1u);
  EXPECT_NE(defaulted[0].find("1 member of role"), std::string::npos) << defaulted[0];
  // As many members as the budget keeps: no eviction either.
  auto equal = stack_warnings_for("    - {id: server, members: 3}\n");
  ASSERT_EQ(equal.size(), 1u);
  EXPECT_NE(equal[0].find("3 members of role"), std::string::npos) << equal[0];
}

TEST(Warnings, EnoughMembersPercentagesAndRolesWithoutQuorumAreNotWarnedAbout) {
  EXPECT_TRUE(stack_warnings_for("    - {id: server, members: 5}\n").empty());
  EXPECT_TRUE(stack_warnings_for("    - {id: server, members: 4}\n").empty());
  EXPECT_TRUE(stack_warnings_for("    - {id: server, members: 4}\n"
                                 "    - {id: observer, members: 1}\n"
                                 "    - {id: client, members: 1}\n")
                  .empty());
  // No member, nothing to evict; an unknown app is validation's business.
  EXPECT_TRUE(stack_warnings_for("    - {id: server, members: 0}\n").empty());
  catalog::MemoryCatalog empty;
  catalog::FieldErrors errors;
  auto stack = catalog::decode_stack(
      yaml("kind: Stack\nmetadata: {name: s, namespace: team-a}\nspec: {app: zk, roles: [{id: "
           "server, members: 1}]}\n"),
      errors);
  EXPECT_TRUE(stack_warnings(stack, empty.catalog()).empty());
}

}  // namespace
}  // namespace kstack::validator
