// `kstack import compose FILE`: a Compose file (the Compose Specification) converted to an
// AppType and a Stack (catalog/compose.h, docs/compose.md), printed on stdout as two YAML
// documents (or a JSON List); every construct that is not carried over is a warning on stderr
// naming its Compose path.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace kstack::cmd {

struct ComposeImportOptions {
  // A Compose file, "-" for stdin, or a directory holding compose.yaml, compose.yml,
  // docker-compose.yaml or docker-compose.yml (the first found, as Compose looks).
  std::string file;
  std::optional<std::string> name;            // --name
  std::optional<std::string> namespace_name;  // -n
  std::string output = "yaml";                // yaml | json
  std::string storage_size = "1Gi";           // claim size of a role with volumes
  bool strict = false;  // any warning: print the warnings, nothing on stdout, exit 1
  std::size_t max_file_bytes = 4u << 20;
};

// Exit code: 0 converted (warnings allowed); 1 the file is unreadable or cannot be converted,
// or --strict and some warning; 2 bad options.
int import_compose(const ComposeImportOptions& options);
int import_compose(const ComposeImportOptions& options, std::istream& in, std::ostream& out,
                   std::ostream& err);

// Registers `compose` under `import`; the command runs when the returned subcommand parsed.
CLI::App* add_import_compose_command(CLI::App& import_cmd, ComposeImportOptions& options);

}  // namespace kstack::cmd
