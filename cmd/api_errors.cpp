#include "cmd/api_errors.h"

#include <regex>

#include <fmt/format.h>

namespace kstack::cmd {

namespace {

constexpr std::string_view kDeniedMarker = "denied the request: ";

// A field path such as `spec.roles[1].dependsOn[0]` or `metadata.name`, then ": ".
bool starts_with_field(const std::string& text) {
  static const std::regex field(R"(^[A-Za-z_][\w-]*(\.[\w-]+|\[[^\]]*\])*: )");
  return std::regex_search(text, field);
}

}  // namespace

std::vector<std::string> split_field_errors(const std::string& joined) {
  std::vector<std::string> out;
  std::string current;
  std::size_t pos = 0;
  while (pos <= joined.size()) {
    auto sep = joined.find("; ", pos);
    if (sep == std::string::npos) {
      current += joined.substr(pos);
      break;
    }
    current += joined.substr(pos, sep - pos);
    if (starts_with_field(joined.substr(sep + 2))) {
      out.push_back(std::move(current));
      current.clear();
    } else {
      current += "; ";
    }
    pos = sep + 2;
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

// kube::Client prefixes the server's message with the request ("PATCH /apis/...: "); a refusal
// of the object's content reads better without it.
std::string without_request(const std::string& message) {
  static const std::regex request(R"(^(GET|POST|PUT|PATCH|DELETE) /\S*: )");
  std::smatch m;
  return std::regex_search(message, m, request) ? m.suffix().str() : message;
}

ErrorReport explain(const kube::Error& error) {
  ErrorReport r;
  const std::string message = without_request(error.message);
  const auto marker = message.find(kDeniedMarker);
  if (marker != std::string::npos && message.find("admission webhook") != std::string::npos) {
    r.denied = true;
    r.headline = message.substr(0, marker + kDeniedMarker.size() - 2);
    r.fields = split_field_errors(message.substr(marker + kDeniedMarker.size()));
    return r;
  }
  if (error.kind == kube::ErrorKind::kInvalid || !error.causes.empty()) {
    r.denied = error.kind == kube::ErrorKind::kInvalid || error.http_status == 422;
    // "Stack.kstack.io \"x\" is invalid: [a, b]": the part before the list.
    auto colon = message.find(" is invalid");
    r.headline = colon != std::string::npos ? message.substr(0, colon + 11) : message;
    for (const auto& c : error.causes) {
      if (c.field.empty()) {
        r.fields.push_back(c.message);
      } else {
        r.fields.push_back(fmt::format("{}: {}", c.field, c.message));
      }
    }
    if (r.fields.empty()) r.fields.push_back(message);
    return r;
  }
  r.headline = error.to_string();
  return r;
}

}  // namespace kstack::cmd
