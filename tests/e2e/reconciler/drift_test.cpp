// The drift rows of docs/spec.md §4, one test each, on one shared Stack "drift" (2 controllers + 3
// workers with storage) and a Controller whose periodic resync is far away (5 min): every
// repair must come from a watch event. Each test writes the drift as a user would, waits for
// the repair with a watch, prints the latency (docs/spec.md §4: within 1 s of the event; not
// asserted, a loaded CI machine is no benchmark) and ends with the Stack settled again.
#include <algorithm>
#include <iostream>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "tests/e2e/reconciler/support.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using catalog::resources::kStacks;
using kube::resources::kPersistentVolumeClaims;
using kube::resources::kPods;
using kube::resources::kServices;
using kube::resources::kStatefulSets;

constexpr const char* kStack = "drift";

json::value at_or_null(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  return p != nullptr ? *p : json::value(nullptr);
}

// The suite shares one namespace, Controller and Stack (a Stack per test would cost more
// than the repairs); each test starts from the Stack settled and leaves it settled.
class DriftTest : public ReconcilerTest {
 protected:
  struct Shared {
    std::shared_ptr<kube::Client> client;
    std::string ns;
    std::unique_ptr<RunningController> controller;
    std::string stack_uid;
    std::string error;  // why the suite could not be set up
    std::vector<std::pair<std::string, double>> latencies;
  };
  static Shared& shared() {
    static Shared s;
    return s;
  }

  static void SetUpTestSuite() {
    auto& s = shared();
    if (auto rbac = install_operator_rbac(); !rbac) {
      s.error = rbac.error();
      return;
    }
    s.client = admin();
    s.ns = make_namespace(*s.client, "drift");
    for (const char* file : {"ring-apptype.yaml"}) {
      if (auto made = s.client->create(catalog::resources::kAppTypes, s.ns, fixture(file, s.ns));
          !made) {
        s.error = made.error().to_string();
        return;
      }
    }
    auto running = RunningController::start(controller_options(s.ns));
    if (!running) {
      s.error = running.error();
      return;
    }
    s.controller = std::move(*running);
    if (auto made = s.client->create(kStacks, s.ns, ring_stack(s.ns, kStack, 2, 3)); !made) {
      s.error = made.error().to_string();
      return;
    }
    auto ready = wait_stack_ready(*s.client, s.ns, kStack);
    if (!ready) {
      s.error = ready.error();
      return;
    }
    s.stack_uid = str_at(*ready, "/metadata/uid");
  }

  static void TearDownTestSuite() {
    auto& s = shared();
    std::cout << "[ drift ] repair latencies (drift write -> repaired object seen by a watch):\n";
    for (const auto& [what, seconds] : s.latencies) {
      std::cout << fmt::format("  {:<52} {:7.3f} s\n", what, seconds);
    }
    if (s.client != nullptr && s.controller != nullptr) {
      auto deleted = delete_stacks(*s.client, s.ns, std::chrono::seconds(90));
      if (!deleted) std::cout << "drift: Stack not deleted: " << deleted.error() << "\n";
      s.controller->stop();
    }
    if (s.client != nullptr) (void)s.client->remove(kube::resources::kNamespaces, "", s.ns);
    s = Shared{};
  }

  void SetUp() override {
    const auto& s = shared();
    ASSERT_TRUE(s.error.empty()) << "drift suite set-up: " << s.error;
    client_ = s.client;
    ns_ = s.ns;
    auto healthy = wait_for_object(
        *client_, kStacks, ns_, kStack,
        [](const json::value& stack) {
          return stack_ready(stack) && condition(stack, "Degraded") == "False";
        },
        5s);
    if (!healthy) {
      // A drift an earlier test left unrepaired must not fail this one too: start afresh.
      std::cout << "[ drift ] the Stack is not healthy, recreating it:\n"
                << describe_stack(*client_, ns_, kStack);
      auto deleted = delete_stacks(*client_, ns_, 90s);
      ASSERT_TRUE(deleted) << deleted.error();
      auto made = client_->create(kStacks, ns_, ring_stack(ns_, kStack, 2, 3));
      ASSERT_TRUE(made) << made.error().to_string();
      shared().stack_uid = str_at(*made, "/metadata/uid");
    }
    stack_uid_ = shared().stack_uid;
    auto settled = wait_settled(kStack);
    ASSERT_TRUE(settled) << "before the drift: " << settled.error();
  }
  void TearDown() override {}  // the suite owns the namespace and the Controller

  static void record_latency(const std::string& what, double seconds) {
    shared().latencies.emplace_back(what, seconds);
  }

  json::value get(const kube::ResourceType& type, const std::string& name) {
    auto o = client_->get(type, ns_, name);
    if (!o) {
      ADD_FAILURE() << "get " << type.kind << " " << name << ": " << o.error().to_string();
      return nullptr;
    }
    return std::move(*o);
  }

  void json_patch(const kube::ResourceType& type, const std::string& name, const std::string& ops) {
    auto patched = client_->patch(type, ns_, name, kube::PatchType::kJson, ops);
    ASSERT_TRUE(patched) << "patch " << name << " " << ops << ": " << patched.error().to_string();
  }

  // Waits (with a watch) until `repaired` holds for the object, prints and records the time
  // since `start`, and returns the object.
  json::value expect_repaired(const std::string& what, const kube::ResourceType& type,
                              const std::string& name,
                              const std::function<bool(const json::value&)>& repaired,
                              std::chrono::steady_clock::time_point start) {
    auto object = wait_for_object(*client_, type, ns_, name, repaired, kRepairTimeout);
    const double seconds = seconds_since(start);
    if (!object) {
      ADD_FAILURE() << what << ": not repaired within " << kRepairTimeout.count()
                    << " s: " << object.error() << "\n"
                    << describe_stack(*client_, ns_, kStack);
      return nullptr;
    }
    std::cout << "[ drift ] " << what << ": repaired after " << seconds << " s\n";
    record_latency(what, seconds);
    RecordProperty("repair_seconds", fmt::format("{:.3f}", seconds));
    return std::move(*object);
  }

  void expect_settled() {
    auto settled = wait_settled(kStack);
    EXPECT_TRUE(settled) << settled.error();
  }

  std::string stack_uid_;
};

TEST_F(DriftTest, ADeletedHeadlessServiceIsRecreated) {
  const auto old = get(kServices, kStack);
  ASSERT_TRUE(client_->remove(kServices, ns_, kStack));
  const auto start = std::chrono::steady_clock::now();
  expect_repaired(
      "headless Service deleted", kServices, kStack,
      [&](const json::value& s) {
        return str_at(s, "/metadata/uid") != str_at(old, "/metadata/uid") &&
               str_at(s, "/spec/clusterIP") == "None" &&
               at_or_null(s, "/spec/publishNotReadyAddresses") == json::value(true) &&
               controlled_by(s, stack_uid_);
      },
      start);
  expect_settled();
}

TEST_F(DriftTest, AnEditedHeadlessServiceIsRestored) {
  const auto old = get(kServices, kStack);
  ASSERT_EQ(at_or_null(old, "/spec/publishNotReadyAddresses"), json::value(true));
  ASSERT_TRUE(at_or_null(old, "/spec/selector").is_object()) << json::serialize(old);
  ASSERT_NO_FATAL_FAILURE(json_patch(kServices, kStack, R"([
      {"op":"replace","path":"/spec/publishNotReadyAddresses","value":false},
      {"op":"replace","path":"/spec/selector","value":{"app":"somebody-else"}}])"));
  const auto start = std::chrono::steady_clock::now();
  expect_repaired(
      "headless Service edited", kServices, kStack,
      [&](const json::value& s) {
        return str_at(s, "/metadata/uid") == str_at(old, "/metadata/uid") &&
               at_or_null(s, "/spec/publishNotReadyAddresses") == json::value(true) &&
               at_or_null(s, "/spec/selector") == at_or_null(old, "/spec/selector");
      },
      start);
  expect_settled();
}

TEST_F(DriftTest, ADeletedMemberServiceIsRecreated) {
  const auto old = get(kServices, "drift-worker-1");
  ASSERT_TRUE(client_->remove(kServices, ns_, "drift-worker-1"));
  const auto start = std::chrono::steady_clock::now();
  expect_repaired(
      "member Service deleted", kServices, "drift-worker-1",
      [&](const json::value& s) {
        return str_at(s, "/metadata/uid") != str_at(old, "/metadata/uid") &&
               at_or_null(s, "/spec/selector") == at_or_null(old, "/spec/selector") &&
               at_or_null(s, "/spec/ports") == at_or_null(old, "/spec/ports");
      },
      start);
  expect_settled();
}

TEST_F(DriftTest, AMemberServiceWithAnEditedSelectorIsRestored) {
  const auto old = get(kServices, "drift-controller-1");
  ASSERT_NO_FATAL_FAILURE(json_patch(kServices, "drift-controller-1", R"([{"op":"replace",
      "path":"/spec/selector/statefulset.kubernetes.io~1pod-name","value":"somebody-else"}])"));
  const auto start = std::chrono::steady_clock::now();
  expect_repaired(
      "member Service selector edited", kServices, "drift-controller-1",
      [&](const json::value& s) {
        return at_or_null(s, "/spec/selector") == at_or_null(old, "/spec/selector");
      },
      start);
  // The repair is reported on the Stack, naming the object and the field.
  auto repaired = wait_for_event_items(*client_, ns_, stack_uid_, "Repaired",
                                       {"Service drift-controller-1 restored to its desired state "
                                        "(/spec/selector/statefulset.kubernetes.io/pod-name)"},
                                       30s);
  EXPECT_TRUE(repaired) << repaired.error();
  expect_settled();
}

TEST_F(DriftTest, AMemberServiceWithEditedPortsIsRestored) {
  const auto old = get(kServices, "drift-controller-0");
  ASSERT_NO_FATAL_FAILURE(json_patch(kServices, "drift-controller-0",
                                     R"([{"op":"replace","path":"/spec/ports/0/port","value":9999},
          {"op":"replace","path":"/spec/ports/0/targetPort","value":9999}])"));
  const auto start = std::chrono::steady_clock::now();
  auto repaired = expect_repaired(
      "member Service ports edited", kServices, "drift-controller-0",
      [&](const json::value& s) {
        return at_or_null(s, "/spec/ports") == at_or_null(old, "/spec/ports");
      },
      start);
  if (repaired.is_null()) {
    std::cout << "ports now: "
              << json::serialize(at_or_null(get(kServices, "drift-controller-0"), "/spec/ports"))
              << "\nwanted: " << json::serialize(at_or_null(old, "/spec/ports")) << "\n";
  }
  expect_settled();
}

TEST_F(DriftTest, ADeletedStatefulSetIsRecreatedAndTheMemberKeepsItsData) {
  auto& cp = control_plane();
  auto wrote = kubectl_exec(cp, ns_, "drift-worker-0", "app",
                            {"sh", "-c", "echo kept > /var/lib/ring/proof"});
  ASSERT_EQ(wrote.exit_code, 0) << wrote.err;
  const auto old_set = get(kStatefulSets, "drift-worker");
  const auto old_pod = get(kPods, "drift-worker-0");
  const auto old_claim = get(kPersistentVolumeClaims, "data-drift-worker-0");

  kube::DeleteOptions background;
  background.propagation_policy = "Background";
  ASSERT_TRUE(client_->remove(kStatefulSets, ns_, "drift-worker", background));
  const auto start = std::chrono::steady_clock::now();
  expect_repaired(
      "StatefulSet deleted", kStatefulSets, "drift-worker",
      [&](const json::value& s) {
        return str_at(s, "/metadata/uid") != str_at(old_set, "/metadata/uid") &&
               int_at(s, "/spec/replicas") == 3;
      },
      start);
  auto pod = wait_for_object(
      *client_, kPods, ns_, "drift-worker-0",
      [&](const json::value& p) {
        return str_at(p, "/metadata/uid") != str_at(old_pod, "/metadata/uid") &&
               running_and_ready(p);
      },
      kConvergeTimeout);
  ASSERT_TRUE(pod) << pod.error();
  std::cout << "[ drift ] StatefulSet deleted: member pod running again after "
            << seconds_since(start) << " s\n";
  EXPECT_EQ(str_at(get(kPersistentVolumeClaims, "data-drift-worker-0"), "/metadata/uid"),
            str_at(old_claim, "/metadata/uid"))
      << "the same claim re-attached";
  auto read = kubectl_exec(cp, ns_, "drift-worker-0", "app", {"cat", "/var/lib/ring/proof"});
  EXPECT_EQ(read.exit_code, 0) << read.err;
  EXPECT_EQ(read.out, "kept\n") << "no data loss; kubectl's stderr: " << read.err;
  expect_settled();
}

TEST_F(DriftTest, EditedStatefulSetReplicasAreRestored) {
  ASSERT_NO_FATAL_FAILURE(json_patch(kStatefulSets, "drift-worker",
                                     R"([{"op":"replace","path":"/spec/replicas","value":1}])"));
  const auto start = std::chrono::steady_clock::now();
  expect_repaired(
      "StatefulSet replicas edited", kStatefulSets, "drift-worker",
      [](const json::value& s) { return int_at(s, "/spec/replicas") == 3; }, start);
  expect_settled();
}

TEST_F(DriftTest, AnEditedPodTemplateImageIsRestored) {
  const auto old = get(kStatefulSets, "drift-controller");
  const std::string image = str_at(old, "/spec/template/spec/containers/0/image");
  ASSERT_NO_FATAL_FAILURE(json_patch(kStatefulSets, "drift-controller", R"([{"op":"replace",
      "path":"/spec/template/spec/containers/0/image","value":"example.com/edited:1"}])"));
  const auto start = std::chrono::steady_clock::now();
  expect_repaired(
      "pod template image edited", kStatefulSets, "drift-controller",
      [&](const json::value& s) {
        return str_at(s, "/spec/template/spec/containers/0/image") == image;
      },
      start);
  expect_settled();
}

std::size_t env_index(const json::value& set, std::string_view name) {
  const auto env = at_or_null(set, "/spec/template/spec/containers/0/env");
  if (!env.is_array()) return 0;
  for (std::size_t i = 0; i < env.get_array().size(); ++i) {
    if (str_at(env.get_array()[i], "/name") == name) return i;
  }
  return env.get_array().size();
}

TEST_F(DriftTest, AnEditedPodTemplateEnvValueIsRestored) {
  const auto old = get(kStatefulSets, "drift-worker");
  const auto env = at_or_null(old, "/spec/template/spec/containers/0/env");
  const auto i = env_index(old, "RING_MODE");
  ASSERT_TRUE(env.is_array() && i < env.get_array().size()) << json::serialize(env);
  ASSERT_NO_FATAL_FAILURE(json_patch(
      kStatefulSets, "drift-worker",
      fmt::format(
          R"([{{"op":"replace","path":"/spec/template/spec/containers/0/env/{}/value","value":"tampered"}}])",
          i)));
  const auto start = std::chrono::steady_clock::now();
  expect_repaired(
      "pod template env value edited", kStatefulSets, "drift-worker",
      [&](const json::value& s) {
        return at_or_null(s, "/spec/template/spec/containers/0/env") == env;
      },
      start);
  expect_settled();
}

TEST_F(DriftTest, AnEnvVarAddedToThePodTemplateIsRemoved) {
  const auto old = get(kStatefulSets, "drift-worker");
  const auto env = at_or_null(old, "/spec/template/spec/containers/0/env");
  ASSERT_NO_FATAL_FAILURE(json_patch(kStatefulSets, "drift-worker", R"([{"op":"add",
      "path":"/spec/template/spec/containers/0/env/-","value":{"name":"INTRUDER","value":"1"}}])"));
  const auto start = std::chrono::steady_clock::now();
  auto repaired = expect_repaired(
      "pod template env var added", kStatefulSets, "drift-worker",
      [&](const json::value& s) {
        return at_or_null(s, "/spec/template/spec/containers/0/env") == env;
      },
      start);
  if (repaired.is_null()) {
    std::cout << "env now: "
              << json::serialize(at_or_null(get(kStatefulSets, "drift-worker"),
                                            "/spec/template/spec/containers/0/env"))
              << "\n";
  }
  expect_settled();
}

TEST_F(DriftTest, ARemovedOwnerReferenceIsRestored) {
  ASSERT_NO_FATAL_FAILURE(json_patch(kServices, "drift-worker-0",
                                     R"([{"op":"remove","path":"/metadata/ownerReferences"}])"));
  const auto start = std::chrono::steady_clock::now();
  expect_repaired(
      "Service ownerReference removed", kServices, "drift-worker-0",
      [&](const json::value& s) { return controlled_by(s, stack_uid_); }, start);
  expect_settled();
}

TEST_F(DriftTest, ARemovedStackLabelIsRestoredOnAServiceAndAStatefulSet) {
  constexpr const char* kRemoveLabel =
      R"([{"op":"remove","path":"/metadata/labels/kstack.io~1stack"}])";
  ASSERT_NO_FATAL_FAILURE(json_patch(kServices, "drift-worker-2", kRemoveLabel));
  auto start = std::chrono::steady_clock::now();
  auto has_label = [](const json::value& o) {
    return str_at(o, "/metadata/labels/kstack.io~1stack") == kStack;
  };
  expect_repaired("kstack.io/stack label removed from a Service", kServices, "drift-worker-2",
                  has_label, start);
  ASSERT_NO_FATAL_FAILURE(json_patch(kStatefulSets, "drift-controller", kRemoveLabel));
  start = std::chrono::steady_clock::now();
  expect_repaired("kstack.io/stack label removed from a StatefulSet", kStatefulSets,
                  "drift-controller", has_label, start);
  expect_settled();
}

TEST_F(DriftTest, ARemovedManagedByLabelIsRestored) {
  // Without it the object drops out of kstack's label-filtered caches altogether.
  ASSERT_NO_FATAL_FAILURE(
      json_patch(kServices, "drift-controller-1",
                 R"([{"op":"remove","path":"/metadata/labels/app.kubernetes.io~1managed-by"}])"));
  const auto start = std::chrono::steady_clock::now();
  expect_repaired(
      "managed-by label removed from a Service", kServices, "drift-controller-1",
      [](const json::value& o) {
        return str_at(o, "/metadata/labels/app.kubernetes.io~1managed-by") == "kstack";
      },
      start);
  expect_settled();
}

// The claim is protected (kubernetes.io/pvc-protection) while its pod runs: deleting it only
// marks it. kstack reports the member Degraded; once the pod goes too, the StatefulSet
// controller makes both again and kstack adopts the new claim.
TEST_F(DriftTest, APvcDeletedUnderItsMemberDegradesTheStackUntilTheStatefulSetRecreatesIt) {
  const auto old_claim = get(kPersistentVolumeClaims, "data-drift-worker-2");
  ASSERT_TRUE(client_->remove(kPersistentVolumeClaims, ns_, "data-drift-worker-2"));
  const auto start = std::chrono::steady_clock::now();
  // Degraded, with a reason or message that names the claim.
  auto degraded = wait_for_object(
      *client_, kStacks, ns_, kStack,
      [](const json::value& s) {
        const auto c = condition_of(s, "Degraded");
        const std::string text = str_at(c, "/reason") + " " + str_at(c, "/message");
        return str_at(c, "/status") == "True" &&
               (text.find("PVC") != std::string::npos || text.find("claim") != std::string::npos);
      },
      kRepairTimeout);
  ASSERT_TRUE(degraded) << degraded.error() << "\n" << describe_stack(*client_, ns_, kStack);
  std::cout << "[ drift ] PVC deleted under its member: Degraded after " << seconds_since(start)
            << " s: " << json::serialize(condition_of(*degraded, "Degraded")) << "\n";
  record_latency("PVC deleted (Degraded reported)", seconds_since(start));

  ASSERT_TRUE(client_->remove(kPods, ns_, "drift-worker-2"));
  auto claim = wait_for_object(
      *client_, kPersistentVolumeClaims, ns_, "data-drift-worker-2",
      [&](const json::value& pvc) {
        return str_at(pvc, "/metadata/uid") != str_at(old_claim, "/metadata/uid") &&
               str_at(pvc, "/status/phase") == "Bound" && controlled_by(pvc, stack_uid_);
      },
      90s);
  EXPECT_TRUE(claim) << claim.error() << "\npod: "
                     << json::serialize(at_or_null(get(kPods, "drift-worker-2"), "/status")) << "\n"
                     << describe_stack(*client_, ns_, kStack);
  auto ready = wait_settled(kStack, 90s);
  ASSERT_TRUE(ready) << ready.error();
  EXPECT_EQ(condition(*ready, "Degraded"), "False");
  std::cout << "[ drift ] PVC deleted: new claim adopted and Stack ready after "
            << seconds_since(start) << " s\n";
}

}  // namespace
}  // namespace kstack::testenv::e2e
