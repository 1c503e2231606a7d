// fork/exec plumbing of the simulated runtime (see process.h). Everything a child needs is
// prepared before fork(): the children only make async-signal-safe calls.
#include "tests/nodesim/process.h"

#include <cerrno>
#include <cstring>
#include <optional>

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

extern char** environ;

namespace kstack::nodesim {

namespace {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    reset(o.release());
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

std::string errno_text(int err) { return std::strerror(err); }

tl::expected<std::pair<Fd, Fd>, std::string> make_pipe() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return tl::unexpected("pipe: " + errno_text(errno));
  return std::pair<Fd, Fd>(Fd(p[0]), Fd(p[1]));
}

// argv/envp arrays pointing into strings owned by the caller.
std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// ---- in forked children: async-signal-safe only ----------------------------------------------

void child_write(const char* msg) {
  ssize_t n = ::write(2, msg, std::strlen(msg));
  (void)n;
}

[[noreturn]] void child_fail(const char* msg, int code) {
  child_write(msg);
  ::_exit(code);
}

void child_reset_signals() {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) ::sigaction(s, &dfl, nullptr);
}

// dup2 that also works when from == to (clears close-on-exec).
bool child_move_fd(int from, int to) {
  if (from == to) return ::fcntl(to, F_SETFD, 0) == 0;
  return ::dup2(from, to) == to;
}

}  // namespace

// ---- sandboxes --------------------------------------------------------------------------------

tl::expected<SandboxProcess, std::string> start_sandbox(const std::string& bwrap,
                                                        const std::vector<std::string>& args,
                                                        const std::vector<std::string>& command,
                                                        const std::filesystem::path& log,
                                                        std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {bwrap};
  argv.insert(argv.end(), args.begin(), args.end());
  // "ready" goes to the pipe we read; the command's own stdout goes to the log with stderr.
  argv.insert(argv.end(),
              {"--info-fd", "3", "/usr/bin/sh", "-c", "echo ready; exec \"$@\" >&2", "sh"});
  if (command.empty()) {
    argv.insert(argv.end(), {"sleep", "infinity"});
  } else {
    argv.insert(argv.end(), command.begin(), command.end());
  }
  std::vector<std::string> env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"};
  auto c_argv = c_strings(argv);
  auto c_env = c_strings(env);

  auto ready = make_pipe();
  auto info = make_pipe();
  if (!ready || !info) return tl::unexpected(!ready ? ready.error() : info.error());
  Fd log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  Fd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (log_fd.get() < 0 || null_fd.get() < 0) {
    return tl::unexpected("open " + log.string() + ": " + errno_text(errno));
  }
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return tl::unexpected("fork: " + errno_text(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    child_reset_signals();
    if (!child_move_fd(null_fd.get(), 0) || !child_move_fd(ready->second.get(), 1) ||
        !child_move_fd(log_fd.get(), 2) || !child_move_fd(info->second.get(), 3)) {
      child_fail("kstack-nodesim: dup2 failed\n", 127);
    }
    ::close_range(4, ~0U, 0);
    ::execve(c_argv[0], c_argv.data(), c_env.data());
    child_fail("kstack-nodesim: cannot exec bwrap\n", 127);
  }
  SandboxProcess sandbox{pid, 0};
  ready->second.reset();
  info->second.reset();

  // Read the info JSON ({"child-pid": N, ...}) and the "ready" line, with one deadline.
  std::string info_text;
  std::string ready_text;
  bool info_done = false;
  bool ready_done = false;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!(info_done && ready_done)) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd fds[2] = {{info->first.get(), POLLIN, 0}, {ready->first.get(), POLLIN, 0}};
    if (info_done) fds[0].fd = -1;
    if (ready_done) fds[1].fd = -1;
    int n = ::poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    char buf[512];
    if (fds[0].revents != 0) {
      ssize_t r = ::read(info->first.get(), buf, sizeof buf);
      if (r <= 0) info_done = true;
      if (r > 0) info_text.append(buf, static_cast<std::size_t>(r));
      if (info_text.find('}') != std::string::npos) info_done = true;
    }
    if (fds[1].revents != 0) {
      ssize_t r = ::read(ready->first.get(), buf, sizeof buf);
      if (r <= 0) break;  // EOF before "ready": bwrap failed
      ready_text.append(buf, static_cast<std::size_t>(r));
      if (ready_text.find("ready\n") != std::string::npos) ready_done = true;
    }
  }
  auto key = info_text.find("\"child-pid\":");
  if (key != std::string::npos) {
    sandbox.init_pid = static_cast<pid_t>(std::strtol(info_text.c_str() + key + 12, nullptr, 10));
  }
  if (!ready_done || sandbox.init_pid <= 0) {
    kill_sandbox(sandbox);
    return tl::unexpected(fmt::format("bwrap did not start the sandbox (see {})", log.string()));
  }
  return sandbox;
}

void kill_sandbox(SandboxProcess& sandbox) {
  if (sandbox.bwrap_pid <= 0) return;
  ::kill(-sandbox.bwrap_pid, SIGKILL);
  ::kill(sandbox.bwrap_pid, SIGKILL);
  int status = 0;
  while (::waitpid(sandbox.bwrap_pid, &status, 0) < 0 && errno == EINTR) {
  }
  sandbox = {};
}

std::optional<int> sandbox_exit_code(SandboxProcess& sandbox) {
  constexpr int kKilled = 128 + SIGKILL;
  if (sandbox.bwrap_pid <= 0) return kKilled;
  int status = 0;
  pid_t r = ::waitpid(sandbox.bwrap_pid, &status, WNOHANG);
  if (r == sandbox.bwrap_pid || (r < 0 && errno == ECHILD)) {
    ::kill(-sandbox.bwrap_pid, SIGKILL);  // anything left in the group
    sandbox = {};
    if (r < 0) return kKilled;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return kKilled;
  }
  return std::nullopt;
}

// ---- exec -------------------------------------------------------------------------------------

tl::expected<ExecProcess, std::string> spawn_exec(const ExecTarget& target,
                                                  const std::vector<std::string>& argv,
                                                  const ExecOptions& options) {
  if (argv.empty()) return tl::unexpected(std::string("no command"));
  // Namespaces first: a sandbox that is gone fails here, with a clear error.
  Fd ns_fds[4];
  const char* ns_names[4] = {"ipc", "uts", "pid", "mnt"};
  for (int i = 0; i < 4; ++i) {
    auto path = fmt::format("/proc/{}/ns/{}", target.init_pid, ns_names[i]);
    ns_fds[i].reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (ns_fds[i].get() < 0) {
      return tl::unexpected(fmt::format("container {} is not running ({}: {})", target.container_id,
                                        path, errno_text(errno)));
    }
  }
  // PATH lookup candidates, computed with the container's PATH (execvp would use ours).
  std::string path_var = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (const auto& e : target.env) {
    if (e.rfind("PATH=", 0) == 0) path_var = e.substr(5);
  }
  std::vector<std::string> candidates;
  if (argv[0].find('/') != std::string::npos) {
    candidates.push_back(argv[0]);
  } else {
    std::size_t start = 0;
    while (start <= path_var.size()) {
      auto colon = path_var.find(':', start);
      std::string dir = path_var.substr(start, colon == std::string::npos ? colon : colon - start);
      candidates.push_back((dir.empty() ? std::string(".") : dir) + "/" + argv[0]);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  const std::string not_found =
      fmt::format("exec: \"{}\": executable file not found in $PATH\n", argv[0]);
  const std::string not_executable = fmt::format("exec: \"{}\": permission denied\n", argv[0]);
  const std::string workdir = target.working_dir.empty() ? "/" : target.working_dir;
  const std::string bad_workdir =
      fmt::format("chdir to cwd (\"{}\") set in the container failed\n", workdir);
  auto c_argv = c_strings(argv);
  auto c_env = c_strings(target.env);
  auto c_candidates = c_strings(candidates);

  Fd null_fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (null_fd.get() < 0) return tl::unexpected("open /dev/null: " + errno_text(errno));
  ExecProcess proc;
  Fd child_in, child_out, child_err, pty_master, pty_slave;
  Fd parent_in, parent_out, parent_err;
  if (options.tty) {
    pty_master.reset(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (pty_master.get() < 0 || ::grantpt(pty_master.get()) != 0 ||
        ::unlockpt(pty_master.get()) != 0) {
      return tl::unexpected("posix_openpt: " + errno_text(errno));
    }
    char name[128];
    if (::ptsname_r(pty_master.get(), name, sizeof name) != 0) {
      return tl::unexpected("ptsname: " + errno_text(errno));
    }
    pty_slave.reset(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (pty_slave.get() < 0) return tl::unexpected("open pty: " + errno_text(errno));
  } else {
    auto make = [&](bool wanted, bool child_reads, Fd& child, Fd& parent) -> std::string {
      if (!wanted) return {};
      auto p = make_pipe();
      if (!p) return p.error();
      child = child_reads ? std::move(p->first) : std::move(p->second);
      parent = child_reads ? std::move(p->second) : std::move(p->first);
      return {};
    };
    for (auto err : {make(options.stdin, true, child_in, parent_in),
                     make(options.stdout, false, child_out, parent_out),
                     make(options.stderr, false, child_err, parent_err)}) {
      if (!err.empty()) return tl::unexpected(err);
    }
  }
  const int in_fd =
      options.tty ? pty_slave.get() : (child_in.get() >= 0 ? child_in.get() : null_fd.get());
  const int out_fd =
      options.tty ? pty_slave.get() : (child_out.get() >= 0 ? child_out.get() : null_fd.get());
  const int err_fd =
      options.tty ? pty_slave.get() : (child_err.get() >= 0 ? child_err.get() : null_fd.get());
  const bool tty = options.tty;
  const long uid = target.uid;
  const long gid = target.gid;
  const pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) return tl::unexpected("fork: " + errno_text(errno));
  if (pid == 0) {
    // The helper: outside the sandbox, waits for the command.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    child_reset_signals();
    // Stdio: via high descriptors first, so that no source is overwritten by another dup2.
    int in_hi = ::fcntl(in_fd, F_DUPFD_CLOEXEC, 10);
    int out_hi = ::fcntl(out_fd, F_DUPFD_CLOEXEC, 10);
    int err_hi = ::fcntl(err_fd, F_DUPFD_CLOEXEC, 10);
    if (in_hi < 0 || out_hi < 0 || err_hi < 0 || ::dup2(in_hi, 0) != 0 || ::dup2(out_hi, 1) != 1 ||
        ::dup2(err_hi, 2) != 2) {
      ::_exit(126);
    }
    int ns_types[4] = {CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWPID, CLONE_NEWNS};
    for (int i = 0; i < 4; ++i) {
      if (::setns(ns_fds[i].get(), ns_types[i]) != 0) {
        child_fail("kstack-nodesim: cannot enter the container's namespaces\n", 126);
      }
    }
    ::close_range(3, ~0U, 0);
    pid_t command = ::fork();
    if (command < 0) child_fail("kstack-nodesim: fork failed\n", 126);
    if (command == 0) {
      // The command, inside the sandbox's pid namespace (our parent is outside it: ppid 0).
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != 0) ::_exit(1);
      // Raw system calls: they change this (only) thread's ids, without glibc's broadcast to
      // the threads a forked child of a multithreaded process no longer has.
      if (gid >= 0 && (::syscall(SYS_setgroups, 0, nullptr) != 0 ||
                       ::syscall(SYS_setresgid, gid, gid, gid) != 0)) {
        child_fail("kstack-nodesim: cannot set the container's group\n", 126);
      }
      if (uid >= 0 && ::syscall(SYS_setresuid, uid, uid, uid) != 0) {
        child_fail("kstack-nodesim: cannot set the container's user\n", 126);
      }
      if (tty) {
        ::setsid();
        ::ioctl(0, TIOCSCTTY, 0);
      }
      if (::chdir(workdir.c_str()) != 0) child_fail(bad_workdir.c_str(), 127);
      environ = c_env.data();
      bool denied = false;
      for (std::size_t i = 0; c_candidates[i] != nullptr; ++i) {
        ::execve(c_candidates[i], c_argv.data(), c_env.data());
        if (errno == EACCES) denied = true;
      }
      child_fail(denied ? not_executable.c_str() : not_found.c_str(), denied ? 126 : 127);
    }
    ::close(0);
    ::close(1);
    ::close(2);
    int status = 0;
    while (::waitpid(command, &status, 0) < 0) {
      if (errno != EINTR) ::_exit(126);
    }
    if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
    ::_exit(128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
  }
  proc.pid = pid;
  proc.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (proc.pidfd < 0) {
    ::kill(pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
    return tl::unexpected("pidfd_open: " + errno_text(errno));
  }
  ::fcntl(proc.pidfd, F_SETFD, FD_CLOEXEC);
  proc.stdin_fd = parent_in.release();
  proc.stdout_fd = parent_out.release();
  proc.stderr_fd = parent_err.release();
  proc.pty_fd = pty_master.release();
  return proc;
}

std::optional<int> reap_exec(pid_t pid) {
  int status = 0;
  pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r != pid) return std::nullopt;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return std::nullopt;
}

void resize_terminal(int pty_fd, unsigned short width, unsigned short height) {
  winsize ws{};
  ws.ws_col = width;
  ws.ws_row = height;
  ::ioctl(pty_fd, TIOCSWINSZ, &ws);
}

}  // namespace kstack::nodesim
