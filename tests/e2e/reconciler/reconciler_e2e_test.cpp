// The reconciler (issue 5) end to end, with a Controller in the test process on the
// operator's own identity, the real control plane and a simulated node: a Stack converges to
// exactly the objects of docs/spec.md §4; scaling walks members through their states and honours
// the PVC retention policy; deleting a Stack removes what it owns; a missing AppType degrades the
// Stack and deletes nothing. Drift repair: drift_test.cpp; write counts: writes_test.cpp;
// the `kstack operator` process killed at random: operator_kill_test.cpp.
#include <algorithm>
#include <iostream>
#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "tests/e2e/reconciler/support.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using catalog::resources::kAppTypes;
using catalog::resources::kStacks;
using kube::resources::kPersistentVolumeClaims;
using kube::resources::kPods;
using kube::resources::kServices;
using kube::resources::kStatefulSets;

std::set<std::int64_t> ports_of(const json::value& ports, std::string_view key) {
  std::set<std::int64_t> out;
  if (!ports.is_array()) return out;
  for (const auto& p : ports.get_array()) out.insert(int_at(p, "/" + std::string(key)));
  return out;
}

json::value at_or_null(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  return p != nullptr ? *p : json::value(nullptr);
}

void expect_kstack_labels(const json::value& o, const std::string& stack, const std::string& role) {
  const auto name = str_at(o, "/metadata/name");
  EXPECT_EQ(str_at(o, "/metadata/labels/app.kubernetes.io~1managed-by"), "kstack") << name;
  EXPECT_EQ(str_at(o, "/metadata/labels/kstack.io~1stack"), stack) << name;
  EXPECT_EQ(str_at(o, "/metadata/labels/app.kubernetes.io~1name"), "e2e-ring") << name;
  if (!role.empty()) {
    EXPECT_EQ(str_at(o, "/metadata/labels/kstack.io~1role"), role) << name;
  }
}

std::vector<std::string> member_names(const std::string& stack, const std::string& role, int n,
                                      const std::string& prefix = {}) {
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) names.push_back(fmt::format("{}{}-{}-{}", prefix, stack, role, i));
  return names;
}

// Names of PVCs in `ns` that belong to `stack` by name (data-<stack>-<role>-<n>), whatever their
// labels and owners.
std::vector<std::string> claims_of(kube::Client& client, const std::string& ns,
                                   const std::string& stack) {
  std::vector<std::string> names;
  for (const auto& [name, pvc] : list_objects(client, kPersistentVolumeClaims, ns)) {
    if (name.rfind("data-" + stack + "-", 0) == 0) names.push_back(name);
  }
  return names;
}

TEST_F(ReconcilerTest, AStackOfTwoRolesConvergesToReadyWithExactlyTheObjectsOfSpec4) {
  ASSERT_NO_FATAL_FAILURE(start_controller(controller_options(ns_)));
  ASSERT_TRUE(controller_);
  const auto start = std::chrono::steady_clock::now();
  create(kStacks, ring_stack(ns_, "ring", 2, 3));

  auto waited = control_plane().kubectl(
      {"wait", "-n", ns_, "--for=condition=Ready", "stack/ring", "--timeout=180s"});
  ASSERT_EQ(waited.exit_code, 0) << waited.out << waited.err << "\n"
                                 << describe_stack(*client_, ns_, "ring");
  std::cout << "[ converge ] 2+3 members with storage: Ready after " << seconds_since(start)
            << " s\n";
  auto stack = wait_stack_ready(*client_, ns_, "ring");
  ASSERT_TRUE(stack) << stack.error();
  const std::string uid = str_at(*stack, "/metadata/uid");

  // Status.
  EXPECT_EQ(str_at(*stack, "/status/state"), "ready");
  EXPECT_EQ(int_at(*stack, "/status/observedGeneration"), int_at(*stack, "/metadata/generation"));
  EXPECT_EQ(str_at(*stack, "/status/memberSummary"), "5/5");
  EXPECT_EQ(int_at(*stack, "/status/readyMembers"), 5);
  EXPECT_EQ(int_at(*stack, "/status/desiredMembers"), 5);
  EXPECT_EQ(str_at(*stack, "/status/clusterService"), "ring");
  EXPECT_EQ(condition(*stack, "Ready"), "True");
  EXPECT_EQ(condition(*stack, "Progressing"), "False");
  EXPECT_EQ(condition(*stack, "Degraded"), "False");
  for (const char* type : {"Ready", "Progressing", "Degraded"}) {
    auto c = condition_of(*stack, type);
    EXPECT_FALSE(str_at(c, "/reason").empty()) << type << " has no reason";
    EXPECT_FALSE(str_at(c, "/lastTransitionTime").empty()) << type;
  }
  const auto finalizers = at_or_null(*stack, "/metadata/finalizers");
  EXPECT_TRUE(finalizers.is_array() &&
              std::count(finalizers.get_array().begin(), finalizers.get_array().end(),
                         json::value(catalog::kCleanupFinalizer)) == 1)
      << json::serialize(finalizers);
  std::set<std::int64_t> node_ids;
  for (const auto& [role, count] : {std::pair<std::string, int>{"controller", 2}, {"worker", 3}}) {
    auto members = status_members(*stack, role);
    EXPECT_EQ(names_of(members), member_names("ring", role, count)) << role;
    for (const auto& [pod, m] : members) {
      EXPECT_EQ(str_at(m, "/state"), "ready") << pod;
      EXPECT_EQ(str_at(m, "/service"), pod);
      EXPECT_EQ(str_at(m, "/pvc"), "data-" + pod);
      EXPECT_GT(int_at(m, "/nodeID"), 0) << pod;
      node_ids.insert(int_at(m, "/nodeID"));
    }
  }
  EXPECT_EQ(node_ids.size(), 5u) << "node IDs are unique";

  // The headless Service and the member Services.
  auto services = list_objects(*client_, kServices, ns_, stack_selector("ring"));
  std::vector<std::string> expected_services = {"ring"};
  for (const auto& role_members :
       {member_names("ring", "controller", 2), member_names("ring", "worker", 3)}) {
    expected_services.insert(expected_services.end(), role_members.begin(), role_members.end());
  }
  std::sort(expected_services.begin(), expected_services.end());
  EXPECT_EQ(names_of(services), expected_services);
  for (const auto& [name, svc] : services) {
    EXPECT_TRUE(controlled_by(svc, uid))
        << name << " " << json::serialize(at_or_null(svc, "/metadata/ownerReferences"));
    if (name == "ring") {
      expect_kstack_labels(svc, "ring", "");
      EXPECT_EQ(str_at(svc, "/spec/clusterIP"), "None");
      EXPECT_EQ(at_or_null(svc, "/spec/publishNotReadyAddresses"), json::value(true));
      continue;
    }
    const std::string role =
        name.find("-controller-") != std::string::npos ? "controller" : "worker";
    expect_kstack_labels(svc, "ring", role);
    EXPECT_EQ(str_at(svc, "/spec/type"), "ClusterIP") << name;
    EXPECT_EQ(str_at(svc, "/spec/selector/statefulset.kubernetes.io~1pod-name"), name);
    EXPECT_EQ(
        ports_of(at_or_null(svc, "/spec/ports"), "port"),
        (role == "controller" ? std::set<std::int64_t>{7000, 8080} : std::set<std::int64_t>{7000}))
        << name;
  }

  // The StatefulSets.
  auto sets = list_objects(*client_, kStatefulSets, ns_, stack_selector("ring"));
  EXPECT_EQ(names_of(sets), (std::vector<std::string>{"ring-controller", "ring-worker"}));
  for (const auto& [name, set] : sets) {
    const std::string role = name == "ring-controller" ? "controller" : "worker";
    expect_kstack_labels(set, "ring", role);
    EXPECT_TRUE(controlled_by(set, uid)) << name;
    EXPECT_EQ(int_at(set, "/spec/replicas"), role == "controller" ? 2 : 3);
    EXPECT_EQ(str_at(set, "/spec/serviceName"), "ring");
    EXPECT_EQ(str_at(set, "/spec/podManagementPolicy"), "Parallel");
    const auto containers = at_or_null(set, "/spec/template/spec/containers");
    ASSERT_TRUE(containers.is_array() && containers.get_array().size() == 1) << name;
    const auto& app = containers.get_array()[0];
    EXPECT_EQ(str_at(app, "/name"), "app");
    EXPECT_EQ(str_at(app, "/image"), "docker.io/library/busybox:1.36");
    EXPECT_EQ(
        ports_of(at_or_null(app, "/ports"), "containerPort"),
        (role == "controller" ? std::set<std::int64_t>{7000, 8080} : std::set<std::int64_t>{7000}));
    // kstack's emptyDirs, then the persisted dir on the claim.
    EXPECT_EQ(str_at(app, "/volumeMounts/0/mountPath"), "/etc/kstack") << name;
    EXPECT_EQ(str_at(app, "/volumeMounts/1/mountPath"), "/opt/kstack") << name;
    EXPECT_EQ(str_at(set, "/spec/template/spec/volumes/0/name"), "kstack-etc") << name;
    EXPECT_TRUE(at_or_null(set, "/spec/template/spec/volumes/1/emptyDir").is_object()) << name;
    EXPECT_EQ(str_at(app, "/volumeMounts/2/name"), "data") << name;
    EXPECT_EQ(str_at(app, "/volumeMounts/2/mountPath"), "/var/lib/ring") << name;
    EXPECT_FALSE(str_at(app, "/volumeMounts/2/subPath").empty()) << name;
    EXPECT_EQ(str_at(set, "/spec/volumeClaimTemplates/0/metadata/name"), "data");
    EXPECT_EQ(at_or_null(set, "/spec/volumeClaimTemplates").as_array().size(), 1u);
    EXPECT_EQ(str_at(set, "/spec/template/metadata/labels/kstack.io~1stack"), "ring");
  }

  // The PVCs: made by the StatefulSet controller, adopted by kstack.
  auto claims = list_objects(*client_, kPersistentVolumeClaims, ns_);
  std::vector<std::string> expected_claims;
  for (const auto& role_members : {member_names("ring", "controller", 2, "data-"),
                                   member_names("ring", "worker", 3, "data-")}) {
    expected_claims.insert(expected_claims.end(), role_members.begin(), role_members.end());
  }
  EXPECT_EQ(names_of(claims), expected_claims);
  for (const auto& [name, pvc] : claims) {
    EXPECT_TRUE(controlled_by(pvc, uid))
        << name << " " << json::serialize(at_or_null(pvc, "/metadata/ownerReferences"));
    expect_kstack_labels(pvc, "ring",
                         name.find("-controller-") != std::string::npos ? "controller" : "worker");
    EXPECT_EQ(str_at(pvc, "/status/phase"), "Bound") << name;
  }

  // The pods.
  auto pods = list_objects(*client_, kPods, ns_, stack_selector("ring"));
  EXPECT_EQ(pods.size(), 5u);
  for (const auto& [name, pod] : pods) EXPECT_TRUE(running_and_ready(pod)) << name;

  // Events on the Stack name every object kstack created and every claim it adopted, a pass's
  // objects batched into one Event per reason.
  std::vector<std::string> made = {"StatefulSet ring-controller created",
                                   "StatefulSet ring-worker created"};
  for (const auto& name : expected_services) made.push_back("Service " + name + " created");
  std::vector<std::string> adopted;
  for (const auto& name : expected_claims) {
    adopted.push_back("PersistentVolumeClaim " + name +
                      " adopted (owned by the Stack from now on)");
  }
  auto created_events = wait_for_event_items(*client_, ns_, uid, "Created", made, 30s);
  ASSERT_TRUE(created_events) << created_events.error();
  EXPECT_EQ(created_events->items.size(), made.size()) << "each object created once";
  EXPECT_LT(created_events->events, made.size()) << "one Event per pass, not per object";
  auto adopted_events = wait_for_event_items(*client_, ns_, uid, "Adopted", adopted, 30s);
  ASSERT_TRUE(adopted_events) << adopted_events.error();
  EXPECT_EQ(adopted_events->items.size(), adopted.size()) << "each claim adopted once";
}

// Scale a role 3 -> 5 -> 2 and watch every member's state on the way.
TEST_F(ReconcilerTest, ScalingARoleWalksMembersThroughTheirStatesAndDeletesTheirPvcs) {
  ASSERT_NO_FATAL_FAILURE(start_controller(controller_options(ns_)));
  ASSERT_TRUE(controller_);
  create(kStacks, ring_stack(ns_, "scale", 2, 3));
  auto stack = wait_stack_ready(*client_, ns_, "scale");
  ASSERT_TRUE(stack) << stack.error();
  EXPECT_EQ(str_at(*stack, "/status/memberSummary"), "5/5");
  StackStateRecorder recorder(client_, ns_, "scale");

  auto scale = [&](int workers, const std::string& summary) {
    const auto start = std::chrono::steady_clock::now();
    auto patched = client_->patch(
        kStacks, ns_, "scale", kube::PatchType::kJson,
        fmt::format(R"([{{"op":"replace","path":"/spec/roles/1/members","value":{}}}])", workers));
    ASSERT_TRUE(patched) << patched.error().to_string();
    auto settled = wait_settled("scale");
    ASSERT_TRUE(settled) << settled.error() << "\nmember states:\n" << recorder.describe();
    ASSERT_TRUE(recorder.saw(str_at(*settled, "/metadata/resourceVersion"), 30s))
        << "the recorder's watch never delivered the settled version";
    std::cout << "[ scale ] workers -> " << workers << ": ready after " << seconds_since(start)
              << " s\n";
    EXPECT_EQ(str_at(*settled, "/status/memberSummary"), summary);
    EXPECT_EQ(condition(*settled, "Ready"), "True");
    EXPECT_EQ(condition(*settled, "Progressing"), "False");
    EXPECT_EQ(condition(*settled, "Degraded"), "False");
    auto members = status_members(*settled, "worker");
    EXPECT_EQ(names_of(members), member_names("scale", "worker", workers));
  };
  ASSERT_NO_FATAL_FAILURE(scale(5, "7/7"));
  ASSERT_NO_FATAL_FAILURE(scale(2, "4/4"));

  // Removed members' PVCs go (default whenScaled: Delete) once their pods are gone.
  for (int i = 2; i < 5; ++i) {
    const auto member = "scale-worker-" + std::to_string(i);
    auto pod_gone = wait_for_absent(*client_, kPods, ns_, member, 60s);
    EXPECT_TRUE(pod_gone) << pod_gone.error();
    auto pvc_gone = wait_for_absent(*client_, kPersistentVolumeClaims, ns_, "data-" + member, 60s);
    EXPECT_TRUE(pvc_gone) << pvc_gone.error();
  }
  std::cout << "member states:\n" << recorder.describe();
  const auto history = recorder.history();
  auto states_of = [&](const std::string& member) {
    auto it = history.find("worker/" + member);
    return it == history.end() ? std::vector<std::string>{} : it->second;
  };
  for (int i = 3; i < 5; ++i) {
    const auto states = states_of("scale-worker-" + std::to_string(i));
    ASSERT_FALSE(states.empty()) << i;
    EXPECT_TRUE(states.front() == "create_pending" || states.front() == "creating")
        << "a new member starts create_pending or creating, not " << states.front();
    EXPECT_NE(std::find(states.begin(), states.end(), "ready"), states.end());
  }
  for (int i = 2; i < 5; ++i) {
    auto states = states_of("scale-worker-" + std::to_string(i));
    ASSERT_FALSE(states.empty()) << i;
    EXPECT_EQ(states.back(), "gone");
    auto last_ready = std::find(states.rbegin(), states.rend(), "ready");
    ASSERT_NE(last_ready, states.rend()) << i;
    const bool announced = std::any_of(states.rbegin(), last_ready, [](const std::string& s) {
      return s == "delete_pending" || s == "deleting";
    });
    EXPECT_TRUE(announced) << "member " << i << " left without delete_pending/deleting";
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(states_of("scale-worker-" + std::to_string(i)), std::vector<std::string>{"ready"})
        << "members that stay are never disturbed";
  }

  auto services =
      list_objects(*client_, kServices, ns_, stack_selector("scale") + ",kstack.io/role=worker");
  EXPECT_EQ(names_of(services), member_names("scale", "worker", 2));
  EXPECT_EQ(claims_of(*client_, ns_, "scale"),
            (std::vector<std::string>{"data-scale-controller-0", "data-scale-controller-1",
                                      "data-scale-worker-0", "data-scale-worker-1"}));

  // Events on the Stack: each scale of the StatefulSet, each removed member's Service and claim.
  const auto uid = str_at(*stack, "/metadata/uid");
  auto scaled = wait_for_event_items(
      *client_, ns_, uid, "Scaled",
      {"StatefulSet scale-worker replicas 3 -> 5", "StatefulSet scale-worker replicas 5 -> 2"},
      30s);
  EXPECT_TRUE(scaled) << scaled.error();
  std::vector<std::string> deleted;
  for (int i = 2; i < 5; ++i) {
    deleted.push_back(
        fmt::format("Service scale-worker-{} deleted: its member is no longer in the Stack", i));
    deleted.push_back(fmt::format(
        "PersistentVolumeClaim data-scale-worker-{} deleted: its member was removed", i));
  }
  auto gone = wait_for_event_items(*client_, ns_, uid, "Deleted", deleted, 30s);
  EXPECT_TRUE(gone) << gone.error();
}

TEST_F(ReconcilerTest, ScalingDownWithWhenScaledRetainKeepsThePvcsWithoutTheStacksOwnerReference) {
  ASSERT_NO_FATAL_FAILURE(start_controller(controller_options(ns_)));
  ASSERT_TRUE(controller_);
  auto manifest = ring_stack(ns_, "keep", 2, 3);
  set_retention(manifest, "Retain", "");
  create(kStacks, manifest);
  auto stack = wait_stack_ready(*client_, ns_, "keep");
  ASSERT_TRUE(stack) << stack.error();
  const std::string uid = str_at(*stack, "/metadata/uid");
  auto before = list_objects(*client_, kPersistentVolumeClaims, ns_);

  auto patched = client_->patch(kStacks, ns_, "keep", kube::PatchType::kJson,
                                R"([{"op":"replace","path":"/spec/roles/1/members","value":1}])");
  ASSERT_TRUE(patched) << patched.error().to_string();
  auto settled = wait_settled("keep");
  ASSERT_TRUE(settled) << settled.error();
  EXPECT_EQ(str_at(*settled, "/status/memberSummary"), "3/3");

  for (int i = 1; i < 3; ++i) {
    const auto member = "keep-worker-" + std::to_string(i);
    auto pod_gone = wait_for_absent(*client_, kPods, ns_, member, 60s);
    EXPECT_TRUE(pod_gone) << pod_gone.error();
    auto released = wait_for_object(
        *client_, kPersistentVolumeClaims, ns_, "data-" + member,
        [&](const json::value& pvc) { return !referenced_by(pvc, uid); }, kRepairTimeout);
    ASSERT_TRUE(released) << released.error();
    EXPECT_FALSE(deleting(*released)) << member;
    EXPECT_EQ(str_at(*released, "/metadata/uid"),
              str_at(before.at("data-" + member), "/metadata/uid"))
        << "the same claim, not a new one";
    EXPECT_EQ(str_at(*released, "/metadata/annotations/kstack.io~1retained"), "whenScaled")
        << member;
    auto svc_gone = wait_for_absent(*client_, kServices, ns_, member, 60s);
    EXPECT_TRUE(svc_gone) << svc_gone.error();
  }
  // Still there after the Stack settled (nothing deletes them later).
  auto after = wait_stack_ready(*client_, ns_, "keep");
  ASSERT_TRUE(after) << after.error();
  auto claims = list_objects(*client_, kPersistentVolumeClaims, ns_);
  for (const char* name : {"data-keep-worker-1", "data-keep-worker-2"}) {
    ASSERT_EQ(claims.count(name), 1u) << name;
    EXPECT_FALSE(deleting(claims.at(name))) << name;
  }
}

// What a SIGKILL between the StatefulSet controller creating a member's claim and kstack
// adopting it leaves behind (found by the kill test at 20 rounds): a claim with kstack's labels
// and no ownerReference. Its member scaled away, or its Stack deleted, it must still go.
TEST_F(ReconcilerTest, ClaimsKstackNeverAdoptedGoWithTheirMemberAndWithTheStack) {
  ASSERT_NO_FATAL_FAILURE(start_controller(controller_options(ns_)));
  ASSERT_TRUE(controller_);
  create(kStacks, ring_stack(ns_, "unadopted", 1, 2));
  auto stack = wait_stack_ready(*client_, ns_, "unadopted");
  ASSERT_TRUE(stack) << stack.error();
  const std::string uid = str_at(*stack, "/metadata/uid");

  // The operator stops; the claims of worker-1 and controller-0 lose kstack's ownerReference,
  // as if it had never adopted them.
  controller_->stop();
  controller_.reset();
  auto disown = [&](const std::string& claim) {
    auto patched = client_->patch(kPersistentVolumeClaims, ns_, claim, kube::PatchType::kJson,
                                  R"([{"op":"remove","path":"/metadata/ownerReferences"}])");
    ASSERT_TRUE(patched) << claim << ": " << patched.error().to_string();
    ASSERT_TRUE(controller_references(*patched).empty()) << claim;
  };
  ASSERT_NO_FATAL_FAILURE(disown("data-unadopted-worker-1"));
  ASSERT_NO_FATAL_FAILURE(disown("data-unadopted-controller-0"));

  // Scaled to one worker while it is down: the restarted operator deletes worker-1's claim
  // (whenScaled: Delete) and adopts controller-0's again (its member stays).
  auto patched = client_->patch(kStacks, ns_, "unadopted", kube::PatchType::kJson,
                                R"([{"op":"replace","path":"/spec/roles/1/members","value":1}])");
  ASSERT_TRUE(patched) << patched.error().to_string();
  ASSERT_NO_FATAL_FAILURE(start_controller(controller_options(ns_)));
  ASSERT_TRUE(controller_);
  auto settled = wait_settled("unadopted");
  ASSERT_TRUE(settled) << settled.error();
  auto pvc_gone =
      wait_for_absent(*client_, kPersistentVolumeClaims, ns_, "data-unadopted-worker-1", 60s);
  EXPECT_TRUE(pvc_gone) << pvc_gone.error() << "\n" << describe_stack(*client_, ns_, "unadopted");
  auto adopted = wait_for_object(
      *client_, kPersistentVolumeClaims, ns_, "data-unadopted-controller-0",
      [&](const json::value& pvc) { return controlled_by(pvc, uid); }, kRepairTimeout);
  EXPECT_TRUE(adopted) << adopted.error();

  // Stopped again, a claim disowned, the Stack deleted: the restarted operator's cleanup
  // deletes that claim too before it lets the Stack go.
  controller_->stop();
  controller_.reset();
  ASSERT_NO_FATAL_FAILURE(disown("data-unadopted-worker-0"));
  ASSERT_TRUE(client_->remove(kStacks, ns_, "unadopted"));
  ASSERT_NO_FATAL_FAILURE(start_controller(controller_options(ns_)));
  ASSERT_TRUE(controller_);
  auto absent = wait_for_absent(*client_, kStacks, ns_, "unadopted", 90s);
  ASSERT_TRUE(absent) << absent.error() << "\n" << describe_stack(*client_, ns_, "unadopted");
  auto claims = wait_for(
      *client_, kPersistentVolumeClaims, ns_, "", [](const Objects& o) { return o.empty(); }, 60s);
  EXPECT_TRUE(claims) << claims.error();
}

TEST_F(ReconcilerTest, DeletingAStackRemovesEverythingItOwnsAndThenTheStack) {
  ASSERT_NO_FATAL_FAILURE(start_controller(controller_options(ns_)));
  ASSERT_TRUE(controller_);
  create(kStacks, ring_stack(ns_, "gone", 2, 1));
  auto stack = wait_stack_ready(*client_, ns_, "gone");
  ASSERT_TRUE(stack) << stack.error();
  ASSERT_EQ(claims_of(*client_, ns_, "gone").size(), 3u);

  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(client_->remove(kStacks, ns_, "gone"));
  auto absent = wait_for_absent(*client_, kStacks, ns_, "gone", 90s);
  ASSERT_TRUE(absent) << absent.error() << "\n" << describe_stack(*client_, ns_, "gone");
  std::cout << "[ delete ] Stack gone after " << seconds_since(start) << " s\n";
  for (const auto* type : {&kStatefulSets, &kServices, &kPods}) {
    auto none = wait_for(
        *client_, *type, ns_, stack_selector("gone"), [](const Objects& o) { return o.empty(); },
        60s);
    EXPECT_TRUE(none) << none.error();
  }
  auto claims = wait_for(
      *client_, kPersistentVolumeClaims, ns_, "",
      [](const Objects& o) {
        return std::none_of(o.begin(), o.end(),
                            [](const auto& c) { return c.first.rfind("data-gone-", 0) == 0; });
      },
      60s);
  EXPECT_TRUE(claims) << claims.error();
  std::cout << "[ delete ] owned objects gone after " << seconds_since(start) << " s\n";
}

TEST_F(ReconcilerTest, DeletingAStackWithWhenDeletedRetainKeepsItsPvcs) {
  auto options = controller_options(ns_);
  options.resync_period = 1s;  // passes over the settled Stack, to see that they delete nothing
  ASSERT_NO_FATAL_FAILURE(start_controller(options));
  ASSERT_TRUE(controller_);
  auto manifest = ring_stack(ns_, "kept", 2, 1);
  set_retention(manifest, "", "Retain");
  create(kStacks, manifest);
  auto stack = wait_stack_ready(*client_, ns_, "kept");
  ASSERT_TRUE(stack) << stack.error();
  const std::string uid = str_at(*stack, "/metadata/uid");
  auto before = list_objects(*client_, kPersistentVolumeClaims, ns_);
  ASSERT_EQ(before.size(), 3u);

  ASSERT_TRUE(client_->remove(kStacks, ns_, "kept"));
  auto absent = wait_for_absent(*client_, kStacks, ns_, "kept", 90s);
  ASSERT_TRUE(absent) << absent.error() << "\n" << describe_stack(*client_, ns_, "kept");
  // Once the pods are gone nothing holds the claims any more: the garbage collector would have
  // taken them by now if they still named the Stack as owner.
  auto no_pods = wait_for(
      *client_, kPods, ns_, stack_selector("kept"), [](const Objects& o) { return o.empty(); },
      60s);
  ASSERT_TRUE(no_pods) << no_pods.error();
  auto no_sets = wait_for(
      *client_, kStatefulSets, ns_, stack_selector("kept"),
      [](const Objects& o) { return o.empty(); }, 60s);
  ASSERT_TRUE(no_sets) << no_sets.error();
  auto after = list_objects(*client_, kPersistentVolumeClaims, ns_);
  ASSERT_EQ(names_of(after), names_of(before));
  for (const auto& [name, pvc] : after) {
    EXPECT_FALSE(deleting(pvc)) << name;
    EXPECT_FALSE(referenced_by(pvc, uid)) << name;
    EXPECT_EQ(str_at(pvc, "/metadata/uid"), str_at(before.at(name), "/metadata/uid"));
    EXPECT_EQ(str_at(pvc, "/metadata/annotations/kstack.io~1retained"), "whenDeleted") << name;
  }

  // The Stack made again with one controller: its members' retained claims are adopted again
  // (the kstack.io/retained mark goes with kstack's apply); controller-1's, which no member of
  // the new Stack uses, is left as it was.
  create(kStacks, ring_stack(ns_, "kept", 1, 1));
  auto again = wait_settled("kept");
  ASSERT_TRUE(again) << again.error();
  const std::string new_uid = str_at(*again, "/metadata/uid");
  for (const char* name : {"data-kept-controller-0", "data-kept-worker-0"}) {
    auto adopted = wait_for_object(
        *client_, kPersistentVolumeClaims, ns_, name,
        [&](const json::value& pvc) {
          return controlled_by(pvc, new_uid) &&
                 str_at(pvc, "/metadata/annotations/kstack.io~1retained").empty();
        },
        kRepairTimeout);
    ASSERT_TRUE(adopted) << name << ": " << adopted.error();
    EXPECT_EQ(str_at(*adopted, "/metadata/uid"), str_at(before.at(name), "/metadata/uid")) << name;
  }
  // Resync passes later, the unused claim is still there, untouched.
  const auto passes = controller_->controller().stats().resyncs;
  ASSERT_TRUE(
      wait_until([&] { return controller_->controller().stats().resyncs >= passes + 2; }, 60s));
  auto unused = client_->get(kPersistentVolumeClaims, ns_, "data-kept-controller-1");
  ASSERT_TRUE(unused) << unused.error().to_string();
  EXPECT_FALSE(deleting(*unused));
  EXPECT_TRUE(controller_references(*unused).empty());
  EXPECT_EQ(str_at(*unused, "/metadata/annotations/kstack.io~1retained"), "whenDeleted");
}

// Webhook off (none runs in this binary): the AppType is deleted under a running Stack.
TEST_F(ReconcilerTest, AMissingAppTypeDegradesTheStackAndDeletesNothing) {
  auto options = controller_options(ns_);
  options.resync_period = 1s;  // so that "a few reconcile passes" pass quickly
  ASSERT_NO_FATAL_FAILURE(start_controller(options));
  ASSERT_TRUE(controller_);
  create(kStacks, ring_stack(ns_, "orphan", 2, 1));
  auto stack = wait_stack_ready(*client_, ns_, "orphan");
  ASSERT_TRUE(stack) << stack.error();

  auto uids = [&] {
    std::map<std::string, std::string> out;
    for (const auto* type : {&kStatefulSets, &kServices, &kPods}) {
      for (const auto& [name, o] : list_objects(*client_, *type, ns_, stack_selector("orphan"))) {
        out[type->plural + "/" + name] =
            str_at(o, "/metadata/uid") + (deleting(o) ? " (deleting)" : "");
      }
    }
    for (const auto& [name, o] : list_objects(*client_, kPersistentVolumeClaims, ns_)) {
      out["pvc/" + name] = str_at(o, "/metadata/uid") + (deleting(o) ? " (deleting)" : "");
    }
    return out;
  };
  const auto before = uids();
  ASSERT_EQ(before.size(), 2u + 4u + 3u + 3u);

  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(client_->remove(kAppTypes, ns_, "ring"));
  auto degraded = wait_for_object(
      *client_, kStacks, ns_, "orphan",
      [](const json::value& s) {
        return condition(s, "Degraded") == "True" &&
               str_at(condition_of(s, "Degraded"), "/reason") == "AppTypeMissing";
      },
      kRepairTimeout);
  ASSERT_TRUE(degraded) << degraded.error() << "\n" << describe_stack(*client_, ns_, "orphan");
  std::cout << "[ apptype missing ] Degraded/AppTypeMissing after " << seconds_since(start)
            << " s; state " << str_at(*degraded, "/status/state") << ", Ready "
            << condition(*degraded, "Ready") << "\n";

  auto& controller = controller_->controller();
  const auto passes = controller.stats().resyncs;
  EXPECT_TRUE(wait_until([&] { return controller.stats().resyncs >= passes + 3; }, 30s))
      << "three more resyncs of the Stack";
  EXPECT_EQ(uids(), before) << "nothing is deleted or replaced while the AppType is missing";
  auto still = client_->get(kStacks, ns_, "orphan");
  ASSERT_TRUE(still);
  EXPECT_EQ(condition(*still, "Degraded"), "True");
  EXPECT_FALSE(deleting(*still));
}

}  // namespace
}  // namespace kstack::testenv::e2e
