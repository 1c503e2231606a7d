#include "catalog/quantity.h"

#include <gtest/gtest.h>

namespace kstack::catalog {
namespace {

Quantity q(std::string_view text) {
  auto r = Quantity::parse(text);
  EXPECT_TRUE(r.has_value()) << text << ": " << (r ? "" : r.error().message);
  return r ? *r : Quantity{};
}

struct CompareCase {
  std::string_view a, b;
  int expected;  // sign of a <=> b
};

class QuantityCompare : public ::testing::TestWithParam<CompareCase> {};

TEST_P(QuantityCompare, ComparesExactly) {
  const auto& c = GetParam();
  auto cmp = q(c.a) <=> q(c.b);
  int got = std::is_lt(cmp) ? -1 : (std::is_gt(cmp) ? 1 : 0);
  EXPECT_EQ(got, c.expected) << c.a << " vs " << c.b;
}

INSTANTIATE_TEST_SUITE_P(
    Table, QuantityCompare,
    ::testing::Values(
        CompareCase{"500m", "0.5", 0}, CompareCase{"1", "1000m", 0}, CompareCase{"1Gi", "1G", 1},
        CompareCase{"1Gi", "1073741824", 0}, CompareCase{"1.5G", "1500M", 0},
        CompareCase{"1e3", "1k", 0}, CompareCase{"1E3", "1000", 0}, CompareCase{"1E", "1e18", 0},
        CompareCase{"2", "1999m", 1}, CompareCase{"100n", "0.0000001", 0},
        CompareCase{"1u", "1000n", 0}, CompareCase{"1Ki", "1024", 0},
        CompareCase{"0.5Gi", "512Mi", 0}, CompareCase{"1Ei", "1152921504606846976", 0},
        CompareCase{"+1", "1", 0}, CompareCase{"-1", "0", -1}, CompareCase{".5", "500m", 0},
        CompareCase{"5.", "5", 0}, CompareCase{"0", "0Gi", 0}, CompareCase{"1e-3", "1m", 0},
        CompareCase{"3Mi", "3M", 1}, CompareCase{"10Gi", "10737418240", 0},
        CompareCase{"1000Ei", "1e21", 1},
        // Below 1n rounds up to 1n, as Kubernetes does.
        CompareCase{"0.0000000001", "1n", 0}, CompareCase{"1.0000000001", "1000000001n", 0},
        // Zeros around the significant digits, on both sides of the dot.
        CompareCase{"000.000100", "100u", 0}, CompareCase{"0012.3400k", "12340", 0},
        CompareCase{"100.001", "100001m", 0}, CompareCase{"10.10", "10100m", 0},
        CompareCase{"0100", "100", 0}, CompareCase{"00.0", "0", 0}));

class QuantityInvalid : public ::testing::TestWithParam<std::string_view> {};

TEST_P(QuantityInvalid, IsRefusedWithTheTextInTheMessage) {
  auto r = Quantity::parse(GetParam());
  ASSERT_FALSE(r.has_value()) << GetParam();
  EXPECT_EQ(r.error().kind, kube::ErrorKind::kInvalid);
  EXPECT_NE(r.error().message.find(std::string(GetParam())), std::string::npos)
      << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(Table, QuantityInvalid,
                         ::testing::Values("", "abc", "1GB", "1gi", "Gi", "1.2.3", "1e", "1e+",
                                           "1 Gi", "1Ki1", "--1", ".", "1e99999", "0x10",
                                           "1000000000000000000000000000000000000000"));

TEST(Quantity, ValueAndMilliValueRoundUp) {
  EXPECT_EQ(q("1500m").value(), 2);
  EXPECT_EQ(q("1500m").milli_value(), 1500);
  EXPECT_EQ(q("1n").milli_value(), 1);
  EXPECT_EQ(q("2Gi").value(), 2147483648);
  EXPECT_EQ(q("-1500m").value(), -1);
  EXPECT_EQ(q("1e20").value(), INT64_MAX);  // saturates
}

// The scaling by the suffix at the edges: the largest magnitude kept (10^36 nanos) and what
// just passes it, in one factor or through the 128-bit range.
TEST(Quantity, ScalesUpToTheLimitAndRefusesBeyondIt) {
  EXPECT_EQ(q("1e27"), q("1000000000000000000000000000"));
  EXPECT_EQ(q("1000000Ei"), q("1152921504606846976000000"));
  EXPECT_EQ(q("0.5e-9"), q("1n"));
  for (std::string_view text :
       {"2e27", "1e28", "1e38", "1e39", "1000e999", "999999999999999999999999999999999999Ei",
        "999999999999999999999999999999999999e9"}) {
    auto r = Quantity::parse(text);
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_NE(r.error().message.find("is too large"), std::string::npos) << r.error().message;
  }
}

// At most 36 significant digits, counted across the dot and without the zeros around them.
TEST(Quantity, CountsSignificantDigitsAcrossTheDot) {
  EXPECT_EQ(q("123456789012345678.901234567890123456n"),
            q("123456789012345678901234567890123456e-27"));
  EXPECT_EQ(q("000123456789012345678.901234567890123456000n"),
            q("123456789012345678.901234567890123456n"));
  auto r = Quantity::parse("123456789012345678.9012345678901234567n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("too many significant digits"), std::string::npos)
      << r.error().message;
}

TEST(Quantity, SignAndZero) {
  EXPECT_EQ(q("0").sign(), 0);
  EXPECT_TRUE(q("0m").is_zero());
  EXPECT_EQ(q("-2").sign(), -1);
}

}  // namespace
}  // namespace kstack::catalog
