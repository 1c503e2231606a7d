// The startscript, AppType and fixture of the Stack-level setup e2e tests (see fixture.h).
#include "tests/e2e/stack_setup/fixture.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <openssl/evp.h>

#include "catalog/model.h"
#include "catalog/yaml.h"
#include "kube/exec.h"
#include "kube/resource.h"
#include "tests/e2e/setup/package_fixture.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

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

}  // namespace

std::string startscript() {
  return fmt::format(
      R"sh(#!/bin/sh
# The stack_setup e2e startscript (tests/e2e/stack_setup/fixture.h). Logs first, so that even a
# call that fails later is on record.
line=$(date +%s.%N)
for a in "$@"; do line="$line	$a"; done
printf '%s\n' "$line" >>{log} || exit 5
. /etc/kstack/env
case "$1" in
--configure)
  cp /etc/kstack/configmeta.json /data/configmeta.json || exit 4
  cp /etc/kstack/env /data/env || exit 4
  printf '%s' "${{KSTACK_CONFIG_MOTTO-}}" >/data/seen-config-motto
  printf '%s' "${{{note}-}}" >/data/seen-stack-note
  if [ -n "${{{fail_pod}-}}" ] && [ "$KSTACK_POD" = "${fail_pod}" ] && [ ! -e {fixed} ]; then
    echo "configuring $KSTACK_POD"
    echo "configure refused on $KSTACK_POD: no {fixed}" >&2
    exit 7
  fi
  echo "configured $KSTACK_POD" ;;
--addnodes | --delnodes)
  cp /etc/kstack/configmeta.json "/data/configmeta-${{1#--}}.json" || exit 4
  if [ "$1" = --addnodes ] && [ -e {fail_add} ]; then
    echo "addnodes refused on $KSTACK_POD" >&2
    exit 1
  fi
  i=0
  while [ "$1" = --delnodes ] && [ -e {hold_del} ] && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
  done ;;
esac
exit 0
)sh",
      fmt::arg("log", kSetupLog), fmt::arg("note", kStackNoteEnv),
      fmt::arg("fail_pod", kFailConfigurePodEnv), fmt::arg("fixed", kConfigureFixedMarker),
      fmt::arg("fail_add", kFailAddNodesMarker), fmt::arg("hold_del", kHoldDelNodesMarker));
}

const std::string& setup_package() {
  static const std::string package =
      executor::testing::make_package({{"startscript", startscript()}});
  return package;
}

json::value stack_setup_fixture(std::string_view file, const std::string& ns,
                                const std::string& name) {
  const fs::path path = fs::path(KSTACK_SOURCE_DIR) / "tests" / "e2e" / "stack_setup" / "testdata" /
                        std::string(file);
  auto parsed = catalog::parse_yaml(read_file(path));
  if (!parsed) throw std::runtime_error(fmt::format("{}: {}", file, parsed.error().to_string()));
  auto& metadata = parsed->as_object()["metadata"].as_object();
  metadata["namespace"] = ns;
  if (!name.empty()) metadata["name"] = name;
  return std::move(*parsed);
}

json::value logapp(const std::string& ns, const std::string& name, const std::string& package_url,
                   std::optional<std::string> sha256,
                   const std::vector<std::string>& persist_dirs) {
  auto app = stack_setup_fixture("logapp-apptype.yaml", ns, name);
  auto& spec = app.at("spec").as_object();
  json::object package{{"packageURL", package_url}};
  if (sha256) package["sha256"] = *sha256;
  spec["defaultConfigPackage"] = std::move(package);
  json::array dirs;
  for (const auto& d : persist_dirs) dirs.emplace_back(d);
  spec["roles"].as_array().at(0).as_object()["persistDirs"] = std::move(dirs);
  return app;
}

json::value logapp_stack(const std::string& ns, const std::string& name, const std::string& app,
                         int workers, const std::map<std::string, std::string>& env) {
  auto stack = stack_setup_fixture("logapp-stack.yaml", ns, name);
  auto& spec = stack.at("spec").as_object();
  spec["app"] = app;
  auto& role = spec["roles"].as_array().at(0).as_object();
  role["members"] = workers;
  auto& list = role["env"].as_array();
  for (const auto& [k, v] : env) {
    auto it = std::find_if(list.begin(), list.end(),
                           [&](const json::value& e) { return str_at(e, "/name") == k; });
    if (it != list.end()) {
      it->as_object()["value"] = v;
    } else {
      list.push_back(json::object{{"name", k}, {"value", v}});
    }
  }
  return stack;
}

std::vector<std::string> LogEntry::fqdns() const {
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--fqdns") {
      auto out = split(args[i + 1], ',');
      std::sort(out.begin(), out.end());
      return out;
    }
  }
  return {};
}

std::string LogEntry::role() const {
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--role") return args[i + 1];
  }
  return {};
}

std::vector<LogEntry> parse_setup_log(std::string_view text) {
  std::vector<LogEntry> out;
  for (const auto& line : split(text, '\n')) {
    if (line.empty()) continue;
    auto fields = split(line, '\t');
    LogEntry e;
    e.time = std::strtod(fields.front().c_str(), nullptr);
    e.args.assign(fields.begin() + 1, fields.end());
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<LogEntry> entries_of(const std::vector<LogEntry>& log, std::string_view event) {
  std::vector<LogEntry> out;
  std::copy_if(log.begin(), log.end(), std::back_inserter(out),
               [&](const LogEntry& e) { return e.event() == event; });
  return out;
}

std::string describe_log(const std::vector<LogEntry>& log) {
  std::string out;
  for (const auto& e : log) out += fmt::format("  {:.3f} {}\n", e.time, fmt::join(e.args, " "));
  return out.empty() ? "  (empty)\n" : out;
}

std::string member_fqdn(const std::string& ns, const std::string& stack, const std::string& pod) {
  return fmt::format("{}.{}.{}.svc.cluster.local", pod, stack, ns);
}

std::vector<std::string> worker_pods(const std::string& stack, int first, int last) {
  std::vector<std::string> out;
  for (int i = first; i < last; ++i) out.push_back(fmt::format("{}-worker-{}", stack, i));
  return out;
}

bool notifications_drained(const json::value& stack) {
  boost::system::error_code ec;
  const auto* roles = stack.find_pointer("/status/roles", ec);
  if (roles == nullptr || !roles->is_array()) return true;
  for (const auto& r : roles->get_array()) {
    const auto* members = r.find_pointer("/members", ec);
    if (members == nullptr || !members->is_array()) continue;
    for (const auto& m : members->get_array()) {
      const auto* cmds = m.find_pointer("/stateDetail/pendingNotifyCmds", ec);
      if (cmds != nullptr && cmds->is_array() && !cmds->get_array().empty()) return false;
    }
  }
  return true;
}

ImageFile::ImageFile(std::string_view name, const std::string& bytes) {
  std::string pattern = "/usr/local/share/kstack-e2e-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error(
        "cannot create a folder under /usr/local/share (the simulated "
        "image); the e2e tests run as root");
  }
  dir_ = pattern;
  fs::permissions(dir_, fs::perms(0755));
  path_ = dir_ / std::string(name);
  std::ofstream(path_, std::ios::binary) << bytes;
}

ImageFile::~ImageFile() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void StackSetupTest::SetUp() {
  ReconcilerTest::SetUp();
  if (HasFatalFailure()) return;
  auto options = controller_options(ns_);
  options.poll_interval = std::chrono::milliseconds(300);
  // Enough threads for every member of these Stacks to have a notification in flight at once
  // (the default 2 would queue the third of three held --delnodes behind the first two).
  options.notifier.threads = 4;
  options.notifier.max_attempts = 3;
  options.notifier.first_retry = std::chrono::milliseconds(200);
  options.notifier.max_retry = std::chrono::milliseconds(1000);
  adjust_controller(options);
  start_controller(std::move(options));
  ASSERT_TRUE(controller_) << "the controller did not start";
}

void StackSetupTest::create_package_configmap(const std::string& name, const std::string& key,
                                              const std::string& bytes) {
  json::value cm = {{"apiVersion", "v1"},
                    {"kind", "ConfigMap"},
                    {"metadata", {{"name", name}, {"namespace", ns_}}},
                    {"binaryData", {{key, base64(bytes)}}}};
  create(kube::resources::kConfigMaps, cm);
}

void StackSetupTest::create_logapp(const std::string& name,
                                   const std::vector<std::string>& persist_dirs) {
  if (!package_configmap_created_) {
    create_package_configmap("logapp-setup", "setup.tgz", setup_package());
    package_configmap_created_ = true;
  }
  create(catalog::resources::kAppTypes,
         logapp(ns_, name, "configmap://logapp-setup/setup.tgz",
                executor::testing::sha256_hex(setup_package()), persist_dirs));
}

kube::ExecResult StackSetupTest::exec(const std::string& pod,
                                      const std::vector<std::string>& argv) {
  auto r = kube::exec(*client_, ns_, pod, argv);
  EXPECT_TRUE(r) << pod << " " << fmt::format("{}", fmt::join(argv, " ")) << ": "
                 << r.error().to_string();
  if (r) return *r;
  kube::ExecResult failed;
  failed.exit_code = -1;
  return failed;
}

bool StackSetupTest::exists(const std::string& pod, std::string_view path) {
  auto r = exec(
      pod, {"sh", "-c", "if [ -e \"$0\" ]; then echo yes; else echo no; fi", std::string(path)});
  EXPECT_TRUE(r.stdout_data == "yes\n" || r.stdout_data == "no\n")
      << pod << ": test -e " << path << ": " << r.stdout_data << r.stderr_data;
  return r.stdout_data == "yes\n";
}

std::string StackSetupTest::read(const std::string& pod, std::string_view path) {
  auto r = exec(pod, {"cat", std::string(path)});
  EXPECT_EQ(r.exit_code, 0) << pod << ": cat " << path << ": " << r.stderr_data;
  return r.stdout_data;
}

std::vector<LogEntry> StackSetupTest::setup_log(const std::string& pod) {
  return parse_setup_log(read(pod, kSetupLog));
}

void StackSetupTest::scale(const std::string& stack, int workers) {
  auto patched = client_->patch(
      catalog::resources::kStacks, ns_, stack, kube::PatchType::kJson,
      fmt::format(R"([{{"op":"replace","path":"/spec/roles/0/members","value":{}}}])", workers));
  ASSERT_TRUE(patched) << patched.error().to_string();
}

tl::expected<json::value, std::string> StackSetupTest::wait_stack(
    const std::string& stack, const std::function<bool(const json::value&)>& done,
    std::chrono::seconds timeout) {
  auto got = wait_for_object(*client_, catalog::resources::kStacks, ns_, stack, done, timeout);
  if (!got) {
    return tl::unexpected(fmt::format("{}\n{}", got.error(), describe_stack(*client_, ns_, stack)));
  }
  return got;
}

tl::expected<json::value, std::string> StackSetupTest::wait_quiet(const std::string& stack) {
  return wait_stack(
      stack, [](const json::value& s) { return stack_ready(s) && notifications_drained(s); });
}

std::vector<json::value> StackSetupTest::events(const std::string& stack, std::string_view reason) {
  std::vector<json::value> out;
  auto list = client_->list(kube::resources::kEvents, ns_);
  if (!list) {
    ADD_FAILURE() << "list events: " << list.error().to_string();
    return out;
  }
  for (const auto& e : list->at("items").as_array()) {
    if (str_at(e, "/reason") == reason && str_at(e, "/regarding/kind") == catalog::kStackKind &&
        str_at(e, "/regarding/name") == stack) {
      out.push_back(e);
    }
  }
  return out;
}

}  // namespace kstack::testenv::e2e
