// The exec credential plugin (kubeconfig users[].user.exec, as client-go's
// plugin/pkg/client/auth/exec): runs the command with posix_spawn and an argv array (never a
// shell), reads an ExecCredential from its stdout and caches the token until it expires or
// invalidate() is called.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <boost/json.hpp>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kube/config.h"
#include "kube/config_detail.h"
#include "kube/time.h"

extern char** environ;  // NOLINT: POSIX, for the plugin's inherited environment

namespace kstack::kube {
namespace {

namespace json = boost::json;
using SteadyTime = std::chrono::steady_clock::time_point;

// Bounds from client-go's exec authenticator where it has them; the output limits are
// kstack's own (a credential is a few KiB).
constexpr std::chrono::seconds kExecTimeout{30};
constexpr std::size_t kMaxStdoutBytes = 1u << 20;
constexpr std::size_t kMaxStderrBytes = 64u << 10;
constexpr std::size_t kStderrTailInMessage = 2048;
// A token is refreshed this long before its expirationTimestamp, so that a request does not
// leave with a token that expires on the way.
constexpr std::chrono::seconds kExpirySkew{10};
// Tokens are cached at most this long, whatever their expirationTimestamp says.
constexpr std::chrono::seconds kMaxExpiryHorizon = std::chrono::hours(24 * 365);
constexpr std::string_view kKubernetesExecInfo = "KUBERNETES_EXEC_INFO";

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

struct ProcessResult {
  int spawn_errno = 0;  // posix_spawn failed (ENOENT, EACCES, ENOEXEC...)
  int wait_status = 0;
  bool timed_out = false;
  bool stdout_too_large = false;
  std::string out;
  std::string err;  // the last kMaxStderrBytes
};

// Searches PATH like Go's exec.LookPath; a command with a '/' is used as it is (load_kubeconfig
// has already made it absolute against the kubeconfig's directory).
std::optional<std::string> find_executable(const std::string& command) {
  if (command.find('/') != std::string::npos) return command;
  const char* path_env = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read only
  const std::string_view dirs = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    std::string dir(dirs.substr(start, end - start));
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + command;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (end == dirs.size()) return std::nullopt;
    start = end + 1;
  }
}

void kill_group(pid_t pid) { ::kill(-pid, SIGKILL); }

// Drains stdout/stderr until both close, the deadline passes or stdout exceeds its bound (in
// the last two cases the caller kills the child).
void drain(int out_fd, int err_fd, SteadyTime deadline, ProcessResult& result) {
  std::array<pollfd, 2> fds{pollfd{out_fd, POLLIN, 0}, pollfd{err_fd, POLLIN, 0}};
  std::array<char, 16384> buf{};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    const auto remaining = deadline - std::chrono::steady_clock::now();
    if (remaining <= std::chrono::steady_clock::duration::zero()) {
      result.timed_out = true;
      return;
    }
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(remaining).count();
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(ms, 1000)));
    if (n < 0) {
      if (errno == EINTR) continue;  // revents are stale: poll again
      result.timed_out = true;       // cannot wait on the pipes any more; treat as stuck
      return;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = ::read(fds[i].fd, buf.data(), buf.size());
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        fds[i].fd = -1;
        continue;
      }
      std::string& sink = i == 0 ? result.out : result.err;
      sink.append(buf.data(), static_cast<std::size_t>(got));
      if (i == 0 && sink.size() > kMaxStdoutBytes) {
        result.stdout_too_large = true;
        return;
      }
      if (i == 1 && sink.size() > 2 * kMaxStderrBytes) {
        sink.erase(0, sink.size() - kMaxStderrBytes);
      }
    }
  }
}

int wait_child(pid_t pid, SteadyTime deadline, bool kill_now) {
  if (kill_now) kill_group(pid);
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, kill_now ? 0 : WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return status;
    if (r == 0) {
      // Closed its pipes but still running: give it until the deadline.
      if (std::chrono::steady_clock::now() >= deadline) {
        kill_now = true;
        kill_group(pid);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }
}

ProcessResult run_process(const std::string& path, std::vector<std::string> argv,
                          std::vector<std::string> env) {
  ProcessResult result;
  std::array<int, 2> out_pipe{};
  std::array<int, 2> err_pipe{};
  if (::pipe2(out_pipe.data(), O_CLOEXEC) != 0) {
    result.spawn_errno = errno;
    return result;
  }
  UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe.data(), O_CLOEXEC) != 0) {
    result.spawn_errno = errno;
    return result;
  }
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.get(), 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);  // no other descriptor leaks in

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all_signals;
  sigfillset(&all_signals);
  posix_spawnattr_setsigdefault(&attr, &all_signals);  // e.g. SIGPIPE ignored by the server
  sigset_t no_signals;
  sigemptyset(&no_signals);
  posix_spawnattr_setsigmask(&attr, &no_signals);
  posix_spawnattr_setpgroup(&attr, 0);  // own process group: a timeout kills its children too
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);

  std::vector<char*> argv_ptrs;
  argv_ptrs.reserve(argv.size() + 1);
  for (auto& arg : argv) argv_ptrs.push_back(arg.data());
  argv_ptrs.push_back(nullptr);
  std::vector<char*> env_ptrs;
  env_ptrs.reserve(env.size() + 1);
  for (auto& entry : env) env_ptrs.push_back(entry.data());
  env_ptrs.push_back(nullptr);

  pid_t pid = -1;
  const int rc =
      ::posix_spawn(&pid, path.c_str(), &actions, &attr, argv_ptrs.data(), env_ptrs.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    result.spawn_errno = rc;
    return result;
  }
  out_w.reset();
  err_w.reset();

  const SteadyTime deadline = std::chrono::steady_clock::now() + kExecTimeout;
  drain(out_r.get(), err_r.get(), deadline, result);
  result.wait_status = wait_child(pid, deadline, result.timed_out || result.stdout_too_large);
  return result;
}

// The current environment, then the kubeconfig's env entries, then KUBERNETES_EXEC_INFO;
// later entries replace earlier ones with the same name.
std::vector<std::string> plugin_environment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  for (const auto& [name, value] : overrides) {
    const std::string prefix = name + "=";
    std::erase_if(env, [&](const std::string& entry) { return entry.starts_with(prefix); });
    env.push_back(prefix + value);
  }
  return env;
}

std::string stderr_tail(std::string_view err) {
  err = detail::trim(err);
  if (err.size() > kStderrTailInMessage) {
    return "..." + std::string(err.substr(err.size() - kStderrTailInMessage));
  }
  return std::string(err);
}

struct ExecCredential {
  std::string token;
  std::optional<std::chrono::sys_seconds> expiry;
};

const json::string* string_member(const json::object& obj, std::string_view key, bool& bad) {
  const json::value* v = obj.if_contains(key);
  if (v == nullptr || v->is_null()) return nullptr;
  if (!v->is_string()) bad = true;
  return v->if_string();
}

class ExecPlugin final : public CredentialSource {
 public:
  ExecPlugin(ExecPluginConfig config, std::string server, Clock clock)
      : config_(std::move(config)), server_(std::move(server)), clock_(std::move(clock)) {
    if (!clock_) clock_ = [] { return std::chrono::steady_clock::now(); };
  }

  Result<std::string> bearer_token() override {
    std::lock_guard lock(mutex_);  // one plugin run at a time; the others wait for its token
    const SteadyTime now = clock_();
    if (token_ && !stale_ && (!valid_until_ || now < *valid_until_)) return *token_;
    auto credential = run();
    if (!credential) return tl::unexpected(std::move(credential.error()));
    token_ = std::move(credential->token);
    stale_ = false;
    valid_until_.reset();
    if (credential->expiry) {
      // expirationTimestamp is wall-clock time: convert it once, with system_clock, into a
      // deadline on the (injectable, monotonic) clock used for every other comparison.
      // Clamped so that years like 0001 or 9999 cannot overflow nanosecond time points.
      const std::chrono::seconds left =
          *credential->expiry -
          std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
      valid_until_ = now + std::clamp(left, -kMaxExpiryHorizon, kMaxExpiryHorizon) - kExpirySkew;
    }
    return *token_;
  }

  void invalidate() override {
    std::lock_guard lock(mutex_);
    stale_ = true;
  }

 private:
  tl::unexpected<Error> fail(std::string message, ErrorKind kind = ErrorKind::kConfig) const {
    return make_error(kind, "exec plugin \"" + config_.command + "\": " + message);
  }

  std::string exec_info() const {
    json::object spec;
    spec["interactive"] = false;
    if (config_.provide_cluster_info) spec["cluster"] = json::object{{"server", server_}};
    json::object info;
    info["apiVersion"] = config_.api_version;
    info["kind"] = "ExecCredential";
    info["spec"] = std::move(spec);
    return json::serialize(info);
  }

  Result<ExecCredential> run() const {
    if (config_.interactive_mode == "Always") {
      return fail("interactiveMode is Always, but kstack runs without a terminal");
    }
    const auto path = find_executable(config_.command);
    const std::string hint = config_.install_hint.empty() ? "" : "\n" + config_.install_hint;
    if (!path) return fail("command not found in PATH" + hint);

    std::vector<std::string> argv{*path};
    argv.insert(argv.end(), config_.args.begin(), config_.args.end());
    auto env_overrides = config_.env;
    env_overrides.emplace_back(kKubernetesExecInfo, exec_info());
    ProcessResult r = run_process(*path, std::move(argv), plugin_environment(env_overrides));

    if (r.spawn_errno == ENOENT) return fail("command not found: " + *path + hint);
    if (r.spawn_errno != 0) {
      return fail("cannot run " + *path + ": " + detail::errno_message(r.spawn_errno));
    }
    const std::string tail = stderr_tail(r.err);
    const std::string stderr_part = tail.empty() ? "" : "; stderr: " + tail;
    if (r.timed_out) {
      return fail("did not finish within " + std::to_string(kExecTimeout.count()) +
                      "s and was killed" + stderr_part,
                  ErrorKind::kTimeout);
    }
    if (r.stdout_too_large) {
      return fail("wrote more than " + std::to_string(kMaxStdoutBytes) + " bytes to stdout");
    }
    if (WIFSIGNALED(r.wait_status)) {
      return fail("killed by signal " + std::to_string(WTERMSIG(r.wait_status)) + stderr_part);
    }
    if (WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) != 0) {
      return fail("exit code " + std::to_string(WEXITSTATUS(r.wait_status)) + stderr_part);
    }
    return parse(r.out);
  }

  // Never quotes stdout in errors: it may hold a credential.
  Result<ExecCredential> parse(std::string_view out) const {
    boost::system::error_code ec;
    const json::value doc = json::parse(out, ec);
    if (ec) return fail("stdout is not a JSON ExecCredential: " + ec.message());
    const json::object* obj = doc.if_object();
    if (obj == nullptr) return fail("stdout is not a JSON object");
    bool bad = false;
    const json::string* api_version = string_member(*obj, "apiVersion", bad);
    const json::string* kind = string_member(*obj, "kind", bad);
    if (bad || api_version == nullptr || *api_version != config_.api_version) {
      return fail("returned apiVersion \"" +
                  (api_version ? std::string(*api_version) : std::string()) + "\", expected \"" +
                  config_.api_version + "\"");
    }
    if (kind != nullptr && *kind != "ExecCredential") {
      return fail("returned kind \"" + std::string(*kind) + "\", expected \"ExecCredential\"");
    }
    const json::value* status_value = obj->if_contains("status");
    const json::object* status = status_value ? status_value->if_object() : nullptr;
    if (status == nullptr) return fail("ExecCredential has no status object");
    const json::string* token = string_member(*status, "token", bad);
    const json::string* expiry = string_member(*status, "expirationTimestamp", bad);
    const json::string* cert = string_member(*status, "clientCertificateData", bad);
    const json::string* key = string_member(*status, "clientKeyData", bad);
    if (bad) return fail("ExecCredential status fields must be strings");

    ExecCredential credential;
    if (token == nullptr || token->empty()) {
      if ((cert && !cert->empty()) || (key && !key->empty())) {
        return fail(
            "returned a client certificate; client-certificate output from exec "
            "plugins is not supported yet (only status.token)");
      }
      return fail("ExecCredential status has no token");
    }
    credential.token = std::string(*token);
    if (expiry != nullptr && !expiry->empty()) {
      credential.expiry = parse_rfc3339(std::string_view(expiry->data(), expiry->size()));
      if (!credential.expiry) {
        return fail("status.expirationTimestamp \"" + std::string(*expiry) +
                    "\" is not an RFC 3339 time");
      }
    }
    return credential;
  }

  const ExecPluginConfig config_;
  const std::string server_;
  Clock clock_;
  std::mutex mutex_;
  std::optional<std::string> token_;
  std::optional<SteadyTime> valid_until_;  // none: until invalidate()
  bool stale_ = false;
};

}  // namespace

std::shared_ptr<CredentialSource> exec_plugin(ExecPluginConfig config, std::string server,
                                              Clock clock) {
  return std::make_shared<ExecPlugin>(std::move(config), std::move(server), std::move(clock));
}

}  // namespace kstack::kube
