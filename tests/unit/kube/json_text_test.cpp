#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include "kube/json_parser.h"
#include "tests/fuzz/same_json.h"

namespace kstack::kube {
namespace {

namespace json = boost::json;
using testing::same_json;

struct Outcome {
  json::value value;
  boost::system::error_code ec;
  std::size_t offset = 0;
};

Outcome text(std::string_view s, std::size_t depth = 32) {
  Outcome o;
  o.value = parse_json_text(s, o.ec, o.offset, {}, depth);
  return o;
}

// parse_json_text against parse_json (Boost.JSON's parser): both refuse, or the same DOM.
void expect_as_parse_json(std::string_view s, std::size_t depth = 32) {
  json::parse_options options;
  options.max_depth = depth;
  boost::system::error_code boost_ec;
  const json::value expected = parse_json(s, boost_ec, {}, options);
  const Outcome got = text(s, depth);
  ASSERT_EQ(bool(boost_ec), bool(got.ec))
      << "text: " << s << "\nparse_json: " << boost_ec.message()
      << "\nparse_json_text: " << got.ec.message() << " at byte " << got.offset;
  if (got.ec) {
    EXPECT_LE(got.offset, s.size()) << s;
    EXPECT_EQ(boost_ec == number_out_of_range(), got.ec == number_out_of_range()) << s;
    return;
  }
  EXPECT_TRUE(same_json(expected, got.value))
      << "text: " << s << "\nparse_json: " << json::serialize(expected)
      << "\nparse_json_text: " << json::serialize(got.value);
}

const std::vector<std::string> kTexts = {"",
                                         " ",
                                         "{}",
                                         "[]",
                                         " {} ",
                                         "\t[\n]\r",
                                         "{ }",
                                         "[ ]",
                                         "{\"a\":1}",
                                         "{ \"a\" : 1 , \"b\" : [ ] }",
                                         "{\"a\":1,}",
                                         "[1,]",
                                         "[,1]",
                                         "{,}",
                                         "{\"a\"}",
                                         "{\"a\":}",
                                         "{1:2}",
                                         "{\"a\" 1}",
                                         "[1 2]",
                                         "{\"a\":1,\"a\":2}",
                                         "[[[]],{},[{}]]",
                                         "true",
                                         "false",
                                         "null",
                                         "tru",
                                         "nul",
                                         "falsey",
                                         "True",
                                         "[true,false,null]",
                                         "1",
                                         "-",
                                         "-0",
                                         "0",
                                         "00",
                                         "01",
                                         "-01",
                                         "1.",
                                         ".1",
                                         "1.5",
                                         "-0.0",
                                         "0.0",
                                         "1e",
                                         "1e+",
                                         "1e-",
                                         "1E5",
                                         "1e+5",
                                         "1e-5",
                                         "1.5e-3",
                                         "+1",
                                         "1 2",
                                         "[1]x",
                                         "9223372036854775807",
                                         "9223372036854775808",
                                         "-9223372036854775808",
                                         "-9223372036854775809",
                                         "18446744073709551615",
                                         "18446744073709551616",
                                         "99999999999999999999999",
                                         "1e400",
                                         "-1e400",
                                         "1e-400",
                                         "-1e-400",
                                         "1.7976931348623157e308",
                                         "1.7976931348623159e308",
                                         "4.9e-324",
                                         "33333.3333332333233",
                                         "1.2E85",
                                         "123456789012345678901234567890",
                                         "\"\"",
                                         "\"a\"",
                                         "\"a",
                                         "\"\\\"\"",
                                         "\"\\\\\"",
                                         "\"\\/\"",
                                         "\"\\b\\f\\n\\r\\t\"",
                                         "\"\\x\"",
                                         "\"\\u0041\"",
                                         "\"\\u00e9\"",
                                         "\"\\u20AC\"",
                                         "\"\\ud83d\\ude00\"",
                                         "\"\\uD83D\\uDE00\"",
                                         "\"\\ud800\"",
                                         "\"\\ud800x\"",
                                         "\"\\ud800\\n\"",
                                         "\"\\ud800\\u0041\"",
                                         "\"\\udc00\"",
                                         "\"\\u004\"",
                                         "\"\\u00G1\"",
                                         "\"\\u",
                                         "\"\\",
                                         "\"a\tb\"",
                                         "\"a\nb\"",
                                         "\"\x01\"",
                                         "\"\x7f\"",
                                         "\"caf\xc3\xa9\"",
                                         "\"\xe2\x82\xac\"",
                                         "\"\xf0\x9f\x98\x80\"",
                                         "\"\xc3\"",
                                         "\"\xc3x\"",
                                         "\"\xc0\x80\"",
                                         "\"\xc1\xbf\"",
                                         "\"\xe0\x80\x80\"",
                                         "\"\xe0\xa0\x80\"",
                                         "\"\xed\x9f\xbf\"",
                                         "\"\xed\xa0\x80\"",
                                         "\"\xef\xbf\xbf\"",
                                         "\"\xf0\x80\x80\x80\"",
                                         "\"\xf0\x90\x80\x80\"",
                                         "\"\xf4\x8f\xbf\xbf\"",
                                         "\"\xf4\x90\x80\x80\"",
                                         "\"\xf5\x80\x80\x80\"",
                                         "\"\xff\"",
                                         "\"\x80\"",
                                         "{\"caf\xc3\xa9\":\"\\u00e9\"}",
                                         "{\"a\\nb\":1}",
                                         "[\"\\u0000\"]"};

TEST(JsonText, AcceptsAndRefusesWhatParseJsonDoesWithTheSameDom) {
  for (const auto& s : kTexts) expect_as_parse_json(s);
}

// The 16-byte scan: a quote, an escape, a control character or a non-ASCII byte at every
// position of strings of every length around the block size, and escapes in runs.
TEST(JsonText, FindsEveryStopByteWhereverItSitsInTheBlock) {
  const std::vector<std::string> stops = {"\\\"", "\\n",  "\\u00e9", "\xc3\xa9",
                                          "\x01", "\xff", "\\"};
  for (std::size_t length = 0; length <= 40; ++length) {
    for (std::size_t at = 0; at <= length; ++at) {
      for (const auto& stop : stops) {
        std::string s = "[\"" + std::string(at, 'x') + stop + std::string(length - at, 'y') + "\"]";
        expect_as_parse_json(s);
        s = "{\"" + std::string(at, 'k') + stop + std::string(length - at, 'k') + "\":[" +
            std::string(at, ' ') + "1]}";
        expect_as_parse_json(s);
      }
    }
  }
  std::string run = "\"";
  for (int i = 0; i < 100; ++i) run += "ab\\\"c\\\\d\\u00e9";
  expect_as_parse_json(run + "\"");
}

// Two stop bytes at every pair of places in a string: escapes next to each other, across the
// block edge and after one another in one block, where the unescaping loop tells \" and \\ by
// its masks and copies the runs between them.
TEST(JsonText, FindsEveryPairOfStopBytesWhereverTheySit) {
  const std::vector<std::string> stops = {"\\\"",     "\\\\", "\\n", "\\u00e9",
                                          "\xc3\xa9", "\x01", "\\"};
  for (const auto& first : stops) {
    for (const auto& second : stops) {
      for (std::size_t at = 0; at <= 20; ++at) {
        for (std::size_t gap = 0; gap <= 20; ++gap) {
          // The string starts with an escape, so that the rest is read by the unescaping loop;
          // what follows the stops decides whether they are read with the block after theirs
          // in the text (40 bytes) or in the text's last block (17).
          for (std::size_t tail : {17, 40}) {
            expect_as_parse_json("[\"\\\"" + std::string(at, 'x') + first + std::string(gap, 'y') +
                                 second + std::string(tail, 'z') + "\"]");
          }
        }
      }
    }
  }
}

// Every prefix of a document is either a value of its own (a number cut short) or refused as
// incomplete, by both parsers alike.
TEST(JsonText, EveryPrefixOfADocumentAsParseJson) {
  const std::string doc =
      R"({"apiVersion":"v1","metadata":{"annotations":{"last":"{\"a\":[1,2.5,\"\\u00e9\"]}\n"},)"
      R"("labels":{"x":"y"}},"spec":[true,false,null,-12,3.25e-2,"caf)"
      "\xc3\xa9"
      R"(\ud83d\ude00"]})";
  expect_as_parse_json(doc);
  for (std::size_t n = 0; n < doc.size(); ++n) expect_as_parse_json(doc.substr(0, n));
}

TEST(JsonText, RefusesNestingDeeperThanTheLimit) {
  for (std::size_t depth = 1; depth <= 5; ++depth) {
    const std::string arrays = std::string(depth, '[') + std::string(depth, ']');
    EXPECT_FALSE(text(arrays, depth).ec) << arrays;
    EXPECT_EQ(text("[" + arrays + "]", depth).ec, json::error::too_deep) << arrays;
    std::string objects = "1";
    for (std::size_t i = 0; i < depth; ++i) objects = "{\"k\":" + objects + "}";
    EXPECT_FALSE(text(objects, depth).ec) << objects;
    EXPECT_EQ(text("[" + objects + "]", depth).ec, json::error::too_deep) << objects;
    expect_as_parse_json("[" + objects + "]", depth);
  }
}

TEST(JsonText, GivesIntegersTheirKindsAndOtherNumbersTheirExactDouble) {
  EXPECT_TRUE(same_json(text("[-0,9223372036854775807]").value,
                        json::array{std::int64_t{0}, std::numeric_limits<std::int64_t>::max()}));
  EXPECT_TRUE(same_json(text("-9223372036854775808").value,
                        json::value(std::numeric_limits<std::int64_t>::min())));
  EXPECT_TRUE(same_json(text("9223372036854775808").value,
                        json::value(std::uint64_t{9223372036854775808ULL})));
  EXPECT_TRUE(same_json(text("18446744073709551616").value, json::value(18446744073709551616.0)));
  EXPECT_TRUE(same_json(text("1.2E85").value, json::value(1.2E85)));
  EXPECT_TRUE(same_json(text("-1e-400").value, json::value(-0.0)));
  EXPECT_EQ(text("[1e400]").ec, number_out_of_range());
  EXPECT_EQ(text("[1e400]").offset, 6U);
  EXPECT_EQ(text("[0e2147483648]").ec, json::error::exponent_overflow);
  EXPECT_EQ(text("[1e-2147483648]").ec, json::error::exponent_overflow);
}

TEST(JsonText, UnescapesEveryEscape) {
  const Outcome o = text(R"(["\"\\\/\b\f\n\r\t", "\u0041\u00e9\u20ac\ud83d\ude00"])");
  ASSERT_FALSE(o.ec) << o.ec.message();
  EXPECT_EQ(o.value.at(0).as_string(), "\"\\/\b\f\n\r\t");
  EXPECT_EQ(o.value.at(1).as_string(), "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
}

TEST(JsonText, SaysWhereTheTextWentWrong) {
  Outcome o = text(R"({"a":x})");
  EXPECT_EQ(o.ec, json::error::syntax);
  EXPECT_EQ(o.offset, 5U);
  o = text(R"({"a":1} [)");
  EXPECT_EQ(o.ec, json::error::extra_data);
  EXPECT_EQ(o.offset, 8U);
  o = text(R"({"a":"b)");
  EXPECT_EQ(o.ec, json::error::incomplete);
  EXPECT_EQ(o.offset, 7U);
  o = text("\"\\udc00\"");
  EXPECT_EQ(o.ec, json::error::illegal_leading_surrogate);
  o = text("\"\\ud800\\u0041\"");
  EXPECT_EQ(o.ec, json::error::illegal_trailing_surrogate);
  o = text("\"ab\xed\xa0\x80\"");
  EXPECT_EQ(o.ec, json::error::syntax);
  EXPECT_EQ(o.offset, 3U);
}

// With members skipped: refused where the whole parse is (same error, same byte), else the
// whole parse's DOM with those members erased.
void expect_skipped(std::string_view s, const JsonSkips& skips) {
  const Outcome whole = text(s);
  Outcome got;
  got.value = parse_json_text(s, got.ec, got.offset, {}, 32, skips);
  ASSERT_EQ(whole.ec, got.ec) << s;
  if (whole.ec) {
    EXPECT_EQ(whole.offset, got.offset) << s;
    return;
  }
  json::value expected = whole.value;
  testing::erase_skipped(expected, skips.root());
  EXPECT_TRUE(same_json(expected, got.value))
      << "text: " << s << "\nexpected: " << json::serialize(expected)
      << "\nskipping: " << json::serialize(got.value);
}

TEST(JsonText, LeavesSkippedMembersOutOfTheDom) {
  const JsonSkips skips{{"drop"}, {"keep", "drop"}, {"keep", "deep", "drop"}};
  Outcome o;
  o.value = parse_json_text(
      R"({"drop":{"a":[1,{"b":"c"}]},"keep":{"drop":"x\"y","deep":{"drop":1e5,"z":2},"w":3},)"
      R"("list":[{"drop":1}],"other":{"drop":true}})",
      o.ec, o.offset, {}, 32, skips);
  ASSERT_FALSE(o.ec) << o.ec.message();
  EXPECT_TRUE(same_json(o.value, json::parse(R"({"keep":{"deep":{"z":2},"w":3},)"
                                             R"("list":[{"drop":1}],"other":{"drop":true}})")))
      << json::serialize(o.value);
  // Keys are compared unescaped; the root itself is never skipped; a path through a non-object
  // skips nothing.
  o.value = parse_json_text(R"({"dr\u006fp":1,"keep":"drop"})", o.ec, o.offset, {}, 32, skips);
  ASSERT_FALSE(o.ec) << o.ec.message();
  EXPECT_TRUE(same_json(o.value, json::parse(R"({"keep":"drop"})"))) << json::serialize(o.value);
  for (const auto& s : kTexts) expect_skipped(s, JsonSkips{{"a"}, {"caf\xc3\xa9"}});
  for (const char* s : {R"({"drop":1,"drop":{"x":1}})", R"({"keep":{"drop":1},"keep":{"y":2}})",
                        R"({"keep":{"w":1},"keep":{"drop":[2],"w":3}})"}) {
    expect_skipped(s, skips);  // duplicate keys: the last one wins, as in the whole DOM
  }
}

// What is skipped is parsed as strictly as the rest, and a refusal inside it names the same
// byte: a review is not accepted because the bad part is in a member nobody reads.
TEST(JsonText, RefusesASkippedMemberAsTheWholeParseDoes) {
  const JsonSkips skips{{"drop"}};
  const std::string doc =
      R"({"drop":{"s":"\u00e9\ud83d\ude00","n":[1e400,-0,9223372036854775808],"t":true},"k":1})";
  expect_skipped(doc, skips);
  for (std::size_t n = 0; n < doc.size(); ++n) expect_skipped(doc.substr(0, n), skips);
  for (const char* bad : {R"({"drop":[1e400]})", R"({"drop":{"a":x}})", R"({"drop":"\ud800"})",
                          "{\"drop\":\"\xff\"}", R"({"drop":[[[[1]]]]})", R"({"drop":{"a" 1}})"}) {
    Outcome o;
    o.value = parse_json_text(bad, o.ec, o.offset, {}, 3, skips);
    const Outcome whole = text(bad, 3);
    EXPECT_TRUE(o.ec) << bad;
    EXPECT_EQ(o.ec, whole.ec) << bad;
    EXPECT_EQ(o.offset, whole.offset) << bad;
  }
}

// A skipped string's escapes are told 64 bytes at a time from where its backslashes are
// (json_text.cpp, skip_escaped_string): every run of backslashes, of every length, ending at
// every place around a block's edge, before every kind of byte; then escaped JSON at random.
// Each is read as the whole parse reads it: the same refusal at the same byte, or the same DOM
// without the member.
TEST(JsonText, SkipsEscapedStringsAsTheWholeParseReadsThem) {
  const JsonSkips skips{{"drop"}};
  for (std::size_t at = 0; at < 140; ++at) {
    for (std::size_t run = 1; run <= 6; ++run) {
      for (const char* after :
           {"\"", "n", "u00e9", "ud83d\\ude00", "q", "/", "\x01", "\xc3\xa9", "\xff", "b"}) {
        // The string starts with an escape (the skip begins at the first backslash).
        const std::string body =
            "\\\"" + std::string(at, 'a') + std::string(run, '\\') + after + std::string(70, 'z');
        expect_skipped(R"({"drop":")" + body + R"(","k":1})", skips);
        expect_skipped(R"({"drop":")" + body + R"("})", skips);
        expect_skipped(R"({"drop":")" + body, skips);  // the text ends inside the string
      }
    }
  }
  std::mt19937 random(38);  // fixed: the same strings every run
  const std::string alphabet = "\\\\\\\\\"\"ab/nrtu0dD8\x1f\xc3\xa9 ";
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<std::size_t> length(0, 300);
  for (int i = 0; i < 20000; ++i) {
    std::string body = "\\\\";
    for (std::size_t n = length(random); n > 0; --n) body += alphabet[pick(random)];
    expect_skipped(R"({"drop":[")" + body + R"("],"k":"v"})", skips);
  }
}

TEST(JsonText, AllocatesTheDomFromTheStorageGiven) {
  json::monotonic_resource arena;
  boost::system::error_code ec;
  std::size_t offset = 0;
  const json::value v = parse_json_text(R"({"a":["x","a string longer than the small buffer"]})",
                                        ec, offset, json::storage_ptr(&arena));
  ASSERT_FALSE(ec);
  EXPECT_EQ(v.storage().get(), &arena);
  EXPECT_EQ(v.at("a").storage().get(), &arena);
}

}  // namespace
}  // namespace kstack::kube
