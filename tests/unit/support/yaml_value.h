// Test helper: a YAML document (as the offline tools read it, catalog::parse_yaml) as a JSON
// value, failing the current test when it does not parse.
#pragma once

#include <string_view>

#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include "catalog/yaml.h"

namespace kstack::testing {

inline boost::json::value yaml(std::string_view text) {
  auto v = catalog::parse_yaml(text);
  EXPECT_TRUE(v.has_value()) << (v ? "" : v.error().message);
  return v ? *v : boost::json::value{};
}

}  // namespace kstack::testing
