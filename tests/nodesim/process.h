// Child processes of the simulated runtime: a container's bwrap sandbox, and commands run
// inside a running sandbox (exec) by joining its namespaces. Always fork/exec with an argv
// array, never a shell command line.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>
#include <tl/expected.hpp>

namespace kstack::nodesim {

// A started sandbox: bwrap (the process group leader, our child) and the first process inside
// its pid namespace (whose /proc/<pid>/ns/* an exec joins).
struct SandboxProcess {
  pid_t bwrap_pid = 0;
  pid_t init_pid = 0;
};

// Runs `bwrap <args> sh -c 'echo ready; exec "$@" >&2' sh <command...>` (the command's argv
// as the shell's positional parameters, never in its script), or `sleep infinity` in its place
// when `command` is empty, with stdin /dev/null and stdout and stderr appended to `log`; returns
// once the sandbox's mounts are in place (the shell printed "ready").
tl::expected<SandboxProcess, std::string> start_sandbox(const std::string& bwrap,
                                                        const std::vector<std::string>& args,
                                                        const std::vector<std::string>& command,
                                                        const std::filesystem::path& log,
                                                        std::chrono::milliseconds timeout);

// SIGKILL to the sandbox's process group and reap bwrap; everything in the sandbox's pid
// namespace dies with its first process.
void kill_sandbox(SandboxProcess& sandbox);

// The sandbox's exit code once bwrap has exited (it exits as its command did: the code, or
// 128 + signal), reaping it and killing what is left of its group; nullopt while it runs.
// A sandbox that was never started or already reaped counts as exited with 137.
std::optional<int> sandbox_exit_code(SandboxProcess& sandbox);

struct ExecTarget {
  pid_t init_pid = 0;            // the sandbox's first process
  std::string container_id;      // for logs
  std::vector<std::string> env;  // KEY=VALUE, the container's environment
  std::string working_dir;       // "" = "/"
  // The command's identity (setresgid/setresuid, no supplementary groups); -1: the
  // simulator's own (root).
  long uid = -1;
  long gid = -1;
};

struct ExecOptions {
  bool stdin = false;
  bool stdout = false;
  bool stderr = false;
  bool tty = false;
};

// A command running in a sandbox. `pid` is a helper outside the sandbox that waits for the
// command and exits with its status (128 + signal when killed), so it is our child and
// `pidfd` (pidfd_open) becomes readable when it ends. Killing `pid` kills the command (its
// parent-death signal), not the processes it left in the background — as in a container.
// The caller owns every descriptor (-1 when not requested).
struct ExecProcess {
  pid_t pid = -1;
  int pidfd = -1;
  int stdin_fd = -1;   // write end
  int stdout_fd = -1;  // read end
  int stderr_fd = -1;  // read end
  int pty_fd = -1;     // tty: the terminal's master, read and write
};

// Joins the sandbox's ipc, uts, pid and mount namespaces, takes the target's uid and gid, and
// execs argv (PATH looked up in the
// container's environment). A missing program is reported on stderr with exit code 127, as
// shells do (126 when not executable).
tl::expected<ExecProcess, std::string> spawn_exec(const ExecTarget& target,
                                                  const std::vector<std::string>& argv,
                                                  const ExecOptions& options);

// waitpid() on an exited ExecProcess::pid (non-blocking); the command's exit code, or nullopt
// if it has not exited yet.
std::optional<int> reap_exec(pid_t pid);

// Sets a terminal's size (the resize channel).
void resize_terminal(int pty_fd, unsigned short width, unsigned short height);

}  // namespace kstack::nodesim
