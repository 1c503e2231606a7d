#include "tests/e2e/apps/app_fixture.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "catalog/model.h"
#include "catalog/yaml.h"
#include "kube/resource.h"
#include "tests/testenv/process.h"

namespace kstack::testenv::e2e::apps {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Three nodes, so that members spread and a node can be lost; the reconciler e2e support
// (linked into every app binary) asks for at least one.
const ConfigureEnvironment kEnvironment([](EnvironmentOptions& options) {
  options.node_simulators = std::max(options.node_simulators, 3);
});

fs::path appdefs_dir() { return fs::path(KSTACK_SOURCE_DIR) / "appdefs"; }

}  // namespace

json::value example_stack(const std::string& app, const std::string& ns) {
  auto parsed = catalog::parse_yaml(read_file(appdefs_dir() / app / "stack.yaml"));
  if (!parsed) throw std::runtime_error(app + "/stack.yaml: " + parsed.error().to_string());
  parsed->as_object()["metadata"].as_object()["namespace"] = ns;
  return std::move(*parsed);
}

void AppTest::start_app(const std::string& app, const std::function<void(json::value&)>& edit) {
  auto failed = [](std::string why) { setup_error_ = std::move(why); };
  try {
    if (auto rbac = install_operator_rbac(); !rbac) return failed(rbac.error());
    client_ = admin();
    auto& cp = control_plane();
    const auto out = cp.work_dir() / ("appdefs-" + app);
    auto built =
        run_command({"bash", (appdefs_dir() / "build-packages.sh").string(), out.string(), app});
    if (!built) return failed("build-packages.sh: " + built.error());
    if (!built->ok()) return failed("build-packages.sh failed: " + built->err);
    auto applied = cp.kubectl({"apply", "-k", out.string()});
    if (!applied.ok()) return failed("kubectl apply -k " + out.string() + ": " + applied.err);

    ns_ = make_namespace(*client_, "app-" + app);
    auto options = controller_options(ns_);
    options.operator_namespace = kOperatorNamespace;
    options.workers = 2;
    options.poll_interval = 300ms;
    options.notifier.first_retry = 200ms;
    options.notifier.max_retry = 1000ms;
    auto running = RunningController::start(std::move(options));
    if (!running) return failed(running.error());
    controller_ = std::move(*running);

    auto stack = example_stack(app, ns_);
    if (edit) edit(stack);
    stack_ = str_at(stack, "/metadata/name");
    auto created = client_->create(catalog::resources::kStacks, ns_, stack);
    if (!created) return failed("create Stack " + stack_ + ": " + created.error().to_string());
  } catch (const std::exception& e) {
    failed(e.what());
  }
}

void AppTest::stop_app() {
  if (client_ == nullptr || ns_.empty()) return;
  if (controller_ != nullptr) {
    auto deleted = delete_stacks(*client_, ns_, 120s);
    EXPECT_TRUE(deleted) << ns_ << ": " << deleted.error();
    controller_->stop();
    controller_.reset();
  }
  (void)client_->remove(kube::resources::kNamespaces, "", ns_);
}

tl::expected<json::value, std::string> AppTest::wait_ready(std::chrono::seconds timeout) {
  auto ready = wait_stack_ready(*client_, ns_, stack_, timeout);
  if (!ready) return tl::unexpected(ready.error() + "\n" + describe());
  return ready;
}

tl::expected<void, std::string> AppTest::scale(int role_index, int members) {
  auto patched = client_->patch(
      catalog::resources::kStacks, ns_, stack_, kube::PatchType::kJson,
      fmt::format(R"([{{"op":"replace","path":"/spec/roles/{}/members","value":{}}}])", role_index,
                  members));
  if (!patched) return tl::unexpected("scale: " + patched.error().to_string());
  return {};
}

std::vector<std::string> AppTest::members(const json::value& stack, const std::string& role) {
  std::vector<std::string> pods;
  for (const auto& [pod, member] : status_members(stack, role)) pods.push_back(pod);
  // By ordinal, not by name: "x-10" sorts before "x-2".
  auto ordinal = [](const std::string& pod) {
    return std::stol(pod.substr(pod.find_last_of('-') + 1));
  };
  std::sort(pods.begin(), pods.end(),
            [&](const auto& a, const auto& b) { return ordinal(a) < ordinal(b); });
  return pods;
}

std::string AppTest::fqdn(const std::string& pod) {
  return fmt::format("{}.{}.{}.svc.cluster.local", pod, stack_, ns_);
}

MemberRun AppTest::run(const std::string& pod, const std::vector<std::string>& argv,
                       const std::string& stdin_data) {
  MemberRun r;
  auto done = kube::exec(*client_, ns_, pod, argv, stdin_data);
  if (!done) {
    r.diagnosis =
        fmt::format("{}: {}: exec: {}", pod, fmt::join(argv, " "), done.error().to_string());
    return r;
  }
  r.out = done->stdout_data;
  r.ok = done->exit_code == 0;
  if (!r.ok) {
    r.diagnosis = fmt::format("{}: {}: exit {}: {}{}", pod, fmt::join(argv, " "), done->exit_code,
                              done->stderr_data, done->stdout_data);
  }
  return r;
}

tl::expected<std::string, std::string> AppTest::run_until(
    const std::string& pod, const std::vector<std::string>& argv,
    const std::function<bool(const std::string&)>& accept, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last;
  for (;;) {
    auto r = run(pod, argv);
    if (r.ok && accept(r.out)) return r.out;
    last = r.ok ? fmt::format("{}: {}: not accepted: {}", pod, fmt::join(argv, " "), r.out)
                : r.diagnosis;
    if (std::chrono::steady_clock::now() >= deadline) {
      return tl::unexpected(fmt::format("after {} s: {}", timeout.count(), last));
    }
    std::this_thread::sleep_for(250ms);
  }
}

std::string AppTest::describe() {
  std::string out = describe_stack(*client_, ns_, stack_);
  for (const auto& [name, pod] :
       list_objects(*client_, kube::resources::kPods, ns_, stack_selector(stack_))) {
    out += fmt::format("pod {} on {}: phase {} ready {} podIP {}", name,
                       str_at(pod, "/spec/nodeName"), str_at(pod, "/status/phase"),
                       condition(pod, "Ready"), str_at(pod, "/status/podIP"));
    boost::system::error_code ec;
    if (const auto* cs = pod.find_pointer("/status/containerStatuses", ec);
        cs != nullptr && cs->is_array()) {
      for (const auto& c : cs->get_array()) {
        out += fmt::format(" restarts {} state {}", int_at(c, "/restartCount"),
                           json::serialize(c.at("state")));
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace kstack::testenv::e2e::apps
