// cmd/logging.h: every JSON log line is valid JSON, whatever the message holds.
#include "cmd/logging.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <boost/json.hpp>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

namespace kstack::cmd {
namespace {

std::string escaped(std::string_view text) {
  std::string out;
  append_json_escaped(text, out);
  return out;
}

// The escaped text, quoted, parsed back as a JSON string.
std::string round_trip(std::string_view text) {
  return std::string(boost::json::parse("\"" + escaped(text) + "\"").as_string());
}

TEST(JsonEscape, QuotesBackslashesAndControlCharactersAreEscaped) {
  EXPECT_EQ(escaped(R"(say "hi" \ bye)"), R"(say \"hi\" \\ bye)");
  EXPECT_EQ(escaped("a\nb\tc\rd"), R"(a\nb\tc\rd)");
  EXPECT_EQ(escaped(std::string("\x01\x1f\x7f", 3)), R"(\u0001\u001f\u007f)");
  EXPECT_EQ(round_trip("line 1\n\"quoted\"\t{json: [1]}"), "line 1\n\"quoted\"\t{json: [1]}");
}

TEST(JsonEscape, ValidUtf8IsKeptAsIs) {
  for (std::string_view s : {"é", "€ 10", "日本", "😀"}) {
    EXPECT_EQ(escaped(s), s);
    EXPECT_EQ(round_trip(s), s);
  }
}

TEST(JsonEscape, InvalidUtf8BecomesTheReplacementCharacter) {
  // A lone continuation byte, a truncated sequence, an overlong '/', a UTF-16 surrogate, a
  // code point beyond U+10FFFF.
  for (std::string_view bad :
       {"\x80", "\xE2\x82", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80"}) {
    const auto out = escaped(std::string("<") + std::string(bad) + ">");
    EXPECT_EQ(out.find_first_of("\x80\xAF\xA0\x82\x90"), std::string::npos) << out;
    EXPECT_NE(out.find("\\ufffd"), std::string::npos) << out;
    EXPECT_NO_THROW(round_trip(std::string(bad)));
  }
}

TEST(LogFormat, AutoIsJsonWhenStderrIsNotATerminal) {
  EXPECT_EQ(resolve_log_format("json"), LogFormat::kJson);
  EXPECT_EQ(resolve_log_format("text"), LogFormat::kText);
  if (isatty(STDERR_FILENO) == 0) {
    EXPECT_EQ(resolve_log_format("auto"), LogFormat::kJson);
  }
}

TEST(Logging, JsonLinesCarryTimeLevelLoggerAndTheEscapedMessage) {
  char path[] = "/tmp/kstack-logging-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  setup_logging(LogFormat::kJson, "info");
  spdlog::info("apply \"{}\": {}", "a\\b", "line\nbreak");
  spdlog::debug("not at info level");
  spdlog::warn("done");
  spdlog::default_logger()->flush();
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(fd);

  std::ifstream in(path);
  std::vector<boost::json::object> lines;
  for (std::string line; std::getline(in, line);) {
    boost::system::error_code ec;
    auto v = boost::json::parse(line, ec);
    ASSERT_FALSE(ec) << line;
    lines.push_back(v.as_object());
  }
  std::remove(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].at("msg").as_string(), "apply \"a\\b\": line\nbreak");
  EXPECT_EQ(lines[0].at("level").as_string(), "info");
  EXPECT_EQ(lines[0].at("logger").as_string(), "kstack");
  const std::string ts(lines[0].at("ts").as_string());
  EXPECT_EQ(ts.size(), 24u) << ts;  // 2024-01-02T03:04:05.678Z
  EXPECT_EQ(ts.back(), 'Z');
  EXPECT_EQ(lines[1].at("level").as_string(), "warning");
}

}  // namespace
}  // namespace kstack::cmd
