// `kstack import -f <KubeDirector manifests>`: KubeDirectorApp, KubeDirectorCluster and
// KubeDirectorConfig objects converted to AppType, Stack and KStackConfig
// (catalog/kubedirector.h), printed on stdout as YAML documents (or JSON); every field that is
// not carried over is reported on stderr with its path.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace kstack::cmd {

struct ImportOptions {
  std::vector<std::string>
      paths;  // files or directories (recursive: *.yaml, *.yml, *.json); "-" = stdin
  std::string output = "yaml";                       // yaml | json
  std::optional<std::string> namespace_name;         // -n: namespace of every AppType and Stack
  std::string operator_namespace = "kstack-system";  // where the KStackConfig goes
  bool strict = false;  // a dropped or changed field is an error; nothing is printed then
  std::size_t max_file_bytes = 4u << 20;
};

// Exit code: 0 everything converted (warnings and notes allowed); 1 some input unusable (a file
// missing or unreadable, a document that is not YAML or not a KubeDirector object: reported
// and skipped, the rest still printed) or, with --strict, some field dropped or changed; 2 bad
// options.
int import_manifests(const ImportOptions& options);
int import_manifests(const ImportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kstack::cmd
