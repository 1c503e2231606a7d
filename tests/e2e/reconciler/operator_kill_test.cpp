// The `kstack operator` process (its own kubeconfig and identity, all namespaces) SIGKILLed at
// random moments while ten Stacks converge and scale, and restarted each time: in the end
// every Stack is Ready and every object kstack manages has exactly one controller
// ownerReference to an existing Stack, with exactly the desired counts — no duplicate, no
// orphan. Rounds: 20 by default (about a minute), KSTACK_E2E_KILL_ROUNDS=N for more; the seed
// is fixed by default and printed (KSTACK_E2E_SEED=N replays one, =random draws one).
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "tests/e2e/reconciler/support.h"
#include "tests/testenv/process.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using catalog::resources::kStacks;
using kube::resources::kPersistentVolumeClaims;
using kube::resources::kPods;
using kube::resources::kServices;
using kube::resources::kStatefulSets;

constexpr int kStacksCount = 10;
constexpr std::chrono::milliseconds kStopGrace{15000};

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before threads
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

class OperatorKillTest : public ReconcilerTest {
 protected:
  void TearDown() override {
    // Stacks go while the operator still runs (their finalizer), then SIGTERM: exit 0.
    if (running_.running()) {
      auto deleted = delete_stacks(*client_, ns_, 90s);
      EXPECT_TRUE(deleted) << deleted.error();
      running_.stop(kStopGrace);
      EXPECT_EQ(running_.how_it_ended(), "exited with status 0") << "kstack operator on SIGTERM";
    }
    if (HasFailure()) print_logs();
    ReconcilerTest::TearDown();
  }

  void start_operator() {
    auto& cp = control_plane();
    const auto log = cp.work_dir() / fmt::format("kstack-operator-{}.log", logs_.size());
    std::vector<std::string> argv = {
        KSTACK_BINARY,        "operator",
        "--kubeconfig",       cp.kubeconfig_for(kOperatorUser).string(),
        "--namespace",        kOperatorNamespace,
        "--workers",          "4",
        "--resync-period",    "60",
        "--poll-interval-ms", "500"};
    // Only the controller is under test: no admission webhook (its TLS Secret and webhook
    // configurations need more than the test RBAC) and no fixed ports that parallel test
    // binaries would fight over. Leader election stays on, with a short lease, so each restart
    // also takes over the Lease of a SIGKILLed leader. Lease requests time out after
    // (lease - renew) / 4 = 1 s: short enough to step down in time, long enough for a loaded
    // CI machine (250 ms was not).
    argv.insert(argv.end(),
                {"--no-webhook", "--metrics-port", "0", "--probe-port", "0", "--lease-duration",
                 "10s", "--renew-deadline", "6s", "--retry-period", "1s"});
    auto child = spawn("kstack-operator", argv, log);
    ASSERT_TRUE(child) << child.error();
    running_ = std::move(*child);
    logs_.push_back(log);
  }

  void print_logs() {
    for (std::size_t i = 0; i < logs_.size(); ++i) {
      const bool last = i + 1 == logs_.size();
      std::cout << "---- kstack operator run " << i << " (" << logs_[i].string() << "), last "
                << (last ? 60 : 8) << " lines:\n"
                << tail_file(logs_[i], last ? 60 : 8) << "\n";
    }
  }

  ChildProcess running_;
  std::vector<std::filesystem::path> logs_;
};

std::string stack_name(int i) { return fmt::format("k{:02}", i); }

TEST_F(OperatorKillTest, KilledAtRandomMomentsItStillConvergesWithoutDuplicatesOrOrphans) {
  ASSERT_TRUE(install_operator_rbac());
  const int rounds = env_int("KSTACK_E2E_KILL_ROUNDS", 20);
  const unsigned seed = e2e_seed(20261122U);
  std::cout << "[ kill ] " << rounds << " rounds, seed " << seed << "\n";
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pause_ms(200, 2500);
  std::uniform_int_distribution<int> kill_after_ms(0, 1500);  // from the scale request

  for (int i = 0; i < kStacksCount; ++i) create(kStacks, ring_stack(ns_, stack_name(i), 2, 1));
  ASSERT_NO_FATAL_FAILURE(start_operator());
  const auto start = std::chrono::steady_clock::now();
  std::map<std::string, int> workers;
  for (int i = 0; i < kStacksCount; ++i) workers[stack_name(i)] = 1;

  for (int round = 0; round < rounds; ++round) {
    // Keep convergence going: each round scales one Stack's workers (up the first time it is
    // picked, down the next), then kills the operator a random moment later.
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
    const auto name = stack_name(round % kStacksCount);
    workers[name] = workers[name] == 1 ? 2 : 1;
    auto patched = client_->patch(
        kStacks, ns_, name, kube::PatchType::kJson,
        fmt::format(R"([{{"op":"replace","path":"/spec/roles/1/members","value":{}}}])",
                    workers[name]));
    ASSERT_TRUE(patched) << patched.error().to_string();
    std::this_thread::sleep_for(std::chrono::milliseconds(kill_after_ms(rng)));
    ASSERT_TRUE(running_.running()) << "the operator died on its own: " << running_.how_it_ended();
    running_.kill_now();
    std::cout << "[ kill ] round " << round << ": scaled " << name << " to " << workers[name]
              << " workers, SIGKILL at " << seconds_since(start) << " s\n";
    ASSERT_NO_FATAL_FAILURE(start_operator());
  }

  auto all_ready = wait_for(
      *client_, kStacks, ns_, "",
      [](const Objects& o) {
        return o.size() == kStacksCount &&
               std::all_of(o.begin(), o.end(), [](const auto& s) { return stack_ready(s.second); });
      },
      kConvergeTimeout);
  ASSERT_TRUE(all_ready) << all_ready.error();
  std::cout << "[ kill ] all " << kStacksCount << " Stacks ready " << seconds_since(start)
            << " s after the first start\n";

  // What must exist, by kind.
  std::map<std::string, std::string> uid_of;  // Stack name -> uid
  std::set<std::string> want_sets, want_services, want_claims, want_pods;
  for (const auto& [name, stack] : *all_ready) {
    uid_of[name] = str_at(stack, "/metadata/uid");
    want_sets.insert({name + "-controller", name + "-worker"});
    want_services.insert(name);
    for (const auto& [role, n] :
         {std::pair<std::string, int>{"controller", 2}, {"worker", workers[name]}}) {
      for (int i = 0; i < n; ++i) {
        const auto member = fmt::format("{}-{}-{}", name, role, i);
        want_services.insert(member);
        want_claims.insert("data-" + member);
        want_pods.insert(member);
      }
    }
  }
  // Scaled-down members' claims are deleted after their pods: wait for that to finish.
  auto claims = wait_for(
      *client_, kPersistentVolumeClaims, ns_, "",
      [&](const Objects& o) { return o.size() == want_claims.size(); }, 90s);
  EXPECT_TRUE(claims) << claims.error();

  auto check = [&](const kube::ResourceType& type, const std::string& selector,
                   const std::set<std::string>& want) {
    auto objects = list_objects(*client_, type, ns_, selector);
    auto names = names_of(objects);
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), want) << type.plural;
    for (const auto& [name, o] : objects) {
      if (type == kPods) {
        EXPECT_TRUE(running_and_ready(o)) << name;
        continue;
      }
      const auto refs = controller_references(o);
      ASSERT_EQ(refs.size(), 1u) << type.kind << " " << name << " has " << refs.size()
                                 << " controller ownerReferences";
      const auto owner = str_at(refs[0], "/name");
      EXPECT_EQ(str_at(refs[0], "/kind"), "Stack") << name;
      EXPECT_TRUE(uid_of.count(owner) == 1 && uid_of[owner] == str_at(refs[0], "/uid"))
          << type.kind << " " << name << " is owned by " << owner << " " << str_at(refs[0], "/uid")
          << ", not an existing Stack";
      EXPECT_FALSE(deleting(o)) << name;
    }
  };
  const std::string managed = "app.kubernetes.io/managed-by=kstack";
  check(kStatefulSets, managed, want_sets);
  check(kServices, managed, want_services);
  check(kPersistentVolumeClaims, managed, want_claims);
  check(kPersistentVolumeClaims, "", want_claims);  // unlabelled ones are orphans too
  check(kPods, managed, want_pods);
  for (const auto& [name, set] : list_objects(*client_, kStatefulSets, ns_, managed)) {
    const auto stack = str_at(set, "/metadata/labels/kstack.io~1stack");
    const bool worker = name == stack + "-worker";
    EXPECT_EQ(int_at(set, "/spec/replicas"), worker ? workers[stack] : 2) << name;
  }
}

}  // namespace
}  // namespace kstack::testenv::e2e
