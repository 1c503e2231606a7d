#include "catalog/field_error.h"

#include <cstring>

#include <fmt/compile.h>
#include <fmt/format.h>

namespace kstack::catalog {

std::string FieldError::to_string() const {
  if (field.empty()) return reason;
  return fmt::format("{}: {}", field, reason);
}

std::string join(const FieldErrors& errors, std::string_view separator) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out.append(separator);
    out.append(e.to_string());
  }
  return out;
}

kube::Error invalid_error(std::string_view what, const FieldErrors& errors) {
  kube::Error e;
  e.kind = kube::ErrorKind::kInvalid;
  e.http_status = 422;
  e.reason = "Invalid";
  e.message = what.empty() ? join(errors) : fmt::format("{}: {}", what, join(errors));
  for (const auto& fe : errors) {
    e.causes.push_back(kube::StatusCause{"FieldValueInvalid", fe.reason, fe.field});
  }
  return e;
}

std::string child_path(std::string_view path, std::string_view field) {
  if (path.empty()) return std::string(field);
  std::string out;
  out.reserve(path.size() + 1 + field.size());
  out.append(path).append(".").append(field);
  return out;
}

ChildPath::ChildPath(std::string_view path, std::string_view field) {
  const std::size_t dot = path.empty() ? 0 : 1;
  const std::size_t size = path.size() + dot + field.size();
  char* out = inline_.data();
  if (size > inline_.size()) {
    heap_.resize(size);
    out = heap_.data();
  }
  std::memcpy(out, path.data(), path.size());
  if (dot != 0) out[path.size()] = '.';
  std::memcpy(out + path.size() + dot, field.data(), field.size());
  view_ = std::string_view(out, size);
}

std::string index_path(std::string_view path, std::size_t index) {
  return fmt::format(FMT_COMPILE("{}[{}]"), path, index);
}

std::string key_path(std::string_view path, std::string_view key) {
  return fmt::format(FMT_COMPILE("{}[{}]"), path, key);
}

}  // namespace kstack::catalog
