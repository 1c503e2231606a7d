// `kstack render -f FILE|DIR|- ...`: prints, offline, the Kubernetes objects one Stack would
// produce (reconciler::desired_state), as YAML documents or JSON lines. The input is read and
// checked exactly as `kstack validate` reads and checks it (validator::run_offline): anything
// validate refuses is refused here with the same messages, and nothing is rendered. The
// AppType and KStackConfig are the ones the Stack resolves to in that offline catalog.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

namespace kstack::cmd {

struct RenderOptions {
  std::vector<std::string> files;  // files, directories (recursive) or "-" for stdin
  std::string output = "yaml";     // yaml | json
  std::string operator_namespace = "kstack-system";
  std::string default_namespace = "default";  // for objects without metadata.namespace
  // The Stack's uid when its manifest has none (names derive from it under namingScheme UID).
  std::string uid;
  std::size_t max_file_bytes = 4u << 20;
};

// Offline there is no API server to assign a uid: a Stack without metadata.uid and without
// --uid is rendered with this one (a note on stderr says so when the names depend on it).
inline constexpr std::string_view kPlaceholderUid = "00000000-0000-0000-0000-000000000000";

// Exit code as `kstack validate`: 0 rendered, 1 an object is invalid (or the input holds no
// single Stack to render), 2 unreadable input or bad options.
int render(const RenderOptions& options);
int render(const RenderOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kstack::cmd
