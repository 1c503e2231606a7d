// Live upgrades of the etcd app (issue 17, acceptance 1-3) at the data level: the example Stack's
// three members run Debian's etcd 3.4 (appdefs/etcd/image) on three simulated nodes, and the
// tests move them member by member while a client keeps reading through every member.
//
// The AppTypes the Stack moves to are made here from the shipped one (appdefs/etcd/apptype.yaml,
// whose role lists `preupgrade`: the package hands the Raft leadership over before a leader's pod
// goes): `etcd-next` (upgradeFrom etcd) with a package version that ships an `etcd.settings`
// (appdefs/etcd/README.md) changing etcd's configuration, and `etcd-next-broken` (upgradeFrom
// etcd-next) whose package wraps the real startscript with a `--preupgrade` that always fails.
//
// To keep the binary short ONE Stack is shared by the three tests, which run in file order:
//   1. etcd -> etcd-next (spec.app): members move 2, 1, 0, each Ready before the next goes;
//      reads never fail on two members at once; every key, id and the new setting are there.
//   2. a resources change of the running role rolls the same way; `kubectl get stk` shows the
//      Updated column's progress.
//   3. etcd-next -> etcd-next-broken: the hook fails on member 2 (the first to move), the rollout
//      stops with UpgradeFailed and nothing else moves; reverting spec.app rolls member 2 back.
// A test that depends on the previous one's end state starts by waiting for it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
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
#include "tests/e2e/apps/app_fixture.h"
#include "tests/e2e/apps/etcd_members.h"
#include "tests/testenv/process.h"

namespace kstack::testenv::e2e::apps {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using kube::resources::kConfigMaps;
using kube::resources::kPods;
using kube::resources::kStatefulSets;

const std::string kRole = "member";
const std::string kOld = "etcd";
const std::string kNext = "etcd-next";
const std::string kBroken = "etcd-next-broken";
// What etcd-next's package changes (its etcd.settings) and how it shows in a member's config.
const std::string kNextSettings = "# etcd-next: snapshots more often\nsnapshot-count=20000\n";
const std::string kNextConfigLine = "snapshot-count: 20000";
// The failing hook's message (etcd-next-broken's wrapper prints it with the pod's name).
const std::string kHookMessage = "preupgrade refused by the test package on ";
// A rollout of three real etcd members (each: hook, pod recreated, set up, Ready) on a loaded
// two-core machine.
constexpr std::chrono::seconds kRolloutTimeout{480};
const std::vector<std::string> kKeys = {"/kstack/upgrade/a", "/kstack/upgrade/b",
                                        "/kstack/upgrade/c"};

fs::path appdefs_dir() { return fs::path(KSTACK_SOURCE_DIR) / "appdefs"; }

// ---- packages and AppTypes made from the shipped etcd ----

// configmap://<name>/setup.tgz: `files` (name -> content, all executable) as a tar.gz in
// ConfigMap <name> of the operator's namespace, as appdefs/build-packages.sh makes them.
tl::expected<void, std::string> install_package(kube::Client& client, const std::string& name,
                                                const std::map<std::string, std::string>& files) {
  const auto dir = control_plane().work_dir() / ("package-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir / "pkg");
  std::vector<std::string> tar = {"tar",
                                  "-C",
                                  (dir / "pkg").string(),
                                  "--sort=name",
                                  "--owner=0",
                                  "--group=0",
                                  "--numeric-owner",
                                  "-czf",
                                  (dir / "setup.tgz").string()};
  for (const auto& [file, content] : files) {
    std::ofstream(dir / "pkg" / file, std::ios::binary) << content;
    fs::permissions(dir / "pkg" / file, fs::perms::owner_all | fs::perms::group_read |
                                            fs::perms::group_exec | fs::perms::others_read |
                                            fs::perms::others_exec);
    tar.push_back(file);
  }
  auto packed = run_command(tar);
  if (!packed || !packed->ok()) {
    return tl::unexpected("tar: " + (packed ? packed->err : packed.error()));
  }
  auto b64 = run_command({"base64", "-w0", (dir / "setup.tgz").string()});
  if (!b64 || !b64->ok()) return tl::unexpected("base64: " + (b64 ? b64->err : b64.error()));
  json::object cm{{"apiVersion", "v1"},
                  {"kind", "ConfigMap"},
                  {"metadata", json::object{{"name", name}, {"namespace", kOperatorNamespace}}},
                  {"binaryData", json::object{{"setup.tgz", b64->out}}}};
  auto created = client.create(kConfigMaps, kOperatorNamespace, cm);
  if (!created) return tl::unexpected("ConfigMap " + name + ": " + created.error().to_string());
  return {};
}

// appdefs/etcd/apptype.yaml as AppType `name` (upgradeFrom `from`) with its package from
// ConfigMap <name>-setup.
tl::expected<void, std::string> install_apptype(kube::Client& client, const std::string& name,
                                                const std::vector<std::string>& from) {
  auto parsed = catalog::parse_yaml(read_file(appdefs_dir() / "etcd" / "apptype.yaml"));
  if (!parsed) return tl::unexpected("apptype.yaml: " + parsed.error().to_string());
  auto& app = parsed->as_object();
  app["metadata"].as_object()["name"] = name;
  app["metadata"].as_object()["namespace"] = kOperatorNamespace;
  auto& spec = app["spec"].as_object();
  json::array upgrade_from;
  for (const auto& f : from) upgrade_from.emplace_back(f);
  spec["upgradeFrom"] = std::move(upgrade_from);
  spec["defaultConfigPackage"] =
      json::object{{"packageURL", "configmap://" + name + "-setup/setup.tgz"}};
  auto created = client.create(catalog::resources::kAppTypes, kOperatorNamespace, *parsed);
  if (!created) return tl::unexpected("AppType " + name + ": " + created.error().to_string());
  return {};
}

// The broken package: the real startscript (as startscript.etcd) behind a wrapper whose
// --preupgrade fails, saying so on stderr and stdout.
std::string broken_wrapper() {
  return "#!/bin/sh\n"
         "# Test package of etcd_upgrade_test.cpp: etcd's package with a failing --preupgrade.\n"
         "case \" $* \" in\n"
         "  *\" --preupgrade \"*)\n"
         "    . /etc/kstack/env\n"
         "    echo \"broken hook ran on $KSTACK_POD\"\n"
         "    echo \"" +
         kHookMessage +
         "$KSTACK_POD\" >&2\n"
         "    exit 3 ;;\n"
         "esac\n"
         "exec /bin/sh \"$(dirname \"$0\")/startscript.etcd\" \"$@\"\n";
}

// ---- what the tests observe while a rollout runs ----

// Records, through a watch on the Stack's pods from the moment of construction, every change of
// each pod: which pod (uid), deleting or not, Ready or not, in the order seen.
struct PodEvent {
  std::size_t seq = 0;
  Clock::time_point at;
  std::string pod;
  std::string uid;
  bool gone = false;     // deletionTimestamp set, or DELETED
  bool ready = false;    // Running and Ready, not deleting
  std::string revision;  // controller-revision-hash
};

class PodRecorder {
 public:
  PodRecorder(kube::Client& client, std::string ns, std::string stack)
      : client_(client), ns_(std::move(ns)), selector_(stack_selector(stack)) {
    kube::ListOptions list;
    list.label_selector = selector_;
    auto pods = client_.list(kPods, ns_, list);
    std::string rv;
    if (pods) {
      for (const auto& p : pods->at("items").as_array()) record(p, false);
      rv = str_at(*pods, "/metadata/resourceVersion");
    } else {
      ADD_FAILURE() << "pod recorder: " << pods.error().to_string();
    }
    thread_ = std::thread([this, rv] { run(rv); });
  }
  ~PodRecorder() { stop(); }
  PodRecorder(const PodRecorder&) = delete;
  PodRecorder& operator=(const PodRecorder&) = delete;

  void stop() {
    cancel_.cancel();
    if (thread_.joinable()) thread_.join();
  }
  std::vector<PodEvent> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  // pod -> uid of the first pod seen under that name (the pods before the change).
  std::map<std::string, std::string> first_uids() const {
    std::map<std::string, std::string> out;
    for (const auto& e : events()) out.emplace(e.pod, e.uid);
    return out;
  }
  std::string timeline(Clock::time_point start) const {
    std::string out;
    std::map<std::string, std::string> last;  // pod -> last printed state
    for (const auto& e : events()) {
      auto state = fmt::format("{} {}{}", e.uid.substr(0, 8), e.gone ? "deleting" : "",
                               e.ready ? "ready" : (e.gone ? "" : "not-ready"));
      if (last[e.pod] == state) continue;
      last[e.pod] = state;
      out += fmt::format("  #{:<4} {:>6.1f} s  {}  {}\n", e.seq,
                         std::chrono::duration<double>(e.at - start).count(), e.pod, state);
    }
    return out;
  }

 private:
  void run(std::string rv) {
    while (!cancel_.cancelled()) {
      kube::WatchOptions options;
      options.label_selector = selector_;
      options.resource_version = rv;
      auto watched = client_.watch(
          kPods, ns_, options,
          [&](kube::WatchEvent&& event) {
            if (event.type == kube::WatchEvent::Type::kBookmark) {
              rv = str_at(event.object, "/metadata/resourceVersion");
              return true;
            }
            record(event.object, event.type == kube::WatchEvent::Type::kDeleted);
            rv = str_at(event.object, "/metadata/resourceVersion");
            return true;
          },
          cancel_);
      if (!watched && watched.error().is(kube::ErrorKind::kGone)) {
        ADD_FAILURE() << "pod watch expired: pod events lost";
        return;
      }
    }
  }
  void record(const json::value& pod, bool deleted) {
    PodEvent e;
    e.at = Clock::now();
    e.pod = str_at(pod, "/metadata/name");
    e.uid = str_at(pod, "/metadata/uid");
    e.gone = deleted || !str_at(pod, "/metadata/deletionTimestamp").empty();
    e.ready = !e.gone && running_and_ready(pod);
    e.revision = str_at(pod, "/metadata/labels/controller-revision-hash");
    std::lock_guard lock(mu_);
    e.seq = events_.size();
    events_.push_back(std::move(e));
  }

  kube::Client& client_;
  std::string ns_;
  std::string selector_;
  kube::CancelToken cancel_;
  mutable std::mutex mu_;
  std::vector<PodEvent> events_;
  std::thread thread_;
};

// Each member moved exactly once (one new pod), in the order `order`, each new pod Ready before
// the next member's old pod started to go. `before`: pod -> uid before the rollout.
void expect_one_at_a_time(const PodRecorder& recorder,
                          const std::map<std::string, std::string>& before,
                          const std::vector<std::string>& order, Clock::time_point start) {
  const auto events = recorder.events();
  const std::size_t never = events.size() + 1;
  std::map<std::string, std::size_t> deleted;  // pod -> seq its old pod started to go
  std::map<std::string, std::size_t> ready;    // pod -> seq its new pod was first Ready
  std::map<std::string, std::set<std::string>> new_uids;
  for (const auto& pod : order) deleted[pod] = ready[pod] = never;
  for (const auto& e : events) {
    auto old = before.find(e.pod);
    if (old == before.end()) {
      ADD_FAILURE() << "a pod that was not there before: " << e.pod;
      continue;
    }
    if (e.uid == old->second) {
      if (e.gone) deleted[e.pod] = std::min(deleted[e.pod], e.seq);
    } else {
      new_uids[e.pod].insert(e.uid);
      if (e.ready) ready[e.pod] = std::min(ready[e.pod], e.seq);
    }
  }
  const auto timeline = recorder.timeline(start);
  for (const auto& pod : order) {
    EXPECT_EQ(new_uids[pod].size(), 1u) << pod << " should have moved exactly once:\n" << timeline;
    EXPECT_NE(deleted[pod], never) << pod << "'s old pod never went:\n" << timeline;
    EXPECT_NE(ready[pod], never) << pod << "'s new pod was never Ready:\n" << timeline;
  }
  for (std::size_t i = 1; i < order.size(); ++i) {
    EXPECT_LT(deleted[order[i - 1]], deleted[order[i]])
        << order[i - 1] << " should go before " << order[i] << ":\n"
        << timeline;
    EXPECT_LT(ready[order[i - 1]], deleted[order[i]])
        << order[i - 1] << "'s new pod should be Ready before " << order[i] << "'s goes:\n"
        << timeline;
  }
  std::cout << "[ etcd-upgrade ] pod timeline (watch order):\n" << timeline;
}

// A client that reads a key through every member (linearizable: the member asks the leader),
// one thread per member, every ~300 ms, from construction to stop(); each attempt is timed.
class ReadPoller {
 public:
  struct Attempt {
    Clock::time_point start, end;
    bool ok = false;
    std::string diagnosis;
  };

  ReadPoller(kube::Client& client, std::string ns, const std::vector<std::string>& pods,
             std::string key, std::string value)
      : client_(client), ns_(std::move(ns)), key_(std::move(key)), value_(std::move(value)) {
    for (const auto& pod : pods) attempts_[pod];
    for (const auto& pod : pods) threads_.emplace_back([this, pod] { poll(pod); });
  }
  ~ReadPoller() { stop(); }
  ReadPoller(const ReadPoller&) = delete;
  ReadPoller& operator=(const ReadPoller&) = delete;

  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    cancel_.cancel();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  // The runs of failed reads of each member ([first failed start, last failed end]) must never
  // overlap another member's: at most one member fails at a time.
  void expect_at_most_one_member_failing(Clock::time_point start) const {
    struct Window {
      std::string pod;
      Clock::time_point from, to;
      std::size_t failures = 0;
      std::string first_diagnosis;
    };
    std::vector<Window> windows;
    std::string summary;
    std::lock_guard lock(mu_);
    for (const auto& [pod, attempts] : attempts_) {
      std::size_t failed = 0;
      std::optional<Window> open;
      for (const auto& a : attempts) {
        if (a.ok) {
          if (open) windows.push_back(*open);
          open.reset();
          continue;
        }
        ++failed;
        if (!open) open = Window{pod, a.start, a.end, 0, a.diagnosis};
        open->to = a.end;
        ++open->failures;
      }
      if (open) windows.push_back(*open);
      summary += fmt::format("  {}: {} reads, {} failed\n", pod, attempts.size(), failed);
      EXPECT_GT(attempts.size(), failed) << pod << ": no read ever succeeded";
    }
    auto at = [&](Clock::time_point t) { return std::chrono::duration<double>(t - start).count(); };
    for (const auto& w : windows) {
      summary +=
          fmt::format("  {} unavailable {:.1f}-{:.1f} s ({} failed reads, first: {})\n", w.pod,
                      at(w.from), at(w.to), w.failures, w.first_diagnosis.substr(0, 200));
    }
    for (std::size_t i = 0; i < windows.size(); ++i) {
      for (std::size_t j = i + 1; j < windows.size(); ++j) {
        const auto& a = windows[i];
        const auto& b = windows[j];
        if (a.pod != b.pod && a.from < b.to && b.from < a.to) {
          ADD_FAILURE() << "reads failed on " << a.pod << " and " << b.pod << " at once:\n"
                        << summary;
        }
      }
    }
    std::cout << "[ etcd-upgrade ] reads during the rollout:\n" << summary;
  }

 private:
  void poll(const std::string& pod) {
    kube::ExecOptions options;
    options.timeout = 10s;
    for (;;) {
      Attempt a;
      a.start = Clock::now();
      auto done = kube::exec(client_, ns_, pod,
                             etcdctl({"--command-timeout=5s", "get", key_, "--print-value-only"}),
                             {}, options, cancel_);
      a.end = Clock::now();
      if (!done) {
        a.diagnosis = "exec: " + done.error().to_string();
      } else if (done->exit_code != 0) {
        a.diagnosis = fmt::format("exit {}: {}", done->exit_code, done->stderr_data);
      } else if (done->stdout_data != value_ + "\n") {
        a.diagnosis = "read " + done->stdout_data;
      } else {
        a.ok = true;
      }
      std::unique_lock lock(mu_);
      if (stopping_) return;  // an attempt cut short by stop() is not a failure of the member
      attempts_[pod].push_back(std::move(a));
      wake_.wait_for(lock, 300ms, [&] { return stopping_; });
      if (stopping_) return;
    }
  }

  kube::Client& client_;
  std::string ns_;
  std::string key_;
  std::string value_;
  kube::CancelToken cancel_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<std::string, std::vector<Attempt>> attempts_;
  std::vector<std::thread> threads_;
};

// `kubectl get stk` every ~500 ms: the values of its Updated column (in order, deduplicated).
class UpdatedColumnPoller {
 public:
  UpdatedColumnPoller(std::string ns, std::string stack)
      : ns_(std::move(ns)), stack_(std::move(stack)), thread_([this] { poll(); }) {}
  ~UpdatedColumnPoller() { stop(); }
  UpdatedColumnPoller(const UpdatedColumnPoller&) = delete;
  UpdatedColumnPoller& operator=(const UpdatedColumnPoller&) = delete;

  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  std::vector<std::string> values() const {
    std::lock_guard lock(mu_);
    return values_;
  }
  std::string last_output() const {
    std::lock_guard lock(mu_);
    return last_output_;
  }
  // The Updated column of `kubectl get stk` output ("" when there is no such column).
  static std::string updated_column(const std::string& out) {
    std::istringstream lines(out);
    std::string header, row;
    std::getline(lines, header);
    std::getline(lines, row);
    const auto at = header.find("UPDATED");
    if (at == std::string::npos || row.size() <= at) return "";
    const auto end = row.find_first_of(" \t", at);
    return row.substr(at, end == std::string::npos ? std::string::npos : end - at);
  }

 private:
  void poll() {
    for (;;) {
      auto got = control_plane().kubectl({"get", "stk", stack_, "-n", ns_});
      std::unique_lock lock(mu_);
      if (got.ok()) {
        last_output_ = got.out;
        auto value = updated_column(got.out);
        if (values_.empty() || values_.back() != value) values_.push_back(value);
      }
      wake_.wait_for(lock, 500ms, [&] { return stopping_; });
      if (stopping_) return;
    }
  }

  std::string ns_;
  std::string stack_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<std::string> values_;
  std::string last_output_;
  std::thread thread_;
};

// The Stack settled on `app` after a rollout: Ready, every member on it, 3/3 updated.
bool rolled_out_to(const json::value& stack, const std::string& app) {
  if (!stack_ready(stack) || int_at(stack, "/status/updatedMembers") != 3 ||
      str_at(stack, "/status/updateSummary") != "3/3") {
    return false;
  }
  const auto members = status_members(stack, kRole);
  return members.size() == 3 && std::all_of(members.begin(), members.end(), [&](const auto& m) {
           return str_at(m.second, "/app") == app;
         });
}

// status.conditions[type] as {status, reason, message}.
struct Condition {
  std::string status, reason, message;
};
Condition condition_fields(const json::value& stack, std::string_view type) {
  auto c = condition_of(stack, type);
  if (c.is_null()) return {};
  return {str_at(c, "/status"), str_at(c, "/reason"), str_at(c, "/message")};
}

class EtcdUpgrade : public AppTest {
 protected:
  static void SetUpTestSuite() {
    const auto start = Clock::now();
    start_app("etcd");
    if (ns().empty()) return;  // start_app failed early: SetUp reports it
    // The AppTypes the Stack moves to, and their packages, next to the shipped etcd.
    const auto startscript = read_file(appdefs_dir() / "etcd" / "setup" / "startscript");
    std::vector<tl::expected<void, std::string>> steps;
    steps.push_back(
        install_package(client(), kNext + "-setup",
                        {{"startscript", startscript}, {"etcd.settings", kNextSettings}}));
    // Test 3 goes back from the broken one to etcd-next without etcd-next listing it:
    // admission lets spec.app return to an AppType a member still runs (a rollback).
    steps.push_back(install_apptype(client(), kNext, {kOld}));
    steps.push_back(install_package(client(), kBroken + "-setup",
                                    {{"startscript", broken_wrapper()},
                                     {"startscript.etcd", startscript},
                                     {"etcd.settings", kNextSettings}}));
    steps.push_back(install_apptype(client(), kBroken, {kNext}));
    for (const auto& s : steps) {
      if (!s) {
        std::cout << "[ etcd-upgrade ] setup: " << s.error() << "\n";
        ADD_FAILURE() << s.error();
      }
    }
    auto ready = wait_ready();
    if (ready) {
      std::cout << "[ etcd-upgrade ] 3 members Ready after " << seconds_since(start) << " s\n";
    } else {
      std::cout << "[ etcd-upgrade ] not Ready: " << ready.error() << "\n";
    }
  }
  static void TearDownTestSuite() {
    stop_app();
    if (ns().empty()) return;
    for (const auto& name : {kNext, kBroken}) {
      (void)client().remove(catalog::resources::kAppTypes, kOperatorNamespace, name);
      (void)client().remove(kConfigMaps, kOperatorNamespace, name + "-setup");
    }
  }

  static std::vector<std::string> ready_members() {
    auto ready = wait_ready(kRolloutTimeout);
    if (!ready) {
      ADD_FAILURE() << ready.error();
      return {};
    }
    return members(*ready, kRole);
  }

  static tl::expected<json::value, std::string> wait_stack(
      const std::function<bool(const json::value&)>& done,
      std::chrono::seconds timeout = kRolloutTimeout) {
    auto got =
        wait_for_object(client(), catalog::resources::kStacks, ns(), stack_name(), done, timeout);
    if (!got) return tl::unexpected(got.error() + "\n" + describe());
    return got;
  }

  static tl::expected<void, std::string> set_app(const std::string& app) {
    auto patched =
        client().patch(catalog::resources::kStacks, ns(), stack_name(), kube::PatchType::kMerge,
                       json::serialize(json::object{{"spec", {{"app", app}}}}));
    if (!patched) return tl::unexpected("spec.app -> " + app + ": " + patched.error().to_string());
    return {};
  }

  static void put(const std::string& pod, const std::string& key, const std::string& value) {
    auto done = run(pod, etcdctl({"put", key, value}));
    ASSERT_TRUE(done.ok) << done.diagnosis;
    ASSERT_EQ(done.out, "OK\n");
  }

  // Every key of kKeys (value = the key) in each member's own copy (a serializable read).
  static void expect_every_key(const std::vector<std::string>& pods) {
    for (const auto& pod : pods) {
      for (const auto& key : kKeys) {
        auto got = run_until(
            pod, etcdctl({"get", key, "--print-value-only", "--consistency=s"}),
            [&](const std::string& out) { return out == key + "\n"; }, 30s);
        EXPECT_TRUE(got) << key << " through " << pod << ": " << got.error();
      }
    }
  }

  // etcd member name -> id, through `pod` (every member started).
  static std::map<std::string, std::string> member_ids(const std::string& pod) {
    std::map<std::string, std::string> ids;
    auto out = run_until(pod, etcdctl({"member", "list"}), [&](const std::string& o) {
      ids = started_member_ids(parse_member_list(o));
      return ids.size() == 3;
    });
    EXPECT_TRUE(out) << "member list through " << pod << ": " << out.error();
    return ids;
  }

  static std::string file_in(const std::string& pod, const std::string& path) {
    auto r = run(pod, {"sh", "-c", "cat \"$0\" 2>/dev/null; true", path});
    EXPECT_TRUE(r.ok) << r.diagnosis;
    return r.out;
  }

  // Waits (watch) until every pod of `before` (pod -> uid) was replaced by a Ready one.
  static tl::expected<Objects, std::string> wait_pods_replaced(
      const std::map<std::string, std::string>& before) {
    return wait_for(
        client(), kPods, ns(), stack_selector(stack_name()),
        [&](const Objects& now) {
          if (now.size() != before.size()) return false;
          for (const auto& [name, pod] : now) {
            auto old = before.find(name);
            if (old == before.end() || old->second == str_at(pod, "/metadata/uid") ||
                !running_and_ready(pod)) {
              return false;
            }
          }
          return true;
        },
        kAppTimeout);
  }

  static std::map<std::string, std::string> pod_uids() {
    std::map<std::string, std::string> out;
    for (const auto& [name, pod] :
         list_objects(client(), kPods, ns(), stack_selector(stack_name())))
      out[name] = str_at(pod, "/metadata/uid");
    return out;
  }

  // Every member's templateRevision is the StatefulSet's update revision and its app `app`.
  static void expect_members_on(const json::value& stack, const std::string& app) {
    auto set = client().get(kStatefulSets, ns(), stack_name() + "-" + kRole);
    ASSERT_TRUE(set) << set.error().to_string();
    const auto revision = str_at(*set, "/status/updateRevision");
    EXPECT_FALSE(revision.empty());
    for (const auto& [pod, m] : status_members(stack, kRole)) {
      EXPECT_EQ(str_at(m, "/app"), app) << pod;
      EXPECT_EQ(str_at(m, "/templateRevision"), revision) << pod;
    }
    EXPECT_EQ(int_at(stack, "/status/updatedMembers"), 3);
    EXPECT_EQ(str_at(stack, "/status/updateSummary"), "3/3");
  }
};

TEST_F(EtcdUpgrade, AStackOfThreeMovesToANewAppTypeMemberByMemberWhileReadsGoOn) {
  const auto pods = ready_members();
  ASSERT_EQ(pods.size(), 3u) << describe();
  for (const auto& key : kKeys) ASSERT_NO_FATAL_FAILURE(put(pods[0], key, key));
  const auto ids_before = member_ids(pods[0]);
  ASSERT_EQ(ids_before.size(), 3u);

  const auto start = Clock::now();
  PodRecorder recorder(client(), ns(), stack_name());
  const auto before = recorder.first_uids();
  ASSERT_EQ(before.size(), 3u);
  ReadPoller reads(client(), ns(), pods, kKeys[0], kKeys[0]);
  ASSERT_TRUE(set_app(kNext));
  auto moved = wait_stack([](const json::value& s) { return rolled_out_to(s, kNext); });
  auto replaced = wait_pods_replaced(before);
  reads.stop();
  recorder.stop();
  ASSERT_TRUE(moved) << moved.error() << "\n" << recorder.timeline(start);
  ASSERT_TRUE(replaced) << replaced.error() << "\n" << recorder.timeline(start);
  std::cout << "[ etcd-upgrade ] etcd -> etcd-next: 3/3 after " << seconds_since(start) << " s\n";

  // One member at a time, highest ordinal first, each Ready before the next went.
  expect_one_at_a_time(recorder, before, {pods[2], pods[1], pods[0]}, start);
  reads.expect_at_most_one_member_failing(start);
  expect_members_on(*moved, kNext);

  // The same cluster: every member kept its etcd id, every key is there through every member.
  EXPECT_EQ(member_ids(pods[0]), ids_before);
  expect_every_key(pods);
  // Each member was set up again by the new package, as an upgrade, with its new setting.
  std::size_t leader_moves = 0;
  for (const auto& pod : pods) {
    EXPECT_NE(file_in(pod, "/opt/kstack/etcd/etcd.conf.yml").find(kNextConfigLine),
              std::string::npos)
        << pod;
    const auto setup_log = file_in(pod, "/var/lib/etcd/kstack-setup.log");
    EXPECT_NE(setup_log.find("--configure --upgrade-from " + kOld), std::string::npos)
        << pod << ":\n"
        << setup_log;
    EXPECT_NE(setup_log.find(fmt::format("--preupgrade --from-app {} --to-app {}", kOld, kNext)),
              std::string::npos)
        << pod << ":\n"
        << setup_log;
    const auto etcdctl_log = file_in(pod, "/var/lib/etcd/kstack-etcdctl.log");
    EXPECT_EQ(etcdctl_log.find("member add"), std::string::npos) << pod << ":\n" << etcdctl_log;
    for (std::size_t at = 0; (at = etcdctl_log.find("move-leader", at)) != std::string::npos;
         ++at) {
      ++leader_moves;
    }
  }
  std::cout << "[ etcd-upgrade ] leadership handed over " << leader_moves
            << " time(s) by --preupgrade\n";
}

TEST_F(EtcdUpgrade, AResourcesChangeOnTheRunningRoleRollsTheSameWayWithProgressInKubectl) {
  auto settled = wait_stack([](const json::value& s) { return rolled_out_to(s, kNext); });
  ASSERT_TRUE(settled) << settled.error();
  const auto pods = members(*settled, kRole);
  ASSERT_EQ(pods.size(), 3u);
  // The first test's keys again (it may have stopped before writing them).
  for (const auto& key : kKeys) ASSERT_NO_FATAL_FAILURE(put(pods[0], key, key));
  EXPECT_EQ(UpdatedColumnPoller::updated_column(
                control_plane().kubectl({"get", "stk", stack_name(), "-n", ns()}).out),
            "3/3");

  const auto start = Clock::now();
  PodRecorder recorder(client(), ns(), stack_name());
  const auto before = recorder.first_uids();
  ReadPoller reads(client(), ns(), pods, kKeys[1], kKeys[1]);
  UpdatedColumnPoller column(ns(), stack_name());
  const json::value resources = {{"requests", {{"cpu", "120m"}, {"memory", "160Mi"}}},
                                 {"limits", {{"cpu", "600m"}, {"memory", "640Mi"}}}};
  auto patched = client().patch(
      catalog::resources::kStacks, ns(), stack_name(), kube::PatchType::kJson,
      json::serialize(json::array{json::object{
          {"op", "replace"}, {"path", "/spec/roles/0/resources"}, {"value", resources}}}));
  ASSERT_TRUE(patched) << patched.error().to_string();
  const auto generation = int_at(*patched, "/metadata/generation");
  auto moved = wait_stack([&](const json::value& s) {
    return int_at(s, "/status/observedGeneration") >= generation && rolled_out_to(s, kNext);
  });
  auto replaced = wait_pods_replaced(before);
  reads.stop();
  recorder.stop();
  column.stop();
  ASSERT_TRUE(moved) << moved.error() << "\n" << recorder.timeline(start);
  ASSERT_TRUE(replaced) << replaced.error() << "\n" << recorder.timeline(start);
  std::cout << "[ etcd-upgrade ] resources change: 3/3 after " << seconds_since(start) << " s\n";

  expect_one_at_a_time(recorder, before, {pods[2], pods[1], pods[0]}, start);
  reads.expect_at_most_one_member_failing(start);
  expect_members_on(*moved, kNext);
  for (const auto& [name, pod] :
       list_objects(client(), kPods, ns(), stack_selector(stack_name()))) {
    for (const auto& c : pod.at_pointer("/spec/containers").as_array()) {
      if (str_at(c, "/name") != "app") continue;
      EXPECT_EQ(str_at(c, "/resources/requests/cpu"), "120m") << name;
      EXPECT_EQ(str_at(c, "/resources/limits/memory"), "640Mi") << name;
    }
  }
  // kubectl get stk: the Updated column went through values below 3/3 and ends at 3/3.
  const auto values = column.values();
  std::cout << "[ etcd-upgrade ] kubectl get stk, Updated: " << fmt::format("{}", values) << "\n";
  EXPECT_TRUE(
      std::any_of(values.begin(), values.end(),
                  [](const std::string& v) { return v == "0/3" || v == "1/3" || v == "2/3"; }))
      << fmt::format("{}", values) << "\n"
      << column.last_output();
  EXPECT_EQ(UpdatedColumnPoller::updated_column(
                control_plane().kubectl({"get", "stk", stack_name(), "-n", ns()}).out),
            "3/3");
  expect_every_key(pods);
}

TEST_F(EtcdUpgrade, AFailingPreupgradeStopsTheRolloutAtMemberTwoAndRevertingRollsItBack) {
  auto settled = wait_stack([](const json::value& s) { return rolled_out_to(s, kNext); });
  ASSERT_TRUE(settled) << settled.error();
  const auto pods = members(*settled, kRole);
  ASSERT_EQ(pods.size(), 3u);
  for (const auto& key : kKeys) ASSERT_NO_FATAL_FAILURE(put(pods[0], key, key));
  std::map<std::string, std::string> revisions;  // pod -> templateRevision before
  for (const auto& [pod, m] : status_members(*settled, kRole)) {
    revisions[pod] = str_at(m, "/templateRevision");
  }
  const auto uids = pod_uids();
  ASSERT_EQ(uids.size(), 3u);

  const auto start = Clock::now();
  ASSERT_TRUE(set_app(kBroken));
  auto failed = wait_stack(
      [](const json::value& s) {
        auto c = condition_fields(s, "Progressing");
        return c.status == "False" && c.reason == "UpgradeFailed";
      },
      kAppTimeout);
  ASSERT_TRUE(failed) << "no UpgradeFailed: " << failed.error();
  std::cout << "[ etcd-upgrade ] failing hook: UpgradeFailed after " << seconds_since(start)
            << " s\n";
  const auto progressing = condition_fields(*failed, "Progressing");
  EXPECT_NE(progressing.message.find(pods[2]), std::string::npos) << progressing.message;
  // The contract: the message names the member and the hook's output.
  EXPECT_NE(progressing.message.find(kHookMessage + pods[2]), std::string::npos)
      << "UpgradeFailed without the hook's output: " << progressing.message;
  auto member2 = status_members(*failed, kRole)[pods[2]];
  EXPECT_NE(str_at(member2, "/stateDetail/preupgradeStderr").find(kHookMessage + pods[2]),
            std::string::npos)
      << json::serialize(member2);
  EXPECT_NE(str_at(member2, "/stateDetail/preupgradeStdout").find("broken hook ran on " + pods[2]),
            std::string::npos)
      << json::serialize(member2);
  EXPECT_FALSE(str_at(member2, "/stateDetail/upgradeError").empty()) << json::serialize(member2);

  // Nothing moves any more: no pod goes or comes for a while (a watch that must time out).
  auto moved = wait_for(
      client(), kPods, ns(), stack_selector(stack_name()),
      [&](const Objects& now) {
        if (now.size() != uids.size()) return true;
        for (const auto& [name, pod] : now) {
          if (uids.at(name) != str_at(pod, "/metadata/uid") || deleting(pod)) return true;
        }
        return false;
      },
      15s);
  EXPECT_FALSE(moved) << "a pod moved after UpgradeFailed:\n" << describe();
  auto held = client().get(catalog::resources::kStacks, ns(), stack_name());
  ASSERT_TRUE(held) << held.error().to_string();
  for (const auto& pod : {pods[0], pods[1]}) {
    auto m = status_members(*held, kRole)[pod];
    EXPECT_EQ(str_at(m, "/templateRevision"), revisions[pod]) << pod;
    EXPECT_EQ(str_at(m, "/app"), kNext) << pod;
  }
  EXPECT_EQ(condition_fields(*held, "Progressing").reason, "UpgradeFailed");

  // Reverting spec.app: member 2 (whose hook ran) is recreated and set up again; 0 and 1 stay.
  const auto revert = Clock::now();
  PodRecorder recorder(client(), ns(), stack_name());
  ASSERT_TRUE(set_app(kNext));
  auto back = wait_stack([](const json::value& s) { return rolled_out_to(s, kNext); });
  recorder.stop();
  ASSERT_TRUE(back) << back.error() << "\n" << recorder.timeline(revert);
  auto recreated = wait_for(
      client(), kPods, ns(), stack_selector(stack_name()),
      [&](const Objects& now) {
        return now.size() == 3 && now.count(pods[2]) == 1 &&
               str_at(now.at(pods[2]), "/metadata/uid") != uids.at(pods[2]) &&
               running_and_ready(now.at(pods[2]));
      },
      kAppTimeout);
  ASSERT_TRUE(recreated) << "member 2 was not rolled back: " << recreated.error() << "\n"
                         << recorder.timeline(revert);
  back = wait_stack([](const json::value& s) { return rolled_out_to(s, kNext); });
  ASSERT_TRUE(back) << back.error();
  std::cout << "[ etcd-upgrade ] reverted: Ready again after " << seconds_since(revert) << " s\n"
            << recorder.timeline(revert);
  const auto after = pod_uids();
  EXPECT_EQ(after.at(pods[0]), uids.at(pods[0]));
  EXPECT_EQ(after.at(pods[1]), uids.at(pods[1]));
  EXPECT_NE(after.at(pods[2]), uids.at(pods[2]));
  EXPECT_EQ(condition(*back, "Ready"), "True");
  EXPECT_NE(condition_fields(*back, "Progressing").reason, "UpgradeFailed");
  expect_members_on(*back, kNext);
  expect_every_key(pods);
}

}  // namespace
}  // namespace kstack::testenv::e2e::apps
