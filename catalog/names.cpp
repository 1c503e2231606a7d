#include "catalog/names.h"

#include <fmt/format.h>

namespace kstack::catalog {

std::string headless_service_name(std::string_view stack_name) { return std::string(stack_name); }

std::string statefulset_name(std::string_view stack_name, std::string_view role_id) {
  return fmt::format("{}-{}", stack_name, role_id);
}

std::string member_name(std::string_view stack_name, std::string_view role_id,
                        std::int64_t ordinal) {
  return fmt::format("{}-{}-{}", stack_name, role_id, ordinal);
}

std::string pvc_name(std::string_view stack_name, std::string_view role_id, std::int64_t ordinal) {
  return fmt::format("{}-{}", kDataVolumeName, member_name(stack_name, role_id, ordinal));
}

}  // namespace kstack::catalog
