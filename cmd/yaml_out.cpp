#include "cmd/yaml_out.h"

#include <boost/json.hpp>
#include <yaml-cpp/yaml.h>

namespace kstack::cmd {
namespace {

void emit(YAML::Emitter& out, const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null: out << YAML::Null; break;
    case boost::json::kind::bool_: out << v.get_bool(); break;
    case boost::json::kind::int64: out << v.get_int64(); break;
    case boost::json::kind::uint64: out << v.get_uint64(); break;
    case boost::json::kind::double_: out << v.get_double(); break;
    case boost::json::kind::string: {
      // yaml-cpp quotes strings that would read back as bool/null/number ("true", "1.0").
      out << std::string(v.get_string());
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
        out << YAML::Key << std::string(k) << YAML::Value;
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
