#include "validator/rules/warnings.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kstack::validator
