#include "validator/rules/syntax.h"

#include <fmt/format.h>

namespace kstack::validator {

namespace {

bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool alnum(char c) { return lower_alnum(c) || (c >= 'A' && c <= 'Z'); }

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool is_label_body(std::string_view v) {
  if (v.empty() || !lower_alnum(v.front()) || !lower_alnum(v.back())) return false;
  for (char c : v) {
    if (!lower_alnum(c) && c != '-') return false;
  }
  return true;
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool is_qualified_name_part(std::string_view v) {
  if (v.empty() || !alnum(v.front()) || !alnum(v.back())) return false;
  for (char c : v) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

std::string too_long(std::size_t max) {
  return fmt::format("must be no more than {} characters", max);
}

}  // namespace

std::vector<std::string> dns1123_label_errors(std::string_view value) {
  std::vector<std::string> out;
  if (value.size() > 63) out.push_back(too_long(63));
  if (!is_label_body(value)) {
    out.push_back(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character");
  }
  return out;
}

std::vector<std::string> dns1035_label_errors(std::string_view value) {
  std::vector<std::string> out;
  if (value.size() > 63) out.push_back(too_long(63));
  if (!is_label_body(value) || !(value.front() >= 'a' && value.front() <= 'z')) {
    out.push_back(
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
        "an alphabetic character, and end with an alphanumeric character");
  }
  return out;
}

std::vector<std::string> dns1123_subdomain_errors(std::string_view value) {
  std::vector<std::string> out;
  if (value.size() > 253) out.push_back(too_long(253));
  bool ok = !value.empty();
  std::size_t start = 0;
  while (ok) {
    std::size_t dot = value.find('.', start);
    ok = is_label_body(value.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (!ok) {
    out.push_back(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character");
  }
  return out;
}

std::vector<std::string> iana_svc_name_errors(std::string_view value) {
  std::vector<std::string> out;
  if (value.size() > 15) out.push_back(too_long(15));
  if (!is_label_body(value)) {
    out.push_back(
        "must contain only lower case alphanumeric characters or '-', and start and "
        "end with an alphanumeric character");
  }
  if (value.find("--") != std::string_view::npos) {
    out.push_back("must not contain consecutive hyphens");
  }
  bool has_letter = false;
  for (char c : value) has_letter = has_letter || (c >= 'a' && c <= 'z');
  if (!has_letter) out.push_back("must contain at least one letter (a-z)");
  return out;
}

std::vector<std::string> qualified_name_errors(std::string_view value) {
  std::vector<std::string> out;
  std::string_view name = value;
  if (auto slash = value.find('/'); slash != std::string_view::npos) {
    std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      out.push_back("prefix part must be non-empty");
    } else {
      for (auto& e : dns1123_subdomain_errors(prefix)) out.push_back("prefix part " + e);
    }
  }
  if (name.empty()) {
    out.push_back("name part must be non-empty");
    return out;
  }
  if (name.size() > 63) out.push_back("name part " + too_long(63));
  if (!is_qualified_name_part(name)) {
    out.push_back(
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
        "end with an alphanumeric character");
  }
  return out;
}

std::vector<std::string> label_value_errors(std::string_view value) {
  std::vector<std::string> out;
  if (value.empty()) return out;
  if (value.size() > 63) out.push_back(too_long(63));
  if (!is_qualified_name_part(value)) {
    out.push_back(
        "a valid label value must be an empty string or consist of alphanumeric characters, "
        "'-', '_' or '.', and must start and end with an alphanumeric character");
  }
  return out;
}

void add_errors(Violations& out, const std::string& path, const std::vector<std::string>& reasons) {
  for (const auto& r : reasons) out.push_back(Violation{path, r});
}

void validate_labels(const catalog::StringMap& labels, const std::string& path, Violations& out) {
  for (const auto& [k, v] : labels) {
    auto key_errors = qualified_name_errors(k);
    auto value_errors = label_value_errors(v);
    if (key_errors.empty() && value_errors.empty()) continue;  // no path to build
    const std::string p = catalog::key_path(path, k);
    add_errors(out, p, key_errors);
    add_errors(out, p, value_errors);
  }
}

void validate_annotations(const catalog::StringMap& annotations, const std::string& path,
                          Violations& out) {
  constexpr std::size_t kMaxTotal =
      std::size_t{256} * 1024;  // apimachinery TotalAnnotationSizeLimitB
  std::size_t total = 0;
  std::string lower;  // one buffer for every key
  for (const auto& [k, v] : annotations) {
    lower.clear();
    for (char c : k) lower.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    if (auto errors = qualified_name_errors(lower); !errors.empty()) {
      add_errors(out, catalog::key_path(path, k), errors);
    }
    total += k.size() + v.size();
  }
  if (total > kMaxTotal) {
    out.push_back(Violation{
        path, fmt::format("may not have more than {} bytes in total (has {})", kMaxTotal, total)});
  }
}

void validate_no_reserved_keys(const catalog::StringMap& map, const std::string& path,
                               Violations& out) {
  for (const auto& [k, v] : map) {
    if (k.starts_with(catalog::kOwnedPrefix)) {
      out.push_back(Violation{
          catalog::key_path(path, k),
          fmt::format("the prefix {} is reserved for the operator", catalog::kOwnedPrefix)});
    }
  }
}

}  // namespace kstack::validator
