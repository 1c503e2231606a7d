// Starts and stops the test control plane (see control_plane.h): ports, credentials,
// processes, readiness. Command lines are explained in docs/testenv.md.
#include "tests/testenv/control_plane.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <arpa/inet.h>
#include <fmt/core.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/testenv/pki.h"

namespace kstack::testenv {
namespace {

using SteadyClock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr int kStartAttempts = 3;                      // new ports each time a bind fails
constexpr std::chrono::milliseconds kStopGrace{5000};  // SIGTERM -> SIGKILL
constexpr std::chrono::milliseconds kPollInterval{100};
constexpr std::chrono::seconds kEtcdReadyTimeout{20};
constexpr const char* kWorkDirPrefix = "kstack-testenv-";
constexpr const char* kOwnerFile = "owner.pid";  // lets a later start() sweep crashed runs
constexpr const char* kClusterName = "kstack-testenv";
constexpr const char* kServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local";
// A /16: room for the member Services of benchmark-sized runs (hundreds of Stacks).
constexpr const char* kServiceClusterIpRange = "10.0.0.0/16";

bool keep_work_dir() {
  const char* keep = std::getenv("KSTACK_TESTENV_KEEP");  // NOLINT(concurrency-mt-unsafe)
  return keep != nullptr && std::string_view(keep) == "1";
}

fs::path temp_root() {
  const char* tmp = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe)
  return tmp != nullptr && *tmp != '\0' ? fs::path(tmp) : fs::path("/tmp");
}

// Work dirs left by test processes that crashed (their owner pid is gone).
void sweep_stale_work_dirs() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(temp_root(), ec)) {
    if (entry.path().filename().string().rfind(kWorkDirPrefix, 0) != 0) continue;
    std::ifstream in(entry.path() / kOwnerFile);
    pid_t pid = 0;
    if (!(in >> pid) || pid <= 0) continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH) fs::remove_all(entry.path(), ec);
  }
}

tl::expected<std::vector<int>, std::string> pick_free_ports(int count) {
  std::vector<int> sockets;
  std::vector<int> ports;
  std::string error;
  // All sockets stay bound until every port is known, so the ports are distinct.
  for (int i = 0; i < count && error.empty(); ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = fmt::format("socket: {}", std::generic_category().message(errno));
      break;
    }
    sockets.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      error = fmt::format("bind 127.0.0.1:0: {}", std::generic_category().message(errno));
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : sockets) ::close(fd);
  if (!error.empty()) return tl::unexpected(error);
  return ports;
}

std::string random_token() {
  std::random_device rd;
  std::string token;
  for (int i = 0; i < 4; ++i) token += fmt::format("{:08x}", rd());
  return token;
}

tl::expected<void, std::string> write_file(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) return tl::unexpected(fmt::format("cannot write {}", path.string()));
  return {};
}

std::string base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                 (static_cast<unsigned char>(in[i + 1]) << 8) |
                 static_cast<unsigned char>(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

tl::expected<void, std::string> validate_user(const TestUser& user) {
  auto bad = [](std::string_view s) { return s.empty() || s.find_first_of(",\"\n\r") != s.npos; };
  if (bad(user.name)) return tl::unexpected(fmt::format("invalid test user name '{}'", user.name));
  for (const auto& g : user.groups) {
    if (bad(g)) return tl::unexpected(fmt::format("invalid group '{}' of user {}", g, user.name));
  }
  if (!user.token.empty() && user.token.find_first_of(",\"\n\r ") != std::string::npos) {
    return tl::unexpected(fmt::format("invalid token for user {}", user.name));
  }
  return {};
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : std::string(sep)) + item;
  return out;
}

}  // namespace

fs::path default_bin_dir() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): tests read the environment, nobody setenv()s
  if (const char* dir = std::getenv("KSTACK_TESTENV_DIR"); dir != nullptr && *dir != '\0') {
    return fs::path(dir) / "bin";
  }
  const char* home = std::getenv("HOME");  // NOLINT(concurrency-mt-unsafe)
  return fs::path(home != nullptr ? home : "/root") / ".cache" / "kstack-testenv" / "bin";
}

tl::expected<std::unique_ptr<ControlPlane>, std::string> ControlPlane::start(Options options) {
  if (options.bin_dir.empty()) options.bin_dir = default_bin_dir();
  std::vector<std::string> needed = {"etcd", "etcdctl", "kube-apiserver", "kubectl"};
  if (options.controller_manager) needed.emplace_back("kube-controller-manager");
  for (const auto& name : needed) {
    if (::access((options.bin_dir / name).c_str(), X_OK) != 0) {
      return tl::unexpected(fmt::format(
          "{} is missing; run tests/testenv/get-binaries.sh (or set KSTACK_TESTENV_DIR)",
          (options.bin_dir / name).string()));
    }
  }
  for (const auto& user : options.users) {
    if (auto ok = validate_user(user); !ok) return tl::unexpected(ok.error());
  }
  sweep_stale_work_dirs();

  std::string errors;
  for (int attempt = 1; attempt <= kStartAttempts; ++attempt) {
    std::unique_ptr<ControlPlane> cp(new ControlPlane(options));
    auto started = cp->try_start();
    if (started) return cp;
    errors += fmt::format("attempt {}: {}\n", attempt, started.error());
    bool port_clash = started.error().find("address already in use") != std::string::npos;
    cp->stop();
    if (!port_clash) break;
    if (!options.work_dir.empty()) {
      std::error_code ec;
      fs::remove_all(options.work_dir, ec);
    }
  }
  return tl::unexpected(fmt::format("cannot start the test control plane:\n{}", errors));
}

tl::expected<void, std::string> ControlPlane::try_start() {
  std::error_code ec;
  if (options_.work_dir.empty()) {
    std::string tmpl = (temp_root() / kWorkDirPrefix).string() + "XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      return tl::unexpected(
          fmt::format("mkdtemp {}: {}", tmpl, std::generic_category().message(errno)));
    }
    work_dir_ = tmpl;
  } else {
    work_dir_ = fs::absolute(options_.work_dir);
    if (fs::exists(work_dir_) && !fs::is_empty(work_dir_, ec)) {
      return tl::unexpected(fmt::format("work dir {} is not empty", work_dir_.string()));
    }
    fs::create_directories(work_dir_, ec);
    if (ec) return tl::unexpected(fmt::format("mkdir {}: {}", work_dir_.string(), ec.message()));
  }
  owns_work_dir_ = true;
  if (auto ok = write_file(work_dir_ / kOwnerFile, std::to_string(::getpid())); !ok) return ok;

  auto ports = pick_free_ports(4);
  if (!ports) return tl::unexpected(ports.error());
  ports_ = {(*ports)[0], (*ports)[1], (*ports)[2], (*ports)[3]};
  server_ = fmt::format("https://127.0.0.1:{}", ports_.apiserver);
  etcd_endpoint_ = fmt::format("http://127.0.0.1:{}", ports_.etcd_client);

  pki_dir_ = work_dir_ / "pki";
  auto pki = make_pki(pki_dir_);
  if (!pki) return tl::unexpected(pki.error());
  ca_file_ = pki->ca_cert;
  ca_pem_ = pki->ca_pem;

  auto ok = write_credentials().and_then([&] { return start_etcd(); }).and_then([&] {
    return start_apiserver();
  });
  if (ok && options_.before_controller_manager) ok = options_.before_controller_manager(*this);
  if (ok && options_.controller_manager) {
    ok = start_controller_manager().and_then([&] { return wait_default_service_account(); });
  }
  return ok;
}

tl::expected<void, std::string> ControlPlane::write_credentials() {
  users_.clear();
  users_.emplace(kAdminUser, TestUser{kAdminUser, {"system:masters"}, random_token()});
  users_.emplace(kControllerManagerUser, TestUser{kControllerManagerUser, {}, random_token()});
  for (auto user : options_.users) {
    if (user.token.empty()) user.token = random_token();
    auto name = user.name;
    if (!users_.emplace(name, std::move(user)).second) {
      return tl::unexpected(fmt::format("test user {} is defined twice (or is built in)", name));
    }
  }
  std::string csv;  // token,user,uid,"group1,group2"
  for (const auto& [name, user] : users_) {
    csv += fmt::format("{},{},{}", user.token, name, name);
    if (!user.groups.empty()) csv += fmt::format(",\"{}\"", join(user.groups, ","));
    csv += "\n";
  }
  kubeconfig_ = work_dir_ / "admin.kubeconfig";
  return write_file(pki_dir_ / "tokens.csv", csv)
      .and_then([&] {
        return write_file(work_dir_ / "admin.header",
                          fmt::format("Authorization: Bearer {}\n", admin_token()));
      })
      .and_then([&]() -> tl::expected<void, std::string> {
        std::lock_guard lock(kubeconfigs_mutex_);
        kubeconfigs_[kAdminUser] = write_kubeconfig(kAdminUser);
        return {};
      });
}

std::filesystem::path ControlPlane::write_kubeconfig(std::string_view user) const {
  std::string file_name(user);
  std::replace(file_name.begin(), file_name.end(), ':', '_');
  auto path = user == kAdminUser ? work_dir_ / "admin.kubeconfig"
                                 : work_dir_ / "kubeconfigs" / (file_name + ".kubeconfig");
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  auto text = fmt::format(
      "apiVersion: v1\n"
      "kind: Config\n"
      "clusters:\n"
      "- name: {0}\n"
      "  cluster:\n"
      "    server: {1}\n"
      "    certificate-authority-data: {2}\n"
      "users:\n"
      "- name: \"{3}\"\n"
      "  user:\n"
      "    token: {4}\n"
      "contexts:\n"
      "- name: {0}\n"
      "  context:\n"
      "    cluster: {0}\n"
      "    user: \"{3}\"\n"
      "current-context: {0}\n",
      kClusterName, server_, base64(ca_pem_), user, token(user));
  if (auto ok = write_file(path, text); !ok) throw std::runtime_error(ok.error());
  return path;
}

tl::expected<void, std::string> ControlPlane::start_etcd() {
  auto peer = fmt::format("http://127.0.0.1:{}", ports_.etcd_peer);
  std::vector<std::string> argv = {
      (bin_dir() / "etcd").string(),
      "--name=" + std::string(kClusterName),
      "--data-dir=" + (work_dir_ / "etcd").string(),
      "--listen-client-urls=" + etcd_endpoint_,
      "--advertise-client-urls=" + etcd_endpoint_,
      "--listen-peer-urls=" + peer,
      "--initial-advertise-peer-urls=" + peer,
      fmt::format("--initial-cluster={}={}", kClusterName, peer),
      "--initial-cluster-state=new",
      "--logger=zap",
      "--log-level=warn",
  };
  auto child = spawn("etcd", argv, work_dir_ / "etcd.log");
  if (!child) return tl::unexpected(child.error());
  etcd_ = std::move(*child);
  return wait_etcd();
}

tl::expected<void, std::string> ControlPlane::wait_etcd() {
  auto deadline = SteadyClock::now() + kEtcdReadyTimeout;
  std::string last;
  while (SteadyClock::now() < deadline) {
    if (auto alive = check_alive(etcd_); !alive) return alive;
    auto r = run_command({"curl", "-sS", "--max-time", "5", etcd_endpoint_ + "/health"});
    if (r && r->ok() && r->out.find("\"true\"") != std::string::npos) return {};
    last = r ? r->out + r->err : r.error();
    std::this_thread::sleep_for(kPollInterval);
  }
  return tl::unexpected(fmt::format("etcd not healthy after {} s (last answer: {}); log {}:\n{}",
                                    kEtcdReadyTimeout.count(), last, etcd_.log().string(),
                                    tail_file(etcd_.log())));
}

tl::expected<void, std::string> ControlPlane::start_apiserver() {
  if (apiserver_.running()) return tl::unexpected(std::string("the apiserver is already running"));
  std::vector<std::string> argv = {
      (bin_dir() / "kube-apiserver").string(),
      "--etcd-servers=" + etcd_endpoint_,
      "--bind-address=127.0.0.1",
      "--advertise-address=127.0.0.1",
      fmt::format("--secure-port={}", ports_.apiserver),
      "--cert-dir=" + (work_dir_ / "apiserver-certs").string(),
      "--tls-cert-file=" + (pki_dir_ / "apiserver.crt").string(),
      "--tls-private-key-file=" + (pki_dir_ / "apiserver.key").string(),
      "--client-ca-file=" + ca_file_.string(),
      "--token-auth-file=" + (pki_dir_ / "tokens.csv").string(),
      "--authorization-mode=RBAC",
      fmt::format("--service-account-issuer={}", kServiceAccountIssuer),
      "--service-account-key-file=" + (pki_dir_ / "sa.pub").string(),
      "--service-account-signing-key-file=" + (pki_dir_ / "sa.key").string(),
      fmt::format("--service-cluster-ip-range={}", kServiceClusterIpRange),
      "--endpoint-reconciler-type=none",  // else a loopback error every 10 s
      "--profiling=false",
  };
  argv.insert(argv.end(), options_.apiserver_extra_args.begin(),
              options_.apiserver_extra_args.end());
  auto child = spawn("kube-apiserver", argv, work_dir_ / "kube-apiserver.log");
  if (!child) return tl::unexpected(child.error());
  apiserver_ = std::move(*child);
  return wait_apiserver_ready();
}

tl::expected<void, std::string> ControlPlane::wait_apiserver_ready() {
  auto deadline = SteadyClock::now() + options_.ready_timeout;
  std::string last;
  while (SteadyClock::now() < deadline) {
    if (auto alive = check_alive(etcd_); !alive) return alive;
    if (auto alive = check_alive(apiserver_); !alive) return alive;
    auto [code, body] = get("/readyz");
    if (code == 200 && body == "ok") return {};
    last = fmt::format("{} {}", code, body);
    std::this_thread::sleep_for(kPollInterval);
  }
  auto verbose = get("/readyz?verbose");
  return tl::unexpected(
      fmt::format("kube-apiserver not ready after {} s; /readyz?verbose: {} {}\nlog {}:\n{}",
                  options_.ready_timeout.count(), verbose.first, verbose.second,
                  apiserver_.log().string(), tail_file(apiserver_.log())));
}

tl::expected<void, std::string> ControlPlane::start_controller_manager() {
  auto kubeconfig = kubeconfig_for(kControllerManagerUser).string();
  std::vector<std::string> argv = {
      (bin_dir() / "kube-controller-manager").string(),
      "--kubeconfig=" + kubeconfig,
      "--authentication-kubeconfig=" + kubeconfig,
      "--authorization-kubeconfig=" + kubeconfig,
      "--authentication-skip-lookup=true",  // else a log flood
      "--bind-address=127.0.0.1",
      fmt::format("--secure-port={}", ports_.controller_manager),
      "--port=0",  // else an insecure port listens on all interfaces
      "--cert-dir=" + (work_dir_ / "controller-manager-certs").string(),
      "--leader-elect=false",
      "--use-service-account-credentials=true",
      "--service-account-private-key-file=" + (pki_dir_ / "sa.key").string(),
      "--root-ca-file=" + ca_file_.string(),
      "--cluster-signing-cert-file=" + ca_file_.string(),
      "--cluster-signing-key-file=" + (pki_dir_ / "ca.key").string(),
      "--concurrent-gc-syncs=5",
      "--profiling=false",
  };
  argv.insert(argv.end(), options_.controller_manager_extra_args.begin(),
              options_.controller_manager_extra_args.end());
  auto child = spawn("kube-controller-manager", argv, work_dir_ / "kube-controller-manager.log");
  if (!child) return tl::unexpected(child.error());
  controller_manager_ = std::move(*child);
  return {};
}

tl::expected<void, std::string> ControlPlane::wait_default_service_account() {
  // Pods in 1.20 need the ServiceAccount *and* its token Secret (admission mounts it), so wait
  // until the token controller has listed a secret on it too.
  auto deadline = SteadyClock::now() + options_.ready_timeout;
  std::string last;
  while (SteadyClock::now() < deadline) {
    for (auto* p : {&etcd_, &apiserver_, &controller_manager_}) {
      if (auto alive = check_alive(*p); !alive) return alive;
    }
    auto [code, body] = get("/api/v1/namespaces/default/serviceaccounts/default");
    body.erase(
        std::remove_if(body.begin(), body.end(),
                       [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }),
        body.end());
    if (code == 200 && body.find("\"secrets\":[{") != std::string::npos) return {};
    last = fmt::format("{} {}", code, body);
    std::this_thread::sleep_for(kPollInterval);
  }
  return tl::unexpected(fmt::format(
      "ServiceAccount default/default (with its token) missing after {} s (last: {})\nlog {}:\n{}",
      options_.ready_timeout.count(), last, controller_manager_.log().string(),
      tail_file(controller_manager_.log())));
}

tl::expected<void, std::string> ControlPlane::check_alive(ChildProcess& process) {
  if (process.running()) return {};
  return tl::unexpected(fmt::format("{} {} during start-up; last lines of {}:\n{}", process.name(),
                                    process.how_it_ended(), process.log().string(),
                                    tail_file(process.log())));
}

ControlPlane::~ControlPlane() { stop(); }

void ControlPlane::stop() {
  if (stopped_) return;
  stopped_ = true;
  stop_processes();
  if (!owns_work_dir_) return;
  std::error_code ec;
  if (keep_work_dir()) {
    fs::remove(work_dir_ / kOwnerFile, ec);  // not a crashed run: the sweep must leave it
    std::cerr << "kstack-testenv: kept " << work_dir_.string() << " (KSTACK_TESTENV_KEEP=1)\n";
  } else {
    fs::remove_all(work_dir_, ec);
  }
}

void ControlPlane::stop_processes() {
  // Clients first, so that the apiserver does not hang on a vanished etcd while shutting down.
  stop_all({&controller_manager_, &apiserver_}, kStopGrace);
  etcd_.stop(kStopGrace);
}

const fs::path& ControlPlane::ca_file() const { return ca_file_; }
const std::string& ControlPlane::ca_pem() const { return ca_pem_; }
const std::string& ControlPlane::admin_token() const { return token(kAdminUser); }

const std::string& ControlPlane::token(std::string_view user) const {
  auto it = users_.find(user);
  if (it == users_.end()) throw std::out_of_range(fmt::format("unknown test user '{}'", user));
  return it->second.token;
}

fs::path ControlPlane::kubeconfig_for(std::string_view user) const {
  std::lock_guard lock(kubeconfigs_mutex_);
  if (auto it = kubeconfigs_.find(user); it != kubeconfigs_.end()) return it->second;
  auto path = write_kubeconfig(user);  // throws for an unknown user
  kubeconfigs_.emplace(std::string(user), path);
  return path;
}

CommandResult ControlPlane::run_kubectl(const fs::path& kubeconfig,
                                        const std::vector<std::string>& args,
                                        std::string_view input) const {
  std::vector<std::string> argv = {(bin_dir() / "kubectl").string(),
                                   "--kubeconfig=" + kubeconfig.string(),
                                   "--cache-dir=" + (work_dir_ / "kubectl-cache").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_command(argv, {}, input);
  if (!r) return CommandResult{-1, "", r.error()};
  return *r;
}

CommandResult ControlPlane::kubectl(const std::vector<std::string>& args,
                                    std::string_view input) const {
  return run_kubectl(kubeconfig_, args, input);
}

CommandResult ControlPlane::kubectl_as(std::string_view user, const std::vector<std::string>& args,
                                       std::string_view input) const {
  return run_kubectl(kubeconfig_for(user), args, input);
}

std::pair<int, std::string> ControlPlane::get(std::string_view path) const {
  auto r = run_command({"curl", "-sS", "--max-time", "10", "--cacert", ca_file_.string(), "-H",
                        "@" + (work_dir_ / "admin.header").string(), "-w", "\n%{http_code}",
                        server_ + std::string(path)});
  if (!r) return {0, r.error()};
  auto& out = r->out;
  auto nl = out.rfind('\n');
  if (nl == std::string::npos) return {0, r->err};
  int code = std::atoi(out.c_str() + nl + 1);
  out.resize(nl);
  return {code, code == 0 ? r->err : out};
}

void ControlPlane::kill_apiserver() { apiserver_.kill_now(); }

tl::expected<std::int64_t, std::string> ControlPlane::compact_etcd() const {
  auto etcdctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {(bin_dir() / "etcdctl").string(), "--endpoints=" + etcd_endpoint_});
    return run_command(args, {{"ETCDCTL_API", "3"}});
  };
  auto status = etcdctl({"endpoint", "status", "--write-out=json"});
  if (!status || !status->ok()) {
    return tl::unexpected(
        fmt::format("etcdctl endpoint status: {}", status ? status->err : status.error()));
  }
  constexpr std::string_view kKey = "\"revision\":";
  auto at = status->out.find(kKey);
  if (at == std::string::npos) {
    return tl::unexpected(fmt::format("no revision in etcdctl output: {}", status->out));
  }
  std::int64_t revision = std::strtoll(status->out.c_str() + at + kKey.size(), nullptr, 10);
  auto compact = etcdctl({"compact", std::to_string(revision)});
  if (!compact) return tl::unexpected(compact.error());
  // Nothing written since the last compaction: that revision is compacted already.
  if (!compact->ok() && compact->err.find("has been compacted") == std::string::npos) {
    return tl::unexpected(fmt::format("etcdctl compact {}: {}", revision, compact->err));
  }
  return revision;
}

}  // namespace kstack::testenv
