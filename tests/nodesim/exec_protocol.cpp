// Exec request parsing and status payloads (see exec_protocol.h). Payloads follow the kubelet
// 1.20 (pkg/kubelet/server/remotecommand): metav1.Status marshalled by Go, field order
// metadata, status, message, reason, details.
#include "tests/nodesim/exec_protocol.h"

#include <algorithm>
#include <array>
#include <utility>

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <fmt/format.h>

namespace kstack::nodesim {

namespace json = boost::json;

namespace {

constexpr std::array<std::pair<std::string_view, StreamProtocol>, 5> kProtocols = {{
    {"v5.channel.k8s.io", StreamProtocol::kV5},
    {"v4.channel.k8s.io", StreamProtocol::kV4},
    {"v3.channel.k8s.io", StreamProtocol::kV3},
    {"v2.channel.k8s.io", StreamProtocol::kV2},
    {"channel.k8s.io", StreamProtocol::kV1},
}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool truthy(std::string_view v) { return v == "1" || v == "true" || v == "True"; }

// A valid object name segment: not empty, no '/', not "." or "..".
bool valid_segment(std::string_view s) { return !s.empty() && s != "." && s != ".."; }

bool contains(const ProtocolSet& set, StreamProtocol protocol) {
  return std::find(set.begin(), set.end(), protocol) != set.end();
}

}  // namespace

ProtocolSet all_protocols() {
  ProtocolSet all;
  for (const auto& entry : kProtocols) all.push_back(entry.second);
  return all;
}

std::string_view protocol_name(StreamProtocol protocol) {
  for (const auto& [name, p] : kProtocols) {
    if (p == protocol) return name;
  }
  return {};
}

tl::expected<ProtocolSet, std::string> parse_protocol_set(std::string_view names) {
  ProtocolSet set;
  while (true) {
    auto comma = names.find(',');
    std::string_view name = trim(names.substr(0, comma));
    auto known = std::find_if(kProtocols.begin(), kProtocols.end(),
                              [&](const auto& entry) { return entry.first == name; });
    if (known == kProtocols.end()) {
      return tl::unexpected(fmt::format(
          "unknown exec subprotocol \"{}\" (channel.k8s.io, v2/v3/v4/v5.channel.k8s.io)", name));
    }
    if (!contains(set, known->second)) set.push_back(known->second);
    if (comma == std::string_view::npos) break;
    names.remove_prefix(comma + 1);
  }
  return set;
}

std::optional<NegotiatedProtocol> negotiate_protocol(std::string_view header,
                                                     const ProtocolSet& offered_by_server) {
  header = trim(header);
  if (header.empty()) {
    if (!contains(offered_by_server, StreamProtocol::kV1)) return std::nullopt;
    return NegotiatedProtocol{StreamProtocol::kV1, ""};
  }
  while (!header.empty()) {
    auto comma = header.find(',');
    std::string_view offered = trim(header.substr(0, comma));
    for (const auto& [name, protocol] : kProtocols) {
      if (offered == name && contains(offered_by_server, protocol)) {
        return NegotiatedProtocol{protocol, std::string(name)};
      }
    }
    if (comma == std::string_view::npos) break;
    header.remove_prefix(comma + 1);
  }
  return std::nullopt;
}

std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      int hi = hex_value(text[i + 1]);
      int lo = hex_value(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

tl::expected<ExecParams, std::string> parse_exec_target(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  std::string_view query =
      path.size() < target.size() ? target.substr(path.size() + 1) : std::string_view{};
  constexpr std::string_view kPrefix = "/exec/";
  if (path.substr(0, kPrefix.size()) != kPrefix)
    return tl::unexpected(std::string("not an exec path"));
  path.remove_prefix(kPrefix.size());
  std::vector<std::string> segments;
  while (!path.empty()) {
    auto slash = path.find('/');
    auto decoded = percent_decode(path.substr(0, slash), false);
    if (!decoded || !valid_segment(*decoded) || decoded->find('/') != std::string::npos) {
      return tl::unexpected("invalid path segment in " + std::string(target.substr(0, 200)));
    }
    segments.push_back(std::move(*decoded));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  ExecParams p;
  if (segments.size() == 3) {
    p.namespace_name = segments[0];
    p.pod = segments[1];
    p.container = segments[2];
  } else if (segments.size() == 4) {
    p.namespace_name = segments[0];
    p.pod = segments[1];
    p.pod_uid = segments[2];
    p.container = segments[3];
  } else {
    return tl::unexpected(std::string("expected /exec/{namespace}/{pod}/{container}"));
  }
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    auto eq = pair.find('=');
    auto key = percent_decode(pair.substr(0, eq), true);
    auto value = percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true);
    if (!key || !value) return tl::unexpected(std::string("malformed query string"));
    if (*key == "command") {
      p.command.push_back(std::move(*value));
    } else if (*key == "input") {
      p.stdin = truthy(*value);
    } else if (*key == "output") {
      p.stdout = truthy(*value);
    } else if (*key == "error") {
      p.stderr = truthy(*value);
    } else if (*key == "tty") {
      p.tty = truthy(*value);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  if (p.command.empty())
    return tl::unexpected(std::string("you must specify at least one command"));
  if (!p.stdin && !p.stdout && !p.stderr) {
    return tl::unexpected(std::string("you must specify at least 1 of stdin, stdout, stderr"));
  }
  if (p.tty) p.stderr = false;  // a terminal merges stderr into stdout
  return p;
}

std::string success_status() { return R"({"metadata":{},"status":"Success"})"; }

namespace {

std::string exit_message(int exit_code, const std::vector<std::string>& command) {
  std::string joined;
  for (const auto& arg : command) {
    if (!joined.empty()) joined += ' ';
    joined += arg;
  }
  return fmt::format(
      "command terminated with non-zero exit code: error executing command [{}], exit code {}",
      joined, exit_code);
}

}  // namespace

std::string exit_code_status(int exit_code, const std::vector<std::string>& command) {
  // Built by hand to keep Go's field order; the strings are escaped by Boost.JSON.
  json::string message(exit_message(exit_code, command));
  return fmt::format(
      R"({{"metadata":{{}},"status":"Failure","message":{},"reason":"NonZeroExitCode",)"
      R"("details":{{"causes":[{{"reason":"ExitCode","message":"{}"}}]}}}})",
      json::serialize(message), exit_code);
}

std::string internal_error_status(std::string_view message) {
  json::string msg(fmt::format("Internal error occurred: {}", message));
  return fmt::format(
      R"({{"metadata":{{}},"status":"Failure","message":{},"reason":"InternalError",)"
      R"("details":{{"causes":[{{"message":{}}}]}},"code":500}})",
      json::serialize(msg), json::serialize(json::string(message)));
}

std::optional<std::string> final_error_channel_payload(StreamProtocol protocol, int exit_code,
                                                       const std::vector<std::string>& command) {
  if (protocol == StreamProtocol::kV4 || protocol == StreamProtocol::kV5) {
    return exit_code == 0 ? success_status() : exit_code_status(exit_code, command);
  }
  if (exit_code == 0) return std::nullopt;
  return exit_message(exit_code, command);
}

}  // namespace kstack::nodesim
