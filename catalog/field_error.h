// Field-level problems found while decoding or validating kstack objects. One FieldError names
// the field path the way apimachinery's field.Path prints it (`spec.roles[2].members`,
// `metadata.labels[kstack.io/stack]`), so messages read like the API server's own.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "kube/error.h"

namespace kstack::catalog {

struct FieldError {
  std::string field;   // e.g. spec.roles[2].members
  std::string reason;  // e.g. must be at least 3 for cardinality "3+"

  // "spec.roles[2].members: must be at least 3 for cardinality \"3+\""
  std::string to_string() const;
  bool operator==(const FieldError&) const = default;
};

using FieldErrors = std::vector<FieldError>;

// Every error's to_string(), joined with `separator`.
std::string join(const FieldErrors& errors, std::string_view separator = "; ");

// A kube::Error of kind kInvalid (422, reason Invalid) whose causes are the field errors, so a
// decoding failure travels in a Result like any API error. `what` prefixes the message.
kube::Error invalid_error(std::string_view what, const FieldErrors& errors);

// Field path builders (apimachinery style).
std::string child_path(std::string_view path, std::string_view field);  // a.b
std::string index_path(std::string_view path, std::size_t index);       // a[3]
std::string key_path(std::string_view path, std::string_view key);      // a[key]

// child_path() for a path that is only read as a view, as the decoders read the paths of the
// objects they descend into: built in place, where a std::string longer than 15 characters
// ("spec.roles[0].resources") is a heap block, for a path used only in an error message.
class ChildPath {
 public:
  ChildPath(std::string_view path, std::string_view field);
  ChildPath(const ChildPath&) = delete;
  ChildPath& operator=(const ChildPath&) = delete;

  operator std::string_view() const { return view_; }  // NOLINT: passed as the path itself

 private:
  std::array<char, 64> inline_;
  std::string heap_;  // a longer path
  std::string_view view_;
};

}  // namespace kstack::catalog
