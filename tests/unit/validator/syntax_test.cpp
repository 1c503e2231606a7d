#include "validator/rules/syntax.h"

#include <gtest/gtest.h>

namespace kstack::validator {
namespace {

TEST(Syntax, Dns1123Label) {
  EXPECT_TRUE(dns1123_label_errors("a").empty());
  EXPECT_TRUE(dns1123_label_errors("1-a-2").empty());
  EXPECT_TRUE(dns1123_label_errors(std::string(63, 'a')).empty());
  EXPECT_FALSE(dns1123_label_errors(std::string(64, 'a')).empty());
  for (auto bad : {"", "-a", "a-", "A", "a_b", "a.b"}) {
    EXPECT_FALSE(dns1123_label_errors(bad).empty()) << bad;
  }
}

TEST(Syntax, Dns1035LabelStartsWithALetter) {
  EXPECT_TRUE(dns1035_label_errors("db-1").empty());
  EXPECT_FALSE(dns1035_label_errors("1db").empty());
}

TEST(Syntax, Dns1123Subdomain) {
  EXPECT_TRUE(dns1123_subdomain_errors("a.b-c.d").empty());
  for (auto bad : {"", "a..b", ".a", "a.", "A.b", "a_b"}) {
    EXPECT_FALSE(dns1123_subdomain_errors(bad).empty()) << bad;
  }
  EXPECT_FALSE(dns1123_subdomain_errors(std::string(254, 'a')).empty());
}

TEST(Syntax, IanaServiceName) {
  EXPECT_TRUE(iana_svc_name_errors("http").empty());
  EXPECT_TRUE(iana_svc_name_errors("web-8080").empty());
  EXPECT_FALSE(iana_svc_name_errors("1234").empty());
  EXPECT_FALSE(iana_svc_name_errors("a--b").empty());
  EXPECT_FALSE(iana_svc_name_errors("abcdefghijklmnop").empty());
}

TEST(Syntax, QualifiedNamesAndLabelValues) {
  for (auto good : {"a", "A_b.c-d", "example.com/name", "kstack.io/stack"}) {
    EXPECT_TRUE(qualified_name_errors(good).empty()) << good;
  }
  for (auto bad : {"", "/a", "a/", "Bad_Prefix/a", "-a", "a b", "a/b/c"}) {
    EXPECT_FALSE(qualified_name_errors(bad).empty()) << bad;
  }
  EXPECT_FALSE(qualified_name_errors(std::string(64, 'a')).empty());
  EXPECT_TRUE(label_value_errors("").empty());
  EXPECT_TRUE(label_value_errors("v1.2_3-x").empty());
  EXPECT_FALSE(label_value_errors("-x").empty());
  EXPECT_FALSE(label_value_errors(std::string(64, 'x')).empty());
}

TEST(Syntax, MapsReportPathsWithTheKey) {
  Violations out;
  validate_labels({{"ok", "fine"}, {"bad key", "v"}}, "spec.podLabels", out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].field, "spec.podLabels[bad key]");
  out.clear();
  validate_annotations({{"Example.COM/Key", "v"}}, "a", out);  // keys compared lowercased
  EXPECT_TRUE(out.empty());
  validate_no_reserved_keys({{"kstack.io/x", "1"}, {"other.io/y", "2"}}, "m", out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_string(),
            "m[kstack.io/x]: the prefix kstack.io/ is reserved for the operator");
}

}  // namespace
}  // namespace kstack::validator
