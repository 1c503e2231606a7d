// Quantity parsing: exact values, rounding up, suffixes and exponents.
#include "tests/nodesim/quantity.h"

#include <gtest/gtest.h>

namespace kstack::nodesim {
namespace {

TEST(Quantity, ParsesPlainAndDecimalSuffixes) {
  EXPECT_EQ(parse_quantity("0"), 0);
  EXPECT_EQ(parse_quantity("42"), 42);
  EXPECT_EQ(parse_quantity("2k"), 2000);
  EXPECT_EQ(parse_quantity("1M"), 1000000);
  EXPECT_EQ(parse_quantity("3G"), 3000000000);
}

TEST(Quantity, ParsesBinarySuffixes) {
  EXPECT_EQ(parse_quantity("1Ki"), 1024);
  EXPECT_EQ(parse_quantity("128Mi"), 128LL << 20);
  EXPECT_EQ(parse_quantity("16Gi"), 16LL << 30);
  EXPECT_EQ(parse_quantity("1.5Gi"), 3LL << 29);
}

TEST(Quantity, CpuInMillicoresIsExact) {
  EXPECT_EQ(parse_quantity_milli("100m"), 100);
  EXPECT_EQ(parse_quantity_milli("0.1"), 100);
  EXPECT_EQ(parse_quantity_milli("1"), 1000);
  EXPECT_EQ(parse_quantity_milli("2.5"), 2500);
  EXPECT_EQ(parse_quantity_milli("1e3"), 1000000);
}

TEST(Quantity, RoundsUpLikeQuantityValue) {
  EXPECT_EQ(parse_quantity("100m"), 1);
  EXPECT_EQ(parse_quantity("1.2"), 2);
  EXPECT_EQ(parse_quantity_milli("1u"), 1);
  EXPECT_EQ(parse_quantity("1n"), 1);
}

TEST(Quantity, RefusesGarbageAndOverflow) {
  EXPECT_FALSE(parse_quantity(""));
  EXPECT_FALSE(parse_quantity("abc"));
  EXPECT_FALSE(parse_quantity("1Xi"));
  EXPECT_FALSE(parse_quantity("1e"));
  EXPECT_FALSE(parse_quantity("100000000000Ei"));
}

}  // namespace
}  // namespace kstack::nodesim
