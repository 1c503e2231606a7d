#include "kube/json_parser.h"

#include <cmath>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

namespace kstack::kube {
namespace {

namespace json = boost::json;

struct Number {
  std::string text;
  double exact;  // the compiler's (correctly rounded) reading of the same literal
};

// Boost.JSON 1.81's own parser reads the first two wrongly (the fuzzers found them); the rest
// are the edges of double's range and precision.
const std::vector<Number> kNumbers = {
    {"1.2E85", 1.2E85},
    {"33333.3333332333233", 33333.3333332333233},
    {"0.1", 0.1},
    {"-2.2250738585072014e-308", -2.2250738585072014e-308},
    {"5e-324", 5e-324},
    {"1.7976931348623157e308", 1.7976931348623157e308},
    {"123456789012345678901234567890", 123456789012345678901234567890.0},
    {"9007199254740993.0", 9007199254740993.0},
};

// Parses `text` fed in two parts split at `at`.
json::value parse_split(std::string_view text, std::size_t at, boost::system::error_code& ec) {
  JsonStreamParser p;
  p.write_some(text.substr(0, at), ec);
  if (!ec) p.write_some(text.substr(at), ec);
  if (!ec) p.finish(ec);
  return ec ? json::value() : p.release();
}

TEST(JsonParser, ReadsEveryNumberAsTheExactDoubleWhateverTheSplit) {
  for (const auto& n : kNumbers) {
    const std::string text = R"({"n":)" + n.text + "}";
    for (std::size_t at = 0; at <= text.size(); ++at) {
      boost::system::error_code ec;
      const json::value v = parse_split(text, at, ec);
      ASSERT_FALSE(ec) << n.text << " split at " << at << ": " << ec.message();
      EXPECT_EQ(v.at("n"), json::value(n.exact)) << n.text << " split at " << at;
    }
  }
}

TEST(JsonParser, ReadsBackEveryDoubleBoostJsonWrites) {
  for (const auto& n : kNumbers) {
    boost::system::error_code ec;
    const std::string written = json::serialize(json::value(n.exact));
    EXPECT_EQ(parse_json(written, ec), json::value(n.exact)) << n.text << " written " << written;
    EXPECT_FALSE(ec);
  }
}

TEST(JsonParser, RefusesNumbersBeyondTheRangeOfADouble) {
  const std::vector<std::string> texts = {"1e400",
                                          "-1e400",
                                          "1.797693134862316e308",
                                          "[0.5e309]",
                                          "1" + std::string(400, '0'),
                                          "{\"a\":-1" + std::string(320, '0') + "e-5}"};
  for (const std::string& text : texts) {
    boost::system::error_code ec;
    (void)parse_json(text, ec);
    EXPECT_EQ(ec, number_out_of_range()) << text.substr(0, 40) << ": " << ec.message();
    EXPECT_EQ(ec.message(), "number beyond the range of a double");
  }
}

TEST(JsonParser, NumbersTooCloseToZeroBecomeZeroKeepingTheirSign) {
  boost::system::error_code ec;
  const json::value tiny = parse_json("[1e-400, -0.0" + std::string(400, '0') + "1, 1e-330]", ec);
  ASSERT_FALSE(ec) << ec.message();
  for (const json::value& v : tiny.as_array()) EXPECT_EQ(v, json::value(0.0));
  EXPECT_FALSE(std::signbit(tiny.at(0).as_double()));
  EXPECT_TRUE(std::signbit(tiny.at(1).as_double()));
}

TEST(JsonParser, IntegersStayIntegers) {
  boost::system::error_code ec;
  const json::value v = parse_json("[-42, 18446744073709551615, 1.0]", ec);
  ASSERT_FALSE(ec);
  EXPECT_TRUE(v.at(0).is_int64());
  EXPECT_TRUE(v.at(1).is_uint64());
  EXPECT_TRUE(v.at(2).is_double());
}

TEST(JsonParser, ParseJsonRefusesAnythingButWhitespaceAfterTheValue) {
  boost::system::error_code ec;
  EXPECT_EQ(parse_json("{\"a\":1}  \n", ec), json::parse("{\"a\":1}"));
  EXPECT_FALSE(ec);
  (void)parse_json("{\"a\":1} 2", ec);
  EXPECT_EQ(ec, json::error::extra_data);
  (void)parse_json("{\"a\":", ec);
  EXPECT_TRUE(ec);
}

TEST(JsonParser, StreamParserStopsAfterOneValueAndStartsOverOnReset) {
  JsonStreamParser p;
  boost::system::error_code ec;
  const std::string_view two = "{\"a\":1.5}\n{\"b\":2}";
  const std::size_t used = p.write_some(two, ec);
  ASSERT_FALSE(ec);
  ASSERT_TRUE(p.done());
  EXPECT_EQ(p.release(), json::parse("{\"a\":1.5}"));
  p.reset();
  EXPECT_EQ(p.write_some(two.substr(used), ec), two.size() - used);
  ASSERT_TRUE(p.done());
  EXPECT_EQ(p.release(), json::parse("{\"b\":2}"));
}

}  // namespace
}  // namespace kstack::kube
