#include "cmd/yaml_out.h"

#include <algorithm>
#include <iterator>
#include <string_view>

#include <boost/json.hpp>
#include <yaml-cpp/yaml.h>

namespace kstack::cmd {
namespace {

// yaml-cpp 0.7 leaves strings such as "3.1", "1" or "true" unquoted, and they would read back
// as numbers and booleans (an AppType version or cardinality, an annotation value would change
// type). Every string a YAML 1.1 reader (go-yaml v2 in kubectl, yaml-cpp) could take for
// something else is double-quoted.
bool needs_quotes(std::string_view s) {
  if (s.empty()) return true;
  if (std::string_view("+-.0123456789").find(s.front()) != std::string_view::npos) return true;
  std::string lower;
  for (char c : s) lower.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  static constexpr std::string_view kWords[] = {"y",  "n",   "yes", "no",   "true", "false",
                                                "on", "off", "~",   "null", "<<"};
  return std::find(std::begin(kWords), std::end(kWords), lower) != std::end(kWords);
}

void emit(YAML::Emitter& out, const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null:
      out << YAML::Null;
      break;
    case boost::json::kind::bool_:
      out << v.get_bool();
      break;
    case boost::json::kind::int64:
      out << v.get_int64();
      break;
    case boost::json::kind::uint64:
      out << v.get_uint64();
      break;
    case boost::json::kind::double_:
      out << v.get_double();
      break;
    case boost::json::kind::string: {
      std::string s(v.get_string());
      if (needs_quotes(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case boost::json::kind::array:
      out << YAML::BeginSeq;
      for (const auto& e : v.get_array()) emit(out, e);
      out << YAML::EndSeq;
      break;
    case boost::json::kind::object:
      out << YAML::BeginMap;
      for (const auto& [k, e] : v.get_object()) {
        std::string key(k);
        out << YAML::Key;
        if (needs_quotes(key)) out << YAML::DoubleQuoted;
        out << key << YAML::Value;
        emit(out, e);
      }
      out << YAML::EndMap;
      break;
  }
}

}  // namespace

std::string to_yaml(const boost::json::value& value) {
  YAML::Emitter out;
  emit(out, value);
  return std::string(out.c_str()) + "\n";
}

}  // namespace kstack::cmd
