#include "validator/rules/owned_fields.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace kstack::validator {
namespace {
namespace json = boost::json;

constexpr std::string_view kOperator = "system:serviceaccount:kstack-system:kstack";

json::value stack(json::object labels = {}, json::array finalizers = {},
                  json::value status = nullptr, json::object annotations = {}) {
  json::object md{{"name", "db"}, {"namespace", "team-a"}};
  if (!labels.empty()) md["labels"] = std::move(labels);
  if (!annotations.empty()) md["annotations"] = std::move(annotations);
  if (!finalizers.empty()) md["finalizers"] = std::move(finalizers);
  json::object o{{"kind", "Stack"}, {"metadata", std::move(md)}, {"spec", {{"app", "a"}}}};
  if (!status.is_null()) o["status"] = std::move(status);
  return o;
}

Violations check(std::string_view op, const json::value& before, const json::value& after,
                 std::string_view user = "alice", std::string_view sub = "") {
  return check_owned_fields(OwnedFieldsInput{op, sub, user, kOperator, &before, &after});
}

const json::value kNone;

TEST(OwnedFields, StatusSubresourceIsTheOperatorsOnly) {
  auto v =
      check("UPDATE", stack(), stack({}, {}, json::object{{"state", "ready"}}), "alice", "status");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(),
            "status: may only be written by the operator (" + std::string(kOperator) + ")");
  EXPECT_TRUE(
      check("UPDATE", stack(), stack({}, {}, json::object{{"state", "ready"}}), kOperator, "status")
          .empty());
}

TEST(OwnedFields, StatusChangedThroughTheMainResourceIsRefused) {
  auto before = stack({}, {}, json::object{{"state", "creating"}});
  auto after = stack({}, {}, json::object{{"state", "ready"}});
  auto v = check("UPDATE", before, after);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].field, "status");
  EXPECT_TRUE(check("UPDATE", before, before).empty());  // carried along unchanged: fine
  // On CREATE the API server drops status (status subresource), so it is not checked.
  EXPECT_TRUE(check("CREATE", kNone, after).empty());
}

TEST(OwnedFields, CleanupFinalizerAddedOrRemovedByAUserIsRefused) {
  json::array fin{"kstack.io/cleanup"};
  auto added = check("UPDATE", stack(), stack({}, fin));
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].to_string(),
            "metadata.finalizers: the finalizer kstack.io/cleanup may only "
            "be added by the operator (" +
                std::string(kOperator) + ")");
  auto removed = check("UPDATE", stack({}, fin), stack());
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_NE(removed[0].reason.find("removed"), std::string::npos);
  // On CREATE it is the mutating webhook's default (defaulting.h): any creator may carry it.
  EXPECT_TRUE(check("CREATE", kNone, stack({}, fin)).empty());
  // Other finalizers are the user's business; the operator may do anything.
  EXPECT_TRUE(check("UPDATE", stack(), stack({}, json::array{"example.com/mine"})).empty());
  EXPECT_TRUE(check("UPDATE", stack({}, fin), stack(), kOperator).empty());
}

TEST(OwnedFields, KstackPrefixedLabelsAndAnnotationsAreTheOperators) {
  auto before = stack({{"kstack.io/stack", "db"}, {"team", "a"}});
  auto changed = stack({{"kstack.io/stack", "other"}, {"team", "b"}});
  auto v = check("UPDATE", before, changed);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(),
            "metadata.labels[kstack.io/stack]: may only be changed by the "
            "operator (" +
                std::string(kOperator) + ")");
  auto removed = check("UPDATE", before, stack({{"team", "a"}}));
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_NE(removed[0].reason.find("removed"), std::string::npos);
  auto added = check("CREATE", kNone, stack({}, {}, nullptr, {{"kstack.io/config-hash", "1"}}));
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].field, "metadata.annotations[kstack.io/config-hash]");
  EXPECT_TRUE(check("UPDATE", before, stack({{"kstack.io/stack", "db"}, {"team", "z"}})).empty());
  EXPECT_TRUE(check("UPDATE", before, changed, kOperator).empty());
}

TEST(OwnedFields, DeleteIsNeverAboutOwnedFields) {
  EXPECT_TRUE(check("DELETE", stack({}, json::array{"kstack.io/cleanup"}), kNone).empty());
}

TEST(OwnedFields, ReportsEveryOwnedFieldAtOnce) {
  auto v = check("UPDATE", stack(),
                 stack({{"kstack.io/role", "x"}}, json::array{"kstack.io/cleanup"},
                       json::object{{"state", "ready"}}, {{"kstack.io/a", "b"}}));
  EXPECT_EQ(v.size(), 4u);
}

}  // namespace
}  // namespace kstack::validator
