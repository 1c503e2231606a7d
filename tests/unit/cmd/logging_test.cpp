// cmd/logging.h: every JSON log line is valid JSON, whatever the message or the structured
// fields (kube/log_context.h) hold.
#include "cmd/logging.h"

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

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

// Runs `log` with stderr redirected to a file and the JSON logger at info level; returns each
// line parsed (a line that is not valid JSON fails the test).
std::vector<boost::json::object> json_lines_of(const std::function<void()>& log) {
  char path[] = "/tmp/kstack-logging-test-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  if (fd < 0) return {};
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  setup_logging(LogFormat::kJson, "info");
  log();
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
    EXPECT_FALSE(ec) << line;
    if (!ec && v.is_object()) lines.push_back(v.as_object());
  }
  std::remove(path);
  return lines;
}

TEST(Logging, JsonLinesCarryTimeLevelLoggerAndTheEscapedMessage) {
  const auto lines = json_lines_of([] {
    spdlog::info("apply \"{}\": {}", "a\\b", "line\nbreak");
    spdlog::debug("not at info level");
    spdlog::warn("done");
  });
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].at("msg").as_string(), "apply \"a\\b\": line\nbreak");
  EXPECT_EQ(lines[0].at("level").as_string(), "info");
  EXPECT_EQ(lines[0].at("logger").as_string(), "kstack");
  const std::string ts(lines[0].at("ts").as_string());
  EXPECT_EQ(ts.size(), 24u) << ts;  // 2024-01-02T03:04:05.678Z
  EXPECT_EQ(ts.back(), 'Z');
  EXPECT_EQ(lines[1].at("level").as_string(), "warning");
  EXPECT_FALSE(lines[0].contains("stack")) << "no fields outside a scope";
}

TEST(Logging, JsonLinesCarryTheScopesStackNamespaceRoleMemberAndReconcileIdAsFields) {
  const auto lines = json_lines_of([] {
    const kube::LogScope pass(kube::LogFields{"db", "prod", "", "", "00c0ffee00c0ffee"});
    spdlog::info("pass line");
    {
      const kube::LogScope member(kube::with_member("server", "db-server-0"));
      spdlog::warn("member line");
    }
    spdlog::info("pass line again");
  });
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& line : lines) {
    EXPECT_EQ(line.at("stack").as_string(), "db") << line;
    EXPECT_EQ(line.at("namespace").as_string(), "prod") << line;
    EXPECT_EQ(line.at("reconcile_id").as_string(), "00c0ffee00c0ffee") << line;
  }
  EXPECT_FALSE(lines[0].contains("member"));
  EXPECT_FALSE(lines[0].contains("role"));
  EXPECT_EQ(lines[1].at("role").as_string(), "server");
  EXPECT_EQ(lines[1].at("member").as_string(), "db-server-0");
  EXPECT_EQ(lines[1].at("msg").as_string(), "member line");
  EXPECT_FALSE(lines[2].contains("member")) << "the member scope ended";
}

TEST(Logging, HostileFieldValuesStayInsideTheirJsonStrings) {
  const std::string quote_stack = R"(db","level":"error)";
  const std::string newline_ns = "prod\n{\"ts\":1}";
  const std::string control_role = std::string("r\x01\x1f\x7f\\", 5);
  const std::string bad_utf8_member = "m\xff\xc3";
  const auto lines = json_lines_of([&] {
    const kube::LogScope scope(
        kube::LogFields{quote_stack, newline_ns, control_role, bad_utf8_member, "id\"}"});
    spdlog::info("hostile");
  });
  ASSERT_EQ(lines.size(), 1u);  // one line: the newline did not split it
  const auto& line = lines[0];
  EXPECT_EQ(line.at("level").as_string(), "info") << "a field must not override another";
  EXPECT_EQ(line.at("stack").as_string(), quote_stack);
  EXPECT_EQ(line.at("namespace").as_string(), newline_ns);
  EXPECT_EQ(line.at("role").as_string(), control_role);
  EXPECT_EQ(line.at("member").as_string(), "m\xef\xbf\xbd\xef\xbf\xbd");  // U+FFFD each
  EXPECT_EQ(line.at("reconcile_id").as_string(), "id\"}");
  EXPECT_EQ(line.size(), 9u) << "ts, level, logger, msg and the five fields, nothing else";
}

TEST(Logging, FieldsAreKeptPerThread) {
  const auto lines = json_lines_of([] {
    const kube::LogScope scope(kube::LogFields{"db", "prod", "", "", "1"});
    std::thread([] { spdlog::info("other thread"); }).join();
    spdlog::info("this thread");
  });
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_FALSE(lines[0].contains("stack")) << lines[0];
  EXPECT_EQ(lines[1].at("stack").as_string(), "db");
}

TEST(Logging, EmptyFieldsAddNothing) {
  std::string out;
  append_json_log_fields(kube::LogFields{}, out);
  EXPECT_EQ(out, "");
  append_json_log_fields(kube::LogFields{"a", "", "", "", ""}, out);
  EXPECT_EQ(out, R"(,"stack":"a")");
}

}  // namespace
}  // namespace kstack::cmd
