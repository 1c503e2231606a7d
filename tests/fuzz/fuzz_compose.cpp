// Fuzzes `kstack import compose` (catalog/compose*.cpp) on whatever the manifest reader makes
// of the input: merge keys, interpolation, command splitting, ports, volumes, durations and
// the host-name scan. Checks: a refusal has a reason and no objects; a conversion gives an
// AppType and a Stack that kstack's own decoders read without a type error, and a warning
// never has an empty message.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <boost/json.hpp>

#include "catalog/compose.h"
#include "catalog/parse.h"
#include "catalog/yaml.h"

namespace {

namespace json = boost::json;
namespace catalog = kstack::catalog;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  (void)std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  catalog::YamlLimits limits;
  limits.max_nodes = 1u << 14;  // keep alias bombs cheap under the fuzzer
  auto doc = catalog::parse_yaml(text, limits);
  if (!doc) return 0;
  catalog::ComposeOptions options;
  options.directory_name = "fuzz";
  const auto result = catalog::convert_compose(*doc, options);
  if (!result.error.empty()) {
    if (!result.apptype.is_null() || !result.stack.is_null()) {
      fail("a refusal with objects", result.error);
    }
    return 0;
  }
  for (const auto& w : result.warnings) {
    if (w.message.empty()) fail("empty warning", w.path);
  }
  catalog::FieldErrors errors;
  (void)catalog::decode_apptype(result.apptype, errors);
  (void)catalog::decode_stack(result.stack, errors);
  if (!errors.empty()) {
    fail("converted objects do not decode", catalog::join(errors) + "\n" +
                                                json::serialize(result.apptype) + "\n" +
                                                json::serialize(result.stack));
  }
  for (std::string_view s : {std::string_view("a 'b c' \"d\\\"e\" f\\ g"), text.substr(0, 64)}) {
    (void)catalog::split_command(s);
    (void)catalog::parse_compose_duration(s);
    (void)catalog::sanitize_dns_label(s);
  }
  return 0;
}
