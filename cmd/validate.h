// `kstack validate`: AppType, Stack and KStackConfig manifests checked offline with the
// admission webhook's own rules (validator/rules/offline.h).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "cmd/inputs.h"
#include "validator/rules/offline.h"

namespace kstack::cmd {

struct ValidateOptions {
  std::vector<std::string>
      paths;  // files or directories (recursive: *.yaml, *.yml, *.json); "-" = stdin
  std::string output = "text";  // text | json
  std::string operator_namespace = "kstack-system";
  std::string default_namespace = "default";  // for objects without metadata.namespace
  std::size_t max_file_bytes = kMaxInputFileBytes;
};

// The documents of `paths` (cmd/inputs.h) as the offline rules take them. Shared by
// `validate` and `render`, so both read their input alike.
std::vector<validator::SourceDocument> read_sources(const std::vector<std::string>& paths,
                                                    std::size_t max_file_bytes,
                                                    std::vector<InputError>& errors);

// Exit code: 0 all valid, 1 some object invalid, 2 unreadable input (missing file, too
// large, not YAML/JSON) or bad options.
int validate(const ValidateOptions& options);
int validate(const ValidateOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kstack::cmd
