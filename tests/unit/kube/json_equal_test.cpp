#include "kube/json_equal.h"

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/memory_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include "kube/json_member.h"

namespace kstack::kube {
namespace {

namespace json = boost::json;

// Counts what is allocated from it (and forwards to operator new).
class CountingResource final : public json::memory_resource {
 public:
  std::size_t allocations = 0;

 private:
  void* do_allocate(std::size_t bytes, std::size_t align) override {
    ++allocations;
    return ::operator new(bytes, std::align_val_t(align));
  }
  void do_deallocate(void* p, std::size_t /*bytes*/, std::size_t align) override {
    ::operator delete(p, std::align_val_t(align));
  }
  bool do_is_equal(const json::memory_resource& other) const noexcept override {
    return this == &other;
  }
};

// Pairs written as JSON text, each compared both ways.
const std::vector<std::pair<std::string, std::string>> kPairs = {
    {"null", "null"},
    {"null", "false"},
    {"true", "true"},
    {"true", "false"},
    {"1", "1"},
    {"1", "2"},
    {"1", "1.0"},                                      // int64 vs double: different kinds
    {"18446744073709551615", "18446744073709551615"},  // uint64
    {"18446744073709551615", "-1"},
    {"9223372036854775807", "9223372036854775807"},
    {"0.5", "0.5"},
    {"0.5", "0.25"},
    {"\"a\"", "\"a\""},
    {"\"a\"", "\"b\""},
    {"\"\"", "null"},
    {"[]", "[]"},
    {"[]", "{}"},
    {"[1,2]", "[1,2]"},
    {"[1,2]", "[2,1]"},
    {"[1,2]", "[1,2,3]"},
    {"{}", "{}"},
    {R"({"a":1,"b":2})", R"({"b":2,"a":1})"},  // member order does not matter
    {R"({"a":1,"b":2})", R"({"a":1,"b":3})"},
    {R"({"a":1,"b":2})", R"({"a":1,"c":2})"},
    {R"({"a":1})", R"({"a":1,"b":null})"},
    {R"({"a":{"b":[{"c":"d"}]}})", R"({"a":{"b":[{"c":"d"}]}})"},
    {R"({"a":{"b":[{"c":"d"}]}})", R"({"a":{"b":[{"c":"e"}]}})"},
    // Same place, then another: the positional try must fall back to a look-up.
    {R"({"a":1,"b":2,"c":3})", R"({"a":1,"c":3,"b":2})"},
    {R"({"a":1,"b":2,"c":3})", R"({"a":1,"c":2,"b":3})"},
    {R"({"ab":1,"ac":2})", R"({"ac":2,"ab":1})"},  // one size, one first byte
    {R"({"ab":1,"ac":2})", R"({"ab":1,"ad":2})"},
    {R"({"a":1,"b":2})", R"({"b":1,"a":2})"},
};

TEST(JsonEqual, AgreesWithBoostJsonOnEveryKindAndDifference) {
  for (const auto& [a_text, b_text] : kPairs) {
    const json::value a = json::parse(a_text);
    const json::value b = json::parse(b_text);
    EXPECT_EQ(json_equal(a, b), a == b) << a_text << " vs " << b_text;
    EXPECT_EQ(json_equal(b, a), b == a) << b_text << " vs " << a_text;
  }
  // uint64 and int64 of the same value are equal, as in boost::json.
  const json::value i = std::int64_t{7};
  const json::value u = std::uint64_t{7};
  EXPECT_TRUE(json_equal(i, u));
  EXPECT_TRUE(json_equal(u, i));
  EXPECT_FALSE(json_equal(json::value(std::int64_t{-1}), json::value(~std::uint64_t{0})));
}

// Objects of more members than Boost scans (it hashes their keys), in orders that differ.
TEST(JsonEqual, AgreesWithBoostJsonOnLargeObjects) {
  json::object a;
  json::object reversed;
  for (int i = 0; i < 40; ++i) a["k" + std::to_string(i)] = i;
  for (int i = 39; i >= 0; --i) reversed["k" + std::to_string(i)] = i;
  EXPECT_TRUE(json_equal(a, reversed));
  json::object changed = reversed;
  changed["k17"] = 18;
  EXPECT_FALSE(json_equal(a, changed));
  EXPECT_FALSE(json_equal(changed, a));
}

TEST(JsonMember, FindsWhatIfContainsFinds) {
  json::object large;
  for (int i = 0; i < 40; ++i) large["key" + std::to_string(i)] = i;
  const std::vector<json::object> objects = {
      {},
      json::parse(R"({"a":1,"ab":2,"ac":3,"ba":4,"":5,"abc":null})").as_object(),
      large,
  };
  for (const auto& o : objects) {
    for (const std::string_view key :
         {"a", "ab", "ac", "ad", "ba", "b", "", "abc", "abd", "key7", "key39", "key40", "kez7"}) {
      EXPECT_EQ(member(o, key), o.if_contains(key)) << json::serialize(o) << " [" << key << "]";
    }
  }
}

TEST(JsonEqual, ComparingAllocatesNothing) {
  CountingResource memory;
  const char* text = R"({"spec":{"roles":[{"id":"worker","env":[{"name":"A","value":"1"}],)"
                     R"("resources":{"requests":{"cpu":"2"}}}],"app":"spark"}})";
  const json::value a = json::parse(text, json::storage_ptr(&memory));
  const json::value b = json::parse(text, json::storage_ptr(&memory));
  json::value c = json::parse(text, json::storage_ptr(&memory));
  c.as_object()["spec"].as_object()["app"] = "other";
  const auto before = memory.allocations;
  EXPECT_TRUE(json_equal(a, b));
  EXPECT_TRUE(json_equal(a.get_object(), b.get_object()));
  EXPECT_FALSE(json_equal(a, c));
  EXPECT_EQ(memory.allocations, before) << "json_equal copied part of a value";
}

}  // namespace
}  // namespace kstack::kube
