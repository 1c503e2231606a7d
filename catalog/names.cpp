#include "catalog/names.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include "catalog/defaults.h"
#include "catalog/model.h"

namespace kstack::catalog {

std::string headless_service_name(std::string_view stack_name) { return std::string(stack_name); }

std::string statefulset_name(std::string_view stack_name, std::string_view role_id) {
  return fmt::format(FMT_COMPILE("{}-{}"), stack_name, role_id);
}

std::string member_name(std::string_view stack_name, std::string_view role_id,
                        std::int64_t ordinal) {
  return fmt::format(FMT_COMPILE("{}-{}-{}"), stack_name, role_id, ordinal);
}

std::string pvc_name(std::string_view stack_name, std::string_view role_id, std::int64_t ordinal) {
  return fmt::format(FMT_COMPILE("{}-{}"), kDataVolumeName,
                     member_name(stack_name, role_id, ordinal));
}

std::string short_hash(std::string_view text) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a 64 offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;  // FNV-1a 64 prime
  }
  // 40 bits: collisions between the Stacks and roles of one namespace stay negligible.
  return fmt::format(FMT_COMPILE("{:010x}"), h >> 24);
}

ObjectNames::ObjectNames(bool uid_scheme, std::string stack_name, std::string uid)
    : uid_scheme_(uid_scheme), stack_name_(std::move(stack_name)), uid_(std::move(uid)) {}

ObjectNames ObjectNames::of(const Stack& stack, const KStackConfig* config) {
  return ObjectNames(effective_naming_scheme(stack, config) == kNamingUID, stack.metadata.name,
                     stack.metadata.uid);
}

std::string ObjectNames::headless_service() const {
  return uid_scheme_ ? "kshs-" + short_hash(uid_) : headless_service_name(stack_name_);
}

std::string ObjectNames::statefulset(std::string_view role_id) const {
  // The NUL cannot occur in a uid or a role id, so (uid, role) pairs never hash alike by
  // concatenation.
  if (uid_scheme_) return "ksss-" + short_hash(uid_ + '\0' + std::string(role_id));
  return statefulset_name(stack_name_, role_id);
}

std::string ObjectNames::member(std::string_view role_id, std::int64_t ordinal) const {
  if (uid_scheme_) return fmt::format(FMT_COMPILE("{}-{}"), statefulset(role_id), ordinal);
  return member_name(stack_name_, role_id, ordinal);
}

std::string ObjectNames::pvc(std::string_view role_id, std::int64_t ordinal) const {
  return fmt::format(FMT_COMPILE("{}-{}"), kDataVolumeName, member(role_id, ordinal));
}

}  // namespace kstack::catalog
