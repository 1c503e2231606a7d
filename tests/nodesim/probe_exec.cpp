// exec probes (see probe_exec.h).
#include "tests/nodesim/probe_exec.h"

#include <cerrno>

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kstack::nodesim {

tl::expected<void, std::string> run_exec_probe(const ExecTarget& target,
                                               const std::vector<std::string>& command,
                                               std::chrono::milliseconds timeout) {
  ExecOptions options;
  options.stdout = true;  // drained, so that a chatty command cannot block on a full pipe
  options.stderr = true;
  auto process = spawn_exec(target, command, options);
  if (!process) return tl::unexpected(process.error());
  std::string output;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::optional<int> code;
  while (!code) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd fds[3] = {{process->pidfd, POLLIN, 0},
                     {process->stdout_fd, POLLIN, 0},
                     {process->stderr_fd, POLLIN, 0}};
    if (::poll(fds, 3, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    for (int i = 1; i < 3; ++i) {
      if (fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0 && output.size() < 1024) output.append(buf, static_cast<std::size_t>(n));
    }
    if (fds[0].revents != 0) code = reap_exec(process->pid);
  }
  if (!code) {
    ::kill(process->pid, SIGKILL);  // the command dies with its helper (parent-death signal)
    int status = 0;
    ::waitpid(process->pid, &status, 0);
  }
  for (int fd : {process->pidfd, process->stdout_fd, process->stderr_fd}) {
    if (fd >= 0) ::close(fd);
  }
  if (!code) return tl::unexpected(fmt::format("timed out after {} ms", timeout.count()));
  if (*code != 0) {
    while (!output.empty() && output.back() == '\n') output.pop_back();
    return tl::unexpected(
        fmt::format("exit code {}{}", *code, output.empty() ? "" : ": " + output));
  }
  return {};
}

}  // namespace kstack::nodesim
