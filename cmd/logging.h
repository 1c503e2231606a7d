// The operator's log output (spdlog, to stderr): JSON lines for log collectors, or text for a
// person at a terminal. Every JSON line is one object {"ts","level","logger","msg"} with the
// message escaped (spdlog's plain "msg":"%v" pattern breaks on a quote, see docs/dependencies.md),
// plus the structured fields "stack", "namespace", "role", "member" and "reconcile_id" that the
// logging thread's kube::LogScope sets (those that are non-empty).
#pragma once

#include <string>
#include <string_view>

#include "kube/log_context.h"

namespace kstack::cmd {

enum class LogFormat { kJson, kText };

// "json", "text", or "auto": text when stderr is a terminal, JSON otherwise. Unknown names
// are JSON (the CLI checks the value).
LogFormat resolve_log_format(std::string_view name);

// Replaces spdlog's default logger with a stderr logger named "kstack" in `format` at `level`
// (trace, debug, info, warn, error).
void setup_logging(LogFormat format, const std::string& level);

// `text` as the contents of a JSON string (no quotes around it): ", \ and control characters
// escaped, invalid UTF-8 replaced by U+FFFD, so a line is valid JSON whatever was logged.
void append_json_escaped(std::string_view text, std::string& out);

// The non-empty `fields` as JSON object members, each preceded by a comma:
// ,"stack":"db","namespace":"prod",... (values escaped as above).
void append_json_log_fields(const kube::LogFields& fields, std::string& out);

}  // namespace kstack::cmd
