// cmd/stack_commands.h's pure parts: `scale` arguments and patch, durations, the kinds `apply`
// takes.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "cmd/stack_commands.h"

namespace kstack::cmd {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

TEST(ParseScaleRequests, RoleEqualsCountInOrder) {
  auto r = parse_scale_requests({"member=5", "proxy=0"});
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, (std::vector<std::pair<std::string, int>>{{"member", 5}, {"proxy", 0}}));
}

TEST(ParseScaleRequests, RefusesWhatIsNotRoleEqualsWholeNumber) {
  for (const char* bad :
       {"member", "=3", "member=", "member=-1", "member=2x", "member=1.5", "member=99999999999"}) {
    auto r = parse_scale_requests({bad});
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find(bad), std::string::npos) << r.error();
  }
  EXPECT_FALSE(parse_scale_requests({}));
  auto twice = parse_scale_requests({"a=1", "a=2"});
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().find("named twice"), std::string::npos);
}

TEST(ScalePatch, TestsTheRoleIdBeforeSettingItsMembers) {
  auto stack =
      json::parse(R"({"spec":{"roles":[{"id":"controller","members":1},{"id":"worker"}]}})");
  auto patch = scale_patch(stack, {{"worker", 4}, {"controller", 3}});
  ASSERT_TRUE(patch) << patch.error();
  EXPECT_EQ(*patch, json::parse(R"([
    {"op":"test","path":"/spec/roles/1/id","value":"worker"},
    {"op":"add","path":"/spec/roles/1/members","value":4},
    {"op":"test","path":"/spec/roles/0/id","value":"controller"},
    {"op":"add","path":"/spec/roles/0/members","value":3}])"));
}

TEST(ScalePatch, AnUnknownRoleIsRefusedNamingTheRolesThereAre) {
  auto stack = json::parse(R"({"spec":{"roles":[{"id":"a"},{"id":"b"}]}})");
  auto patch = scale_patch(stack, {{"c", 1}});
  ASSERT_FALSE(patch);
  EXPECT_EQ(patch.error(), "the Stack has no role \"c\" in spec.roles (it has: a, b)");
}

TEST(ParseDuration, UnitsAndSums) {
  EXPECT_EQ(parse_duration("90s").value(), 90s);
  EXPECT_EQ(parse_duration("10m").value(), 10min);
  EXPECT_EQ(parse_duration("1h30m").value(), 90min);
  EXPECT_EQ(parse_duration("500ms").value(), 500ms);
  EXPECT_EQ(parse_duration("0").value(), 0ms);
  for (const char* bad : {"", "10", "m", "5d", "1.5m", "-3s"}) {
    EXPECT_FALSE(parse_duration(bad)) << bad;
  }
}

TEST(RefuseKind, KstackKindsAndConfigMapsOnly) {
  auto obj = [](const char* api, const char* kind) {
    return json::value{{"apiVersion", api}, {"kind", kind}};
  };
  EXPECT_EQ(refuse_kind(obj("kstack.io/v1beta1", "Stack")), "");
  EXPECT_EQ(refuse_kind(obj("kstack.io/v1beta1", "AppType")), "");
  EXPECT_EQ(refuse_kind(obj("kstack.io/v1beta1", "KStackConfig")), "");
  EXPECT_EQ(refuse_kind(obj("v1", "ConfigMap")), "");
  EXPECT_NE(refuse_kind(obj("v1", "Secret")).find("kind Secret"), std::string::npos);
  EXPECT_NE(refuse_kind(obj("kstack.io/v1", "Stack")).find("expected kstack.io/v1beta1"),
            std::string::npos);
  EXPECT_EQ(refuse_kind(json::value{{"apiVersion", "v1"}}), "no kind");
}

}  // namespace
}  // namespace kstack::cmd
