// A real Kubernetes control plane for tests: etcd, kube-apiserver and (optionally)
// kube-controller-manager v1.20.2 on free loopback ports, with a fresh PKI and static-token
// users. One per test binary (see environment.h), so test binaries can run in parallel.
// Binaries come from tests/testenv/get-binaries.sh; docs/testenv.md explains the whole setup.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>
#include <tl/expected.hpp>

#include "tests/testenv/process.h"

namespace kstack::testenv {

// Authenticates with a static bearer token (--token-auth-file). Every user is also in
// `system:authenticated`; RBAC grants a test user nothing unless a test binds a role.
struct TestUser {
  std::string name;
  std::vector<std::string> groups;
  std::string token;  // random if empty
};

// Built-in users of every control plane.
inline constexpr const char* kAdminUser = "admin";  // group system:masters
inline constexpr const char* kControllerManagerUser = "system:kube-controller-manager";

// `${KSTACK_TESTENV_DIR:-$HOME/.cache/kstack-testenv}/bin`, where get-binaries.sh puts them.
std::filesystem::path default_bin_dir();

// Thread safety: accessors, kubectl(), kubectl_as(), get() and compact_etcd() may be called
// from any thread at once; start_apiserver(), kill_apiserver() and stop() from one at a time.
class ControlPlane {
 public:
  struct Options {
    bool controller_manager = false;
    // Appended to kube-controller-manager's fixed flags (a later flag wins), e.g. a shorter
    // --node-monitor-grace-period for node-loss tests.
    std::vector<std::string> controller_manager_extra_args;
    // Appended to kube-apiserver's fixed flags, e.g. --enable-aggregator-routing=true: the API
    // server then calls a webhook's Service at an address of its Endpoints (a pod IP), not at
    // its ClusterIP, which nothing routes in the test environment.
    std::vector<std::string> apiserver_extra_args;
    std::vector<TestUser> users;
    std::filesystem::path bin_dir;   // default: default_bin_dir()
    std::filesystem::path work_dir;  // default: fresh mkdtemp under $TMPDIR (or /tmp);
                                     // if given, must not exist yet or be empty
    std::chrono::seconds ready_timeout{60};
    // Runs once the apiserver is ready, before the controller-manager starts (if it does), e.g.
    // to install CRDs: the controller-manager's garbage collector learns about resource types
    // created after its start only at its next discovery resync (~30 s), so until then
    // ownerReferences to custom resources are not collected. An error fails start().
    std::function<tl::expected<void, std::string>(ControlPlane&)> before_controller_manager;
  };

  // Starts etcd, the apiserver (and the controller-manager) and waits until /readyz answers
  // ok (and, with the controller-manager, until ServiceAccount default/default and its token
  // Secret exist).
  // Retries up to 3 times with new ports if a server could not bind its port.
  // Children die with the *thread* that called start() (PR_SET_PDEATHSIG): start and use
  // a control plane from a thread that outlives it (the main thread in tests).
  static tl::expected<std::unique_ptr<ControlPlane>, std::string> start(Options options);

  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;
  ~ControlPlane();  // stop()

  // SIGTERM to every server, SIGKILL after 5 s; removes work_dir() unless
  // KSTACK_TESTENV_KEEP=1. Idempotent.
  void stop();

  const std::string& server() const { return server_; }  // https://127.0.0.1:PORT
  const std::filesystem::path& ca_file() const;
  const std::string& ca_pem() const;
  const std::string& admin_token() const;
  // Token of a built-in or test user; throws std::out_of_range for an unknown user.
  const std::string& token(std::string_view user) const;
  // Admin kubeconfig (CA embedded as certificate-authority-data, admin token).
  const std::filesystem::path& kubeconfig() const { return kubeconfig_; }
  // Kubeconfig of any known user, written on first use; throws std::out_of_range if unknown.
  std::filesystem::path kubeconfig_for(std::string_view user) const;
  const std::string& etcd_endpoint() const { return etcd_endpoint_; }  // http://127.0.0.1:PORT
  const std::filesystem::path& work_dir() const { return work_dir_; }
  const std::filesystem::path& bin_dir() const { return options_.bin_dir; }

  // Runs bin_dir()/kubectl --kubeconfig=<admin or user kubeconfig> ARGS (argv, no shell);
  // `input` is its stdin (for `-f -`). A command that could not run has exit_code -1 and the
  // reason in `err`.
  CommandResult kubectl(const std::vector<std::string>& args, std::string_view input = {}) const;
  CommandResult kubectl_as(std::string_view user, const std::vector<std::string>& args,
                           std::string_view input = {}) const;

  // GET on the apiserver with the admin token via curl: {HTTP status (0 if none), body}.
  std::pair<int, std::string> get(std::string_view path) const;

  // Fault injection. kill_apiserver() SIGKILLs it; start_apiserver() starts it again on the
  // same port with the same etcd and PKI and waits for /readyz.
  void kill_apiserver();
  tl::expected<void, std::string> start_apiserver();
  pid_t apiserver_pid() const { return apiserver_.pid(); }  // 0 when not running
  // Compacts etcd at its current revision (so watches from older resourceVersions get
  // 410 Gone); returns that revision.
  tl::expected<std::int64_t, std::string> compact_etcd() const;

 private:
  struct Ports {
    int etcd_client = 0;
    int etcd_peer = 0;
    int apiserver = 0;
    int controller_manager = 0;
  };

  explicit ControlPlane(Options options) : options_(std::move(options)) {}
  tl::expected<void, std::string> try_start();
  tl::expected<void, std::string> write_credentials();
  tl::expected<void, std::string> start_etcd();
  tl::expected<void, std::string> wait_etcd();
  tl::expected<void, std::string> wait_apiserver_ready();
  tl::expected<void, std::string> start_controller_manager();
  tl::expected<void, std::string> wait_default_service_account();
  // Fails with the process's log tail if it is no longer running.
  tl::expected<void, std::string> check_alive(ChildProcess& process);
  void stop_processes();
  std::filesystem::path write_kubeconfig(std::string_view user) const;
  CommandResult run_kubectl(const std::filesystem::path& kubeconfig,
                            const std::vector<std::string>& args, std::string_view input) const;

  Options options_;
  std::filesystem::path work_dir_;
  bool owns_work_dir_ = false;
  Ports ports_;
  std::string server_;
  std::string etcd_endpoint_;
  std::filesystem::path kubeconfig_;
  std::map<std::string, TestUser, std::less<>> users_;  // includes admin and controller-manager
  std::filesystem::path ca_file_;
  std::string ca_pem_;
  std::filesystem::path pki_dir_;
  ChildProcess etcd_;
  ChildProcess apiserver_;
  ChildProcess controller_manager_;
  mutable std::mutex kubeconfigs_mutex_;
  mutable std::map<std::string, std::filesystem::path, std::less<>> kubeconfigs_;
  bool stopped_ = false;
};

}  // namespace kstack::testenv
