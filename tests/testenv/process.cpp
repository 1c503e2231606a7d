// fork/exec plumbing for the test control plane (see process.h).
#include "tests/testenv/process.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <system_error>
#include <thread>

#include <fcntl.h>
#include <fmt/core.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kstack::testenv {
namespace {

using SteadyClock = std::chrono::steady_clock;

// How often stop_all() looks whether the processes it signalled have gone.
constexpr std::chrono::milliseconds kReapPollInterval{20};

std::string errno_text(int err) { return std::generic_category().message(err); }

// Closes a file descriptor when it goes out of scope.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Everything execve() needs, prepared before fork() so the child only makes
// async-signal-safe calls.
struct ExecImage {
  std::string path;
  std::vector<std::string> arg_storage;
  std::vector<std::string> env_storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

tl::expected<std::string, std::string> resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): nobody setenv()s
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    auto colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    dirs = colon == std::string_view::npos ? std::string_view{} : dirs.substr(colon + 1);
    if (dir.empty()) dir = ".";
    std::string candidate = fmt::format("{}/{}", dir, name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return tl::unexpected(fmt::format("{}: not found in PATH", name));
}

tl::expected<ExecImage, std::string> make_image(const std::vector<std::string>& argv,
                                                const EnvVars& env) {
  if (argv.empty()) return tl::unexpected(std::string("empty argv"));
  auto path = resolve_program(argv[0]);
  if (!path) return tl::unexpected(path.error());
  ExecImage image;
  image.path = *path;
  image.arg_storage = argv;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    auto key = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& [k, v] : env) overridden = overridden || k == key;
    if (!overridden) image.env_storage.emplace_back(entry);
  }
  for (const auto& [k, v] : env) image.env_storage.push_back(fmt::format("{}={}", k, v));
  for (auto& a : image.arg_storage) image.argv.push_back(a.data());
  image.argv.push_back(nullptr);
  for (auto& e : image.env_storage) image.envp.push_back(e.data());
  image.envp.push_back(nullptr);
  return image;
}

void move_fd(int from, int to) {
  if (from == to) {
    ::fcntl(to, F_SETFD, 0);  // keep it across exec
  } else {
    ::dup2(from, to);
  }
}

// Runs in the forked child: only async-signal-safe calls from here on.
[[noreturn]] void exec_child(const ExecImage& image, int in_fd, int out_fd, int err_fd,
                             int status_fd, pid_t parent) {
  ::setpgid(0, 0);  // own process group: a terminal's Ctrl-C reaches only the test process
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl()
  sigset_t none;
  sigemptyset(&none);
  // `up` blocks SIGINT/SIGTERM for sigwait(); the child has one thread.
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // NOLINT(concurrency-mt-unsafe)
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &dfl, nullptr);
  move_fd(in_fd, 0);
  move_fd(out_fd, 1);
  move_fd(err_fd, 2);
  // Descriptors the parent opened without O_CLOEXEC must not leak into servers that outlive
  // a command (a leaked pipe end would keep a reader waiting for EOF forever).
  ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  ::execve(image.path.c_str(), image.argv.data(), image.envp.data());
  int err = errno;
  [[maybe_unused]] auto n = ::write(status_fd, &err, sizeof err);
  ::_exit(127);
}

// fork()s and execs; returns the pid once the exec has succeeded.
tl::expected<pid_t, std::string> fork_exec(const ExecImage& image, int in_fd, int out_fd,
                                           int err_fd) {
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
    return tl::unexpected(fmt::format("pipe: {}", errno_text(errno)));
  }
  Fd status_read(status_pipe[0]);
  Fd status_write(status_pipe[1]);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return tl::unexpected(fmt::format("fork: {}", errno_text(errno)));
  if (pid == 0) exec_child(image, in_fd, out_fd, err_fd, status_write.get(), parent);
  status_write.reset();
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(status_read.get(), &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    int status;
    ::waitpid(pid, &status, 0);
    return tl::unexpected(
        fmt::format("cannot execute {}: {}", image.path, errno_text(child_errno)));
  }
  return pid;
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

tl::expected<CommandResult, std::string> run_command(const std::vector<std::string>& argv,
                                                     const EnvVars& env, std::string_view input,
                                                     std::chrono::milliseconds timeout) {
  auto image = make_image(argv, env);
  if (!image) return tl::unexpected(image.error());
  // stdin is a socket so that writing to a command that exited early fails with EPIPE
  // (send + MSG_NOSIGNAL) instead of raising SIGPIPE in the test process.
  int in_pair[2], out_pipe[2], err_pipe[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_pair) != 0) {
    return tl::unexpected(fmt::format("socketpair: {}", errno_text(errno)));
  }
  Fd in_parent(in_pair[0]), in_child(in_pair[1]);
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return tl::unexpected(errno_text(errno));
  Fd out_read(out_pipe[0]), out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return tl::unexpected(errno_text(errno));
  Fd err_read(err_pipe[0]), err_write(err_pipe[1]);

  auto pid = fork_exec(*image, in_child.get(), out_write.get(), err_write.get());
  if (!pid) return tl::unexpected(pid.error());
  in_child.reset();
  out_write.reset();
  err_write.reset();
  if (input.empty()) {
    in_parent.reset();
  } else {
    ::fcntl(in_parent.get(), F_SETFL, O_NONBLOCK);
  }

  CommandResult result;
  auto deadline = SteadyClock::now() + timeout;
  char buf[16384];
  bool timed_out = false;
  while (out_read.get() >= 0 || err_read.get() >= 0) {
    pollfd fds[3] = {
        {out_read.get(), POLLIN, 0}, {err_read.get(), POLLIN, 0}, {in_parent.get(), POLLOUT, 0}};
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    int r = ::poll(fds, 3, static_cast<int>(left.count()));
    if (r < 0 && errno != EINTR) return tl::unexpected(fmt::format("poll: {}", errno_text(errno)));
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        (i == 0 ? out_read : err_read).reset();
      }
    }
    if (fds[2].fd >= 0 && fds[2].revents != 0) {
      ssize_t n = ::send(in_parent.get(), input.data(), input.size(), MSG_NOSIGNAL);
      if (n > 0) input.remove_prefix(static_cast<size_t>(n));
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || input.empty()) in_parent.reset();
    }
  }
  int status = 0;
  while (!timed_out) {
    pid_t r = ::waitpid(*pid, &status, WNOHANG);
    if (r == *pid) break;
    if (SteadyClock::now() >= deadline) {
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(kReapPollInterval);
  }
  if (timed_out) {
    ::kill(*pid, SIGKILL);
    ::waitpid(*pid, &status, 0);
    return tl::unexpected(fmt::format("{} timed out after {} ms; stderr so far: {}", argv[0],
                                      timeout.count(), result.err));
  }
  result.exit_code = exit_code_of(status);
  return result;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    kill_now();
    name_ = std::move(other.name_);
    pid_ = std::exchange(other.pid_, 0);
    log_ = std::move(other.log_);
    ended_ = std::move(other.ended_);
  }
  return *this;
}

void ChildProcess::reap(int status) {
  if (WIFEXITED(status)) {
    ended_ = fmt::format("exited with status {}", WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    ended_ = fmt::format("killed by signal {}", WTERMSIG(status));
  } else {
    ended_ = "ended";
  }
  pid_ = 0;
}

bool ChildProcess::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) {
    reap(status);
  } else {
    ended_ = "vanished (not our child any more)";
    pid_ = 0;
  }
  return false;
}

void ChildProcess::kill_now() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  if (::waitpid(pid_, &status, 0) == pid_) {
    reap(status);
  } else {
    pid_ = 0;
  }
}

void ChildProcess::stop(std::chrono::milliseconds grace) { stop_all({this}, grace); }

void stop_all(const std::vector<ChildProcess*>& processes, std::chrono::milliseconds grace) {
  for (auto* p : processes) {
    if (p->running()) ::kill(p->pid(), SIGTERM);
  }
  auto deadline = SteadyClock::now() + grace;
  for (;;) {
    bool any = false;
    for (auto* p : processes) any = p->running() || any;
    if (!any || SteadyClock::now() >= deadline) break;
    std::this_thread::sleep_for(kReapPollInterval);
  }
  for (auto* p : processes) p->kill_now();
}

tl::expected<ChildProcess, std::string> spawn(std::string name,
                                              const std::vector<std::string>& argv,
                                              const std::filesystem::path& log,
                                              const EnvVars& env) {
  auto image = make_image(argv, env);
  if (!image) return tl::unexpected(image.error());
  Fd log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (log_fd.get() < 0) {
    return tl::unexpected(fmt::format("open {}: {}", log.string(), errno_text(errno)));
  }
  Fd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (null_fd.get() < 0)
    return tl::unexpected(fmt::format("open /dev/null: {}", errno_text(errno)));
  auto pid = fork_exec(*image, null_fd.get(), log_fd.get(), log_fd.get());
  if (!pid) return tl::unexpected(fmt::format("{}: {}", name, pid.error()));
  return ChildProcess(std::move(name), *pid, log);
}

std::string tail_file(const std::filesystem::path& path, int lines) {
  constexpr std::streamoff kMaxTail = std::streamoff{64} * 1024;
  std::ifstream in(path, std::ios::binary);
  if (!in) return fmt::format("(cannot read {})", path.string());
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size <= 0) return {};
  std::streamoff from = size > kMaxTail ? size - kMaxTail : 0;
  in.seekg(from);
  std::string chunk(static_cast<size_t>(size - from), '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<size_t>(in.gcount()));
  if (!chunk.empty() && chunk.back() == '\n') chunk.pop_back();
  std::vector<std::string_view> all;
  for (std::string_view rest = chunk;;) {
    auto nl = rest.find('\n');
    all.push_back(rest.substr(0, nl));
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  std::string text;
  auto count = std::min(all.size(), static_cast<size_t>(std::max(lines, 0)));
  for (auto it = all.end() - static_cast<std::ptrdiff_t>(count); it != all.end(); ++it) {
    text.append(*it).push_back('\n');
  }
  return text;
}

std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  std::uint16_t port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

}  // namespace kstack::testenv
