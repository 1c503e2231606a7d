// Controller-owned fields (docs/spec.md §3): only the operator's own identity may write a Stack's
// status, add or remove the finalizer kstack.io/cleanup, or add, change or remove labels and
// annotations with the kstack.io/ prefix. Anyone else is refused (403 Forbidden) with the
// field named. The identity is request.userInfo.username, compared exactly.
#pragma once

#include <string_view>

#include <boost/json/value.hpp>

#include "validator/rules/syntax.h"

namespace kstack::validator {

inline constexpr std::string_view kDefaultOperatorUsername =
    "system:serviceaccount:kstack-system:kstack";

struct OwnedFieldsInput {
  std::string_view operation;     // CREATE | UPDATE | DELETE
  std::string_view sub_resource;  // "status" for the status subresource
  std::string_view username;
  std::string_view operator_username;
  const boost::json::value* old_object = nullptr;  // null (or JSON null) on CREATE
  const boost::json::value* new_object = nullptr;  // null (or JSON null) on DELETE
};

// One violation per owned field the request writes; none for the operator itself.
// Status on CREATE is not checked: the API server drops it for kinds with a status
// subresource, so it never takes effect. Neither is the finalizer on CREATE: the mutating
// webhook puts it on every new Stack (defaulting.h), and a new Stack's finalizer only says
// what the operator does anyway.
Violations check_owned_fields(const OwnedFieldsInput& in);

}  // namespace kstack::validator
