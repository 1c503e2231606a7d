#include "informer/packed.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace kstack::informer {
namespace {
namespace json = boost::json;

// Every kind of value, empty containers and strings, keys needing RFC 6901 escapes, and
// strings of every length modulo 4 (the padding after the NUL).
json::value sample() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "cm", "namespace": "ns", "resourceVersion": "42",
                 "labels": {"a/b": "slash", "c~d": "tilde", "": "empty key"},
                 "ownerReferences": [{"uid": "u-1", "controller": true}, {"uid": "u-2"}]},
    "data": {"s0": "", "s1": "a", "s2": "ab", "s3": "abc", "s4": "abcd", "s5": "abcde"},
    "numbers": [0, -1, 9223372036854775807, -9223372036854775808, 18446744073709551615,
                1.5, -0.25, 1e300],
    "flags": [true, false, null],
    "empty": {"object": {}, "array": [], "string": ""},
    "nested": [[1, [2, [3]]], {"x": {"y": {"z": "deep"}}}]
  })");
}

TEST(Packed, RoundTripsEveryKindToAnEqualDom) {
  const auto dom = sample();
  const auto packed = pack(dom);
  EXPECT_EQ(packed->to_value(), dom);
  EXPECT_TRUE(*packed == dom);
  EXPECT_TRUE(*packed == *pack(dom));
  EXPECT_EQ(packed_size(*packed), packed_size(dom));
  EXPECT_EQ(packed_size(dom) % 4, 0u);
}

TEST(Packed, EqualityNoticesEachKindOfDifference) {
  const auto packed = pack(sample());
  for (const char* pointer : {"/metadata/name", "/numbers/2", "/numbers/5", "/flags/0", "/flags/2",
                              "/empty/object", "/nested/1/x/y/z"}) {
    auto changed = sample();
    boost::system::error_code ec;
    auto* at = changed.find_pointer(pointer, ec);
    ASSERT_NE(at, nullptr) << pointer;
    *at = "other";
    EXPECT_FALSE(*packed == changed) << pointer;
    EXPECT_FALSE(*packed == *pack(changed)) << pointer;
  }
  auto extra = sample();
  extra.as_object()["data"].as_object()["s6"] = "new";
  EXPECT_FALSE(*packed == extra);
  auto shorter = sample();
  shorter.as_object()["flags"].as_array().pop_back();
  EXPECT_FALSE(*packed == shorter);
  // Numbers compare by value across int64 and uint64, as Boost.JSON does.
  EXPECT_TRUE(*pack(json::value(std::uint64_t{7})) == json::value(std::int64_t{7}));
  EXPECT_FALSE(*pack(json::value(-1)) == json::value(std::uint64_t{18446744073709551615u}));
  EXPECT_FALSE(*pack(json::value(1.0)) == json::value(1));
}

TEST(Packed, ReadsInPlaceLikeADom) {
  const auto p = pack(sample());
  const auto& root = p->as_object();
  EXPECT_EQ(root.size(), 8u);
  EXPECT_EQ(root.at("kind").as_string(), "ConfigMap");
  EXPECT_STREQ(root.at("apiVersion").get_string().c_str(), "v1");
  const auto* md = root.if_contains("metadata");
  ASSERT_NE(md, nullptr);
  ASSERT_TRUE(md->is_object());
  EXPECT_EQ(md->get_object().if_contains("missing"), nullptr);
  EXPECT_FALSE(md->get_object().contains("missing"));
  EXPECT_EQ(md->get_object().at("labels").get_object().at("").get_string(), "empty key");

  const auto& data = root.at("data").get_object();
  for (const char* key : {"s0", "s1", "s2", "s3", "s4", "s5"}) {
    const auto& s = data.at(key).get_string();
    EXPECT_EQ(s.size(), std::string_view(key)[1] - '0') << key;
    EXPECT_EQ(std::string(s), std::string("abcde").substr(0, s.size())) << key;
    EXPECT_EQ(s.c_str()[s.size()], '\0') << key;
  }

  const auto& numbers = root.at("numbers").get_array();
  ASSERT_EQ(numbers.size(), 8u);
  EXPECT_EQ(numbers[0].get_int64(), 0);
  EXPECT_EQ(numbers[1].as_int64(), -1);
  EXPECT_EQ(numbers[2].get_int64(), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(numbers[3].get_int64(), std::numeric_limits<std::int64_t>::min());
  EXPECT_TRUE(numbers[4].is_uint64());
  EXPECT_EQ(numbers[4].get_uint64(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(numbers[5].get_double(), 1.5);
  EXPECT_EQ(numbers[7].get_double(), 1e300);
  std::error_code ec;
  EXPECT_EQ(numbers[2].to_number<std::int64_t>(ec), std::numeric_limits<std::int64_t>::max());
  EXPECT_FALSE(ec);
  EXPECT_EQ(numbers[5].to_number<std::int64_t>(ec), 0);
  EXPECT_TRUE(ec) << "1.5 is not an integer";
  EXPECT_EQ(numbers[1].to_number<std::uint64_t>(ec), 0u);
  EXPECT_TRUE(ec) << "-1 is not unsigned";

  const auto& flags = root.at("flags").get_array();
  EXPECT_TRUE(flags[0].as_bool());
  EXPECT_FALSE(flags[1].get_bool());
  EXPECT_TRUE(flags[2].is_null());
  const auto& empty = root.at("empty").get_object();
  EXPECT_TRUE(empty.at("object").get_object().empty());
  EXPECT_EQ(empty.at("object").get_object().begin(), empty.at("object").get_object().end());
  EXPECT_TRUE(empty.at("array").get_array().empty());
  EXPECT_TRUE(empty.at("string").get_string().empty());
}

TEST(Packed, IteratesMembersInOrderWithStructuredBindings) {
  const auto p = pack(sample());
  std::vector<std::string> keys;
  for (const auto& [key, value] : p->get_object().at("data").get_object()) {
    keys.emplace_back(key);
    EXPECT_TRUE(value.is_string());
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"s0", "s1", "s2", "s3", "s4", "s5"}));
  std::vector<std::string> uids;
  for (const auto& ref :
       p->get_object().at("metadata").get_object().at("ownerReferences").get_array()) {
    uids.emplace_back(ref.get_object().at("uid").get_string());
  }
  EXPECT_EQ(uids, (std::vector<std::string>{"u-1", "u-2"}));
  const auto& numbers = p->get_object().at("numbers").get_array();
  EXPECT_EQ(numbers.end() - numbers.begin(), 8);
  EXPECT_EQ(numbers.begin()[4].get_uint64(), std::numeric_limits<std::uint64_t>::max());
}

TEST(Packed, FindPointerFollowsRfc6901) {
  const auto p = pack(sample());
  std::error_code ec;
  const auto* v = p->find_pointer("/metadata/labels/a~1b", ec);
  ASSERT_NE(v, nullptr) << ec.message();
  EXPECT_EQ(v->get_string(), "slash");
  v = p->find_pointer("/metadata/labels/c~0d", ec);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->get_string(), "tilde");
  v = p->find_pointer("/metadata/labels/", ec);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->get_string(), "empty key");
  v = p->find_pointer("/nested/0/1/1/0", ec);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->get_int64(), 3);
  EXPECT_EQ(p->find_pointer("", ec), p.get());
  for (const char* bad : {"/nested/00", "/nested/2", "/nested/-", "/nested/x", "/kind/x",
                          "/missing", "no-slash", "/metadata/labels/a~2b", "/metadata/labels/~"}) {
    EXPECT_EQ(p->find_pointer(bad, ec), nullptr) << bad;
    EXPECT_TRUE(ec) << bad;
  }
}

TEST(Packed, CheckedAccessNamesWhatWasWrong) {
  const auto p = pack(sample());
  try {
    (void)p->as_object().at("kind").as_object();
    FAIL() << "as_object on a string";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "packed value: expected object, found string");
  }
  try {
    (void)p->as_object().at("nope");
    FAIL() << "at on a missing key";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "packed object: no member \"nope\"");
  }
  EXPECT_THROW((void)p->as_object().at("flags").as_array().at(3), std::out_of_range);
  EXPECT_THROW((void)p->as_array(), std::invalid_argument);
  EXPECT_THROW((void)p->as_object().at("flags").as_array()[2].as_bool(), std::invalid_argument);
}

// The point of packing: about the size of the object's JSON text, well under a DOM's.
TEST(Packed, IsAboutTheSizeOfTheJsonText) {
  json::object cm{{"apiVersion", "v1"}, {"kind", "ConfigMap"}};
  cm["metadata"] = json::object{{"name", "bench-00001"},
                                {"namespace", "bench"},
                                {"uid", "00000000-0000-4000-8000-000000000001"},
                                {"resourceVersion", "123456"},
                                {"creationTimestamp", "2026-01-01T00:00:00Z"},
                                {"labels", json::object{{"app", "bench"}}}};
  cm["data"] = json::object{{"payload", std::string(1000, 'x')}};
  const json::value v(std::move(cm));
  const auto text = json::serialize(v).size();
  // A 4-byte header per value and a NUL with padding per string, against quotes and commas.
  EXPECT_LE(packed_size(v), text + text / 8) << "text " << text;
  EXPECT_EQ(packed_size(*pack(v)), packed_size(v));
}

// Well-known keys ("metadata", "creationTimestamp", ...) are packed as an id: 4 bytes instead
// of a string node. They read back, are found and compare as any other key.
TEST(Packed, WellKnownKeysTakeFourBytesAndReadBackAsKeys) {
  const json::value known = json::parse(
      R"({"metadata":{"creationTimestamp":"t","resourceVersion":"1"},"status":{"phase":"P"}})");
  // The same shape with keys of the same lengths that no table holds.
  const json::value unknown = json::parse(
      R"({"zetadata":{"zreationTimestamp":"t","zesourceVersion":"1"},"ztatus":{"zhase":"P"}})");
  EXPECT_EQ(json::serialize(known).size(), json::serialize(unknown).size());
  // The five key string nodes (16 + 24 + 20 + 12 + 12 bytes) become 4 bytes each.
  EXPECT_EQ(packed_size(unknown) - packed_size(known), (16 + 24 + 20 + 12 + 12) - 5 * 4u);

  const auto packed = pack(known);
  EXPECT_EQ(packed_size(*packed), packed_size(known));
  EXPECT_TRUE(*packed == known);
  EXPECT_FALSE(*packed == unknown);
  std::vector<std::string> keys;
  for (const auto& [key, value] : packed->get_object()) keys.emplace_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"metadata", "status"}));
  std::error_code ec;
  const auto* ts = packed->find_pointer("/metadata/creationTimestamp", ec);
  ASSERT_NE(ts, nullptr) << ec.message();
  EXPECT_EQ(ts->get_string(), "t");
  const auto& md = packed->as_object().at("metadata").as_object();
  EXPECT_EQ(md.at("resourceVersion").get_string(), "1");
  EXPECT_FALSE(md.contains("creationTimestam"));  // a prefix of a known key is another key
  EXPECT_FALSE(md.contains("creationTimestampX"));
  EXPECT_EQ(packed->to_value(), known);

  // Known and unknown keys mixed in one object, found and read in their order.
  const json::value mixed =
      json::parse(R"({"x-custom":1,"name":"n","kind":"K","y":[{"uid":"u"}]})");
  const auto mp = pack(mixed);
  EXPECT_TRUE(*mp == mixed);
  EXPECT_EQ(mp->as_object().at("x-custom").as_int64(), 1);
  EXPECT_EQ(mp->as_object().at("kind").get_string(), "K");
  EXPECT_EQ(mp->find_pointer("/y/0/uid", ec)->get_string(), "u");
  EXPECT_EQ(packed_size(*mp), packed_size(mixed));
}

}  // namespace
}  // namespace kstack::informer
