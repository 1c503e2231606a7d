// SetupRunner (setup.h): each step is one `sh -c '<constant script>' kstack-setup <args...>`
// exec. The scripts report what went wrong through the exit codes below, which map to
// SetupErrorKind::kConfig (the setup is wrong) or a transient error; output that must be parsed is
// framed with byte counts. Stdin is always bounded by a count given as an argument (`head -c N`):
// kubelets before 1.30 never deliver end of file on stdin. Every script also writes its exit code
// as the last line of its stderr, for channel.k8s.io, which says only "non-zero" (kube/exec.h).
#include "executor/setup.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include "kube/exec.h"

namespace kstack::executor {
namespace {

// Exit codes of the scripts: setup problems the member's status should name.
constexpr int kNoFetcher = 90;                  // neither curl nor wget
constexpr int kNoSha256sum = 91;                // no sha256sum to verify a file/http package
constexpr int kShaMismatch = 92;                // stdout: the actual digest
constexpr int kNoStartScript = 93;              // no executable startscript (or no setup dir)
constexpr int kFetchFailed = 94;                // stdout: "<tool> <exit code>"
constexpr int kUnpackFailed = 95;               // tar failed
constexpr int kWriteFailed = 96;                // mkdir/mv/chmod failed in the container
constexpr int kNoSuchPackage = 97;              // file:// path missing
constexpr int kShortInput = 98;                 // stdin ended before the announced byte count
constexpr std::size_t kSmallFileBytes = 4096;   // configure.started / configure.status read back
constexpr std::size_t kFrameSlack = 16u << 10;  // framing lines on top of the tails
constexpr std::size_t kMessageTail = 512;       // script stderr quoted in error messages

// Prints a file's last $2 bytes as "<count>\n<bytes>", or "-\n" when it does not exist. The
// count is taken first; should the file shrink in between, zero bytes pad to keep the frame.
constexpr std::string_view kEmitFunction = R"(emit() {
  if [ -f "$1" ]; then
    l=$(tail -c "$2" "$1" | wc -c)
    echo $l
    { tail -c "$2" "$1"; head -c "$l" /dev/zero; } | head -c "$l"
  else
    echo -
  fi
}
)";

// $1 dir, $2 configmeta path, $3 env path, $4 and $5 their byte counts on stdin. The dir is
// made 0700 when the container's user owns it; kstack's emptyDir (root's, 0777) is left as it
// is for a non-root user, who may not chmod it (the files themselves are 0600 either way).
constexpr std::string_view kWriteConfigScript = R"(umask 077
mkdir -p "$1" || exit 96
if [ -O "$1" ]; then chmod 700 "$1" || exit 96; fi
head -c "$4" >"$2.tmp" && head -c "$5" >"$3.tmp" || exit 96
m=$(wc -c <"$2.tmp") && e=$(wc -c <"$3.tmp") || exit 96
if [ $m -ne "$4" ] || [ $e -ne "$5" ]; then
  echo "stdin ended early: $m of $4 and $e of $5 bytes" >&2
  exit 98
fi
chmod 600 "$2.tmp" "$3.tmp" && mv -f "$2.tmp" "$2" && mv -f "$3.tmp" "$3" || exit 96
)";

// Answers on stdout, not with the exit code (which channel.k8s.io does not carry).
constexpr std::string_view kInstalledScript = R"([ -x "$1" ] && echo yes || echo no)";

// $1 dir, $2 scheme (file|http|stdin), $3 path or URL, $4 expected sha256 ("" = none),
// $5 fetch timeout in seconds (http) or the byte count on stdin, $6 "fresh" to empty the
// directory first (a staged upgrade package; never the setup directory itself).
constexpr std::string_view kInstallScript = R"(d=$1 src=$3 sum=$4
if [ "$6" = fresh ]; then rm -rf "$d" || exit 96; fi
mkdir -p "$d" || exit 96
case $2 in
file)
  [ -f "$src" ] || exit 97
  p=$src ;;
http)
  p="$d.download.$$"
  trap 'rm -f "$p"' EXIT
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --max-time "$5" -o "$p" "$src" || { echo "curl $?"; exit 94; }
  elif command -v wget >/dev/null 2>&1; then
    wget -q -T "$5" -O "$p" "$src" || { echo "wget $?"; exit 94; }
  else
    exit 90
  fi ;;
stdin)
  head -c "$5" | tar -xzf - -C "$d" || exit 95 ;;
esac
if [ "$2" != stdin ]; then
  if [ -n "$sum" ]; then
    command -v sha256sum >/dev/null 2>&1 || exit 91
    s=$(sha256sum <"$p") || exit 91
    s=${s%% *}
    [ "$s" = "$sum" ] || { printf '%s' "$s"; exit 92; }
  fi
  tar -xzf "$p" -C "$d" || exit 95
fi
[ -x "$d/startscript" ] || exit 93
)";

// $1 dir, $2 container ID, $3 kConfigureScript, then startscript's extra arguments. HUP
// ignored and a new session: nothing of the exec's end reaches the script, which re-parents to
// the container's init.
constexpr std::string_view kStartConfigureScript =
    R"(cd "$1" 2>/dev/null && [ -x ./startscript ] || exit 93
c=$2 s=$3
shift 3
printf '%s\n' "$c" >configure.started.tmp && mv -f configure.started.tmp configure.started || exit 96
if [ -f configure.status ]; then
  case $(cat configure.status) in "$c="*) rm -f configure.status || exit 96 ;; esac
fi
trap '' HUP
if command -v setsid >/dev/null 2>&1; then
  setsid sh -c "$s" kstack-configure "$c" "$@" </dev/null >/dev/null 2>&1 &
else
  sh -c "$s" kstack-configure "$c" "$@" </dev/null >/dev/null 2>&1 &
fi
)";

// $1 container ID, then the extra arguments; runs detached in the setup directory.
constexpr std::string_view kConfigureScript =
    R"(c=$1
shift
./startscript --configure "$@" >configure.stdout 2>configure.stderr
echo "$c=$?" >configure.status.tmp && mv -f configure.status.tmp configure.status
)";

// $1 dir, $2 tail bytes, $3 kSmallFileBytes. Prints "none" or "kstack-status" and 4 frames.
constexpr std::string_view kStatusScript = R"(cd "$1" 2>/dev/null || { echo none; exit 0; }
echo kstack-status
emit configure.started "$3"
emit configure.status "$3"
emit configure.stdout "$2"
emit configure.stderr "$2"
)";

// $1 dir, $2 tail bytes, then the startscript's arguments. Output goes to files so that a
// daemon the script leaves behind cannot hold the exec open; prints "kstack-run <code>" and the
// two tails.
constexpr std::string_view kRunScript = R"(d=$1 n=$2
shift 2
cd "$d" 2>/dev/null && [ -x ./startscript ] || exit 93
o=.kstack-run.$$.stdout e=.kstack-run.$$.stderr
trap 'rm -f "$o" "$e"' EXIT
./startscript "$@" >"$o" 2>"$e" </dev/null
echo "kstack-run $?"
emit "$o" "$n"
emit "$e" "$n"
)";

// The script in a subshell, whose exit code (whatever way it exits) follows its stderr as
// kExitTrailer + code + "\n". The script still sees the positional arguments.
constexpr std::string_view kExitTrailer = "\nkstack-exit ";
constexpr std::string_view kReportExit = R"(c=$?
printf '\nkstack-exit %d\n' "$c" >&2
exit $c
)";
std::string reporting_exit(std::string_view script) {
  return fmt::format("(\n{}\n)\n{}", script, kReportExit);
}

// Removes the trailer from `stderr_data`; the code it holds, if it is there whole (output past
// the stderr bound drops it).
std::optional<int> take_exit_trailer(std::string& stderr_data) {
  const auto at = stderr_data.rfind(kExitTrailer);
  if (at == std::string::npos || stderr_data.back() != '\n') return std::nullopt;
  const char* first = stderr_data.data() + at + kExitTrailer.size();
  const char* last = stderr_data.data() + stderr_data.size() - 1;
  int code = 0;
  auto [end, ec] = std::from_chars(first, last, code);
  if (ec != std::errc() || end != last) return std::nullopt;
  stderr_data.resize(at);
  return code;
}

std::string with_emit(std::string_view body) {
  std::string s(kEmitFunction);
  s.append(body);
  return s;
}

std::string_view tail_of(std::string_view s, std::size_t n) {
  return s.size() <= n ? s : s.substr(s.size() - n);
}

std::string stripped(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return std::string(s);
}

// Script output quoted in an error message: its end, without surrounding blank lines.
std::string trimmed(std::string_view s) { return stripped(tail_of(s, kMessageTail)); }

// Reads the scripts' framed output: lines, and "<count>\n<bytes>" / "-\n" frames.
class FrameReader {
 public:
  explicit FrameReader(std::string_view data) : rest_(data) {}
  std::optional<std::string_view> line() {
    auto nl = rest_.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;
    auto l = rest_.substr(0, nl);
    rest_.remove_prefix(nl + 1);
    return l;
  }
  // nullopt: malformed; an inner nullopt: the file does not exist.
  std::optional<std::optional<std::string>> frame() {
    auto l = line();
    if (!l) return std::nullopt;
    if (*l == "-") return std::optional<std::string>();
    std::size_t n = 0;
    auto [end, ec] = std::from_chars(l->data(), l->data() + l->size(), n);
    if (ec != std::errc() || end != l->data() + l->size() || n > rest_.size()) return std::nullopt;
    std::string bytes(rest_.substr(0, n));
    rest_.remove_prefix(n);
    return std::optional<std::string>(std::move(bytes));
  }
  bool at_end() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

// The expected digest, lower-case; a config error unless 64 hex digits.
SetupResult<std::string> expected_sha256(const catalog::SetupPackage& package) {
  if (!package.sha256) return std::string();
  std::string hex = *package.sha256;
  std::transform(hex.begin(), hex.end(), hex.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (hex.size() != 64 ||
      !std::all_of(hex.begin(), hex.end(), [](char c) { return std::isxdigit(c) != 0; })) {
    return setup_error(SetupErrorKind::kConfig,
                       fmt::format("sha256 for {} is not 64 hex digits: \"{}\"",
                                   package.package_url, *package.sha256));
  }
  return hex;
}

tl::unexpected<SetupError> invalid(std::string message) {
  return setup_error(SetupErrorKind::kConfig, std::move(message));
}

// curl -f: 22 = HTTP error >= 400, 60/77 = certificate problems; wget: 8 = server error
// response, 5 = TLS failure. Retrying does not fix these; other failures (DNS, connect,
// timeout) may pass.
bool fetch_failure_is_permanent(std::string_view tool_and_code) {
  static constexpr std::array<std::string_view, 5> kPermanent = {"curl 22", "curl 60", "curl 77",
                                                                 "wget 8", "wget 5"};
  return std::find(kPermanent.begin(), kPermanent.end(), tool_and_code) != kPermanent.end();
}

}  // namespace

SetupRunner::SetupRunner(std::shared_ptr<kube::Client> client, SetupOptions options)
    : client_(std::move(client)), options_(options) {}

namespace {

struct Step {
  std::string_view name;  // for messages: "write_config"
  std::string script;
  std::vector<std::string> args;
  std::chrono::milliseconds timeout;
  std::size_t max_output = 64u << 10;
};

// One exec of `step` (stdin: `pieces`, in order). Exec errors come back with the step and
// member named, classified (a changed container is kContainerChanged).
SetupResult<kube::ExecResult> run_step(kube::Client& client, const MemberTarget& member,
                                       const Step& step,
                                       const std::vector<std::string_view>& pieces = {}) {
  std::vector<std::string> argv = {"sh", "-c", reporting_exit(step.script), "kstack-setup"};
  argv.insert(argv.end(), step.args.begin(), step.args.end());
  kube::ExecOptions o;
  o.container = "app";
  o.timeout = step.timeout;
  o.expected_container_id = member.container_id;
  o.max_stdout_bytes = step.max_output;
  o.max_stderr_bytes = step.max_output;
  std::size_t next = 0;
  o.attach_stdin = !pieces.empty();
  const kube::StdinSource source = [&]() -> std::optional<std::string_view> {
    if (next == pieces.size()) return std::nullopt;
    return pieces[next++];
  };
  auto r = pieces.empty()
               ? kube::exec(client, member.namespace_name, member.pod, argv, {}, o)
               : kube::exec_streaming(client, member.namespace_name, member.pod, argv, source, o);
  if (!r) {
    auto e = classify(std::move(r.error()));
    e.message =
        fmt::format("{} in pod {}/{}: {}", step.name, member.namespace_name, member.pod, e.message);
    return tl::unexpected(std::move(e));
  }
  const auto reported = take_exit_trailer(r->stderr_data);
  if (r->exit_code == kube::kExitCodeUnknown && reported) r->exit_code = *reported;
  spdlog::debug("setup step {} namespace={} member={} exit={}", step.name, member.namespace_name,
                member.pod, r->exit_code);
  if (auto killed = killed_before_reporting(
          fmt::format("{} in pod {}/{}", step.name, member.namespace_name, member.pod),
          r->exit_code, reported.has_value())) {
    return tl::unexpected(std::move(*killed));
  }
  if (r->exit_code == 126 || r->exit_code == 127) {  // no sh, or a tool the script needs
    return invalid(fmt::format("{}: a command is missing in pod {}/{} (exit {}): {}", step.name,
                               member.namespace_name, member.pod, r->exit_code,
                               trimmed(r->stderr_data)));
  }
  if (r->exit_code == kube::kExitCodeUnknown) {
    return invalid(fmt::format("{} failed in pod {}/{}: {}", step.name, member.namespace_name,
                               member.pod, r->status_message));
  }
  return std::move(*r);
}

tl::unexpected<SetupError> unexpected_exit(const Step& step, const kube::ExecResult& r) {
  return invalid(fmt::format("{} exited {}: {}", step.name, r.exit_code, trimmed(r.stderr_data)));
}

tl::unexpected<SetupError> malformed(const Step& step) {
  return setup_error(SetupErrorKind::kTransport,
                     fmt::format("{}: malformed output from the container", step.name));
}

}  // namespace

SetupResult<void> SetupRunner::write_config(const MemberTarget& member,
                                            std::string_view configmeta_json,
                                            std::string_view env) {
  Step step{"write_config",
            std::string(kWriteConfigScript),
            {std::string(kConfigDir), std::string(kConfigMetaPath), std::string(kEnvPath),
             std::to_string(configmeta_json.size()), std::to_string(env.size())},
            options_.exec_timeout};
  std::vector<std::string_view> pieces;
  for (auto piece : {configmeta_json, env}) {
    if (!piece.empty()) pieces.push_back(piece);
  }
  auto r = run_step(*client_, member, step, pieces);
  if (!r) return tl::unexpected(r.error());
  switch (r->exit_code) {
    case 0:
      return {};
    case kShortInput:
      return setup_error(SetupErrorKind::kTransport,
                         fmt::format("write_config: {}", trimmed(r->stderr_data)));
    case kWriteFailed:
      return invalid(
          fmt::format("cannot write {} in the container: {}", kConfigDir, trimmed(r->stderr_data)));
    default:
      return unexpected_exit(step, *r);
  }
}

SetupResult<bool> SetupRunner::package_installed(const MemberTarget& member) {
  Step step{"package_installed",
            std::string(kInstalledScript),
            {std::string(kStartScript)},
            options_.exec_timeout};
  auto r = run_step(*client_, member, step);
  if (!r) return tl::unexpected(r.error());
  if (r->exit_code == 0 && (r->stdout_data == "yes\n" || r->stdout_data == "no\n")) {
    return r->stdout_data == "yes\n";
  }
  return unexpected_exit(step, *r);
}

SetupResult<void> SetupRunner::install_package(const MemberTarget& member,
                                               const catalog::SetupPackage& package,
                                               const std::string* payload, std::string_view dir) {
  const std::string& url = package.package_url;
  auto sum = expected_sha256(package);
  if (!sum) return tl::unexpected(sum.error());
  Step step{"install_package", std::string(kInstallScript), {}, options_.fetch_timeout};
  std::vector<std::string_view> pieces;
  if (url.starts_with("file://")) {
    std::string path = url.substr(7);
    if (!path.starts_with('/')) {
      return invalid(
          fmt::format("package URL {} is not file:///<absolute path in the container>", url));
    }
    step.args = {std::string(dir), "file", std::move(path), *sum, "0"};
  } else if (url.starts_with("http://") || url.starts_with("https://")) {
    const auto seconds = std::chrono::ceil<std::chrono::seconds>(options_.fetch_timeout).count();
    step.args = {std::string(dir), "http", url, *sum, std::to_string(seconds)};
    step.timeout = options_.fetch_timeout + options_.exec_timeout;
  } else if (url.starts_with("configmap://")) {
    if (payload == nullptr) {
      return setup_error(SetupErrorKind::kConfig,
                         fmt::format("install_package: no payload for {}", url));
    }
    if (payload->size() > options_.max_package_bytes) {
      return invalid(fmt::format("package {} is {} bytes, more than the {} allowed", url,
                                 payload->size(), options_.max_package_bytes));
    }
    if (!sum->empty()) {
      auto actual = sha256_hex(*payload);
      if (actual != *sum) {
        return invalid(
            fmt::format("sha256 mismatch for {}: expected {}, got {}", url, *sum, actual));
      }
    }
    step.args = {std::string(dir), "stdin", url, "", std::to_string(payload->size())};
    pieces.push_back(*payload);
  } else {
    return invalid(fmt::format(
        "package URL {} has an unsupported scheme (file://, http(s)://, configmap://)", url));
  }

  step.args.push_back(dir == kSetupDir ? "" : "fresh");
  auto r = run_step(*client_, member, step, pieces);
  if (!r) return tl::unexpected(r.error());
  const std::string err = trimmed(r->stderr_data);
  switch (r->exit_code) {
    case 0:
      spdlog::info("setup package installed namespace={} member={} package={}",
                   member.namespace_name, member.pod, url);
      return {};
    case kNoFetcher:
      return invalid(fmt::format("neither curl nor wget in the container to fetch {}", url));
    case kNoSha256sum:
      return invalid(fmt::format("no sha256sum in the container to verify {}", url));
    case kShaMismatch:
      return invalid(fmt::format("sha256 mismatch for {}: expected {}, got {}", url, *sum,
                                 trimmed(r->stdout_data)));
    case kNoStartScript:
      return invalid(fmt::format("package {} has no executable startscript", url));
    case kFetchFailed: {
      const std::string how = trimmed(r->stdout_data);
      auto message = fmt::format("fetching {} in the container failed ({}): {}", url, how, err);
      if (fetch_failure_is_permanent(how)) return invalid(std::move(message));
      return setup_error(SetupErrorKind::kTransport, std::move(message));
    }
    case kUnpackFailed:
      return invalid(fmt::format("unpacking {} failed: {}", url, err));
    case kWriteFailed:
      return invalid(fmt::format("cannot create {} in the container: {}", dir, err));
    case kNoSuchPackage:
      return invalid(fmt::format("{}: no such file in the container", url));
    default:
      return unexpected_exit(step, *r);
  }
}

SetupResult<void> SetupRunner::start_configure(const MemberTarget& member,
                                               const std::vector<std::string>& extra) {
  Step step{"start_configure",
            std::string(kStartConfigureScript),
            {std::string(kSetupDir), member.container_id, std::string(kConfigureScript)},
            options_.exec_timeout};
  step.args.insert(step.args.end(), extra.begin(), extra.end());
  auto r = run_step(*client_, member, step);
  if (!r) return tl::unexpected(r.error());
  switch (r->exit_code) {
    case 0:
      spdlog::info("setup configure started namespace={} member={}", member.namespace_name,
                   member.pod);
      return {};
    case kNoStartScript:
      return invalid(fmt::format("no executable {}", kStartScript));
    case kWriteFailed:
      return invalid(fmt::format("cannot write in {} in the container: {}", kSetupDir,
                                 trimmed(r->stderr_data)));
    default:
      return unexpected_exit(step, *r);
  }
}

SetupResult<SetupRunner::ConfigureStatus> SetupRunner::configure_status(
    const MemberTarget& member) {
  Step step{"configure_status",
            with_emit(kStatusScript),
            {std::string(kSetupDir), std::to_string(options_.tail_bytes),
             std::to_string(kSmallFileBytes)},
            options_.exec_timeout,
            2 * kSmallFileBytes + 2 * options_.tail_bytes + kFrameSlack};
  auto r = run_step(*client_, member, step);
  if (!r) return tl::unexpected(r.error());
  if (r->exit_code != 0) return unexpected_exit(step, *r);
  ConfigureStatus out;
  FrameReader in(r->stdout_data);
  auto head = in.line();
  if (head == "none") return out;
  if (head != "kstack-status") return malformed(step);
  auto started = in.frame();
  auto status = in.frame();
  auto out_tail = in.frame();
  auto err_tail = in.frame();
  if (!started || !status || !out_tail || !err_tail || !in.at_end()) {
    return malformed(step);
  }
  const std::string started_id = started->has_value() ? stripped(**started) : std::string();
  // configure.status: "<containerID>=<exit code>" (an ID has no '=' after its last one).
  std::optional<std::pair<std::string, int>> done;
  if (status->has_value()) {
    const std::string line = stripped(**status);
    auto eq = line.rfind('=');
    int code = 0;
    if (eq != std::string::npos) {
      auto [end, ec] = std::from_chars(line.data() + eq + 1, line.data() + line.size(), code);
      if (ec == std::errc() && end == line.data() + line.size()) {
        done.emplace(line.substr(0, eq), code);
      }
    }
    if (!done) {
      return invalid(
          fmt::format("{} is not <containerID>=<exit code>: \"{}\"", kConfigureStatus, line));
    }
  }
  // A run started after the recorded one (another container's) is still going.
  if (!started_id.empty() && (!done || done->first != started_id)) {
    out.state = ConfigureStatus::State::kRunning;
    out.container_id = started_id;
    return out;
  }
  if (!done) return out;
  out.state = ConfigureStatus::State::kDone;
  out.container_id = done->first;
  out.exit_code = done->second;
  out.stdout_tail = std::string(tail_of(out_tail->value_or(""), options_.tail_bytes));
  out.stderr_tail = std::string(tail_of(err_tail->value_or(""), options_.tail_bytes));
  return out;
}

SetupResult<SetupRunner::RunResult> SetupRunner::run_startscript(
    const MemberTarget& member, const std::vector<std::string>& arguments, std::string_view dir) {
  Step step{"run_startscript",
            with_emit(kRunScript),
            {std::string(dir), std::to_string(options_.tail_bytes)},
            options_.notify_timeout,
            2 * options_.tail_bytes + kFrameSlack};
  step.args.insert(step.args.end(), arguments.begin(), arguments.end());
  auto r = run_step(*client_, member, step);
  if (!r) return tl::unexpected(r.error());
  if (r->exit_code == kNoStartScript) {
    return invalid(fmt::format("no executable {}/startscript", dir));
  }
  if (r->exit_code != 0) return unexpected_exit(step, *r);
  FrameReader in(r->stdout_data);
  auto head = in.line();
  RunResult out;
  constexpr std::string_view kPrefix = "kstack-run ";
  if (!head || !head->starts_with(kPrefix)) return malformed(step);
  auto code = head->substr(kPrefix.size());
  auto [end, ec] = std::from_chars(code.data(), code.data() + code.size(), out.exit_code);
  auto out_tail = in.frame();
  auto err_tail = in.frame();
  if (ec != std::errc() || end != code.data() + code.size() || !out_tail || !err_tail ||
      !in.at_end()) {
    return malformed(step);
  }
  out.stdout_tail = out_tail->value_or("");
  out.stderr_tail = err_tail->value_or("");
  spdlog::info("setup startscript ran namespace={} member={} exit={}", member.namespace_name,
               member.pod, out.exit_code);
  return out;
}

}  // namespace kstack::executor
