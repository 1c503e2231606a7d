// Setup inside a member's container (docs/spec.md §5), every step one `pods/exec` with an argv
// array into container "app", guarded by the container ID the member is being set up in. The shell
// snippets below are constants; every user-controlled string (paths, URLs, role ids, FQDNs)
// reaches them as positional arguments ("$1"...), never spliced into the command line.
//
// Layout: /etc/kstack/{configmeta.json,env} (dir 0700 when the container's user owns it, files
// 0600); the package unpacked in
// /opt/kstack/setup/ with an executable `startscript`; `startscript --configure` runs detached
// and records `<containerID>=<exit code>` in /opt/kstack/setup/configure.status, its output in
// configure.stdout / configure.stderr next to it.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/model.h"
#include "executor/setup_error.h"
#include "kube/client.h"

namespace kstack::executor {

inline constexpr std::string_view kConfigDir = "/etc/kstack";
inline constexpr std::string_view kConfigMetaPath = "/etc/kstack/configmeta.json";
inline constexpr std::string_view kEnvPath = "/etc/kstack/env";
inline constexpr std::string_view kSetupDir = "/opt/kstack/setup";
inline constexpr std::string_view kStartScript = "/opt/kstack/setup/startscript";
inline constexpr std::string_view kConfigureStatus = "/opt/kstack/setup/configure.status";
// Where the package of the AppType a member is about to move to is unpacked for its
// `startscript --preupgrade`, in the member's running (old) container.
inline constexpr std::string_view kUpgradeDir = "/opt/kstack/upgrade";

struct SetupOptions {
  std::chrono::milliseconds exec_timeout{30'000};    // each short step
  std::chrono::milliseconds notify_timeout{60'000};  // one --addnodes/--delnodes run
  std::chrono::milliseconds fetch_timeout{120'000};  // http(s) download inside the container
  std::size_t tail_bytes = 2048;                     // stdout/stderr tails kept for status
  std::size_t max_package_bytes = 64u << 20;         // configmap:// payloads
};

// The member being set up: pod and the container ID every exec must still find.
struct MemberTarget {
  std::string namespace_name;
  std::string pod;
  std::string container_id;
};

// Failures are SetupError (executor/setup_error.h). kConfig means the *setup* is wrong (no
// curl/wget for an http package, sha256 mismatch, no startscript in the package, tar failed):
// the member goes to config_error with `message`. kContainerChanged means the container
// changed under us (restart): start over with the new one. The rest (transport, timeout, an
// API error) is transient: retry.
class SetupRunner {
 public:
  explicit SetupRunner(std::shared_ptr<kube::Client> client, SetupOptions options = {});

  // Writes configmeta.json and env atomically (temp file + rename), files 0600, dir 0700 when
  // the container's user owns it.
  SetupResult<void> write_config(const MemberTarget& member, std::string_view configmeta_json,
                                 std::string_view env);

  // True when /opt/kstack/setup/startscript exists and is executable.
  SetupResult<bool> package_installed(const MemberTarget& member);

  // Unpacks the package into /opt/kstack/setup: file:// (a tar.gz inside the image),
  // http(s):// (fetched in the container with curl, else wget), configmap:// (`payload` holds
  // the bytes the operator read from the ConfigMap; streamed over stdin). With `sha256` the
  // bytes are verified before unpacking (in the container for file/http, here for configmap).
  // With `dir` (kUpgradeDir): unpacked there instead, into an emptied directory.
  SetupResult<void> install_package(const MemberTarget& member,
                                    const catalog::SetupPackage& package,
                                    const std::string* payload = nullptr,
                                    std::string_view dir = kSetupDir);

  // Launches `startscript --configure <extra...>` detached (setsid/nohup); returns at once.
  // `extra`: e.g. {"--upgrade-from", "<AppType>"} when the member moved to a new template.
  SetupResult<void> start_configure(const MemberTarget& member,
                                    const std::vector<std::string>& extra = {});

  struct ConfigureStatus {
    enum class State { kNotStarted, kRunning, kDone } state = State::kNotStarted;
    std::string container_id;  // from configure.status (may be an earlier container's)
    int exit_code = 0;
    std::string stdout_tail;  // last tail_bytes of configure.stdout (when done)
    std::string stderr_tail;
  };
  // Reads configure.status (and the output tails when done). kRunning = started (a marker
  // written by start_configure) but no status yet.
  SetupResult<ConfigureStatus> configure_status(const MemberTarget& member);

  struct RunResult {
    int exit_code = 0;
    std::string stdout_tail;
    std::string stderr_tail;
  };
  // Runs `startscript <arguments...>` synchronously (bounded by notify_timeout), e.g.
  // {"--addnodes", "--role", "worker", "--fqdns", "a,b"}.
  // `dir`: the directory whose startscript runs (kUpgradeDir for --preupgrade).
  SetupResult<RunResult> run_startscript(const MemberTarget& member,
                                         const std::vector<std::string>& arguments,
                                         std::string_view dir = kSetupDir);

 private:
  std::shared_ptr<kube::Client> client_;
  SetupOptions options_;
};

}  // namespace kstack::executor
