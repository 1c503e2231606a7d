// Shared by the Stack-level setup e2e tests (stack_setup_e2e_tests, issue 6): a test package
// whose `sh` startscript appends every call to /data/setup.log on the member's PVC (so a log
// outlives container restarts and pod deletions) and copies /etc/kstack/* there, the AppType
// that carries it, and a fixture running an in-process Controller with short poll and retry
// intervals. Builds on the reconciler e2e support (tests/e2e/reconciler/support.h).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>
#include <tl/expected.hpp>

#include "kube/client.h"
#include "kube/exec.h"
#include "tests/e2e/reconciler/support.h"

namespace kstack::testenv::e2e {

// Where the startscript logs and copies things: the role's persist dir on its PVC.
inline constexpr std::string_view kSetupLog = "/data/setup.log";
// Test-made markers the startscript obeys.
inline constexpr std::string_view kConfigureFixedMarker = "/data/configure-fixed";
inline constexpr std::string_view kFailAddNodesMarker = "/data/fail-addnodes";
// While it exists, --delnodes waits (up to 60 s) after logging: the test holds notifications in
// flight.
inline constexpr std::string_view kHoldDelNodesMarker = "/data/hold-delnodes";
// Stack env variable naming the one pod whose --configure exits 7 until kConfigureFixedMarker
// exists.
inline constexpr std::string_view kFailConfigurePodEnv = "FAIL_CONFIGURE_POD";
// Stack env variable the startscript copies verbatim to /data/seen-stack-note.
inline constexpr std::string_view kStackNoteEnv = "STACK_NOTE";

// The startscript: one log line per call, "<unix time>\t<arg1>\t<arg2>...", then
//  --configure: copies configmeta.json and env to /data (failing if either is missing), records
//    $KSTACK_CONFIG_MOTTO and $STACK_NOTE as seen, exits 7 on the FAIL_CONFIGURE_POD member until
//    the marker exists;
//  --addnodes/--delnodes: copies configmeta.json to /data/configmeta-<event>.json; --addnodes
//    exits 1 while kFailAddNodesMarker exists; --delnodes waits while kHoldDelNodesMarker exists.
std::string startscript();
// The tar.gz holding the startscript (built once per process).
const std::string& setup_package();

// <source>/tests/e2e/stack_setup/testdata/<file> as JSON with metadata.namespace (and name).
boost::json::value stack_setup_fixture(std::string_view file, const std::string& ns,
                                       const std::string& name = {});
// logapp-apptype.yaml named `name` with this defaultConfigPackage and role persistDirs.
boost::json::value logapp(const std::string& ns, const std::string& name,
                          const std::string& package_url, std::optional<std::string> sha256,
                          const std::vector<std::string>& persist_dirs = {"/data"});
// logapp-stack.yaml named `name`, of AppType `app`, with `workers` members and extra env.
boost::json::value logapp_stack(const std::string& ns, const std::string& name,
                                const std::string& app, int workers,
                                const std::map<std::string, std::string>& env = {});

// One line of a member's setup log.
struct LogEntry {
  double time = 0;  // seconds since the epoch, from `date` in the container
  std::vector<std::string> args;
  std::string event() const { return args.empty() ? std::string() : args.front(); }
  // The value after `--fqdns`, split at commas.
  std::vector<std::string> fqdns() const;
  // The value after `--role`.
  std::string role() const;
};
std::vector<LogEntry> parse_setup_log(std::string_view text);
std::vector<LogEntry> entries_of(const std::vector<LogEntry>& log, std::string_view event);
std::string describe_log(const std::vector<LogEntry>& log);

// <pod>.<headless>.<ns>.svc.cluster.local
std::string member_fqdn(const std::string& ns, const std::string& stack, const std::string& pod);
// <stack>-worker-<first>..<stack>-worker-<last - 1>
std::vector<std::string> worker_pods(const std::string& stack, int first, int last);

// Every member's stateDetail.pendingNotifyCmds is empty.
bool notifications_drained(const boost::json::value& stack);

// The host folder of a file:// package: under /usr, which every simulated container sees
// read-only as its "image" (docs/nodesim.md). Removed on destruction.
class ImageFile {
 public:
  ImageFile(std::string_view name, const std::string& bytes);
  ~ImageFile();
  ImageFile(const ImageFile&) = delete;
  ImageFile& operator=(const ImageFile&) = delete;
  std::string url() const { return "file://" + path_.string(); }

 private:
  std::filesystem::path dir_;
  std::filesystem::path path_;
};

// A namespace with the reconciler fixtures (ReconcilerTest) and a running Controller with short
// poll and notification retry intervals; helpers on members' containers and Stacks.
class StackSetupTest : public ReconcilerTest {
 protected:
  void SetUp() override;
  // A test's changes to the Controller's options, before SetUp starts it.
  virtual void adjust_controller(reconciler::ControllerOptions& /*options*/) {}

  // ConfigMap `name` with binaryData[key] = bytes.
  void create_package_configmap(const std::string& name, const std::string& key,
                                const std::string& bytes);
  // The AppType `name` (logapp-apptype.yaml) with the startscript package from the ConfigMap
  // logapp-setup (created on first use) and its sha256.
  void create_logapp(const std::string& name,
                     const std::vector<std::string>& persist_dirs = {"/data"});
  // Runs argv in the member's container "app"; a transport error fails the test.
  kube::ExecResult exec(const std::string& pod, const std::vector<std::string>& argv);
  // Whether `path` exists in the member's container; told on stdout, so it does not depend on
  // an exec protocol that carries exit codes.
  bool exists(const std::string& pod, std::string_view path);
  // A file's content in the member's container (empty, with a failure, when cat fails).
  std::string read(const std::string& pod, std::string_view path);
  std::vector<LogEntry> setup_log(const std::string& pod);
  // JSON-patches spec.roles[0].members.
  void scale(const std::string& stack, int workers);
  // Ready (support.h stack_ready) with every notification delivered or given up.
  tl::expected<boost::json::value, std::string> wait_quiet(const std::string& stack);
  // Waits until `done` holds for the Stack; the error describes it.
  tl::expected<boost::json::value, std::string> wait_stack(
      const std::string& stack, const std::function<bool(const boost::json::value&)>& done,
      std::chrono::seconds timeout = kConvergeTimeout);
  // events.k8s.io/v1 Events regarding the Stack with this reason.
  std::vector<boost::json::value> events(const std::string& stack, std::string_view reason);

 private:
  bool package_configmap_created_ = false;
};

}  // namespace kstack::testenv::e2e
