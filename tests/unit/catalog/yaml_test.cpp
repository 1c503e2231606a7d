#include "catalog/yaml.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace kstack::catalog {
namespace {
namespace json = boost::json;

json::value one(std::string_view text) {
  auto r = parse_yaml(text);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? *r : json::value{};
}

TEST(Yaml, PlainScalarsResolveAsKubectlDoesAndQuotedStayStrings) {
  auto v = one(R"(int: 3
neg: -7
hex: 0x1F
octal: 0755
float: 1.5
exp: 1e3
bool_true: true
bool_yes: yes
bool_off: off
null_tilde: ~
null_word: null
empty:
quoted_int: "3"
single_quoted: 'true'
quoted_null: "null"
str_tag: !!str 42
word: hello
version: 1.0
big: 18446744073709551615
literal: |
  line
)");
  const auto& o = v.as_object();
  EXPECT_EQ(o.at("int"), json::value(3));
  EXPECT_EQ(o.at("neg"), json::value(-7));
  EXPECT_EQ(o.at("hex"), json::value(31));
  EXPECT_EQ(o.at("octal"), json::value(493));
  EXPECT_EQ(o.at("float"), json::value(1.5));
  EXPECT_EQ(o.at("exp"), json::value(1000.0));
  EXPECT_EQ(o.at("bool_true"), json::value(true));
  EXPECT_EQ(o.at("bool_yes"), json::value(true));
  EXPECT_EQ(o.at("bool_off"), json::value(false));
  EXPECT_TRUE(o.at("null_tilde").is_null());
  EXPECT_TRUE(o.at("null_word").is_null());
  EXPECT_TRUE(o.at("empty").is_null());
  EXPECT_EQ(o.at("quoted_int"), json::value("3"));
  EXPECT_EQ(o.at("single_quoted"), json::value("true"));
  EXPECT_EQ(o.at("quoted_null"), json::value("null"));
  EXPECT_EQ(o.at("str_tag"), json::value("42"));
  EXPECT_EQ(o.at("word"), json::value("hello"));
  EXPECT_TRUE(o.at("version").is_double());
  EXPECT_TRUE(o.at("big").is_uint64());
  EXPECT_EQ(o.at("literal"), json::value("line\n"));
}

TEST(Yaml, MultiDocumentSplitsOnSeparatorLinesAndSkipsEmptyDocuments) {
  auto docs = parse_yaml_documents(
      "# header comment\n---\na: 1\n---   \n# only a comment\n---\n"
      "b: 2\nc: '---'\n---\n");
  ASSERT_TRUE(docs.has_value());
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0].index, 1u);
  EXPECT_EQ((*docs)[0].line, 3u);
  EXPECT_EQ((*docs)[0].value, json::parse(R"({"a":1})"));
  EXPECT_EQ((*docs)[1].index, 2u);
  EXPECT_EQ((*docs)[1].line, 7u);
  EXPECT_EQ((*docs)[1].value, json::parse(R"({"b":2,"c":"---"})"));
}

TEST(Yaml, ABadDocumentIsReportedWithItsLineAndTheOthersStillParse) {
  auto docs = parse_yaml_documents("a: 1\n---\nb: [1, 2\n---\nc: 3\n");
  ASSERT_TRUE(docs.has_value());
  ASSERT_EQ(docs->size(), 3u);
  EXPECT_TRUE((*docs)[0].error.empty());
  EXPECT_NE((*docs)[1].error.find("line 4"), std::string::npos) << (*docs)[1].error;
  EXPECT_TRUE((*docs)[1].value.is_null());
  EXPECT_EQ((*docs)[2].value, json::parse(R"({"c":3})"));
}

TEST(Yaml, InputsThatHangLoadAllAreRefusedQuickly) {
  // yaml-cpp 0.7's LoadAll(",") never returns; each document here goes through Load only.
  for (std::string_view text : {",", ",a", "a: 1\n---\n,\n", "- ,"}) {
    auto docs = parse_yaml_documents(text);
    ASSERT_TRUE(docs.has_value());
    bool any_error = false;
    for (const auto& d : *docs) any_error = any_error || !d.error.empty();
    EXPECT_TRUE(any_error) << text;
  }
}

TEST(Yaml, AliasExpansionAndNestingAreBounded) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    std::string prev(1, static_cast<char>(c - 1)), self(1, c);
    std::string refs;
    for (int i = 0; i < 10; ++i) refs += (i ? ", *" : "*") + prev;
    bomb.append(self).append(": &").append(self).append(" [").append(refs).append("]\n");
  }
  auto docs = parse_yaml_documents(bomb);
  ASSERT_TRUE(docs.has_value());
  ASSERT_EQ(docs->size(), 1u);
  EXPECT_NE((*docs)[0].error.find("alias"), std::string::npos) << (*docs)[0].error;

  auto self = parse_yaml_documents("a: &x [*x]\n");
  ASSERT_TRUE(self.has_value());
  EXPECT_FALSE((*self)[0].error.empty());

  std::string deep = "a: " + std::string(100, '[') + std::string(100, ']') + "\n";
  auto nested = parse_yaml_documents(deep);
  ASSERT_TRUE(nested.has_value());
  EXPECT_NE((*nested)[0].error.find("nested deeper"), std::string::npos) << (*nested)[0].error;
}

TEST(Yaml, InputOverTheSizeCapFailsAsAWhole) {
  YamlLimits limits;
  limits.max_bytes = 16;
  auto r = parse_yaml_documents("a: 1\nb: 2\nc: 3\nd: 4\n", limits);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, kube::ErrorKind::kPayloadTooLarge);
}

// Not UTF-8 text: refused as a whole, naming line and byte, never passed on or altered.
TEST(Manifests, NulBytesAndInvalidUtf8AreRefused) {
  using namespace std::string_literals;
  for (const auto& [text, what] : std::vector<std::pair<std::string, std::string>>{
           {"a: 1\nname: x\0y\n"s, "line 2, byte 13: NUL byte"},
           {"a: 1\nname: caf\xe9\n"s, "line 2, byte 15: invalid UTF-8"},
           {"{\"name\": \"\xc0\xae\"}"s, "line 1, byte 11: invalid UTF-8"},  // overlong
           {"name: \xed\xa0\x80\n"s, "line 1, byte 7: invalid UTF-8"},       // surrogate
           {"name: \xf0\x9f\x98\n"s, "line 1, byte 7: invalid UTF-8"}}) {    // cut short
    auto r = parse_manifests(text);
    ASSERT_FALSE(r.has_value()) << what;
    EXPECT_NE(r.error().message.find(what), std::string::npos) << r.error().message;
  }
  auto ok = parse_manifests("name: caf\xc3\xa9 \xf0\x9f\x98\x80\n");
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
  EXPECT_EQ((*ok)[0].value.at("name"), boost::json::value("caf\xc3\xa9 \xf0\x9f\x98\x80"));
}

TEST(Yaml, TopLevelMustBeAMapping) {
  auto docs = parse_yaml_documents("- a\n- b\n");
  ASSERT_TRUE(docs.has_value());
  EXPECT_NE((*docs)[0].error.find("mapping"), std::string::npos);
  EXPECT_FALSE(parse_yaml("a: 1\n---\nb: 2\n").has_value());  // parse_yaml wants exactly one
}

TEST(Manifests, JsonTextIsParsedAsJsonAndListsAreExpanded) {
  auto docs = parse_manifests(R"({"kind":"List","items":[{"kind":"A"},{"kind":"B"}]})");
  ASSERT_TRUE(docs.has_value());
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[1].value.at("kind"), json::value("B"));

  auto arr = parse_manifests("[{\"a\": 1}, 2]");
  ASSERT_TRUE(arr.has_value());
  ASSERT_EQ(arr->size(), 2u);
  EXPECT_TRUE((*arr)[0].error.empty());
  EXPECT_FALSE((*arr)[1].error.empty());

  auto flow = parse_manifests("{a: b}\n");  // YAML flow mapping, not JSON
  ASSERT_TRUE(flow.has_value());
  EXPECT_EQ((*flow)[0].value, json::parse(R"({"a":"b"})"));
}

}  // namespace
}  // namespace kstack::catalog
