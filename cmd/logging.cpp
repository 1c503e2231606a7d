#include "cmd/logging.h"

#include <cstdint>
#include <memory>
#include <utility>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "kube/log_context.h"

namespace kstack::cmd {
namespace {

constexpr const char* kLoggerName = "kstack";
constexpr const char* kTextPattern = "%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v";  // colour on a terminal
// %* is the escaped message (MessageFlag), %& the thread's structured fields (FieldsFlag); the
// time is UTC with milliseconds.
constexpr const char* kJsonPattern =
    R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","logger":"%n","msg":"%*"%&})";

// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is not valid (overlong
// forms, surrogates and code points above U+10FFFF are invalid too).
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<std::uint8_t>(text[k]); };
  const std::uint8_t b0 = byte(i);
  std::size_t n = 0;
  std::uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

class MessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*time*/,
              spdlog::memory_buf_t& dest) override {
    std::string escaped;
    escaped.reserve(msg.payload.size() + 16);
    append_json_escaped(std::string_view(msg.payload.data(), msg.payload.size()), escaped);
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<MessageFlag>();
  }
};

// The calling thread's kube::LogFields, as `,"key":"value"` members (formatted on the thread
// that logs: spdlog's stderr loggers are synchronous).
class FieldsFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& /*msg*/, const std::tm& /*time*/,
              spdlog::memory_buf_t& dest) override {
    std::string out;
    append_json_log_fields(kube::log_fields(), out);
    dest.append(out.data(), out.data() + out.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<FieldsFlag>();
  }
};

}  // namespace

void append_json_log_fields(const kube::LogFields& fields, std::string& out) {
  const std::pair<const char*, const std::string*> members[] = {
      {"stack", &fields.stack},
      {"namespace", &fields.ns},
      {"role", &fields.role},
      {"member", &fields.member},
      {"reconcile_id", &fields.reconcile_id}};
  for (const auto& [key, value] : members) {
    if (value->empty()) continue;
    out += ",\"";
    out += key;
    out += "\":\"";
    append_json_escaped(*value, out);
    out += '"';
  }
}

LogFormat resolve_log_format(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "auto") return isatty(STDERR_FILENO) == 1 ? LogFormat::kText : LogFormat::kJson;
  return LogFormat::kJson;
}

void append_json_escaped(std::string_view text, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8_sequence(text, i);
      if (n == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(text.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
}

void setup_logging(LogFormat format, const std::string& level) {
  spdlog::drop(kLoggerName);  // set up again (tests): spdlog refuses a second logger of a name
  auto logger = format == LogFormat::kJson ? spdlog::stderr_logger_mt(kLoggerName)
                                           : spdlog::stderr_color_mt(kLoggerName);
  if (format == LogFormat::kJson) {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc,
                                                                 spdlog::details::os::default_eol);
    formatter->add_flag<MessageFlag>('*').add_flag<FieldsFlag>('&').set_pattern(kJsonPattern);
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_pattern(kTextPattern);
  }
  logger->set_level(spdlog::level::from_str(level));
  // Warnings and errors reach the log at once; the rest is flushed by spdlog's buffer policy
  // (stderr is unbuffered, so in practice every line).
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace kstack::cmd
