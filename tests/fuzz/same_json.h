// Two DOMs equal down to their kinds, for the tests that compare two JSON parsers
// (tests/fuzz/fuzz_json_text.cpp, tests/unit/kube/json_text_test.cpp). boost::json's
// operator== (and kube::json_equal) take int64 1 for uint64 1 and objects regardless of member
// order; a parser must give the very same DOM: kinds, member order, and doubles bit for bit
// (-0.0 is not 0.0).
#pragma once

#include <cstring>

#include <boost/json/value.hpp>

#include "kube/json_parser.h"

namespace kstack::testing {

inline bool same_json(const boost::json::value& a, const boost::json::value& b) {
  namespace json = boost::json;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case json::kind::object: {
      const auto& x = a.get_object();
      const auto& y = b.get_object();
      if (x.size() != y.size()) return false;
      for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j) {
        if (i->key() != j->key() || !same_json(i->value(), j->value())) return false;
      }
      return true;
    }
    case json::kind::array: {
      const auto& x = a.get_array();
      const auto& y = b.get_array();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!same_json(x[i], y[i])) return false;
      }
      return true;
    }
    case json::kind::double_: {
      const double x = a.get_double();
      const double y = b.get_double();
      return std::memcmp(&x, &y, sizeof x) == 0;
    }
    default:
      return a == b;
  }
}

// `v` with the members `node` names erased after the fact: what a parse that skips them must
// give (kube::JsonSkips). Paths go through objects only, as the parser's do.
inline void erase_skipped(boost::json::value& v, const kube::JsonSkips::Node& node) {
  auto* object = v.if_object();
  if (object == nullptr) return;
  for (const auto& child : node.children) {
    if (child.skip) {
      object->stable_erase(child.name);  // erase() would move the last member into its place
    } else if (auto* member = object->if_contains(child.name)) {
      erase_skipped(*member, child);
    }
  }
}

}  // namespace kstack::testing
