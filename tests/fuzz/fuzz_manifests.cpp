// Fuzzes the manifest reader of `kstack validate/render/import` (catalog/yaml.cpp: YAML and
// JSON text, multi-document, `kind: List`) and the tolerant decoders of AppType, Stack,
// KStackConfig and Stack status (catalog/parse_*.cpp) on every document it yields.
// YAML documents go to YAML::Load one by one (never LoadAll, which hangs on ",").
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <boost/json.hpp>

#include "catalog/parse.h"
#include "catalog/yaml.h"

namespace {

namespace json = boost::json;
namespace catalog = kstack::catalog;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  (void)std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

void decode_all(const json::value& value) {
  catalog::FieldErrors errors;
  (void)catalog::decode_apptype(value, errors);
  (void)catalog::decode_stack(value, errors);
  (void)catalog::decode_kstack_config(value, errors);
  const json::value* status =
      value.is_object() ? value.get_object().if_contains("status") : nullptr;
  if (status != nullptr) {
    catalog::FieldErrors status_errors;
    const catalog::StackStatus decoded = catalog::decode_stack_status(*status, status_errors);
    // Writing a decoded status and decoding it again is stable.
    const json::value written = catalog::to_json(decoded);
    catalog::FieldErrors again_errors;
    const json::value rewritten =
        catalog::to_json(catalog::decode_stack_status(written, again_errors));
    if (!again_errors.empty() || rewritten != written) {
      fail("status does not round-trip", json::serialize(written) + " vs " +
                                             json::serialize(rewritten) + " " +
                                             catalog::join(again_errors));
    }
  }
  for (const auto& e : errors) {
    if (e.field.empty() && e.reason.empty()) fail("empty field error", json::serialize(value));
  }
  (void)catalog::parse_apptype(value);
  (void)catalog::parse_stack(value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  catalog::YamlLimits limits;
  limits.max_nodes = 1u << 14;  // keep alias bombs cheap under the fuzzer
  auto docs = catalog::parse_manifests(text, limits);
  if (!docs) return 0;
  for (const auto& doc : *docs) {
    if (!doc.error.empty()) {
      if (!doc.value.is_null()) fail("document with an error has a value", doc.error);
      continue;
    }
    decode_all(doc.value);
  }
  (void)catalog::parse_yaml(text, limits);
  return 0;
}
