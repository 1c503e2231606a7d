#include "kube/json_equal.h"

#include <cstdint>

#include "kube/json_member.h"

namespace kstack::kube {
namespace json = boost::json;

namespace {

bool int_equal(std::int64_t i, std::uint64_t u) noexcept {
  return i >= 0 && static_cast<std::uint64_t>(i) == u;
}

}  // namespace

bool json_equal(const json::object& a, const json::object& b) noexcept {
  if (a.size() != b.size()) return false;
  // Two versions of one object (a spec before and after) mostly keep their members' order:
  // the member at the same place is tried before a look-up.
  const auto* at = b.begin();
  for (const auto& m : a) {  // by reference: the point of this function
    const json::value* other = at->key() == m.key() ? &at->value() : member(b, m.key());
    if (other == nullptr || !json_equal(m.value(), *other)) return false;
    ++at;  // a and b are of one size: `at` stays in b
  }
  return true;
}

bool json_equal(const json::array& a, const json::array& b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!json_equal(a[i], b[i])) return false;
  }
  return true;
}

bool json_equal(const json::value& a, const json::value& b) noexcept {
  switch (a.kind()) {
    case json::kind::null:
      return b.is_null();
    case json::kind::bool_:
      return b.is_bool() && a.get_bool() == b.get_bool();
    case json::kind::int64:
      if (b.is_int64()) return a.get_int64() == b.get_int64();
      return b.is_uint64() && int_equal(a.get_int64(), b.get_uint64());
    case json::kind::uint64:
      if (b.is_uint64()) return a.get_uint64() == b.get_uint64();
      return b.is_int64() && int_equal(b.get_int64(), a.get_uint64());
    case json::kind::double_:
      return b.is_double() && a.get_double() == b.get_double();
    case json::kind::string:
      return b.is_string() && a.get_string() == b.get_string();
    case json::kind::array:
      return b.is_array() && json_equal(a.get_array(), b.get_array());
    case json::kind::object:
      return b.is_object() && json_equal(a.get_object(), b.get_object());
  }
  return false;
}

}  // namespace kstack::kube
