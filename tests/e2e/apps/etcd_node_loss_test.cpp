// Members survive lost nodes (issue 13, acceptance 1 and 2) at the data level: the example etcd
// Stack (appdefs/etcd, real etcd 3.4) with its three members on three simulated nodes, one per
// node, and `memberRecovery: {nodeLostGraceSeconds: 5, localStorage: Recreate}` on its role. A
// node is lost by stopping its simulator's heartbeats (a partition: its containers run on, the
// node-lifecycle controller marks it NotReady after 10 s, docs/nodesim.md).
//
// ONE Stack is shared by the tests, which run in file order:
//   1. Recreate: member 2's node is lost; kstack deletes its claim and pod, the StatefulSet makes
//      both again on a live node, the other members drop the old etcd member (--delnodes) and
//      the new one joins empty and re-replicates. The lost node comes back at the end.
//   2. Keep (the role patched first): a member's node is lost; kstack deletes nothing and says
//      in the status that it waits for the node; when the node is back the member carries on
//      with its data.
// Without the reconciler's recovery neither test passes: member 2 would never leave the lost
// node, and no status would name the lost node.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "kube/resource.h"
#include "tests/e2e/apps/app_fixture.h"
#include "tests/e2e/apps/etcd_members.h"

namespace kstack::testenv::e2e::apps {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using kube::resources::kNodes;
using kube::resources::kPersistentVolumeClaims;
using kube::resources::kPersistentVolumes;
using kube::resources::kPods;

const std::string kRole = "member";

std::string id_of(const std::vector<EtcdMember>& list, const std::string& pod) {
  for (const auto& m : list) {
    if (m.name == pod) return m.id;
  }
  return {};
}

// Any item of the Events about `uid` with `reason` that mentions every one of `words`.
bool mentions(const Objects& events, const std::string& uid, const std::string& reason,
              const std::vector<std::string>& words) {
  const auto found = event_items(events, uid, reason);
  return std::any_of(found.items.begin(), found.items.end(), [&](const std::string& item) {
    return std::all_of(words.begin(), words.end(),
                       [&](const std::string& w) { return item.find(w) != std::string::npos; });
  });
}

// Resumes a lost node's heartbeats when it goes out of scope (a failed test leaves the shared
// nodes as it found them), and waits for the Node to be Ready again.
class LostNode {
 public:
  LostNode(NodeSimulator& sim, kube::Client& client) : sim_(sim), client_(client) {}
  ~LostNode() { (void)resume(); }
  LostNode(const LostNode&) = delete;
  LostNode& operator=(const LostNode&) = delete;

  tl::expected<void, std::string> stop() {
    lost_ = true;
    return sim_.stop_heartbeats();
  }
  tl::expected<void, std::string> resume() {
    if (!lost_) return {};
    lost_ = false;
    if (auto r = sim_.resume_heartbeats(); !r) return r;
    auto ready = wait_for_object(
        client_, kNodes, "", sim_.node_name(),
        [](const json::value& n) { return condition(n, "Ready") == "True"; }, 60s);
    if (!ready) return tl::unexpected(ready.error());
    return {};
  }
  const std::string& name() const { return sim_.node_name(); }

 private:
  NodeSimulator& sim_;
  kube::Client& client_;
  bool lost_ = false;
};

class EtcdNodeLoss : public EtcdAppTest {
 protected:
  static void SetUpTestSuite() {
    const auto start = std::chrono::steady_clock::now();
    start_app("etcd", [](json::value& stack) {
      stack.at_pointer("/spec/roles/0").as_object()["memberRecovery"] =
          json::object{{"nodeLostGraceSeconds", 5}, {"localStorage", "Recreate"}};
    });
    if (ns().empty()) return;  // start_app failed early: SetUp reports it
    auto ready = wait_ready();
    if (ready) {
      std::cout << "[ etcd node loss ] 3 members Ready after " << seconds_since(start) << " s\n";
    } else {
      std::cout << "[ etcd node loss ] not Ready: " << ready.error() << "\n";
    }
  }
  static void TearDownTestSuite() { stop_app(); }

  // Ready, and no member recovering (stateDetail.recovery / replacing cleared).
  static bool settled(const json::value& stack) {
    if (!stack_ready(stack)) return false;
    for (const auto& [pod, member] : status_members(stack, kRole)) {
      if (!str_at(member, "/stateDetail/recovery").empty()) return false;
      boost::system::error_code ec;
      const auto* replacing = member.find_pointer("/stateDetail/replacing", ec);
      if (replacing != nullptr && replacing->is_bool() && replacing->get_bool()) return false;
    }
    return true;
  }
  static tl::expected<json::value, std::string> wait_settled() {
    auto stack = wait_for_object(client(), catalog::resources::kStacks, ns(), stack_name(), settled,
                                 kAppTimeout);
    if (!stack) return tl::unexpected(stack.error() + "\n" + describe());
    return stack;
  }

  // The member pods by ordinal, from the settled Stack.
  static std::vector<std::string> settled_members() {
    auto stack = wait_settled();
    if (!stack) {
      ADD_FAILURE() << stack.error();
      return {};
    }
    return members(*stack, kRole);
  }

  // Pod name -> the node it runs on.
  static std::map<std::string, std::string> placement() {
    std::map<std::string, std::string> out;
    for (const auto& [name, pod] :
         list_objects(client(), kPods, ns(), stack_selector(stack_name()))) {
      out[name] = str_at(pod, "/spec/nodeName");
    }
    return out;
  }

  static NodeSimulator& simulator_of(const std::string& node) {
    for (std::size_t i = 0;; ++i) {
      auto& sim = node_simulator(i);  // throws past the last one
      if (sim.node_name() == node) return sim;
    }
  }

  // The value of `key` in the member's own copy (a serializable read is served locally).
  static void expect_value(const std::string& pod, const std::string& key,
                           const std::string& value) {
    auto got = run_until(
        pod, etcdctl({"get", key, "--print-value-only", "--consistency=s"}),
        [&](const std::string& out) { return out == value + "\n"; }, 30s);
    EXPECT_TRUE(got) << key << " through " << pod << ": " << got.error();
  }

  static void put(const std::string& pod, const std::string& key, const std::string& value) {
    auto done = run(pod, etcdctl({"put", key, value}));
    ASSERT_TRUE(done.ok) << done.diagnosis;
    ASSERT_EQ(done.out, "OK\n");
  }

  static json::value get(const kube::ResourceType& type, const std::string& ns,
                         const std::string& name) {
    auto got = client().get(type, ns, name);
    if (!got) {
      ADD_FAILURE() << type.plural << " " << name << ": " << got.error().to_string();
      return nullptr;
    }
    return *got;
  }
};

TEST_F(EtcdNodeLoss, RecreateMovesAMemberOfALostNodeToALiveOneWithAFreshClaimAndItRejoins) {
  const auto pods = settled_members();
  ASSERT_EQ(pods.size(), 3u) << describe();
  auto nodes = placement();
  std::set<std::string> used;
  for (const auto& pod : pods) used.insert(nodes[pod]);
  ASSERT_EQ(used.size(), 3u) << "the members are not spread over the three nodes: "
                             << fmt::format("{}", nodes);

  const std::string moved = pods[2];
  ASSERT_NO_FATAL_FAILURE(put(pods[0], "/kstack/before-loss", "written through member 0"));
  expect_value(moved, "/kstack/before-loss", "written through member 0");
  const auto old_id = id_of(expect_membership(pods[0], pods), moved);
  ASSERT_FALSE(old_id.empty());
  auto stack = get(catalog::resources::kStacks, ns(), stack_name());
  const std::string stack_uid = str_at(stack, "/metadata/uid");
  const std::string claim = str_at(status_members(stack, kRole)[moved], "/pvc");
  ASSERT_FALSE(claim.empty()) << describe();
  const auto old_claim = get(kPersistentVolumeClaims, ns(), claim);
  const std::string old_claim_uid = str_at(old_claim, "/metadata/uid");
  const std::string old_volume = str_at(old_claim, "/spec/volumeName");
  const std::string old_pod_uid = str_at(get(kPods, ns(), moved), "/metadata/uid");

  LostNode lost(simulator_of(nodes[moved]), client());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(lost.stop());

  // Member 2 runs again on a live node, set up (its readiness probe is etcd's health, which
  // needs the config --configure writes), and the Stack is Ready with nothing left to recover.
  auto again = wait_for_object(
      client(), kPods, ns(), moved,
      [&](const json::value& p) {
        return str_at(p, "/metadata/uid") != old_pod_uid &&
               str_at(p, "/spec/nodeName") != lost.name() && running_and_ready(p);
      },
      kAppTimeout);
  ASSERT_TRUE(again) << again.error() << "\n" << describe();
  auto settled_stack = wait_settled();
  ASSERT_TRUE(settled_stack) << settled_stack.error();
  const double recovery_seconds = seconds_since(start);
  std::cout << "[ etcd node loss ] Recreate: heartbeats stopped -> Stack Ready in "
            << recovery_seconds << " s (member " << moved << ": " << lost.name() << " -> "
            << str_at(*again, "/spec/nodeName") << ")\n";
  EXPECT_EQ(members(*settled_stack, kRole), pods);

  // Three healthy members; member 2 is a new etcd member (the old one was removed).
  const auto list = expect_membership(pods[0], pods);
  const auto new_id = id_of(list, moved);
  EXPECT_FALSE(new_id.empty());
  EXPECT_NE(new_id, old_id) << "member 2 kept its etcd identity: its data was not recreated";
  for (const auto& m : list) EXPECT_NE(m.id, old_id) << "the lost member is still listed";
  for (const auto& pod : pods) {
    auto health = run(pod, etcdctl({"endpoint", "health"}));
    EXPECT_TRUE(health.ok) << health.diagnosis;
  }
  // It re-replicated what was written before, and what it takes reaches member 0.
  expect_value(moved, "/kstack/before-loss", "written through member 0");
  ASSERT_NO_FATAL_FAILURE(put(moved, "/kstack/after-loss", "written through the new member 2"));
  expect_value(pods[0], "/kstack/after-loss", "written through the new member 2");

  // What kstack says it did.
  auto events = wait_for(
      client(), kube::resources::kEvents, ns(), "",
      [&](const Objects& o) {
        return mentions(o, stack_uid, "MemberRescheduled", {moved, lost.name()}) &&
               mentions(o, stack_uid, "ClaimRecreated", {moved});
      },
      30s);
  EXPECT_TRUE(events) << events.error();

  // The claim is a new one, on a live node.
  const auto new_claim = get(kPersistentVolumeClaims, ns(), claim);
  EXPECT_NE(str_at(new_claim, "/metadata/uid"), old_claim_uid);
  EXPECT_EQ(str_at(new_claim, "/status/phase"), "Bound");
  const auto volume = get(kPersistentVolumes, "", str_at(new_claim, "/spec/volumeName"));
  const std::string volume_node = str_at(volume, "/metadata/annotations/kstack.io~1nodesim-node");
  EXPECT_NE(volume_node, lost.name());
  EXPECT_EQ(volume_node, str_at(*again, "/spec/nodeName"));
  EXPECT_EQ(condition(get(kNodes, "", volume_node), "Ready"), "True");

  // The node comes back: the old member's containers (it kept running, partitioned) are
  // killed and its released volume is reclaimed; the cluster is not disturbed.
  ASSERT_TRUE(lost.resume());
  auto reclaimed = wait_for_absent(client(), kPersistentVolumes, "", old_volume, 60s);
  EXPECT_TRUE(reclaimed) << reclaimed.error();
  auto still = wait_settled();
  ASSERT_TRUE(still) << still.error();
  expect_membership(pods[0], pods);
}

TEST_F(EtcdNodeLoss, KeepWaitsForTheLostNodeAndTheMemberCarriesOnWithItsDataWhenItIsBack) {
  auto patched = client().patch(
      catalog::resources::kStacks, ns(), stack_name(), kube::PatchType::kJson,
      R"([{"op":"replace","path":"/spec/roles/0/memberRecovery/localStorage","value":"Keep"}])");
  ASSERT_TRUE(patched) << patched.error().to_string();
  const auto pods = settled_members();
  ASSERT_EQ(pods.size(), 3u) << describe();

  // A member alone on its node (after test 1 two members may share one).
  auto nodes = placement();
  std::string waiting;
  for (auto it = pods.rbegin(); it != pods.rend() && waiting.empty(); ++it) {
    const auto on_node = std::count_if(nodes.begin(), nodes.end(),
                                       [&](const auto& p) { return p.second == nodes[*it]; });
    if (on_node == 1) waiting = *it;
  }
  ASSERT_FALSE(waiting.empty()) << fmt::format("{}", nodes);
  std::string other = pods[0] == waiting ? pods[1] : pods[0];
  const auto old_id = id_of(expect_membership(other, pods), waiting);
  ASSERT_FALSE(old_id.empty());
  ASSERT_NO_FATAL_FAILURE(put(other, "/kstack/kept", "written before the loss"));
  expect_value(waiting, "/kstack/kept", "written before the loss");

  auto stack = get(catalog::resources::kStacks, ns(), stack_name());
  const std::string stack_uid = str_at(stack, "/metadata/uid");
  const std::string claim = str_at(status_members(stack, kRole)[waiting], "/pvc");
  ASSERT_FALSE(claim.empty()) << describe();
  const std::string claim_uid = str_at(get(kPersistentVolumeClaims, ns(), claim), "/metadata/uid");
  const std::string pod_uid = str_at(get(kPods, ns(), waiting), "/metadata/uid");

  LostNode lost(simulator_of(nodes[waiting]), client());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(lost.stop());

  auto waits = wait_for_object(
      client(), catalog::resources::kStacks, ns(), stack_name(),
      [&](const json::value& s) {
        const auto degraded = condition_of(s, "Degraded");
        return str_at(status_members(s, kRole)[waiting], "/stateDetail/recovery")
                       .find(lost.name()) != std::string::npos &&
               str_at(degraded, "/status") == "True" && str_at(degraded, "/reason") == "NodeLost";
      },
      kAppTimeout);
  ASSERT_TRUE(waits) << waits.error() << "\n" << describe();
  std::cout << "[ etcd node loss ] Keep: heartbeats stopped -> waiting in " << seconds_since(start)
            << " s: " << str_at(status_members(*waits, kRole)[waiting], "/stateDetail/recovery")
            << "\n";
  EXPECT_NE(str_at(condition_of(*waits, "Degraded"), "/message").find(waiting), std::string::npos)
      << describe();
  // Nothing was deleted.
  const auto pod = get(kPods, ns(), waiting);
  EXPECT_EQ(str_at(pod, "/metadata/uid"), pod_uid);
  EXPECT_EQ(str_at(pod, "/spec/nodeName"), lost.name());
  EXPECT_FALSE(deleting(pod));
  const auto kept_claim = get(kPersistentVolumeClaims, ns(), claim);
  EXPECT_EQ(str_at(kept_claim, "/metadata/uid"), claim_uid);
  EXPECT_FALSE(deleting(kept_claim));
  auto told = wait_for(
      client(), kube::resources::kEvents, ns(), "",
      [&](const Objects& o) {
        return mentions(o, stack_uid, "MemberWaitingForNode", {waiting, lost.name()});
      },
      30s);
  EXPECT_TRUE(told) << told.error();
  // The other two keep the cluster going meanwhile.
  ASSERT_NO_FATAL_FAILURE(put(other, "/kstack/during-loss", "written while the node was lost"));

  const auto back = std::chrono::steady_clock::now();
  ASSERT_TRUE(lost.resume());
  auto settled_stack = wait_settled();
  ASSERT_TRUE(settled_stack) << settled_stack.error();
  std::cout << "[ etcd node loss ] Keep: heartbeats resumed -> Stack Ready in "
            << seconds_since(back) << " s\n";
  // The same pod, claim and etcd member, with its data.
  const auto after = get(kPods, ns(), waiting);
  EXPECT_EQ(str_at(after, "/metadata/uid"), pod_uid);
  EXPECT_EQ(str_at(get(kPersistentVolumeClaims, ns(), claim), "/metadata/uid"), claim_uid);
  EXPECT_EQ(id_of(expect_membership(waiting, pods), waiting), old_id);
  expect_value(waiting, "/kstack/kept", "written before the loss");
  expect_value(waiting, "/kstack/during-loss", "written while the node was lost");
}

}  // namespace
}  // namespace kstack::testenv::e2e::apps
