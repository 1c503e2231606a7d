// Kubernetes name and metadata syntax (apimachinery's validation package): DNS labels and
// subdomains, IANA service names, qualified names, label values, label and annotation maps.
// Messages follow apimachinery's wording so users recognise them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "catalog/field_error.h"
#include "catalog/model.h"

namespace kstack::validator {

using Violation = catalog::FieldError;
using Violations = catalog::FieldErrors;

// Each returns the reasons the value is invalid (empty = valid).
std::vector<std::string> dns1123_label_errors(std::string_view value);      // ≤ 63, [a-z0-9-]
std::vector<std::string> dns1035_label_errors(std::string_view value);      // ... starts a-z
std::vector<std::string> dns1123_subdomain_errors(std::string_view value);  // ≤ 253, dots
std::vector<std::string> iana_svc_name_errors(std::string_view value);      // port names, ≤ 15
std::vector<std::string> qualified_name_errors(std::string_view value);     // [prefix/]name
std::vector<std::string> label_value_errors(std::string_view value);

// Appends one Violation per reason, at `path`.
void add_errors(Violations& out, const std::string& path, const std::vector<std::string>& reasons);

// Label map: keys qualified names, values label values. Errors at path[key].
void validate_labels(const catalog::StringMap& labels, const std::string& path, Violations& out);
// Annotation map: keys qualified names (case-insensitive), total size ≤ 256 KiB.
void validate_annotations(const catalog::StringMap& annotations, const std::string& path,
                          Violations& out);
// Keys with the operator's prefix (kstack.io/) would override the labels kstack selects its
// pods and services by: refused in user-supplied maps.
void validate_no_reserved_keys(const catalog::StringMap& map, const std::string& path,
                               Violations& out);

}  // namespace kstack::validator
