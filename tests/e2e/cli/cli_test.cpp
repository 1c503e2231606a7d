// Issue 14 end to end: the `kstack` binary's apply, status, delete and scale as a person runs
// them, against the test control plane with three simulated nodes running the appdefs images and
// the `kstack operator` process (its admission webhook registered). Each test runs the built
// binary as a child process with the admin kubeconfig and asserts on its output and exit code:
// apply --wait of appdefs/etcd until Ready, a Stack whose setup fails, a denied Stack, status in
// each state (table, -o json, -o yaml, --watch), scale --wait and delete --wait, the kubectl
// plugin name through kubectl 1.31's plugin lookup, and apply --wait in a real terminal (tmux).
// The tests share one namespace and run in order (later ones use the Stacks of earlier ones).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "catalog/model.h"
#include "catalog/yaml.h"
#include "tests/e2e/operator/operator_process.h"
#include "tests/e2e/reconciler/support.h"

namespace kstack::testenv::e2e {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;
using catalog::resources::kStacks;

// A bound on one `kstack ... --wait` (passed as its --timeout) and on the test's own waits.
constexpr const char* kWaitTimeout = "240s";
constexpr auto kDeadline = 240s;

fs::path source_dir() { return fs::path(KSTACK_SOURCE_DIR); }

struct CliRun {
  int code = -1;
  std::string out, err;
  std::string both() const { return "--- stdout\n" + out + "--- stderr\n" + err; }
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The whitespace-separated columns of the status table's row for `pod`, or empty.
std::vector<std::string> row_of(const std::string& table, const std::string& pod) {
  for (const auto& line : lines_of(table)) {
    std::istringstream in(line);
    std::vector<std::string> cols;
    for (std::string c; in >> c;) cols.push_back(c);
    if (cols.size() >= 2 && cols[1] == pod) return cols;
  }
  return {};
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto failed = [](std::string why) { setup_error_ = std::move(why); };
    try {
      client_ = admin();
      ns_ = make_namespace(*client_, "cli");
      auto flags = with_default_lease({});
      flags.webhook_port = free_port();
      if (auto r = register_webhook(flags.webhook_port); !r) return failed(r.error());
      auto op = OperatorProcess::start(flags, "cli-operator");
      if (!op) return failed(op.error());
      operator_ = std::make_unique<OperatorProcess>(std::move(*op));
      if (auto r = operator_->wait_ready(120s); !r) return failed(r.error());
      if (auto r = wait_ca_bundle(60s); !r) return failed(r.error());
      // etcd's package, as appdefs/build-packages.sh builds it for `kubectl apply -k`.
      packages_ = control_plane().work_dir() / "cli-appdefs";
      auto built = run_command({"bash", (source_dir() / "appdefs/build-packages.sh").string(),
                                packages_.string(), "etcd"});
      if (!built || !built->ok()) {
        return failed("build-packages.sh: " + (built ? built->err : built.error()));
      }
    } catch (const std::exception& e) {
      failed(e.what());
    }
  }

  static void TearDownTestSuite() {
    if (client_ != nullptr && !ns_.empty() && operator_ != nullptr) {
      auto deleted = delete_stacks(*client_, ns_, 120s);  // the operator removes the finalizers
      EXPECT_TRUE(deleted) << deleted.error();
    }
    (void)register_webhook(0);
    if (operator_ != nullptr) operator_->process().stop(5s);
    operator_.reset();
    if (client_ != nullptr && !ns_.empty()) {
      (void)client_->remove(kube::resources::kNamespaces, "", ns_);
    }
  }

  void SetUp() override { ASSERT_EQ(setup_error_, "") << "suite setup failed"; }

  // `kstack ARGS --kubeconfig=<admin> -n <ns>`, to completion.
  static CliRun kstack(std::vector<std::string> args, std::string_view input = {}) {
    std::vector<std::string> argv = {KSTACK_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--kubeconfig=" + control_plane().kubeconfig().string());
    argv.push_back("-n");
    argv.push_back(ns_);
    auto done = run_command(argv, {}, input, 300s);
    if (!done) return CliRun{-1, "", done.error()};
    return CliRun{done->exit_code, done->out, done->err};
  }

  static json::value stack(const std::string& name) {
    auto got = client_->get(kStacks, ns_, name);
    return got ? *got : json::value(nullptr);
  }

  // A file in the control plane's work directory.
  static fs::path write(const std::string& name, const std::string& text) {
    auto path = control_plane().work_dir() / ("cli-" + name);
    std::ofstream(path) << text;
    return path;
  }

  static std::string ns() { return ns_; }

  static inline std::string setup_error_;
  static inline std::shared_ptr<kube::Client> client_;
  static inline std::string ns_;
  static inline std::unique_ptr<OperatorProcess> operator_;
  static inline fs::path packages_;
};

std::string etcd_stack(const std::string& name, int members, bool stopped = false) {
  return fmt::format(
      "apiVersion: kstack.io/v1beta1\nkind: Stack\nmetadata: {{name: {}}}\nspec:\n  app: etcd\n"
      "{}  roles:\n  - id: member\n    members: {}\n    storage: {{size: 1Gi}}\n"
      "    resources: {{requests: {{cpu: 100m, memory: 128Mi}}}}\n",
      name, stopped ? "  stopped: true\n" : "", members);
}

// 1. The acceptance's first run: the package ConfigMap, then appdefs/etcd (AppType + Stack) with
// --wait, in line mode (stdout is not a terminal).
TEST_F(CliTest, ApplyWaitShowsEtcdComingUpAndExitsZeroWhenReady) {
  auto cm = kstack({"apply", "-f", (packages_ / "etcd/setup-configmap.yaml").string()});
  ASSERT_EQ(cm.code, 0) << cm.both();
  EXPECT_EQ(cm.out, "configmap/etcd-setup created\n");

  auto r = kstack({"apply", "-f", (source_dir() / "appdefs/etcd").string(), "--wait", "--timeout",
                   kWaitTimeout});
  ASSERT_EQ(r.code, 0) << r.both();
  const auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 3u) << r.both();
  EXPECT_EQ(lines[0], "apptype.kstack.io/etcd created");
  EXPECT_EQ(lines[1], "stack.kstack.io/etcd created");
  // Progress: every member seen before it is ready, then ready, each change once.
  for (int i = 0; i < 3; ++i) {
    const std::string pod = fmt::format("etcd-member-{}", i);
    const std::regex ready("^etcd: member " + pod +
                           R"( \(role member\) ready, node \S+, setup done$)");
    const auto first = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) {
      return l.rfind("etcd: member " + pod + " ", 0) == 0;
    });
    ASSERT_NE(first, lines.end()) << pod << "\n" << r.out;
    EXPECT_FALSE(std::regex_match(*first, ready)) << "first seen already ready: " << *first;
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                            [&](const std::string& l) { return std::regex_match(l, ready); }),
              1)
        << r.out;
  }
  EXPECT_TRUE(contains(r.out, "etcd: condition Ready=True")) << r.out;
  EXPECT_EQ(lines.back(), "stack etcd is ready (3/3 members)") << r.out;
  EXPECT_EQ(condition(stack("etcd"), "Ready"), "True");

  // Again: nothing changes, and the Stack is ready at once.
  auto again = kstack({"apply", "-f", (source_dir() / "appdefs/etcd").string(), "--wait"});
  ASSERT_EQ(again.code, 0) << again.both();
  EXPECT_TRUE(contains(again.out,
                       "apptype.kstack.io/etcd unchanged\nstack.kstack.io/etcd "
                       "unchanged\n"))
      << again.out;
}

// ---- the terminal (acceptance 4) ----

// tmux on a private server (-L), for one test; the server is killed on destruction.
class Tmux {
 public:
  Tmux() : socket_(fmt::format("kstack-cli-e2e-{}", getpid())) {}
  ~Tmux() { (void)run_command({"tmux", "-L", socket_, "kill-server"}); }
  Tmux(const Tmux&) = delete;
  Tmux& operator=(const Tmux&) = delete;

  tl::expected<void, std::string> start(const std::string& shell_command) {
    auto r = run_command({"tmux", "-L", socket_, "-f", "/dev/null", "new-session", "-d", "-x",
                          "120", "-y", "40", "-s", "cli", shell_command});
    if (!r) return tl::unexpected(r.error());
    if (!r->ok()) return tl::unexpected("tmux new-session: " + r->err);
    return {};
  }
  // The visible screen as text (no escape sequences), one string per row.
  std::vector<std::string> screen() {
    auto r = run_command({"tmux", "-L", socket_, "capture-pane", "-p", "-t", "cli"});
    return r && r->ok() ? lines_of(r->out) : std::vector<std::string>{};
  }

 private:
  std::string socket_;
};

// `kstack apply --wait` in a real terminal (120x40): the block is redrawn in place. On every
// captured screen the Stack's header is there at most once and a member's row stays on its row
// while its state changes; the last screen shows every member ready and exit code 0.
TEST_F(CliTest, ApplyWaitInATerminalRedrawsTheBlockInPlace) {
  const auto file = write("tty.yaml", etcd_stack("tty", 3));
  Tmux tmux;
  ASSERT_TRUE(tmux.start(fmt::format(
      "{} apply -f {} --wait --timeout {} --kubeconfig={} -n {}; echo EXIT=$?; sleep 600",
      KSTACK_BINARY, file.string(), kWaitTimeout, control_plane().kubeconfig().string(), ns())));
  const std::string header = fmt::format("Stack {}/tty:", ns());
  std::map<std::string, int> row_of_state;  // tty-member-0's state -> its row on screen
  std::vector<std::string> last, problems;
  std::size_t screens = 0;
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  for (;;) {
    auto screen = tmux.screen();
    ++screens;
    const auto headers = std::count_if(screen.begin(), screen.end(), [&](const std::string& l) {
      return l.rfind(header, 0) == 0;
    });
    if (headers > 1)
      problems.push_back(fmt::format("header {} times on screen {}", headers, screens));
    for (std::size_t row = 0; row < screen.size(); ++row) {
      std::istringstream in(screen[row]);
      std::string role, pod, state;
      if (in >> role >> pod >> state && role == "member" && pod == "tty-member-0") {
        row_of_state.emplace(state, static_cast<int>(row));
      }
    }
    last = screen;
    const bool exited = std::any_of(screen.begin(), screen.end(),
                                    [](const std::string& l) { return l.rfind("EXIT=", 0) == 0; });
    if (exited || std::chrono::steady_clock::now() >= deadline) break;
    // The screen has no event to wait on: captured every 50 ms until the command has exited.
    std::this_thread::sleep_for(50ms);
  }
  std::string shown;
  for (const auto& l : last) shown += l + "\n";
  while (shown.size() > 1 && shown[shown.size() - 2] == '\n') shown.pop_back();  // blank rows
  std::cout << screens << " screens captured; tty-member-0 seen as:";
  for (const auto& [state, row] : row_of_state) std::cout << " " << state << " (row " << row << ")";
  std::cout << "\nlast screen:\n" << shown;
  EXPECT_TRUE(problems.empty()) << fmt::format("{}", fmt::join(problems, "\n")) << "\n" << shown;
  ASSERT_TRUE(std::find(last.begin(), last.end(), "EXIT=0") != last.end()) << shown;
  EXPECT_EQ(std::count_if(last.begin(), last.end(),
                          [&](const std::string& l) { return l.rfind(header, 0) == 0; }),
            1)
      << shown;
  EXPECT_TRUE(std::find(last.begin(), last.end(), header + " ready, 3/3 members ready") !=
              last.end())
      << shown;
  for (int i = 0; i < 3; ++i) {
    const std::regex ready(fmt::format(R"(^  member  tty-member-{}  ready +\S+ +setup done$)", i));
    EXPECT_EQ(std::count_if(last.begin(), last.end(),
                            [&](const std::string& l) { return std::regex_match(l, ready); }),
              1)
        << "member " << i << "\n"
        << shown;
  }
  // The member was seen in another state before it was ready, on the same row.
  ASSERT_EQ(row_of_state.count("ready"), 1u) << shown;
  ASSERT_GE(row_of_state.size(), 2u)
      << "tty-member-0 only ever seen ready (" << screens << " screens)\n"
      << shown;
  for (const auto& [state, row] : row_of_state) {
    EXPECT_EQ(row, row_of_state["ready"]) << "tty-member-0 " << state << " on another row\n"
                                          << shown;
  }
}

// ---- failures ----

// A package whose startscript prints seven lines, one error line, and exits 1.
TEST_F(CliTest, ApplyWaitOfAStackWhoseSetupFailsNamesTheMemberAndTheScriptsLastLines) {
  const auto dir = control_plane().work_dir() / "cli-failing-package";
  fs::create_directories(dir);
  std::ofstream(dir / "startscript")
      << "#!/bin/sh\nfor i in 1 2 3 4 5 6 7; do echo \"step $i of the setup\"; done\n"
         "echo 'fatal: the disk is not there' >&2\nexit 1\n";
  fs::permissions(dir / "startscript", fs::perms::owner_all | fs::perms::group_read |
                                           fs::perms::group_exec | fs::perms::others_read |
                                           fs::perms::others_exec);
  auto tar =
      run_command({"tar", "-C", dir.string(), "-czf", (dir / "setup.tgz").string(), "startscript"});
  ASSERT_TRUE(tar && tar->ok()) << (tar ? tar->err : tar.error());
  auto cm = control_plane().kubectl({"create", "configmap", "failing-setup",
                                     "--from-file=setup.tgz=" + (dir / "setup.tgz").string(),
                                     "--dry-run=client", "-o", "yaml"});
  ASSERT_TRUE(cm.ok()) << cm.err;
  auto applied_cm = kstack({"apply", "-f", "-"}, cm.out);  // from stdin
  ASSERT_EQ(applied_cm.code, 0) << applied_cm.both();
  EXPECT_EQ(applied_cm.out, "configmap/failing-setup created\n");

  const auto file = write("failing.yaml", R"(apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: failing}
spec:
  label: {name: a setup that fails}
  distroID: test/failing
  version: "1"
  configSchemaVersion: 1
  defaultImageRepoTag: kstack.io/appdefs/etcd:3.4.23
  defaultConfigPackage: {packageURL: "configmap://failing-setup/setup.tgz"}
  roles:
    - {id: worker, cardinality: "1+"}
  config:
    selectedRoles: [worker]
    roleServices: []
---
apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: broken}
spec:
  app: failing
  roles: [{id: worker, members: 1}]
)");
  auto r = kstack({"apply", "-f", file.string(), "--wait", "--timeout", kWaitTimeout});
  EXPECT_EQ(r.code, 1) << r.both();
  EXPECT_TRUE(contains(r.out, "stack.kstack.io/broken created")) << r.both();
  EXPECT_TRUE(contains(r.out, "broken: member broken-worker-0 (role worker) config_error"))
      << r.both();
  EXPECT_TRUE(contains(
      r.err, "error: stack broken: member broken-worker-0 (role worker) failed its setup\n"))
      << r.both();
  EXPECT_TRUE(contains(r.err, "  member broken-worker-0: stdout: step 7 of the setup\n"))
      << r.both();
  EXPECT_TRUE(contains(r.err, "  member broken-worker-0: stdout: step 3 of the setup\n"))
      << r.both();
  EXPECT_FALSE(contains(r.err, "step 2 of the setup")) << "only the last 5 lines\n" << r.both();
  EXPECT_TRUE(contains(r.err, "  member broken-worker-0: stderr: fatal: the disk is not there\n"))
      << r.both();
}

// Denied by kstack's webhook: every field error on its own line, exit 2, nothing created. The
// CRD's schema: each cause on its own line, exit 2.
TEST_F(CliTest, ADeniedStackPrintsEveryFieldErrorAndExitsTwo) {
  const auto file = write("denied.yaml", R"(apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: denied}
spec:
  app: etcd
  roles: [{id: member, members: 0}, {id: nope, members: 1}]
)");
  auto r = kstack({"apply", "-f", file.string(), "--wait"});
  EXPECT_EQ(r.code, 2) << r.both();
  EXPECT_EQ(r.out, "") << r.both();
  const auto err = lines_of(r.err);
  ASSERT_FALSE(err.empty()) << r.both();
  EXPECT_EQ(err[0], fmt::format("error: stack.kstack.io/denied ({}:doc1): admission webhook "
                                "\"validate.kstack.io\" denied the request",
                                file.string()));
  for (const std::string field :
       {"spec.roles[0].members: ", "spec.roles[0].resources.requests[cpu]: ",
        "spec.roles[0].resources.requests[memory]: ", "spec.roles[0].storage: ",
        "spec.roles[1].id: "}) {
    EXPECT_EQ(std::count_if(err.begin(), err.end(),
                            [&](const std::string& l) { return l.rfind("  " + field, 0) == 0; }),
              1)
        << field << "\n"
        << r.both();
  }
  EXPECT_TRUE(stack("denied").is_null()) << "created after all";
  // What the API server sends for the denial (recorded in tests/unit/cmd/api_errors_test.cpp):
  // the webhook's code and joined message, without details.causes.
  auto manifest = catalog::parse_yaml(read_all(file));
  ASSERT_TRUE(manifest);
  auto raw = client_->raw(
      "PATCH",
      fmt::format("/apis/kstack.io/v1beta1/namespaces/{}/stacks/denied?fieldManager=kstack-cli",
                  ns()),
      json::serialize(*manifest), "application/apply-patch+yaml");
  ASSERT_TRUE(raw) << raw.error().to_string();
  std::cout << "the API server's answer: HTTP " << raw->status << " " << raw->body << "\n";
  EXPECT_EQ(raw->status, 422);
  EXPECT_TRUE(contains(raw->body, "denied the request: spec.roles[0].members: ")) << raw->body;
  EXPECT_FALSE(contains(raw->body, "\"causes\"")) << raw->body;

  const auto schema = write("schema.yaml", R"(apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: schema}
spec:
  app: etcd
  serviceType: Foo
  roles: [{id: member, members: -1}]
)");
  auto s = kstack({"apply", "-f", schema.string()});
  EXPECT_EQ(s.code, 2) << s.both();
  EXPECT_TRUE(contains(s.err, "\n  spec.serviceType: Unsupported value: \"Foo\"")) << s.both();
  // The API server's causes name the list, not the item.
  EXPECT_TRUE(contains(s.err, "\n  spec.roles.members: Invalid value: -1")) << s.both();
  EXPECT_TRUE(contains(s.err, fmt::format("error: stack.kstack.io/schema ({}:doc1): "
                                          "Stack.kstack.io \"schema\" is invalid\n",
                                          schema.string())))
      << s.both();
  EXPECT_TRUE(stack("schema").is_null());
}

// A kind kstack does not apply refuses the whole input, naming file, document and kind.
TEST_F(CliTest, AnotherKindRefusesTheWholeInputAndNothingIsApplied) {
  const auto file = write("mixed.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata: {name: innocent}
data: {a: b}
---
apiVersion: v1
kind: Secret
metadata: {name: secret}
stringData: {a: b}
)");
  auto r = kstack({"apply", "-f", file.string()});
  EXPECT_EQ(r.code, 2) << r.both();
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, fmt::format("error: {}:doc2: kind Secret (apiVersion \"v1\") is not one kstack "
                               "applies: AppType, Stack, KStackConfig (kstack.io/v1beta1) and "
                               "ConfigMap (v1) only; use kubectl for the rest\nerror: nothing "
                               "applied\n",
                               file.string()));
  auto cm = client_->get(kube::resources::kConfigMaps, ns(), "innocent");
  EXPECT_FALSE(cm) << "applied after all";
}

// A Stack whose member no node takes (a nodeSelector no node matches): --wait gives up at
// --timeout with exit 3, saying which Stack and members are not ready.
TEST_F(CliTest, ApplyWaitTimesOutSayingWhatIsNotReady) {
  const auto file = write("pending.yaml", etcd_stack("pending", 1) +
                                              "    nodeSelector: {kstack.io/nowhere: \"true\"}\n");
  auto r = kstack({"apply", "-f", file.string(), "--wait", "--timeout", "5s"});
  EXPECT_EQ(r.code, 3) << r.both();
  EXPECT_TRUE(contains(r.out, "stack.kstack.io/pending created\n")) << r.both();
  EXPECT_TRUE(contains(r.err, "error: timed out after 5s waiting for readiness\n  stack pending "))
      << r.both();
}

// ---- status ----

// The table for a Stack in each state the earlier tests left: etcd ready, broken with a member
// in config_error, pending creating (its member on no node), tty stopped (spec.stopped: true,
// waited for until its pods are gone). (State `error`, an AppType gone from under a Stack, is
// what kstack's webhook prevents; tests/unit/cmd covers how it is shown.)
TEST_F(CliTest, StatusShowsEachStacksRolesMembersAndConditions) {
  auto stopped =
      client_->patch(kStacks, ns(), "tty", kube::PatchType::kMerge, R"({"spec":{"stopped":true}})");
  ASSERT_TRUE(stopped) << stopped.error().to_string();
  auto is_stopped = wait_for_object(
      *client_, kStacks, ns(), "tty",
      [](const json::value& s) { return str_at(s, "/status/state") == "stopped"; }, kDeadline);
  ASSERT_TRUE(is_stopped) << is_stopped.error();

  auto is_creating = wait_for_object(
      *client_, kStacks, ns(), "pending",
      [](const json::value& s) {
        return str_at(s, "/status/state") == "creating" &&
               !str_at(s, "/status/roles/0/members/0/state").empty();
      },
      kDeadline);
  ASSERT_TRUE(is_creating) << is_creating.error();

  auto creating = kstack({"status", "pending"});
  ASSERT_EQ(creating.code, 0) << creating.both();
  EXPECT_TRUE(
      contains(creating.out, fmt::format("Stack {}/pending (app etcd): creating, 0/1 ready", ns())))
      << creating.out;
  auto unscheduled = row_of(creating.out, "pending-member-0");
  ASSERT_EQ(unscheduled.size(), 7u) << creating.out;
  EXPECT_EQ(unscheduled[2], "-") << "no node: " << creating.out;
  EXPECT_EQ(unscheduled[3], str_at(*is_creating, "/status/roles/0/members/0/state"));
  EXPECT_TRUE(contains(creating.out, "\n  Ready=False ")) << creating.out;

  auto ready = kstack({"status", "etcd"});
  ASSERT_EQ(ready.code, 0) << ready.both();
  EXPECT_TRUE(contains(
      ready.out, fmt::format("Stack {}/etcd (app etcd): ready, 3/3 ready, 3/3 updated", ns())))
      << ready.out;
  EXPECT_TRUE(contains(ready.out, "\n  ROLE    POD            NODE")) << ready.out;
  for (int i = 0; i < 3; ++i) {
    auto row = row_of(ready.out, fmt::format("etcd-member-{}", i));
    ASSERT_EQ(row.size(), 7u) << ready.out;
    EXPECT_EQ(row[0], "member");
    EXPECT_NE(row[2], "-") << "the pod's node";
    EXPECT_EQ(row[3], "ready");
    EXPECT_EQ(row[4], "done");
    EXPECT_EQ(row[5], "-");
  }
  EXPECT_TRUE(contains(ready.out, "\nConditions:\n  Ready=True ")) << ready.out;

  auto broken = kstack({"status", "broken"});
  ASSERT_EQ(broken.code, 0) << broken.both();
  const std::string broken_state = str_at(stack("broken"), "/status/state");
  EXPECT_TRUE(contains(
      broken.out, fmt::format("Stack {}/broken (app failing): {}, 0/1 ready", ns(), broken_state)))
      << broken.out;
  auto row = row_of(broken.out, "broken-worker-0");
  ASSERT_EQ(row.size(), 7u) << broken.out;
  EXPECT_EQ(row[3], "config_error");
  EXPECT_EQ(row[4], "failed");
  EXPECT_TRUE(contains(broken.out, "\nSetup failures:\n")) << broken.out;
  EXPECT_TRUE(contains(broken.out, "  broken-worker-0: stderr: fatal: the disk is not there\n"))
      << broken.out;
  EXPECT_TRUE(contains(broken.out, "  Degraded=True ConfigError: ")) << broken.out;

  auto tty = kstack({"status", "tty"});
  ASSERT_EQ(tty.code, 0) << tty.both();
  EXPECT_TRUE(contains(tty.out, fmt::format("Stack {}/tty (app etcd): stopped, ", ns())))
      << tty.out;
  EXPECT_TRUE(contains(tty.out, ", stopped by spec, age ")) << tty.out;
  for (int i = 0; i < 3; ++i) {
    auto r = row_of(tty.out, fmt::format("tty-member-{}", i));
    ASSERT_EQ(r.size(), 7u) << tty.out;
    EXPECT_EQ(r[3], "stopped") << tty.out;
  }

  // Every Stack of the namespace, one block each, in name order.
  auto all = kstack({"status"});
  ASSERT_EQ(all.code, 0) << all.both();
  const auto b = all.out.find("/broken (app");
  const auto e = all.out.find("/etcd (app");
  const auto p = all.out.find("/pending (app");
  const auto t = all.out.find("/tty (app");
  EXPECT_TRUE(b != std::string::npos && e != std::string::npos && p != std::string::npos &&
              t != std::string::npos && b < e && e < p && p < t)
      << all.out;

  auto missing = kstack({"status", "nothing"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.err, fmt::format("error: stack nothing not found in namespace {}\n", ns()));
}

TEST_F(CliTest, StatusAsJsonAndYamlIsTheStatusWithEachMembersPod) {
  auto j = kstack({"status", "etcd", "-o", "json"});
  ASSERT_EQ(j.code, 0) << j.both();
  boost::system::error_code ec;
  auto doc = json::parse(j.out, ec);
  ASSERT_FALSE(ec) << j.out;
  EXPECT_EQ(str_at(doc, "/name"), "etcd");
  EXPECT_EQ(str_at(doc, "/namespace"), ns());
  EXPECT_EQ(str_at(doc, "/status/state"), "ready");
  const auto node = str_at(doc, "/pods/etcd-member-1/node");
  EXPECT_FALSE(node.empty()) << j.out;
  auto pod = client_->get(kube::resources::kPods, ns(), "etcd-member-1");
  ASSERT_TRUE(pod);
  EXPECT_EQ(node, str_at(*pod, "/spec/nodeName"));

  auto y = kstack({"status", "-o", "yaml"});
  ASSERT_EQ(y.code, 0) << y.both();
  auto parsed = catalog::parse_yaml(y.out);
  ASSERT_TRUE(parsed) << parsed.error().to_string() << "\n" << y.out;
  const auto& items = parsed->at("items").as_array();
  ASSERT_EQ(items.size(), 4u) << y.out;
  EXPECT_EQ(str_at(items[1], "/name"), "etcd");
  EXPECT_EQ(str_at(items[1], "/status/roles/0/members/2/state"), "ready");
  EXPECT_EQ(str_at(items[2], "/status/state"), "creating");
  EXPECT_EQ(str_at(items[3], "/status/state"), "stopped");
}

// `status --watch` streams: the first table, then another block once etcd is scaled.
TEST_F(CliTest, StatusWatchStreamsAChange) {
  const auto log = control_plane().work_dir() / "cli-status-watch.out";
  fs::remove(log);
  auto watcher = spawn("kstack-status-watch",
                       {KSTACK_BINARY, "status", "etcd", "--watch", "--timeout", kWaitTimeout,
                        "--kubeconfig=" + control_plane().kubeconfig().string(), "-n", ns()},
                       log);
  ASSERT_TRUE(watcher) << watcher.error();
  // The watcher's output is a file with no event to wait on: read every 50 ms until it holds
  // `what`, or the deadline.
  auto wait_output = [&](const std::function<bool(const std::string&)>& done) {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    for (;;) {
      auto text = read_all(log);
      if (done(text) || std::chrono::steady_clock::now() >= deadline) return text;
      std::this_thread::sleep_for(50ms);
    }
  };
  auto first = wait_output([](const std::string& t) { return contains(t, "\nConditions:\n"); });
  ASSERT_TRUE(contains(first, "etcd-member-2")) << first;
  EXPECT_FALSE(contains(first, "etcd-member-3")) << first;

  auto scaled = kstack({"scale", "etcd", "member=4"});
  ASSERT_EQ(scaled.code, 0) << scaled.both();
  EXPECT_EQ(scaled.out, "stack.kstack.io/etcd scaled (member=4)\n");
  auto streamed =
      wait_output([](const std::string& t) { return contains(t, "  member  etcd-member-3  "); });
  EXPECT_TRUE(contains(streamed, "  member  etcd-member-3  ")) << streamed;
  // The Stack in state `updating`: every status the operator writes is a watch event, and the
  // first after the scale-up has the new member not ready yet.
  const auto updating_header = fmt::format("Stack {}/etcd (app etcd): updating, ", ns());
  auto updating = wait_output([&](const std::string& t) { return contains(t, updating_header); });
  EXPECT_TRUE(contains(updating, updating_header)) << updating;
  EXPECT_GE(std::count(streamed.begin(), streamed.end(), '\n'), 10);
  EXPECT_TRUE(watcher->running()) << "--watch keeps going";
  watcher->stop(2s);
}

// scale --wait until Ready again, then delete --wait until gone.
TEST_F(CliTest, ScaleWaitAndDeleteWait) {
  auto scaled = kstack({"scale", "etcd", "member=3", "--wait", "--timeout", kWaitTimeout});
  ASSERT_EQ(scaled.code, 0) << scaled.both();
  EXPECT_TRUE(contains(scaled.out, "stack.kstack.io/etcd scaled (member=3)\n")) << scaled.out;
  EXPECT_TRUE(contains(scaled.out, "\nstack etcd is ready (3/3 members)\n")) << scaled.out;
  const auto s = stack("etcd");
  EXPECT_EQ(str_at(s, "/status/state"), "ready");
  EXPECT_EQ(int_at(s, "/spec/roles/0/members"), 3);
  EXPECT_EQ(status_members(s, "member").size(), 3u);

  auto unknown = kstack({"scale", "etcd", "leader=1"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_EQ(unknown.err,
            "error: stack etcd: the Stack has no role \"leader\" in spec.roles (it has: member)\n");

  auto deleted = kstack({"delete", "broken", "--wait", "--timeout", kWaitTimeout});
  ASSERT_EQ(deleted.code, 0) << deleted.both();
  EXPECT_TRUE(contains(deleted.out, "stack.kstack.io/broken deleted\n")) << deleted.out;
  EXPECT_TRUE(contains(deleted.out, "\nstack broken deleted\n")) << deleted.out;
  EXPECT_TRUE(stack("broken").is_null());

  auto again = kstack({"delete", "broken"});
  EXPECT_EQ(again.code, 1);
  EXPECT_EQ(again.err, fmt::format("error: stack broken not found in namespace {}\n", ns()));
}

// KUBECONFIG and the context's namespace, as kubectl: no --kubeconfig, no -n.
TEST_F(CliTest, KubeconfigFromTheEnvironmentAndTheContextsNamespace) {
  const auto config = control_plane().work_dir() / "cli-kubeconfig";
  fs::copy_file(control_plane().kubeconfig(), config, fs::copy_options::overwrite_existing);
  auto set = run_command({(control_plane().bin_dir() / "kubectl").string(), "config", "set-context",
                          "--current", "--namespace=" + ns(), "--kubeconfig=" + config.string()});
  ASSERT_TRUE(set && set->ok()) << (set ? set->err : set.error());
  auto r = run_command({KSTACK_BINARY, "status", "etcd"}, {{"KUBECONFIG", config.string()}});
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
  EXPECT_TRUE(contains(r->out, fmt::format("Stack {}/etcd (app etcd): ready", ns()))) << r->out;
}

// ---- the kubectl plugin ----

// kubectl 1.31 (scripts/get-kube-tools.sh; $KSTACK_KUBE_TOOLS_BIN when set) finds kubectl-kstack
// on PATH: `kubectl plugin list` names it and `kubectl kstack status` runs it.
TEST_F(CliTest, KubectlFindsThePluginOnPath) {
  std::string kubectl;
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read before the test starts threads of its own
  if (const char* bin = std::getenv("KSTACK_KUBE_TOOLS_BIN"); bin != nullptr && *bin != '\0') {
    kubectl = (fs::path(bin) / "kubectl").string();
  } else {
    auto tools =
        run_command({"bash", (source_dir() / "scripts/get-kube-tools.sh").string()}, {}, {}, 600s);
    ASSERT_TRUE(tools && tools->ok()) << (tools ? tools->err : tools.error());
    auto dir = lines_of(tools->out);
    ASSERT_FALSE(dir.empty());
    kubectl = (fs::path(dir.back()) / "kubectl").string();
  }
  const auto plugin_dir = fs::path(KSTACK_BINARY).parent_path();
  ASSERT_TRUE(fs::is_symlink(plugin_dir / "kubectl-kstack")) << "made by cmd/CMakeLists.txt";
  // NOLINTNEXTLINE(concurrency-mt-unsafe)
  const char* path = std::getenv("PATH");
  const EnvVars env = {{"PATH", plugin_dir.string() + ":" + (path != nullptr ? path : "")}};
  auto list = run_command({kubectl, "plugin", "list"}, env);
  ASSERT_TRUE(list) << list.error();
  EXPECT_TRUE(contains(list->out, (plugin_dir / "kubectl-kstack").string()))
      << list->out << list->err;
  auto status = run_command({kubectl, "kstack", "status", "etcd", "-n", ns(),
                             "--kubeconfig=" + control_plane().kubeconfig().string()},
                            env);
  ASSERT_TRUE(status) << status.error();
  EXPECT_EQ(status->exit_code, 0) << status->out << status->err;
  EXPECT_TRUE(contains(status->out, fmt::format("Stack {}/etcd (app etcd): ready", ns())))
      << status->out << status->err;
  auto usage = run_command({kubectl, "kstack", "--help"}, env);
  ASSERT_TRUE(usage) << usage.error();
  EXPECT_TRUE(contains(usage->out, "Usage: kubectl kstack [OPTIONS] [SUBCOMMAND]")) << usage->out;
}

}  // namespace
}  // namespace kstack::testenv::e2e
