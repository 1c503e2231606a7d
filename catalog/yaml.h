// YAML text -> boost::json, the way kubectl reads manifests (go-yaml v2 scalar resolution:
// plain `3` is an int, `true`/`yes`/`on` bools, `~`/`null`/empty null; quoted scalars stay
// strings). Multi-document text is split here, on lines that are exactly `---`, and each
// document goes to YAML::Load on its own: yaml-cpp 0.7's LoadAll never returns on some inputs
// (docs/dependencies.md). Sizes, nesting depth and alias expansion are bounded, so hostile input
// fails with an error instead of exhausting memory.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "kube/error.h"

namespace kstack::catalog {

struct YamlLimits {
  std::size_t max_bytes = 4u << 20;  // whole input (kstack validate's per-file cap)
  std::size_t max_depth = 64;        // nested collections
  std::size_t max_nodes = 1u << 20;  // JSON values produced per document (alias bombs)
};

struct YamlDocument {
  std::size_t index = 0;  // 1-based, counting non-empty documents only
  std::size_t line = 0;   // 1-based line where the document's text starts
  boost::json::value value;
  std::string error;  // non-empty when this document could not be read; value is null
};

// Splits and converts every non-empty document (documents holding only comments or blank
// lines are skipped). Fails as a whole only when the input exceeds `limits.max_bytes` or is
// not UTF-8 text (a NUL byte or a malformed sequence; the error names line and byte);
// a bad document is reported in its own `error` and the others are still returned.
kube::Result<std::vector<YamlDocument>> parse_yaml_documents(std::string_view text,
                                                             const YamlLimits& limits = {});

// Exactly one document; an error when there are none, several, or it does not parse.
kube::Result<boost::json::value> parse_yaml(std::string_view text, const YamlLimits& limits = {});

// A JSON document or stream of YAML documents alike: JSON is valid YAML, but JSON text gets
// Boost.JSON's parser (exact numbers, clearer errors). A top-level `kind: List` is expanded
// into its items, as kubectl does. Fails as a whole as parse_yaml_documents does.
kube::Result<std::vector<YamlDocument>> parse_manifests(std::string_view text,
                                                        const YamlLimits& limits = {});

}  // namespace kstack::catalog
