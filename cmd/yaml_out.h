// JSON -> YAML text for kstack's command-line output (yaml-cpp's emitter; block style, keys in
// the JSON's order, strings quoted when YAML would otherwise read them as another type).
#pragma once

#include <string>

#include <boost/json/value.hpp>

namespace kstack::cmd {

std::string to_yaml(const boost::json::value& value);

}  // namespace kstack::cmd
