// Child processes for the test control plane: long-running servers whose output goes to a log
// file, and short commands whose output is captured. Always fork/exec with an argv array (no
// shell); every child runs in its own process group and gets SIGKILL when its parent dies
// (PR_SET_PDEATHSIG), so a crashed test binary leaves no servers behind.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/types.h>
#include <tl/expected.hpp>

namespace kstack::testenv {

// Extra environment variables for a child, on top of the parent's environment.
using EnvVars = std::vector<std::pair<std::string, std::string>>;

struct CommandResult {
  int exit_code = -1;  // 128 + signal number if the command was killed by a signal
  std::string out;
  std::string err;
  bool ok() const { return exit_code == 0; }
};

// How long a captured command may run before it is killed (kubectl, curl, openssl, etcdctl).
inline constexpr std::chrono::seconds kDefaultCommandTimeout{120};

// Runs argv[0] (an absolute path, or a name looked up in PATH) to completion and captures its
// output. Fails only if the command could not be started; a non-zero exit is a CommandResult.
tl::expected<CommandResult, std::string> run_command(
    const std::vector<std::string>& argv, const EnvVars& env = {}, std::string_view input = {},
    std::chrono::milliseconds timeout = kDefaultCommandTimeout);

// A server process started by spawn(); stdout and stderr are appended to log().
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(std::string name, pid_t pid, std::filesystem::path log)
      : name_(std::move(name)), pid_(pid), log_(std::move(log)) {}
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ChildProcess(ChildProcess&& other) noexcept { *this = std::move(other); }
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess() { kill_now(); }

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }  // 0 when not running (or already reaped)
  const std::filesystem::path& log() const { return log_; }

  // True while the process runs; reaps it (and remembers how it ended) once it has exited.
  bool running();
  // "exited with status 1" / "killed by signal 9", after running() returned false.
  const std::string& how_it_ended() const { return ended_; }

  // SIGTERM, then SIGKILL once `grace` has passed; waits for the process to go.
  void stop(std::chrono::milliseconds grace);
  // SIGKILL and reap.
  void kill_now();

 private:
  void reap(int status);

  std::string name_;
  pid_t pid_ = 0;
  std::filesystem::path log_;
  std::string ended_;
};

// Starts a server process with stdout/stderr appended to `log`.
tl::expected<ChildProcess, std::string> spawn(std::string name,
                                              const std::vector<std::string>& argv,
                                              const std::filesystem::path& log,
                                              const EnvVars& env = {});

// Stops several processes at once: SIGTERM to all, SIGKILL to those still there after `grace`.
void stop_all(const std::vector<ChildProcess*>& processes, std::chrono::milliseconds grace);

// A free TCP port on 127.0.0.1 (bound, read, closed: a tiny race with other binaries); 0 if
// none could be had.
std::uint16_t free_port();

// The last `lines` lines of a (log) file, for error messages.
std::string tail_file(const std::filesystem::path& path, int lines = 30);

}  // namespace kstack::testenv
