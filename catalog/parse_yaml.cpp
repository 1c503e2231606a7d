// The parse_*_yaml conveniences: one YAML document, then the JSON decoder of the kind.
#include <fmt/format.h>

#include "catalog/parse.h"
#include "catalog/yaml.h"

namespace kstack::catalog {

namespace {

template <typename T, typename F>
kube::Result<T> parse_one(std::string_view yaml, F&& parse_json) {
  auto value = parse_yaml(yaml);
  if (!value) return tl::unexpected(value.error());
  return parse_json(*value);
}

}  // namespace

kube::Result<AppType> parse_apptype_yaml(std::string_view yaml) {
  return parse_one<AppType>(yaml, [](const auto& v) { return parse_apptype(v); });
}

kube::Result<Stack> parse_stack_yaml(std::string_view yaml) {
  return parse_one<Stack>(yaml, [](const auto& v) { return parse_stack(v); });
}

kube::Result<KStackConfig> parse_kstack_config_yaml(std::string_view yaml) {
  return parse_one<KStackConfig>(yaml, [](const auto& v) { return parse_kstack_config(v); });
}

}  // namespace kstack::catalog
