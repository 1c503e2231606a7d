// deploy/ applied whole (issue 9, acceptance 2): every file of deploy/kustomization.yaml,
// unmodified, in its order, to the test control plane; the Deployment's pods are created by
// the ReplicaSet controller, scheduled and "run" by the node simulator, which runs their
// readiness probes (--http-probes); for each pod the kstack binary stands in for the container
// with the identity, args, env, user and read-only filesystem of the pod's spec (standin.h),
// on the pod's IP. The API server reaches the webhook through the shipped Service and
// configurations (--enable-aggregator-routing: a Service resolves to its Endpoints, which list
// Ready pods only). Then: admission through both shipped webhooks, a Stack reconciled under
// deploy/rbac.yaml only, and the other replica taking over when the leader dies.
// The binary runs in its own network namespace, where pod IPs are local (pod_network.h). The
// shared e2e environment (reconciler/support.cpp) installs deploy/crds before the
// controller-manager starts, from the same files; applying them again here leaves them as is.
#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "tests/e2e/deploy/manifests.h"
#include "tests/e2e/deploy/standin.h"
#include "tests/e2e/operator/operator_process.h"
#include "tests/e2e/reconciler/support.h"
#include "tests/nodesim/testing/pod_network.h"

#ifndef KSTACK_BINARY
#error "KSTACK_BINARY must name the kstack executable"
#endif

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using catalog::resources::kAppTypes;
using catalog::resources::kStacks;

const kube::ResourceType kDeployments{"apps", "v1", "deployments", "Deployment", true};
const kube::ResourceType kEndpoints{"", "v1", "endpoints", "Endpoints", true};

// Pods scheduled, started and probed (a 5 s readiness period), the operator's start included.
constexpr std::chrono::seconds kPodsTimeout{60};
// The leader's Lease (deployment.yaml keeps kstack's defaults: 15 s) plus the survivor's
// retry period, with room.
constexpr std::chrono::seconds kTakeoverTimeout{45};

const ConfigureEnvironment kConfigure([](EnvironmentOptions& o) {
  o.apiserver_extra_args = {"--enable-aggregator-routing=true"};
  o.node_simulators = 1;
  o.node.extra_args = {"--http-probes"};
});

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

// "major.minor" of the API server (GET /version).
std::string server_version() {
  auto [code, body] = control_plane().get("/version");
  boost::system::error_code ec;
  auto v = json::parse(body, ec);
  if (code != 200 || ec) return {};
  return str_at(v, "/major") + "." + str_at(v, "/minor");
}

// spec.selector.matchLabels as a label selector.
std::string selector_of(const json::value& deployment) {
  std::vector<std::string> terms;
  boost::system::error_code ec;
  const auto* labels = deployment.find_pointer("/spec/selector/matchLabels", ec);
  if (labels != nullptr && labels->is_object()) {
    for (const auto& [k, v] : labels->get_object()) {
      terms.push_back(std::string(k) + "=" + (v.is_string() ? std::string(v.get_string()) : ""));
    }
  }
  std::string out;
  for (const auto& t : terms) out += (out.empty() ? "" : ",") + t;
  return out;
}

// containerPort of the port named `name` of the pod's first container (0 if none).
std::uint16_t container_port(const json::value& pod, std::string_view name) {
  boost::system::error_code ec;
  const auto* ports = pod.find_pointer("/spec/containers/0/ports", ec);
  if (ports == nullptr || !ports->is_array()) return 0;
  for (const auto& p : ports->get_array()) {
    if (str_at(p, "/name") == name) return static_cast<std::uint16_t>(int_at(p, "/containerPort"));
  }
  return 0;
}

// The ready addresses of the Endpoints, as IPs.
std::vector<std::string> ready_addresses(const json::value& endpoints) {
  std::vector<std::string> ips;
  boost::system::error_code ec;
  const auto* subsets = endpoints.find_pointer("/subsets", ec);
  if (subsets == nullptr || !subsets->is_array()) return ips;
  for (const auto& s : subsets->get_array()) {
    const auto* addresses = s.as_object().if_contains("addresses");
    if (addresses == nullptr || !addresses->is_array()) continue;
    for (const auto& a : addresses->get_array()) ips.push_back(str_at(a, "/ip"));
  }
  std::sort(ips.begin(), ips.end());
  return ips;
}

// Creates through the admission webhooks. The API server picks a webhook's address from its
// own cache of the Service's Endpoints, a moment behind what a watch shows: a call made in that
// moment fails ("failed calling webhook") and is retried, for a bounded time. Any other answer,
// a webhook's refusal included, is final.
kube::Result<json::value> create_admitted(kube::Client& client, const kube::ResourceType& type,
                                          const std::string& ns, const json::value& object) {
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  for (;;) {
    auto r = client.create(type, ns, object);
    if (r || r.error().to_string().find("failed calling webhook") == std::string::npos ||
        std::chrono::steady_clock::now() >= deadline) {
      return r;
    }
    std::cout << "[ retry ] " << r.error().to_string() << "\n";
    std::this_thread::sleep_for(200ms);
  }
}

// The pod of the Lease holder: kstack's identity is "<POD_NAME>_<random>".
std::string holder_pod() {
  const std::string holder = str_at(lease(), "/spec/holderIdentity");
  const auto underscore = holder.rfind('_');
  return underscore == std::string::npos ? holder : holder.substr(0, underscore);
}

class DeployE2E : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure()) {
      for (auto& [pod, process] : stand_ins_) {
        std::cout << "---- " << process.log().string() << ":\n" << tail_file(process.log(), 60);
      }
    }
    for (auto& [pod, process] : stand_ins_) process.kill_now();
  }

  // Applies every document of deploy/ but those that need a newer Kubernetes than the
  // server's (kstack.io/min-kubernetes-version, the documented 1.20 path of
  // docs/quick-start.md); returns the applied and the left-out ones.
  void apply_deploy(std::vector<ManifestDocument>& applied,
                    std::vector<ManifestDocument>& skipped) {
    auto unlisted = unlisted_manifests(deploy_);
    ASSERT_TRUE(unlisted) << unlisted.error();
    EXPECT_TRUE(unlisted->empty())
        << "not in a kustomization, so never applied: " << join(*unlisted);
    auto docs = kustomization_documents(deploy_);
    ASSERT_TRUE(docs) << docs.error();
    auto crd_files = kustomization_resources(deploy_ / "crds");
    ASSERT_TRUE(crd_files) << crd_files.error();
    for (const auto& f : *crd_files) {
      EXPECT_TRUE(std::any_of(docs->begin(), docs->end(),
                              [&](const auto& d) { return d.file == "crds/" + f; }))
          << "crds/" << f << " is in crds/kustomization.yaml but not in kustomization.yaml";
    }
    const std::string version = server_version();
    ASSERT_FALSE(version.empty());
    for (const auto& doc : *docs) {
      if (!doc.min_kubernetes_version.empty() &&
          version_less(version, doc.min_kubernetes_version)) {
        skipped.push_back(doc);
        continue;
      }
      auto r = control_plane().kubectl({"apply", "-f", "-"}, doc.text);
      ASSERT_TRUE(r.ok()) << "kubectl apply " << doc.describe() << ": " << r.err;
      applied.push_back(doc);
    }
    std::vector<std::string> crds;
    for (const auto& d : applied) {
      if (d.kind == "CustomResourceDefinition") crds.push_back("crd/" + d.name);
    }
    std::vector<std::string> wait = {"wait", "--for=condition=Established", "--timeout=60s"};
    wait.insert(wait.end(), crds.begin(), crds.end());
    auto established = control_plane().kubectl(wait);
    ASSERT_TRUE(established.ok()) << established.err;
  }

  static const ManifestDocument* find_kind(const std::vector<ManifestDocument>& docs,
                                           std::string_view kind) {
    auto it = std::find_if(docs.begin(), docs.end(), [&](const auto& d) { return d.kind == kind; });
    return it == docs.end() ? nullptr : &*it;
  }

  // Waits until the Deployment's pods have IPs (the node simulator runs them) and starts the
  // operator standing in for each.
  void start_stand_ins(const std::string& ns, const std::string& selector, std::size_t replicas) {
    auto pods = wait_for(
        *admin(), kube::resources::kPods, ns, selector,
        [&](const Objects& o) {
          return o.size() == replicas && std::all_of(o.begin(), o.end(), [](const auto& p) {
                   return !str_at(p.second, "/status/podIP").empty();
                 });
        },
        kPodsTimeout);
    ASSERT_TRUE(pods) << "the Deployment's pods were not created and run: " << pods.error();
    const auto server = control_plane().server();
    StandInRuntime runtime{KSTACK_BINARY, "127.0.0.1", server.substr(server.rfind(':') + 1),
                           control_plane().work_dir()};
    for (const auto& [name, pod] : *pods) {
      auto spec = stand_in_spec(pod);
      ASSERT_TRUE(spec) << spec.error();
      auto process = start_stand_in(*spec, runtime);
      ASSERT_TRUE(process) << process.error();
      pods_[name] = pod;
      stand_ins_.emplace(name, std::move(*process));
    }
  }

  std::string stand_in_logs() {
    std::string out;
    for (auto& [pod, process] : stand_ins_) {
      out += fmt::format("---- {} ({}):\n{}", pod,
                         process.running() ? "running" : process.how_it_ended(),
                         tail_file(process.log(), 20));
    }
    return out;
  }

  std::string metrics_of(const std::string& pod) {
    const auto& p = pods_.at(pod);
    auto r = http_get(str_at(p, "/status/podIP"), container_port(p, "metrics"), "/metrics");
    return r && r->status == 200 ? r->body : std::string();
  }

  const fs::path deploy_ = fs::path(KSTACK_SOURCE_DIR) / "deploy";
  std::map<std::string, json::value> pods_;  // as first run, by name
  std::map<std::string, ChildProcess> stand_ins_;
};

TEST_F(DeployE2E, TheShippedManifestsRunAnOperatorThatServesAdmissionAndReconciles) {
  ASSERT_TRUE(in_pod_network()) << "pod IPs must be valid Endpoints (pod_network.h)";
  // ---- deploy/ applied whole; on 1.20 only what needs 1.21 is left out.
  std::vector<ManifestDocument> applied;
  std::vector<ManifestDocument> skipped;
  const auto applying = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(apply_deploy(applied, skipped));
  std::vector<std::string> skipped_names;
  for (const auto& d : skipped) skipped_names.push_back(d.describe());
  ASSERT_EQ(skipped.size(), 1u) << "left out: " << join(skipped_names);
  EXPECT_EQ(skipped[0].api_version, "policy/v1");
  EXPECT_EQ(skipped[0].kind, "PodDisruptionBudget");
  EXPECT_EQ(skipped[0].min_kubernetes_version, "1.21");
  // ...because 1.20 cannot take it, not because it is convenient.
  EXPECT_EQ(control_plane().get("/apis/policy/v1").first, 404);

  const auto* deployment_doc = find_kind(applied, "Deployment");
  const auto* service_doc = find_kind(applied, "Service");
  ASSERT_TRUE(deployment_doc != nullptr && service_doc != nullptr);
  auto deployment = admin()->get(kDeployments, deployment_doc->ns, deployment_doc->name);
  ASSERT_TRUE(deployment) << deployment.error().to_string();
  const std::string ns = deployment_doc->ns;
  const std::string selector = selector_of(*deployment);
  const auto replicas = static_cast<std::size_t>(int_at(*deployment, "/spec/replicas"));
  ASSERT_EQ(replicas, 2u);

  // ---- the pods, each with the operator standing in; Ready only once /readyz answers.
  ASSERT_NO_FATAL_FAILURE(start_stand_ins(ns, selector, replicas));
  auto ready = wait_for(
      *admin(), kube::resources::kPods, ns, selector,
      [&](const Objects& o) {
        return o.size() == replicas && std::all_of(o.begin(), o.end(), [](const auto& p) {
                 return running_and_ready(p.second);
               });
      },
      kPodsTimeout);
  ASSERT_TRUE(ready) << ready.error() << "\n" << stand_in_logs();
  std::cout << "[ measure ] deploy/ applied to both replicas Ready: " << seconds_since(applying)
            << " s\n";
  std::vector<std::string> pod_ips;
  for (const auto& [name, pod] : pods_) pod_ips.push_back(str_at(pod, "/status/podIP"));
  std::sort(pod_ips.begin(), pod_ips.end());
  auto endpoints = wait_for_object(
      *admin(), kEndpoints, service_doc->ns, service_doc->name,
      [&](const json::value& e) { return ready_addresses(e) == pod_ips; }, 30s);
  ASSERT_TRUE(endpoints) << "Service " << service_doc->name
                         << " does not select both pods: " << endpoints.error();

  // ---- the operator wrote its CA into both shipped configurations.
  auto bundle = wait_ca_bundle(30s);
  ASSERT_TRUE(bundle) << bundle.error() << "\n" << stand_in_logs();
  for (const auto* kind : {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}) {
    const auto* doc = find_kind(applied, kind);
    ASSERT_NE(doc, nullptr) << kind;
    const kube::ResourceType type{
        "admissionregistration.k8s.io", "v1",
        kind[0] == 'V' ? "validatingwebhookconfigurations" : "mutatingwebhookconfigurations", kind,
        false};
    auto config = admin()->get(type, "", doc->name);
    ASSERT_TRUE(config) << config.error().to_string();
    // Still the shipped Service reference: the operator only added its CA.
    EXPECT_EQ(str_at(*config, "/webhooks/0/clientConfig/service/name"), service_doc->name);
    EXPECT_EQ(str_at(*config, "/webhooks/0/clientConfig/url"), "");
  }

  // ---- admission through the shipped configurations: Service -> Endpoints -> a pod.
  auto client = admin();
  const std::string stack_ns = make_namespace(*client, "deploy");
  auto apptype =
      create_admitted(*client, kAppTypes, stack_ns, fixture("tiny-apptype.yaml", stack_ns));
  ASSERT_TRUE(apptype) << apptype.error().to_string();
  auto too_many = fixture("tiny-stack.yaml", stack_ns, "too-many");
  too_many.as_object()["spec"].as_object()["roles"].as_array()[0].as_object()["members"] = 2;
  auto refused = create_admitted(*client, kStacks, stack_ns, too_many);
  ASSERT_FALSE(refused) << "a Stack beyond its role's cardinality was admitted";
  EXPECT_NE(refused.error().to_string().find(R"(admission webhook "validate.kstack.io" denied)"),
            std::string::npos)
      << refused.error().to_string();
  EXPECT_NE(refused.error().to_string().find(R"(for cardinality "1")"), std::string::npos)
      << refused.error().to_string();
  auto created =
      create_admitted(*client, kStacks, stack_ns, fixture("tiny-stack.yaml", stack_ns, "tiny"));
  ASSERT_TRUE(created) << created.error().to_string() << "\n" << stand_in_logs();
  // Neither is in tiny-stack.yaml nor defaulted by the CRD: /mutate added them.
  EXPECT_EQ(str_at(*created, "/spec/serviceType"), "ClusterIP") << json::serialize(*created);
  EXPECT_EQ(str_at(*created, "/spec/namingScheme"), "CrNameRole") << json::serialize(*created);

  // ---- the Lease holder reconciles, with deploy/rbac.yaml's permissions only.
  auto converged = wait_stack_ready(*client, stack_ns, "tiny", 60s);
  ASSERT_TRUE(converged) << converged.error() << "\n" << stand_in_logs();
  const auto stack_uid = str_at(*converged, "/metadata/uid");
  const auto sets =
      list_objects(*client, kube::resources::kStatefulSets, stack_ns, stack_selector("tiny"));
  const auto services =
      list_objects(*client, kube::resources::kServices, stack_ns, stack_selector("tiny"));
  EXPECT_EQ(sets.size(), 1u) << join(names_of(sets));
  EXPECT_FALSE(services.empty());
  for (const auto& [name, o] : sets) EXPECT_TRUE(controlled_by(o, stack_uid)) << name;
  for (const auto& [name, o] : services) EXPECT_TRUE(controlled_by(o, stack_uid)) << name;

  // The leader is a pod, by the identity the Deployment gives it (POD_NAME).
  const std::string leader = holder_pod();
  ASSERT_EQ(pods_.count(leader), 1u)
      << "the Lease holder is not a pod: " << json::serialize(lease());
  for (const auto& [name, pod] : pods_) {
    // The liveness probe as the kubelet would run it: its path on its port, at the pod's IP.
    const auto path = str_at(pod, "/spec/containers/0/livenessProbe/httpGet/path");
    const auto port =
        container_port(pod, str_at(pod, "/spec/containers/0/livenessProbe/httpGet/port"));
    auto live = http_get(str_at(pod, "/status/podIP"), port, path);
    EXPECT_TRUE(live && live->status == 200) << name << ": " << path << " on port " << port;
    // Every request either replica made was allowed: a gap in deploy/rbac.yaml is a 403.
    const auto scraped = metrics_of(name);
    ASSERT_FALSE(scraped.empty()) << name << ": no /metrics on the port named metrics";
    EXPECT_EQ(metric_sum(scraped, "rest_client_requests_total", {R"(code="403")"}).value_or(0), 0)
        << name << " was refused requests:\n"
        << scraped;
    EXPECT_EQ(metric_sum(scraped, "leader_election_master_status").value_or(-1),
              name == leader ? 1 : 0)
        << name;
  }

  // ---- the leader's pod dies: its readiness probe fails, Endpoints drop it, the other
  // replica takes the Lease and serves both admission and reconciliation alone.
  stand_ins_.at(leader).kill_now();
  const auto killed = std::chrono::steady_clock::now();
  std::string survivor;
  for (const auto& [name, pod] : pods_) {
    if (name != leader) survivor = name;
  }
  const std::string survivor_ip = str_at(pods_.at(survivor), "/status/podIP");
  auto dropped = wait_for_object(
      *admin(), kEndpoints, service_doc->ns, service_doc->name,
      [&](const json::value& e) {
        return ready_addresses(e) == std::vector<std::string>{survivor_ip};
      },
      kTakeoverTimeout);
  ASSERT_TRUE(dropped) << "the dead replica stays in the Service's Endpoints: " << dropped.error();
  std::cout << "[ measure ] leader killed to its address out of the Endpoints: "
            << seconds_since(killed) << " s\n";
  auto taken = wait_for_object(
      *admin(), kube::resources::kLeases, "kstack-system", kLeaseName,
      [&](const json::value& l) {
        return str_at(l, "/spec/holderIdentity").rfind(survivor + "_", 0) == 0;
      },
      kTakeoverTimeout);
  ASSERT_TRUE(taken) << taken.error() << "\n" << stand_in_logs();
  std::cout << "[ measure ] leader killed to the Lease taken over: " << seconds_since(killed)
            << " s\n";
  auto second =
      create_admitted(*client, kStacks, stack_ns, fixture("tiny-stack.yaml", stack_ns, "tiny-2"));
  ASSERT_TRUE(second) << second.error().to_string();
  auto converged_2 = wait_stack_ready(*client, stack_ns, "tiny-2", 60s);
  ASSERT_TRUE(converged_2) << converged_2.error() << "\n" << stand_in_logs();
}

}  // namespace
}  // namespace kstack::testenv::e2e
