// Compose files (the Compose Specification) converted to an AppType and a Stack, for
// `kstack import compose` (docs/compose.md): one AppType role per Compose service, a Stack of
// the same name that runs it. Pure: the parsed file in, JSON objects and warnings out, no I/O
// and no environment (variables are never read from the host).
//
// Every construct with no kstack equivalent is a warning naming its Compose path
// (`services.web.build: ...`); nothing is dropped silently. `x-*` extension fields are ignored
// without a warning, as Compose itself ignores them (they usually hold YAML anchors, which
// are already expanded; `<<` merge keys are applied here).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

namespace kstack::catalog {

struct ComposeOptions {
  // The AppType's and Stack's name: this, else the file's top-level `name:`, else
  // `directory_name` (the directory holding the file), sanitised to a DNS label.
  std::optional<std::string> name;
  std::string directory_name;
  std::optional<std::string> namespace_name;  // metadata.namespace of both objects
  std::string storage_size = "1Gi";           // a role with volumes gets one claim this big
};

struct ComposeWarning {
  std::string path;     // Compose path: services.web.ports[0]
  std::string message;  // what is lost or changed, and what kstack does instead
};

struct ComposeResult {
  // Non-empty when the file cannot be converted at all (not a Compose file, no services, a
  // service without an image, ...): nothing else is set then.
  std::string error;
  boost::json::value apptype;
  boost::json::value stack;
  std::vector<ComposeWarning> warnings;
};

ComposeResult convert_compose(const boost::json::value& compose, const ComposeOptions& options);

// "path: message".
std::string format_warning(const ComposeWarning& warning);

// A Compose string command split into words as Compose does (shell-like: whitespace, single
// and double quotes, backslash escapes; no expansion, no shell run). nullopt on an unclosed
// quote or a trailing backslash.
std::optional<std::vector<std::string>> split_command(std::string_view text);

// A Compose duration ("1m30s", "10s", "500ms", "1h") in nanoseconds; nullopt if malformed.
std::optional<std::int64_t> parse_compose_duration(std::string_view text);

// Text made a DNS label (RFC 1123, <= 63): lower case, other characters turned into '-',
// runs of '-' folded, '-' trimmed at both ends. Empty when nothing usable is left.
std::string sanitize_dns_label(std::string_view text);

}  // namespace kstack::catalog
