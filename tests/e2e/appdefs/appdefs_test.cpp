// The appdefs/ catalog end to end (issue 7, acceptance 2): appdefs/build-packages.sh builds the
// setup packages and a kustomization, the admin applies it (AppTypes + ConfigMaps into
// kstack-system, the `system` catalog), and one in-process Controller with the operator's
// identity (the deploy/ RBAC, reconciler/support.h) sets up every app's example Stack, each in
// its own namespace, on the simulated node. The startscripts log every invocation to
// /var/lib/<app>/kstack-setup.log on the member's PVC (appdefs/README.md): each member must
// show exactly one --configure, and scaling the etcd and Cassandra examples up and back down
// must run --addnodes then --delnodes, naming the member that came and went, on every member
// that stayed.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "catalog/yaml.h"
#include "kube/exec.h"
#include "kube/resource.h"
#include "tests/e2e/reconciler/support.h"
#include "tests/testenv/process.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Every app of the catalog; each example Stack is named after its app.
const std::vector<std::string> kApps = {"etcd", "redis", "cassandra", "kafka", "spark", "jupyter"};

// How long handlers may take to show up in the logs once the Stack is ready again (etcd's
// configure alone probes its peers for a few seconds).
constexpr auto kLogTimeout = 90s;

fs::path appdefs_dir() { return fs::path(KSTACK_SOURCE_DIR) / "appdefs"; }

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto at = text.find(sep, start);
    out.emplace_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

// appdefs/<app>/stack.yaml in `ns`.
json::value example_stack(const std::string& app, const std::string& ns) {
  auto parsed = catalog::parse_yaml(read_file(appdefs_dir() / app / "stack.yaml"));
  if (!parsed) throw std::runtime_error(app + "/stack.yaml: " + parsed.error().to_string());
  parsed->as_object()["metadata"].as_object()["namespace"] = ns;
  return std::move(*parsed);
}

// One line of kstack-setup.log: "<UTC timestamp> <arguments>".
struct Invocation {
  std::string time;
  std::vector<std::string> args;
  std::string event() const { return args.empty() ? std::string() : args.front(); }
  std::string value_of(std::string_view flag) const {
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == flag) return args[i + 1];
    }
    return {};
  }
  std::string role() const { return value_of("--role"); }
  // --fqdns, sorted.
  std::vector<std::string> fqdns() const {
    auto v = value_of("--fqdns");
    if (v.empty()) return {};
    auto out = split(v, ',');
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::vector<Invocation> parse_log(std::string_view text) {
  std::vector<Invocation> out;
  for (const auto& line : split(text, '\n')) {
    if (line.empty()) continue;
    auto words = split(line, ' ');
    Invocation i;
    i.time = words.front();
    for (std::size_t w = 1; w < words.size(); ++w) {
      if (!words[w].empty()) i.args.push_back(words[w]);
    }
    out.push_back(std::move(i));
  }
  return out;
}

std::size_t count_of(const std::vector<Invocation>& log, std::string_view event) {
  return static_cast<std::size_t>(std::count_if(
      log.begin(), log.end(), [&](const Invocation& i) { return i.event() == event; }));
}

std::string describe(const std::vector<Invocation>& log) {
  std::string out;
  for (const auto& i : log) out += fmt::format("    {} {}\n", i.time, fmt::join(i.args, " "));
  return out.empty() ? "    (empty)\n" : out;
}

std::string member_fqdn(const std::string& ns, const std::string& stack, const std::string& pod) {
  return fmt::format("{}.{}.{}.svc.cluster.local", pod, stack, ns);
}

// Pod names of every member in status.roles[], by role.
std::map<std::string, std::vector<std::string>> members_by_role(const json::value& stack) {
  std::map<std::string, std::vector<std::string>> out;
  boost::system::error_code ec;
  const auto* roles = stack.find_pointer("/status/roles", ec);
  if (roles == nullptr || !roles->is_array()) return out;
  for (const auto& r : roles->get_array()) {
    const auto role = str_at(r, "/id");
    for (const auto& [pod, member] : status_members(stack, role)) out[role].push_back(pod);
  }
  return out;
}

// What one scale step must leave in the setup log of a member that stayed: after `before`
// lines, an --addnodes for `fqdn` of `role` then a --delnodes for it, and nothing else.
bool add_then_del(const std::vector<Invocation>& log, std::size_t before, const std::string& role,
                  const std::string& fqdn) {
  if (log.size() < before) return false;
  bool added = false;
  bool removed = false;
  for (std::size_t i = before; i < log.size(); ++i) {
    const auto& e = log[i];
    const std::vector<std::string> expected{fqdn};
    if (e.event() == "--addnodes" && !removed && e.role() == role && e.fqdns() == expected) {
      added = true;
    } else if (e.event() == "--delnodes" && added && e.role() == role && e.fqdns() == expected) {
      removed = true;
    } else {
      return false;  // anything else: a wrong FQDN, role, order, or a second --configure
    }
  }
  return added && removed;
}

class AppdefsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    try {
      setup_error_ = set_up();
    } catch (const std::exception& e) {
      setup_error_ = e.what();
    }
  }

  static void TearDownTestSuite() {
    if (client_ == nullptr) return;
    if (controller_ != nullptr) {
      // The Stacks' kstack.io/cleanup finalizer needs the running Controller.
      for (const auto& [app, ns] : namespaces_) {
        auto deleted = delete_stacks(*client_, ns, 120s);
        EXPECT_TRUE(deleted) << ns << ": " << deleted.error();
      }
      controller_->stop();
    }
    for (const auto& [app, ns] : namespaces_) {
      (void)client_->remove(kube::resources::kNamespaces, "", ns);
    }
  }

  // Builds and installs the catalog, starts the Controller (every namespace) and creates every
  // example Stack, so that they all converge at once. Returns an error or "".
  static std::string set_up() {
    if (auto rbac = install_operator_rbac(); !rbac) return rbac.error();
    client_ = admin();
    auto& cp = control_plane();
    const auto out = cp.work_dir() / "appdefs";
    auto built =
        run_command({"bash", (appdefs_dir() / "build-packages.sh").string(), out.string()});
    if (!built) return "build-packages.sh: " + built.error();
    if (!built->ok()) return "build-packages.sh failed: " + built->err;
    auto applied = cp.kubectl({"apply", "-k", out.string()});
    if (!applied.ok()) return "kubectl apply -k " + out.string() + ": " + applied.err;

    auto options = controller_options("");
    options.watch_namespace = "";  // one namespace per app
    options.operator_namespace = kOperatorNamespace;
    options.workers = 4;
    options.poll_interval = 300ms;
    options.notifier.threads = 4;
    options.notifier.first_retry = 200ms;
    options.notifier.max_retry = 1000ms;
    auto running = RunningController::start(std::move(options));
    if (!running) return running.error();
    controller_ = std::move(*running);

    start_ = std::chrono::steady_clock::now();
    for (const auto& app : kApps) {
      const auto ns = make_namespace(*client_, "app-" + app);
      namespaces_[app] = ns;
      auto created = client_->create(catalog::resources::kStacks, ns, example_stack(app, ns));
      if (!created) return "create Stack " + app + ": " + created.error().to_string();
    }
    return {};
  }

  void SetUp() override { ASSERT_EQ(setup_error_, "") << "suite setup failed"; }

  static std::string ns_of(const std::string& app) { return namespaces_.at(app); }

  // The member's kstack-setup.log ("" with a failure when it cannot be read).
  static std::string read_log(const std::string& app, const std::string& pod) {
    const auto path = fmt::format("/var/lib/{}/kstack-setup.log", app);
    auto r = kube::exec(*client_, ns_of(app), pod, {"cat", path});
    if (!r) {
      ADD_FAILURE() << app << "/" << pod << ": cat " << path << ": " << r.error().to_string();
      return {};
    }
    EXPECT_EQ(r->exit_code, 0) << app << "/" << pod << ": cat " << path << ": " << r->stderr_data;
    return r->stdout_data;
  }

  static std::vector<Invocation> setup_log(const std::string& app, const std::string& pod) {
    return parse_log(read_log(app, pod));
  }

  // A file in the member's container, trimmed of the final newline ("" if absent).
  static std::string read_file_in(const std::string& app, const std::string& pod,
                                  const std::string& path) {
    auto r = kube::exec(*client_, ns_of(app), pod, {"cat", path});
    if (!r || r->exit_code != 0) return {};
    return r->stdout_data;
  }

  // Polls the member's log until `done` holds for it (the handlers run after the Stack is
  // ready again, and the log has no event to watch).
  static bool wait_log(const std::string& app, const std::string& pod,
                       const std::function<bool(const std::vector<Invocation>&)>& done,
                       std::vector<Invocation>& last) {
    const auto deadline = std::chrono::steady_clock::now() + kLogTimeout;
    for (;;) {
      auto r = kube::exec(*client_, ns_of(app), pod,
                          {"cat", fmt::format("/var/lib/{}/kstack-setup.log", app)});
      if (r && r->exit_code == 0) {
        last = parse_log(r->stdout_data);
        if (done(last)) return true;
      }
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(300ms);
    }
  }

  static tl::expected<json::value, std::string> wait_ready(const std::string& app) {
    return wait_stack_ready(*client_, ns_of(app), app);
  }

  // JSON-patches spec.roles[role_index].members.
  static void scale(const std::string& app, int role_index, int members) {
    auto patched = client_->patch(
        catalog::resources::kStacks, ns_of(app), app, kube::PatchType::kJson,
        fmt::format(R"([{{"op":"replace","path":"/spec/roles/{}/members","value":{}}}])",
                    role_index, members));
    ASSERT_TRUE(patched) << patched.error().to_string();
  }

  // Scales role `role` (index role_index) from `from` to from + 1 and back; every member that
  // stays must log --addnodes then --delnodes for the new member, which is configured once.
  // Its membership file (<data dir>/kstack-members/<role>) must end without the new member.
  void scale_up_and_down(const std::string& app, int role_index, const std::string& role,
                         int from) {
    auto ready = wait_ready(app);
    ASSERT_TRUE(ready) << ready.error();
    const auto ns = ns_of(app);
    const auto stayed = members_by_role(*ready);
    std::map<std::string, std::size_t> before;  // pod -> log lines before the scale
    for (const auto& [r, pods] : stayed) {
      for (const auto& pod : pods) before[pod] = setup_log(app, pod).size();
    }
    const auto new_pod = fmt::format("{}-{}-{}", app, role, from);
    const auto new_fqdn = member_fqdn(ns, app, new_pod);
    ASSERT_EQ(before.count(new_pod), 0u) << new_pod << " already exists";

    auto start = std::chrono::steady_clock::now();
    ASSERT_NO_FATAL_FAILURE(scale(app, role_index, from + 1));
    ready = wait_ready(app);
    ASSERT_TRUE(ready) << ready.error();
    ASSERT_TRUE(members_by_role(*ready)[role].size() == static_cast<std::size_t>(from + 1))
        << describe_stack(*client_, ns, app);
    for (const auto& [pod, lines] : before) {
      std::vector<Invocation> log;
      const bool added = wait_log(
          app, pod,
          [&](const std::vector<Invocation>& l) {
            return std::any_of(l.begin() + static_cast<std::ptrdiff_t>(std::min(lines, l.size())),
                               l.end(),
                               [](const Invocation& i) { return i.event() == "--addnodes"; });
          },
          log);
      EXPECT_TRUE(added) << app << "/" << pod << " got no --addnodes for " << new_fqdn << ":\n"
                         << describe(log);
    }
    const auto new_log = setup_log(app, new_pod);
    EXPECT_EQ(count_of(new_log, "--configure"), 1u) << app << "/" << new_pod << ":\n"
                                                    << describe(new_log);
    std::cout << fmt::format("[ appdefs ] {} {} {} -> {}: ready and notified in {:.1f} s\n", app,
                             role, from, from + 1, seconds_since(start));

    start = std::chrono::steady_clock::now();
    ASSERT_NO_FATAL_FAILURE(scale(app, role_index, from));
    ready = wait_ready(app);
    ASSERT_TRUE(ready) << ready.error();
    auto gone = wait_for_absent(*client_, kube::resources::kPods, ns, new_pod, kConvergeTimeout);
    ASSERT_TRUE(gone) << gone.error();
    std::vector<std::string> expected_members;
    for (const auto& pod : stayed.at(role)) expected_members.push_back(member_fqdn(ns, app, pod));
    std::sort(expected_members.begin(), expected_members.end());
    for (const auto& [pod, lines] : before) {
      std::vector<Invocation> log;
      const bool done = wait_log(
          app, pod,
          [&](const std::vector<Invocation>& l) { return add_then_del(l, lines, role, new_fqdn); },
          log);
      EXPECT_TRUE(done) << app << "/" << pod << ": expected, after line " << lines
                        << ", --addnodes then --delnodes --role " << role << " --fqdns " << new_fqdn
                        << ", got:\n"
                        << describe(log);
      EXPECT_EQ(count_of(log, "--configure"), 1u) << app << "/" << pod << ":\n" << describe(log);
      // The membership the script keeps (one FQDN a line) is back to the members that stayed.
      auto kept = split(
          read_file_in(app, pod, fmt::format("/var/lib/{}/kstack-members/{}", app, role)), '\n');
      kept.erase(std::remove(kept.begin(), kept.end(), std::string()), kept.end());
      std::sort(kept.begin(), kept.end());
      EXPECT_EQ(kept, expected_members) << app << "/" << pod << " kstack-members/" << role;
      if (pod == before.begin()->first) {
        std::cout << fmt::format("[ appdefs ] {}/{} kstack-setup.log:\n{}", app, pod,
                                 describe(log));
      }
    }
    std::cout << fmt::format("[ appdefs ] {} {} {} -> {}: ready and notified in {:.1f} s\n", app,
                             role, from + 1, from, seconds_since(start));
  }

  static inline std::string setup_error_;
  static inline std::shared_ptr<kube::Client> client_;
  static inline std::unique_ptr<RunningController> controller_;
  static inline std::map<std::string, std::string> namespaces_;  // app -> namespace
  static inline std::chrono::steady_clock::time_point start_;
};

TEST_F(AppdefsTest, EveryExampleStackConvergesWithOneConfigurePerMember) {
  for (const auto& app : kApps) {
    auto ready = wait_ready(app);
    ASSERT_TRUE(ready) << ready.error();
    std::cout << fmt::format("[ appdefs ] {} ready {:.1f} s after the Stacks were created\n", app,
                             seconds_since(start_));
    const auto members = members_by_role(*ready);
    const auto desired = int_at(*ready, "/status/desiredMembers");
    std::size_t count = 0;
    for (const auto& [role, pods] : members) {
      for (const auto& pod : pods) {
        ++count;
        const auto log = setup_log(app, pod);
        EXPECT_EQ(count_of(log, "--configure"), 1u) << app << "/" << pod << " (" << role << "):\n"
                                                    << describe(log);
      }
    }
    EXPECT_EQ(static_cast<std::int64_t>(count), desired)
        << describe_stack(*client_, ns_of(app), app);
    EXPECT_GT(count, 0u) << app;
  }
}

TEST_F(AppdefsTest, ScalingEtcdRunsAddnodesThenDelnodes) {
  scale_up_and_down("etcd", 0, "member", 3);
}

TEST_F(AppdefsTest, ScalingCassandraWorkersRunsAddnodesThenDelnodes) {
  scale_up_and_down("cassandra", 1, "worker", 1);
}

}  // namespace
}  // namespace kstack::testenv::e2e
