// The etcd app (appdefs/etcd) stopped and resumed, and its nodes drained, for real (issue 13):
// the example Stack's three members run Debian's etcd 3.4 on three simulated nodes.
//
// - Stop and resume: `spec.stopped: true` takes every member pod away and keeps the claims
//   (same UIDs, their volume directories untouched), the status says `stopped`; admission (the
//   webhook, registered for the test) refuses any other spec change while stopped, dry run
//   too; `spec.stopped: false` brings the same members back on their claims: the same etcd
//   cluster (member IDs) with every key.
// - Drain: the AppType's role declares minAvailable (patched into the installed AppType while
//   no webhook is registered: kstack's admission keeps an AppType in use immutable, the way in
//   is a Stack moved to another AppType; what is under test is how the reconciler follows the
//   AppType), kstack makes the PodDisruptionBudget (policy/v1beta1 on the 1.20 control
//   plane), and `kubectl drain` (kubectl 1.31) of member 0's node evicts it; the member cannot
//   come back while its node is cordoned (its volume is local to that node), so draining
//   member 1's node must fail on the budget; uncordoned, member 0 comes back and the second
//   drain passes. A pod watch records the fewest Ready members at any moment: never below 2
//   (etcd's quorum). Without minAvailable the budget goes.
// The tests run in order on one cluster.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "kube/resource.h"
#include "reconciler/desired_state.h"
#include "tests/e2e/apps/app_fixture.h"
#include "tests/e2e/apps/etcd_members.h"
#include "tests/testenv/process.h"
#include "validator/certs.h"
#include "validator/webhook.h"

namespace kstack::testenv::e2e::apps {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using catalog::resources::kAppTypes;
using catalog::resources::kStacks;
using kube::resources::kPersistentVolumeClaims;
using kube::resources::kPersistentVolumes;
using kube::resources::kPods;
using kube::resources::kServices;
using kube::resources::kStatefulSets;

const std::string kRole = "member";
// The etcd AppType as build-packages.sh installs it: the `system` catalog.
const std::string kAppTypeNamespace = kOperatorNamespace;
const std::string kAppTypeName = "etcd";

// The PodDisruptionBudget type the server serves, found as kstack finds it: policy/v1 from
// Kubernetes 1.21, else policy/v1beta1 (the test control plane is 1.20).
tl::expected<kube::ResourceType, std::string> pdb_type(kube::Client& client) {
  auto v1 = client.discover("policy/v1", "PodDisruptionBudget");
  if (v1) return *v1;
  auto beta = client.discover("policy/v1beta1", "PodDisruptionBudget");
  if (beta) return *beta;
  return tl::unexpected(v1.error().to_string() + "; " + beta.error().to_string());
}
// Of 3 members, rounded up: 2, etcd's quorum.
const std::string kMinAvailable = "51%";
constexpr const char* kDenied = R"(admission webhook "validate.kstack.io" denied the request)";

// ---- etcd ----

// ---- the members' volumes ----

struct MemberVolume {
  std::string claim;
  std::string claim_uid;
  std::string volume;          // the PV
  std::string path;            // its local.path on the simulated node (this host)
  std::set<std::string> data;  // etcd's files in it: the backend (member/snap/db) and its WAL
};

// etcd's files under a volume directory, relative to it (the persist dir /var/lib/etcd is
// var/lib/etcd there): WAL segments are only ever added in these tests (etcd purges beyond
// five), so a file seen once must stay.
std::set<std::string> etcd_data(const std::string& path) {
  std::set<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const auto relative = it->path().lexically_relative(path).generic_string();
    if (relative.ends_with("/member/snap/db") || relative.ends_with(".wal")) out.insert(relative);
  }
  return out;
}

bool has_db(const std::set<std::string>& data) {
  return std::any_of(data.begin(), data.end(),
                     [](const std::string& f) { return f.ends_with("/member/snap/db"); });
}

// pod -> its claim (the role's one persistent volume) and where its data lives.
std::map<std::string, MemberVolume> member_volumes(kube::Client& client, const std::string& ns,
                                                   const std::vector<std::string>& pods) {
  std::map<std::string, MemberVolume> out;
  for (const auto& pod : pods) {
    auto p = client.get(kPods, ns, pod);
    if (!p) {
      ADD_FAILURE() << pod << ": " << p.error().to_string();
      continue;
    }
    MemberVolume v;
    for (const auto& vol : p->at_pointer("/spec/volumes").as_array()) {
      if (auto claim = str_at(vol, "/persistentVolumeClaim/claimName"); !claim.empty()) {
        v.claim = claim;
      }
    }
    auto claim = client.get(kPersistentVolumeClaims, ns, v.claim);
    if (!claim) {
      ADD_FAILURE() << pod << " claim " << v.claim << ": " << claim.error().to_string();
      continue;
    }
    v.claim_uid = str_at(*claim, "/metadata/uid");
    v.volume = str_at(*claim, "/spec/volumeName");
    auto pv = client.get(kPersistentVolumes, "", v.volume);
    if (!pv) {
      ADD_FAILURE() << pod << " volume " << v.volume << ": " << pv.error().to_string();
      continue;
    }
    v.path = str_at(*pv, "/spec/local/path");
    v.data = etcd_data(v.path);
    out[pod] = std::move(v);
  }
  return out;
}

// ---- kubectl 1.31 (scripts/get-kube-tools.sh) ----

// $KSTACK_KUBE_TOOLS_BIN/kubectl (scripts/test.sh sets it), else the folder
// scripts/get-kube-tools.sh prints (it installs the tools on first use), as
// tests/unit/deploy/kube_tools.py finds them.
tl::expected<std::string, std::string> kubectl_131() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read before the test starts threads of its own
  if (const char* bin = std::getenv("KSTACK_KUBE_TOOLS_BIN"); bin != nullptr && *bin != '\0') {
    return (fs::path(bin) / "kubectl").string();
  }
  const auto script = fs::path(KSTACK_SOURCE_DIR) / "scripts" / "get-kube-tools.sh";
  auto done = run_command({"bash", script.string()}, {}, {}, 600s);
  if (!done) return tl::unexpected(script.string() + ": " + done.error());
  if (!done->ok()) {
    return tl::unexpected(
        fmt::format("{} failed (exit {}): {}", script.string(), done->exit_code, done->err));
  }
  std::string dir = done->out;
  while (!dir.empty() && dir.back() == '\n') dir.pop_back();
  dir = dir.substr(dir.find_last_of('\n') + 1);
  return (fs::path(dir) / "kubectl").string();
}

// ---- Ready members, watched ----

// Lists, then watches the member pods from the moment of construction, and keeps the fewest
// Ready members seen at any moment (Ready: running, condition Ready True, not being deleted)
// with a timeline of the changes.
class ReadyMembersWatch {
 public:
  ReadyMembersWatch(std::shared_ptr<kube::Client> client, std::string ns, std::string selector)
      : client_(std::move(client)),
        ns_(std::move(ns)),
        selector_(std::move(selector)),
        start_(std::chrono::steady_clock::now()) {
    auto rv = relist();
    thread_ = std::thread([this, rv] { run(rv); });
  }
  ~ReadyMembersWatch() { stop(); }
  ReadyMembersWatch(const ReadyMembersWatch&) = delete;
  ReadyMembersWatch& operator=(const ReadyMembersWatch&) = delete;

  void stop() {
    cancel_.cancel();
    if (thread_.joinable()) thread_.join();
  }
  int minimum() const {
    std::lock_guard lock(mu_);
    return minimum_;
  }
  std::string timeline() const {
    std::lock_guard lock(mu_);
    return timeline_;
  }

 private:
  static bool ready(const json::value& pod) { return running_and_ready(pod) && !deleting(pod); }

  std::string relist() {
    kube::ListOptions options;
    options.label_selector = selector_;
    auto list = client_->list(kPods, ns_, options);
    if (!list) {
      std::lock_guard lock(mu_);
      timeline_ += "list failed: " + list.error().to_string() + "\n";
      return {};
    }
    std::map<std::string, bool> now;
    for (const auto& pod : list->at_pointer("/items").as_array()) {
      now[str_at(pod, "/metadata/name")] = ready(pod);
    }
    std::lock_guard lock(mu_);
    ready_ = std::move(now);
    note("listed");
    return str_at(*list, "/metadata/resourceVersion");
  }

  void run(std::string rv) {
    while (!cancel_.cancelled()) {
      kube::WatchOptions options;
      options.label_selector = selector_;
      options.resource_version = rv;
      auto watched = client_->watch(
          kPods, ns_, options,
          [&](kube::WatchEvent&& event) {
            if (auto v = str_at(event.object, "/metadata/resourceVersion"); !v.empty()) rv = v;
            if (event.type == kube::WatchEvent::Type::kBookmark) return true;
            const auto name = str_at(event.object, "/metadata/name");
            std::lock_guard lock(mu_);
            if (event.type == kube::WatchEvent::Type::kDeleted) {
              if (ready_.erase(name) != 0) note(name + " deleted");
            } else if (auto it = ready_.find(name);
                       it == ready_.end() || it->second != ready(event.object)) {
              const bool r = ready(event.object);
              ready_[name] = r;
              note(fmt::format("{} {} on {}", name, r ? "ready" : "not ready",
                               str_at(event.object, "/spec/nodeName")));
            }
            return true;
          },
          cancel_);
      if (watched || cancel_.cancelled()) continue;  // the server ended it: go on from rv
      if (watched.error().is(kube::ErrorKind::kGone)) {
        rv = relist();
      } else {
        std::this_thread::sleep_for(200ms);  // a transport error: back off before watching again
      }
    }
  }

  // Under mu_.
  void note(const std::string& what) {
    int count = 0;
    for (const auto& [name, r] : ready_) count += r ? 1 : 0;
    minimum_ = std::min(minimum_, count);
    timeline_ += fmt::format("  +{:.1f} s {}: {} ready\n", seconds_since(start_), what, count);
  }

  std::shared_ptr<kube::Client> client_;
  std::string ns_;
  std::string selector_;
  std::chrono::steady_clock::time_point start_;
  kube::CancelToken cancel_;
  mutable std::mutex mu_;
  std::map<std::string, bool> ready_;  // pod -> Ready
  int minimum_ = INT_MAX;
  std::string timeline_;
  std::thread thread_;
};

// ---- the webhook, for the admission checks ----

// kstack's admission webhook in this process (as every operator replica runs it), registered
// by URL with the caBundle its CertManager writes; unregistered and stopped on destruction.
// Only while a test needs it: an AppType in use may not change under the webhook, and the
// drain test changes the etcd AppType's minAvailable.
class InProcessWebhook {
 public:
  tl::expected<void, std::string> start() {
    validator::WebhookOptions o;
    o.system_namespace = kOperatorNamespace;
    o.operator_username = kOperatorUser;  // the in-process Controller's identity
    o.server.bind_address = "127.0.0.1";
    o.server.port = 0;
    o.extra_sans = {"127.0.0.1"};
    auto started = validator::start_webhook(admin(), o);
    if (!started) return tl::unexpected("webhook: " + started.error().to_string());
    webhook_ = std::move(*started);
    validator::WebhookConfigurationOptions wc;
    wc.url_base = fmt::format("https://127.0.0.1:{}", webhook_->port());
    auto c = admin();
    auto validating = c->create(validator::kValidatingWebhookConfigurations, "",
                                validator::validating_webhook_configuration(wc));
    if (!validating) return tl::unexpected("register: " + validating.error().to_string());
    auto mutating = c->create(validator::kMutatingWebhookConfigurations, "",
                              validator::mutating_webhook_configuration(wc));
    if (!mutating) return tl::unexpected("register: " + mutating.error().to_string());
    registered_ = true;
    for (const auto* type : {&validator::kValidatingWebhookConfigurations,
                             &validator::kMutatingWebhookConfigurations}) {
      auto filled = wait_for_object(
          *c, *type, "",
          str_at(type == &validator::kMutatingWebhookConfigurations ? *mutating : *validating,
                 "/metadata/name"),
          [](const json::value& w) {
            return !str_at(w, "/webhooks/0/clientConfig/caBundle").empty();
          },
          60s);
      if (!filled) return tl::unexpected("caBundle not written: " + filled.error());
    }
    return {};
  }

  ~InProcessWebhook() {
    // The configurations first: nothing may call a webhook that is about to stop.
    if (registered_) {
      auto c = admin();
      (void)c->remove(validator::kValidatingWebhookConfigurations, "",
                      validator::kDefaultValidatingWebhookConfigurationName);
      (void)c->remove(validator::kMutatingWebhookConfigurations, "",
                      validator::kDefaultMutatingWebhookConfigurationName);
    }
    if (webhook_) webhook_->stop();
  }

 private:
  std::unique_ptr<validator::Webhook> webhook_;
  bool registered_ = false;
};

class EtcdStopDrain : public EtcdAppTest {
 protected:
  static void SetUpTestSuite() {
    const auto start = std::chrono::steady_clock::now();
    start_app("etcd", pin_member_volumes);
    if (ns().empty()) return;  // start_app failed early: SetUp reports it
    auto ready = wait_ready();
    if (ready) {
      std::cout << "[ etcd ] 3 members Ready after " << seconds_since(start) << " s\n";
    } else {
      std::cout << "[ etcd ] not Ready: " << ready.error() << "\n";
    }
  }
  static void TearDownTestSuite() {
    // A drain test that failed half-way leaves nodes cordoned.
    if (auto kubectl = kubectl_131(); kubectl) {
      for (const auto& node : cordoned_) (void)drain_kubectl(*kubectl, {"uncordon", node});
    }
    stop_app();
  }

  // Each member's volume on a node of its own, so that draining a node concerns one member: the
  // claims the StatefulSet will use (data-<stack>-member-<i>, labelled as its template labels
  // them) are made first, each with the node that is to provision it
  // (volume.kubernetes.io/selected-node), as local volumes pre-provisioned per node are. Left
  // to the simulators, the three claims a Parallel StatefulSet makes at once may land two on
  // one node. Runs before the Stack is created; throws on failure (start_app reports it).
  static void pin_member_volumes(json::value& stack) {
    const auto name = str_at(stack, "/metadata/name");
    json::object labels{
        {std::string(reconciler::kLabelManagedBy), reconciler::kManagedByValue},
        {std::string(reconciler::kLabelStack), name},
        {std::string(reconciler::kLabelName), reconciler::label_value("etcd")},  // distroID
        {std::string(reconciler::kLabelRole), kRole}};
    for (std::size_t i = 0; i < 3; ++i) {
      json::object claim{
          {"apiVersion", "v1"},
          {"kind", "PersistentVolumeClaim"},
          {"metadata",
           {{"name", fmt::format("data-{}-{}-{}", name, kRole, i)},
            {"labels", labels},
            {"annotations",
             {{"volume.kubernetes.io/selected-node", node_simulator(i).node_name()}}}}},
          {"spec",
           {{"accessModes", json::array{"ReadWriteOnce"}},
            {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
      auto created = client().create(kPersistentVolumeClaims, ns(), claim);
      if (!created) throw std::runtime_error("claim: " + created.error().to_string());
    }
  }

  static void put(const std::string& pod, const std::string& key, const std::string& value) {
    auto done = run(pod, etcdctl({"put", key, value}));
    ASSERT_TRUE(done.ok) << done.diagnosis;
    ASSERT_EQ(done.out, "OK\n");
  }

  // The value of `key` in the member's own copy (a serializable read is served locally).
  static void expect_value(const std::string& pod, const std::string& key,
                           const std::string& value) {
    auto got = run_until(
        pod, etcdctl({"get", key, "--print-value-only", "--consistency=s"}),
        [&](const std::string& out) { return out == value + "\n"; }, 30s);
    EXPECT_TRUE(got) << key << " through " << pod << ": " << got.error();
  }

  static std::string node_of(const std::string& pod) {
    auto p = client().get(kPods, ns(), pod);
    return p ? str_at(*p, "/spec/nodeName") : std::string();
  }

  // kubectl 1.31 with the admin kubeconfig; the command's output and exit code.
  static CommandResult drain_kubectl(const std::string& kubectl,
                                     const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kubectl,
                                     "--kubeconfig=" + control_plane().kubeconfig().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_command(argv, {}, {}, 600s);
    if (!r) return CommandResult{-1, {}, r.error()};
    return *r;
  }

  static CommandResult drain(const std::string& kubectl, const std::string& node,
                             const std::string& timeout) {
    cordoned_.insert(node);
    return drain_kubectl(kubectl, {"drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                                   "--timeout=" + timeout});
  }

  static CommandResult uncordon(const std::string& kubectl, const std::string& node) {
    auto r = drain_kubectl(kubectl, {"uncordon", node});
    if (r.ok()) cordoned_.erase(node);
    return r;
  }

  // JSON patch of the Stack as admin (through admission when the webhook is registered).
  static kube::Result<json::value> patch_stack(const std::string& patch, bool dry_run = false) {
    kube::PatchOptions options;
    options.dry_run = dry_run;
    return client().patch(kStacks, ns(), stack_name(), kube::PatchType::kJson, patch, options);
  }

  static inline std::set<std::string> cordoned_;
};

TEST_F(EtcdStopDrain, AStoppedStackKeepsItsClaimsRefusesChangesAndResumesAsTheSameCluster) {
  // Admission as under a running operator: the webhook answers every write of this test, and
  // the Stack (created before it was registered) gets its defaults from a first update.
  InProcessWebhook webhook;
  auto registered = webhook.start();
  ASSERT_TRUE(registered) << registered.error();
  {
    // The API server takes a new configuration in within a few seconds, with no event to
    // watch: a dry run that a webhook rule refuses (a role the AppType lacks), until it is.
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    for (;;) {
      auto r = patch_stack(R"([{"op":"add","path":"/spec/roles/-","value":{"id":"ghost"}}])", true);
      const std::string last = r ? std::string("accepted") : r.error().to_string();
      if (last.find(kDenied) != std::string::npos) break;
      ASSERT_LT(std::chrono::steady_clock::now(), deadline)
          << "the webhook is not called: " << last;
      std::this_thread::sleep_for(200ms);
    }
    auto touched =
        client().patch(kStacks, ns(), stack_name(), kube::PatchType::kMerge,
                       R"({"metadata":{"labels":{"e2e.kstack.test/note":"stop-resume"}}})");
    ASSERT_TRUE(touched) << touched.error().to_string();
  }

  const auto pods = ready_members();
  ASSERT_EQ(pods.size(), 3u) << describe();
  const auto ids_before = started_member_ids(expect_membership(pods[0], pods));
  ASSERT_EQ(ids_before.size(), 3u);
  const auto volumes_before = member_volumes(client(), ns(), pods);
  ASSERT_EQ(volumes_before.size(), 3u);
  for (const auto& [pod, v] : volumes_before) {
    ASSERT_TRUE(has_db(v.data)) << pod << ": no etcd data in " << v.path << ": "
                                << fmt::format("{}", v.data);
  }
  const auto services_before =
      names_of(list_objects(client(), kServices, ns(), stack_selector(stack_name())));
  ASSERT_FALSE(services_before.empty());
  for (std::size_t i = 0; i < pods.size(); ++i) {
    ASSERT_NO_FATAL_FAILURE(put(pods[i], fmt::format("/kstack/stop/{}", i), pods[i]));
  }

  // Stop.
  auto start = std::chrono::steady_clock::now();
  auto stop = patch_stack(R"([{"op":"add","path":"/spec/stopped","value":true}])");
  ASSERT_TRUE(stop) << stop.error().to_string();
  auto gone = wait_for(
      client(), kPods, ns(), stack_selector(stack_name()),
      [](const Objects& now) { return now.empty(); }, kAppTimeout);
  ASSERT_TRUE(gone) << "member pods still there: " << gone.error() << "\n" << describe();
  std::cout << "[ etcd ] stopped: every member pod gone after " << seconds_since(start) << " s\n";
  auto stopped = wait_for_object(
      client(), kStacks, ns(), stack_name(),
      [&](const json::value& s) {
        if (str_at(s, "/status/state") != catalog::kStackStopped ||
            int_at(s, "/status/observedGeneration") != int_at(s, "/metadata/generation") ||
            str_at(condition_of(s, "Ready"), "/reason") != "Stopped" ||
            condition(s, "Ready") != "False") {
          return false;
        }
        auto list = status_members(s, kRole);
        return list.size() == pods.size() &&
               std::all_of(list.begin(), list.end(), [](const auto& m) {
                 return str_at(m.second, "/state") == catalog::kMemberStopped;
               });
      },
      kAppTimeout);
  ASSERT_TRUE(stopped) << "not stopped: " << stopped.error() << "\n" << describe();
  std::cout << "[ etcd ] status stopped after " << seconds_since(start) << " s\n";
  EXPECT_EQ(members(*stopped, kRole), pods) << "the members stay in the status";
  EXPECT_EQ(condition(*stopped, "Progressing"), "False");
  EXPECT_EQ(str_at(condition_of(*stopped, "Progressing"), "/reason"), "Stopped");
  auto set = client().get(kStatefulSets, ns(), stack_name() + "-" + kRole);
  ASSERT_TRUE(set) << set.error().to_string();
  EXPECT_EQ(int_at(*set, "/spec/replicas"), 0);
  // The claims are the same objects, bound to the same volumes, whose data is still there.
  for (const auto& [pod, before] : volumes_before) {
    auto claim = client().get(kPersistentVolumeClaims, ns(), before.claim);
    ASSERT_TRUE(claim) << before.claim << ": " << claim.error().to_string();
    EXPECT_EQ(str_at(*claim, "/metadata/uid"), before.claim_uid) << before.claim;
    EXPECT_FALSE(deleting(*claim)) << before.claim;
    EXPECT_EQ(str_at(*claim, "/spec/volumeName"), before.volume) << before.claim;
    const auto data = etcd_data(before.path);
    EXPECT_TRUE(std::includes(data.begin(), data.end(), before.data.begin(), before.data.end()))
        << before.path << ": before " << fmt::format("{}", before.data) << ", now "
        << fmt::format("{}", data);
  }
  EXPECT_EQ(names_of(list_objects(client(), kServices, ns(), stack_selector(stack_name()))),
            services_before);

  // Admission while stopped: nothing else in spec may change, dry run or not.
  const auto generation = int_at(*stopped, "/metadata/generation");
  const std::string members_patch =
      R"([{"op":"replace","path":"/spec/roles/0/members","value":4}])";
  for (bool dry_run : {true, false}) {
    auto refused = patch_stack(members_patch, dry_run);
    ASSERT_FALSE(refused) << "members changed while stopped (dry run " << dry_run << ")";
    const auto why = refused.error().to_string();
    EXPECT_NE(why.find(kDenied), std::string::npos) << why;
    EXPECT_NE(why.find("spec.roles[0].members"), std::string::npos) << why;
    EXPECT_NE(why.find("spec.stopped"), std::string::npos) << why;
  }
  // Resuming and changing in one update: refused too, naming the changed field.
  auto both = patch_stack(R"([{"op":"replace","path":"/spec/stopped","value":false},
                              {"op":"replace","path":"/spec/roles/0/members","value":4}])");
  ASSERT_FALSE(both) << "members changed in the update that resumes";
  EXPECT_NE(both.error().to_string().find("spec.roles[0].members"), std::string::npos)
      << both.error().to_string();
  // Metadata may change.
  auto labelled = client().patch(kStacks, ns(), stack_name(), kube::PatchType::kMerge,
                                 R"({"metadata":{"labels":{"e2e.kstack.test/note":"stopped"}}})");
  EXPECT_TRUE(labelled) << labelled.error().to_string();
  auto now = client().get(kStacks, ns(), stack_name());
  ASSERT_TRUE(now) << now.error().to_string();
  EXPECT_EQ(int_at(*now, "/metadata/generation"), generation) << "spec changed";
  EXPECT_EQ(int_at(*now, "/spec/roles/0/members"), 3);
  EXPECT_EQ(json::serialize(now->at("spec").as_object().contains("stopped")
                                ? now->at("spec").at("stopped")
                                : json::value()),
            "true");

  // Resume, as an update of its own.
  start = std::chrono::steady_clock::now();
  auto resumed = patch_stack(R"([{"op":"replace","path":"/spec/stopped","value":false}])");
  ASSERT_TRUE(resumed) << resumed.error().to_string();

  auto ready = wait_ready();
  ASSERT_TRUE(ready) << ready.error();
  std::cout << "[ etcd ] resumed: Ready after " << seconds_since(start) << " s\n";
  ASSERT_EQ(members(*ready, kRole), pods);
  // Each member again on its own claim (same UID), its data kept.
  const auto volumes_after = member_volumes(client(), ns(), pods);
  for (const auto& [pod, before] : volumes_before) {
    auto it = volumes_after.find(pod);
    ASSERT_NE(it, volumes_after.end()) << pod;
    EXPECT_EQ(it->second.claim, before.claim) << pod;
    EXPECT_EQ(it->second.claim_uid, before.claim_uid) << pod;
    EXPECT_EQ(it->second.volume, before.volume) << pod;
  }
  // The same etcd cluster (each member restarted from its data, not a new one), every key
  // readable through every member.
  EXPECT_EQ(started_member_ids(expect_membership(pods[0], pods)), ids_before);
  for (const auto& pod : pods) {
    for (std::size_t i = 0; i < pods.size(); ++i) {
      expect_value(pod, fmt::format("/kstack/stop/{}", i), pods[i]);
    }
  }
  ASSERT_NO_FATAL_FAILURE(put(pods[2], "/kstack/after-resume", "yes"));
  expect_value(pods[0], "/kstack/after-resume", "yes");
}

TEST_F(EtcdStopDrain, DrainsKeepTheRolesMinAvailableAndAMemberWaitsForItsCordonedNode) {
  const auto pdbs = pdb_type(client());
  ASSERT_TRUE(pdbs) << pdbs.error();
  auto pods = ready_members();
  ASSERT_EQ(pods.size(), 3u) << describe();
  auto kubectl = kubectl_131();
  ASSERT_TRUE(kubectl) << kubectl.error();
  std::map<std::string, std::string> node;  // pod -> node
  std::set<std::string> nodes;
  for (const auto& pod : pods) nodes.insert(node[pod] = node_of(pod));
  // Each member on a node of its own (pin_member_volumes): a drain of a node concerns one
  // member.
  ASSERT_EQ(nodes.size(), 3u) << fmt::format("{}", node) << "\n" << describe();
  const std::string node_a = node[pods[0]];
  const std::string node_b = node[pods[1]];
  auto stack = client().get(kStacks, ns(), stack_name());
  ASSERT_TRUE(stack) << stack.error().to_string();
  const auto stack_uid = str_at(*stack, "/metadata/uid");
  ASSERT_NO_FATAL_FAILURE(put(pods[0], "/kstack/before-drain", "kept"));

  // The AppType's role declares its quorum: kstack makes the budget.
  auto declared = client().patch(
      kAppTypes, kAppTypeNamespace, kAppTypeName, kube::PatchType::kJson,
      fmt::format(R"([{{"op":"add","path":"/spec/roles/0/minAvailable","value":"{}"}}])",
                  kMinAvailable));
  ASSERT_TRUE(declared) << declared.error().to_string();
  const std::string pdb_name = stack_name() + "-" + kRole;
  auto start = std::chrono::steady_clock::now();
  auto pdb = wait_for_object(
      client(), *pdbs, ns(), pdb_name,
      [](const json::value& p) {
        // Processed by the disruption controller, which found the three members.
        return int_at(p, "/status/observedGeneration") == int_at(p, "/metadata/generation") &&
               int_at(p, "/status/expectedPods") == 3 && int_at(p, "/status/currentHealthy") == 3 &&
               int_at(p, "/status/disruptionsAllowed") == 1;
      },
      kAppTimeout);
  ASSERT_TRUE(pdb) << "no PodDisruptionBudget " << pdb_name << ": " << pdb.error() << "\n"
                   << describe();
  std::cout << "[ etcd ] PodDisruptionBudget after " << seconds_since(start) << " s\n";
  EXPECT_EQ(str_at(*pdb, "/spec/minAvailable"), kMinAvailable);
  const json::value selector =
      json::object{{"kstack.io/stack", stack_name()}, {"kstack.io/role", kRole}};
  EXPECT_EQ(pdb->at_pointer("/spec/selector/matchLabels"), selector)
      << json::serialize(pdb->at("spec"));
  EXPECT_EQ(str_at(*pdb, "/metadata/labels/kstack.io~1stack"), stack_name());
  EXPECT_EQ(str_at(*pdb, "/metadata/labels/kstack.io~1role"), kRole);
  EXPECT_TRUE(referenced_by(*pdb, stack_uid)) << "not owned by the Stack";
  EXPECT_EQ(int_at(*pdb, "/status/desiredHealthy"), 2);
  ASSERT_EQ(ready_members(), pods);  // settled after the AppType change

  auto old0 = client().get(kPods, ns(), pods[0]);
  auto old1 = client().get(kPods, ns(), pods[1]);
  ASSERT_TRUE(old0 && old1);
  ReadyMembersWatch watch(admin(), ns(), stack_selector(stack_name()));

  // 1. Member 0's node: one member may go.
  start = std::chrono::steady_clock::now();
  auto first = drain(*kubectl, node_a, "180s");
  ASSERT_TRUE(first.ok()) << "kubectl drain " << node_a << ": exit " << first.exit_code << "\n"
                          << first.out << first.err << "\n"
                          << describe();
  std::cout << "[ etcd ] drained " << node_a << " (" << pods[0] << ") in " << seconds_since(start)
            << " s\n";
  // Made again by the StatefulSet, it waits: its volume is on the cordoned node.
  auto waiting = wait_for_object(
      client(), kPods, ns(), pods[0],
      [&](const json::value& p) {
        return str_at(p, "/metadata/uid") != str_at(*old0, "/metadata/uid") && !deleting(p);
      },
      kAppTimeout);
  ASSERT_TRUE(waiting) << waiting.error() << "\n" << describe();
  EXPECT_EQ(str_at(*waiting, "/spec/nodeName"), "") << "bound away from its volume's node";

  // 2. Member 1's node: the budget allows no second member to go.
  start = std::chrono::steady_clock::now();
  auto second = drain(*kubectl, node_b, "20s");
  std::cout << "[ etcd ] drain of " << node_b << " ended after " << seconds_since(start)
            << " s, exit " << second.exit_code << "\n";
  EXPECT_NE(second.exit_code, 0) << "kubectl drain " << node_b << " passed:\n"
                                 << second.out << second.err;
  EXPECT_NE((second.out + second.err).find("disruption budget"), std::string::npos)
      << second.out << second.err;
  auto still1 = client().get(kPods, ns(), pods[1]);
  ASSERT_TRUE(still1) << still1.error().to_string();
  EXPECT_EQ(str_at(*still1, "/metadata/uid"), str_at(*old1, "/metadata/uid"));
  EXPECT_TRUE(running_and_ready(*still1) && !deleting(*still1)) << json::serialize(*still1);
  auto still0 = client().get(kPods, ns(), pods[0]);
  ASSERT_TRUE(still0) << still0.error().to_string();
  EXPECT_EQ(str_at(*still0, "/spec/nodeName"), "")
      << pods[0] << " came back while " << node_a << " is cordoned";

  // 3. Member 0's node uncordoned: the member comes back there, with its data.
  start = std::chrono::steady_clock::now();
  auto back = uncordon(*kubectl, node_a);
  ASSERT_TRUE(back.ok()) << back.out << back.err;
  ASSERT_EQ(ready_members(), pods);
  std::cout << "[ etcd ] " << pods[0] << " back after uncordon in " << seconds_since(start)
            << " s\n";
  EXPECT_EQ(node_of(pods[0]), node_a);
  expect_value(pods[0], "/kstack/before-drain", "kept");
  auto healthy = wait_for_object(
      client(), *pdbs, ns(), pdb_name,
      [](const json::value& p) { return int_at(p, "/status/disruptionsAllowed") == 1; },
      kAppTimeout);
  ASSERT_TRUE(healthy) << healthy.error();

  // 4. Now member 1's node drains.
  start = std::chrono::steady_clock::now();
  auto third = drain(*kubectl, node_b, "180s");
  ASSERT_TRUE(third.ok()) << "kubectl drain " << node_b << ": exit " << third.exit_code << "\n"
                          << third.out << third.err << "\n"
                          << describe();
  std::cout << "[ etcd ] drained " << node_b << " (" << pods[1] << ") in " << seconds_since(start)
            << " s\n";
  back = uncordon(*kubectl, node_b);
  ASSERT_TRUE(back.ok()) << back.out << back.err;
  ASSERT_EQ(ready_members(), pods);
  EXPECT_EQ(node_of(pods[1]), node_b);
  watch.stop();
  std::cout << "[ etcd ] fewest Ready members during the drains: " << watch.minimum() << "\n";
  EXPECT_GE(watch.minimum(), 2) << "below etcd's quorum:\n" << watch.timeline();
  EXPECT_EQ(expect_membership(pods[2], pods).size(), 3u);
  for (const auto& pod : pods) expect_value(pod, "/kstack/before-drain", "kept");

  // The AppType stops declaring it: the budget goes.
  auto undeclared =
      client().patch(kAppTypes, kAppTypeNamespace, kAppTypeName, kube::PatchType::kJson,
                     R"([{"op":"remove","path":"/spec/roles/0/minAvailable"}])");
  ASSERT_TRUE(undeclared) << undeclared.error().to_string();
  auto removed = wait_for_absent(client(), *pdbs, ns(), pdb_name, kAppTimeout);
  EXPECT_TRUE(removed) << removed.error();
}

}  // namespace
}  // namespace kstack::testenv::e2e::apps
