// `kstack operator` as it runs in a cluster: a child process authenticated as the deploy/
// ServiceAccount (least-privilege RBAC), with its webhook registered by URL, its probes and
// metrics on loopback ports; two replicas for leader election; SIGTERM and SIGKILL.
// Start-to-ready time, idle memory, takeover and shutdown times are printed ("[ measure ]").
#include <algorithm>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "tests/e2e/operator/operator_process.h"
#include "tests/e2e/reconciler/support.h"
#include "tests/testenv/tcp_proxy.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using catalog::resources::kAppTypes;
using catalog::resources::kStacks;

constexpr std::chrono::milliseconds kStopGrace{20'000};
constexpr std::chrono::seconds kReadyTimeout{90};

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Polls `done` (state of another process, no event to wait on) every 50 ms.
bool poll_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

class OperatorE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = admin();
    ns_ = make_namespace(*client_, "op");
  }

  void TearDown() override {
    // The webhook configurations go first: nothing may call a webhook that is about to stop.
    auto unregistered = register_webhook(0);
    EXPECT_TRUE(unregistered) << unregistered.error();
    const bool any_running = std::any_of(operators_.begin(), operators_.end(),
                                         [](auto& o) { return o->process().running(); });
    if (any_running) {  // Stacks go while an operator runs: it removes their finalizer
      auto deleted = delete_stacks(*client_, ns_, 90s);
      EXPECT_TRUE(deleted) << deleted.error();
    }
    if (HasFailure()) {
      for (auto& o : operators_) {
        std::cout << "---- " << o->log().string() << ":\n" << o->log_tail(80) << "\n";
      }
    }
    std::vector<ChildProcess*> running;
    for (auto& o : operators_) running.push_back(&o->process());
    stop_all(running, kStopGrace);
    (void)client_->remove(kube::resources::kNamespaces, "", ns_);
  }

  OperatorProcess& start(const OperatorFlags& flags, const std::string& name = "operator") {
    auto p = OperatorProcess::start(flags, name);
    if (!p) throw std::runtime_error("kstack operator did not start: " + p.error());
    operators_.push_back(std::make_unique<OperatorProcess>(std::move(*p)));
    return *operators_.back();
  }

  void create(const kube::ResourceType& type, const json::value& object) {
    auto r = client_->create(type, ns_, object);
    ASSERT_TRUE(r) << type.kind << ": " << r.error().to_string();
  }

  void create_tiny_stack(const std::string& name) {
    if (!client_->get(kAppTypes, ns_, "tiny")) {
      ASSERT_NO_FATAL_FAILURE(create(kAppTypes, fixture("tiny-apptype.yaml", ns_)));
    }
    // The webhook checks the Stack against its own informer's catalog, which learns of the
    // AppType just created a moment later: until then it refuses with "not found".
    std::string last;
    const bool created = poll_until(
        [&] {
          auto r = client_->create(kStacks, ns_, fixture("tiny-stack.yaml", ns_, name));
          last = r ? std::string() : r.error().to_string();
          if (r) return true;
          return last.find(R"(AppType "tiny" not found)") == std::string::npos;
        },
        30s);
    ASSERT_TRUE(created && last.empty()) << "Stack " << name << ": " << last;
  }

  // Exactly one of `replicas` reports leader_election_master_status 1; its index.
  int wait_single_leader(const std::vector<OperatorProcess*>& replicas) {
    int leader = -1;
    const bool found = poll_until(
        [&] {
          int leaders = 0;
          for (std::size_t i = 0; i < replicas.size(); ++i) {
            if (replicas[i]->leader_status() == 1) {
              ++leaders;
              leader = static_cast<int>(i);
            }
          }
          return leaders == 1;
        },
        30s);
    return found ? leader : -1;
  }

  std::shared_ptr<kube::Client> client_;
  std::string ns_;
  std::vector<std::unique_ptr<OperatorProcess>> operators_;
};

// (a) The deploy/ ServiceAccount can run everything the operator does, and nothing more.
TEST_F(OperatorE2E, WithTheDeployServiceAccountItConvergesAStackAndIsRefusedTheRest) {
  OperatorFlags flags;
  flags.webhook_port = free_port();
  ASSERT_TRUE(register_webhook(flags.webhook_port));
  auto& op = start(flags);
  auto ready = op.wait_ready(kReadyTimeout);
  ASSERT_TRUE(ready) << ready.error();
  std::cout << "[ measure ] start to ready: " << ready->count() << " ms\n";
  auto bundle = wait_ca_bundle(30s);
  ASSERT_TRUE(bundle) << bundle.error();

  // Created through the API server, so through the webhook (mutating and validating); the
  // operator's status writes pass the rules only if it recognised its own username.
  ASSERT_NO_FATAL_FAILURE(create_tiny_stack("tiny"));
  auto converged = wait_stack_ready(*client_, ns_, "tiny");
  ASSERT_TRUE(converged) << converged.error();

  auto sa = service_account_client();
  auto own = sa->get(kube::resources::kSecrets, "kstack-system", "kstack-webhook-tls");
  EXPECT_TRUE(own) << "its own serving-certificate Secret: " << own.error().to_string();
  auto others = client_->list(kube::resources::kSecrets, "default");
  ASSERT_TRUE(others) << others.error().to_string();
  ASSERT_FALSE(others->at("items").as_array().empty());
  const auto other = str_at(others->at("items").as_array()[0], "/metadata/name");
  auto foreign = sa->get(kube::resources::kSecrets, "default", other);
  ASSERT_FALSE(foreign) << "read Secret default/" << other;
  EXPECT_TRUE(foreign.error().is(kube::ErrorKind::kForbidden)) << foreign.error().to_string();
  auto all = sa->list(kube::resources::kSecrets, "kstack-system");
  ASSERT_FALSE(all) << "listed the Secrets of its own namespace";
  EXPECT_TRUE(all.error().is(kube::ErrorKind::kForbidden)) << all.error().to_string();
  // Pods: read, and deleted (a member whose --preupgrade ran for a reverted rollout), never
  // changed.
  auto pods = sa->patch(kube::resources::kPods, ns_, "tiny-solo-0", kube::PatchType::kMerge,
                        R"({"metadata":{"labels":{"changed":"by-kstack"}}})");
  ASSERT_FALSE(pods) << "changed a pod";
  EXPECT_TRUE(pods.error().is(kube::ErrorKind::kForbidden)) << pods.error().to_string();

  // Its log is JSON lines (stderr is a file here), and never shows its credentials.
  auto token = service_account_token();
  ASSERT_TRUE(token) << token.error();
  std::ifstream log(op.log());
  int lines = 0;
  int stack_lines = 0;
  for (std::string line; std::getline(log, line); ++lines) {
    EXPECT_EQ(line.find(token->substr(token->size() / 2)), std::string::npos) << "token logged";
    boost::system::error_code ec;
    auto v = json::parse(line, ec);
    ASSERT_FALSE(ec) << "not JSON: " << line;
    for (const char* key : {"ts", "level", "logger", "msg"}) {
      EXPECT_TRUE(v.is_object() && v.as_object().contains(key)) << key << " missing: " << line;
    }
    // A reconcile pass's lines about the Stack carry it, its namespace and the pass's id as
    // fields, not only inside msg.
    if (str_at(v, "/msg").starts_with("stack " + ns_ + "/tiny: ")) {
      ++stack_lines;
      EXPECT_EQ(str_at(v, "/stack"), "tiny") << line;
      EXPECT_EQ(str_at(v, "/namespace"), ns_) << line;
      EXPECT_EQ(str_at(v, "/reconcile_id").size(), 16u) << line;
    }
  }
  EXPECT_GT(lines, 3);
  EXPECT_GT(stack_lines, 0) << "no line about creating the Stack's objects";
  // Its own username (for the rules on status and kstack.io/ labels) came from its token.
  EXPECT_NE(op.log_tail(400).find(std::string("operator identity ") + kServiceAccountUser),
            std::string::npos);
}

// (b) Not ready while the caches cannot sync; ready once they do. Start-up cost measured.
TEST_F(OperatorE2E, ReadyzIs503UntilTheCachesHaveSyncedThen200) {
  const auto apiserver = control_plane().server();
  TcpProxy proxy(static_cast<std::uint16_t>(std::stoi(apiserver.substr(apiserver.rfind(':') + 1))));
  proxy.cut();
  auto kubeconfig = service_account_kubeconfig(proxy.url());
  ASSERT_TRUE(kubeconfig) << kubeconfig.error();
  OperatorFlags flags;
  flags.kubeconfig = kubeconfig->string();
  auto& cut_off = start(flags, "cut-off");

  // The endpoints listen before anything talks to the API server, which is unreachable: the
  // first answer of /readyz must be 503.
  std::optional<HttpAnswer> first;
  ASSERT_TRUE(poll_until(
      [&] {
        first = http_get(cut_off.probe_port(), "/readyz");
        return first.has_value() || !cut_off.process().running();
      },
      30s))
      << cut_off.log_tail();
  ASSERT_TRUE(first) << "the operator " << cut_off.process().how_it_ended() << "\n"
                     << cut_off.log_tail();
  EXPECT_EQ(first->status, 503) << first->body;
  EXPECT_NE(first->body.find("[-]informers"), std::string::npos) << first->body;
  auto health = http_get(cut_off.probe_port(), "/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto again = http_get(cut_off.probe_port(), "/readyz");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 503) << "ready with the API server cut off: " << again->body;

  const auto restored_at = std::chrono::steady_clock::now();
  proxy.restore();
  auto ready = cut_off.wait_ready(kReadyTimeout);
  ASSERT_TRUE(ready) << ready.error();
  std::cout << "[ measure ] ready " << seconds(std::chrono::steady_clock::now() - restored_at)
            << " s after the API server became reachable\n";
  auto ready_body = http_get(cut_off.probe_port(), "/readyz");
  ASSERT_TRUE(ready_body);
  EXPECT_NE(ready_body->body.find("[+]webhook ok"), std::string::npos) << ready_body->body;
  cut_off.process().stop(kStopGrace);
  EXPECT_EQ(cut_off.process().how_it_ended(), "exited with status 0");

  // A plain start: time to ready, then memory at rest.
  auto& plain = start(OperatorFlags{}, "plain");
  auto plain_ready = plain.wait_ready(kReadyTimeout);
  ASSERT_TRUE(plain_ready) << plain_ready.error();
  std::cout << "[ measure ] start to ready: " << plain_ready->count() << " ms; at ready VmRSS "
            << process_status_kib(plain.pid(), "VmRSS") << " KiB\n";
  // Idle: the leader has nothing to reconcile in its first seconds; a scrape is the only work.
  ASSERT_TRUE(poll_until([&] { return plain.leader_status() == 1; }, 30s)) << plain.log_tail();
  std::cout << "[ measure ] idle VmRSS " << process_status_kib(plain.pid(), "VmRSS")
            << " KiB, VmHWM " << process_status_kib(plain.pid(), "VmHWM") << " KiB\n";
}

// (c) Metrics while a Stack converges.
TEST_F(OperatorE2E, MetricsDuringAConvergenceCountReconcilesRequestsAndAdmission) {
  OperatorFlags flags;
  flags.webhook_port = free_port();
  flags.extra = {"--webhook-max-connections=64", "--webhook-max-inflight-body-bytes=8388608"};
  ASSERT_TRUE(register_webhook(flags.webhook_port));
  auto& op = start(flags);
  auto ready = op.wait_ready(kReadyTimeout);
  ASSERT_TRUE(ready) << ready.error();
  auto bundle = wait_ca_bundle(30s);
  ASSERT_TRUE(bundle) << bundle.error();
  ASSERT_NO_FATAL_FAILURE(create_tiny_stack("metered"));

  std::string scraped;
  ASSERT_TRUE(poll_until(
      [&] {
        scraped = op.metrics();
        return metric_sum(scraped, "controller_runtime_reconcile_total").value_or(0) > 0;
      },
      60s))
      << scraped;
  EXPECT_GT(metric_sum(scraped, "controller_runtime_reconcile_total", {R"(controller="stack")"})
                .value_or(0),
            0)
      << scraped;
  EXPECT_TRUE(metric_sum(scraped, "workqueue_depth", {R"(name="stack")"})) << scraped;
  EXPECT_GT(metric_sum(scraped, "workqueue_adds_total", {R"(name="stack")"}).value_or(0), 0);
  EXPECT_GT(metric_sum(scraped, "controller_runtime_reconcile_time_seconds_count").value_or(0), 0);
  EXPECT_GT(metric_sum(scraped, "rest_client_requests_total").value_or(0), 0) << scraped;
  // (A WATCH is counted when it ends, minutes later: kube::Client records after the stream.)
  EXPECT_GT(metric_sum(scraped, "rest_client_requests_total", {R"(method="LIST")"}).value_or(0), 0);
  EXPECT_GT(metric_sum(scraped, "kstack_admission_requests_total", {R"(code="200")"}).value_or(0),
            0)
      << scraped;
  EXPECT_GT(metric_sum(scraped, "kstack_admission_duration_seconds_count").value_or(0), 0);
  // The admission server's limits: nothing refused by this light load, but exported.
  EXPECT_EQ(metric_sum(scraped, "kstack_admission_connections_refused_total"), 0.0) << scraped;
  EXPECT_EQ(metric_sum(scraped, "kstack_admission_body_budget_refusals_total"), 0.0) << scraped;
  EXPECT_TRUE(metric_sum(scraped, "kstack_admission_inflight_body_bytes")) << scraped;
  EXPECT_EQ(metric_sum(scraped, "leader_election_master_status", {R"(name="kstack-operator")"}),
            1.0);
  EXPECT_GT(metric_sum(scraped, "process_resident_memory_bytes").value_or(0), 0);
  // Every sample line is "<name>[{labels}] <value>".
  std::istringstream lines(scraped);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    EXPECT_NO_THROW((void)std::stod(line.substr(space + 1))) << line;
  }
  auto converged = wait_stack_ready(*client_, ns_, "metered");
  ASSERT_TRUE(converged) << converged.error();
}

// (d) Two replicas: one reconciles, both admit; the survivor takes over from a killed leader.
TEST_F(OperatorE2E, TwoReplicasOnlyTheLeaderReconcilesBothAdmitAndTheOtherTakesOver) {
  auto& a = start(OperatorFlags{}, "replica-a");
  auto& b = start(OperatorFlags{}, "replica-b");
  for (auto* r : {&a, &b}) {
    auto ready = r->wait_ready(kReadyTimeout);
    ASSERT_TRUE(ready) << ready.error();
  }
  const int leader_index = wait_single_leader({&a, &b});
  ASSERT_GE(leader_index, 0) << "not exactly one leader";
  auto& leader = leader_index == 0 ? a : b;
  auto& follower = leader_index == 0 ? b : a;

  ASSERT_NO_FATAL_FAILURE(create_tiny_stack("first"));
  auto converged = wait_stack_ready(*client_, ns_, "first");
  ASSERT_TRUE(converged) << converged.error();
  EXPECT_GT(metric_sum(leader.metrics(), "controller_runtime_reconcile_total").value_or(0), 0);
  EXPECT_EQ(metric_sum(follower.metrics(), "controller_runtime_reconcile_total"), 0.0)
      << "the follower reconciled";
  EXPECT_EQ(follower.leader_status(), 0);

  // Both replicas answer admission, from their own caches: a Stack naming a role its app does
  // not have is refused by each.
  auto ca = webhook_ca_pem();
  ASSERT_TRUE(ca) << ca.error();
  auto bad = fixture("tiny-stack.yaml", ns_, "bad");
  bad.at("spec").at("roles").as_array()[0].as_object()["id"] = "ghost";
  json::value review = {
      {"apiVersion", "admission.k8s.io/v1"},
      {"kind", "AdmissionReview"},
      {"request",
       {{"uid", "e2e-uid"},
        {"kind", {{"group", "kstack.io"}, {"version", "v1beta1"}, {"kind", "Stack"}}},
        {"resource", {{"group", "kstack.io"}, {"version", "v1beta1"}, {"resource", "stacks"}}},
        {"namespace", ns_},
        {"name", "bad"},
        {"operation", "CREATE"},
        {"userInfo", {{"username", "bob"}}},
        {"object", bad}}}};
  for (auto* r : {&a, &b}) {
    auto answer = post_admission_review(r->webhook_port(), "/validate", *ca, review);
    ASSERT_TRUE(answer) << answer.error();
    EXPECT_EQ(str_at(*answer, "/response/uid"), "e2e-uid") << json::serialize(*answer);
    boost::system::error_code ec;
    const auto* allowed = answer->find_pointer("/response/allowed", ec);
    ASSERT_TRUE(allowed != nullptr && allowed->is_bool()) << json::serialize(*answer);
    EXPECT_FALSE(allowed->as_bool()) << json::serialize(*answer);
  }

  const auto killed_at = std::chrono::steady_clock::now();
  leader.process().kill_now();
  ASSERT_TRUE(poll_until([&] { return follower.leader_status() == 1; }, 60s))
      << follower.log_tail();
  const double takeover = seconds(std::chrono::steady_clock::now() - killed_at);
  std::cout << "[ measure ] takeover after SIGKILL of the leader: " << takeover
            << " s (lease duration 4 s)\n";
  // The lease must expire (4 s) before anyone may take it; then one retry period (0.5 s).
  EXPECT_LT(takeover, 4 + 3 + 2.0) << "slower than lease duration + renew deadline + slack";

  ASSERT_NO_FATAL_FAILURE(create_tiny_stack("second"));
  auto second = wait_stack_ready(*client_, ns_, "second");
  ASSERT_TRUE(second) << second.error();
  EXPECT_GT(metric_sum(follower.metrics(), "controller_runtime_reconcile_total").value_or(0), 0);
}

// (e) SIGTERM: exit 0 and the Lease released, so the other replica leads at once rather than
// after the lease duration.
TEST_F(OperatorE2E, SigtermExitsZeroAndReleasesTheLease) {
  OperatorFlags slow;  // client-go's defaults: a takeover without release takes >= 15 s
  slow.lease_duration = "15s";
  slow.renew_deadline = "10s";
  slow.retry_period = "2s";
  auto& a = start(slow, "replica-a");
  auto& b = start(slow, "replica-b");
  for (auto* r : {&a, &b}) {
    auto ready = r->wait_ready(kReadyTimeout);
    ASSERT_TRUE(ready) << ready.error();
  }
  const int leader_index = wait_single_leader({&a, &b});
  ASSERT_GE(leader_index, 0) << "not exactly one leader";
  auto& leader = leader_index == 0 ? a : b;
  auto& follower = leader_index == 0 ? b : a;
  const auto holder = str_at(lease(), "/spec/holderIdentity");
  ASSERT_FALSE(holder.empty());

  const auto term_at = std::chrono::steady_clock::now();
  leader.process().stop(kStopGrace);
  const double shutdown = seconds(std::chrono::steady_clock::now() - term_at);
  EXPECT_EQ(leader.process().how_it_ended(), "exited with status 0") << leader.log_tail();
  std::cout << "[ measure ] leader shutdown on SIGTERM: " << shutdown << " s\n";
  EXPECT_LT(shutdown, 10.0);
  EXPECT_NE(str_at(lease(), "/spec/holderIdentity"), holder) << "the Lease was not released";

  ASSERT_TRUE(poll_until([&] { return follower.leader_status() == 1; }, 30s))
      << follower.log_tail();
  const double takeover = seconds(std::chrono::steady_clock::now() - term_at);
  std::cout << "[ measure ] takeover after SIGTERM of the leader: " << takeover
            << " s (lease duration 15 s)\n";
  EXPECT_LT(takeover, 15.0) << "the follower waited for the lease to expire";

  follower.process().stop(kStopGrace);
  EXPECT_EQ(follower.process().how_it_ended(), "exited with status 0") << follower.log_tail();
  const auto after = lease();
  EXPECT_EQ(str_at(after, "/spec/holderIdentity"), "") << json::serialize(after);
}

// A leader that cannot renew (its API server connection cut) stops reconciling and exits
// non-zero, for the Deployment to restart it clean, as controller-runtime does.
TEST_F(OperatorE2E, ALeaderThatCannotRenewItsLeaseExitsNonZero) {
  const auto apiserver = control_plane().server();
  TcpProxy proxy(static_cast<std::uint16_t>(std::stoi(apiserver.substr(apiserver.rfind(':') + 1))));
  auto kubeconfig = service_account_kubeconfig(proxy.url());
  ASSERT_TRUE(kubeconfig) << kubeconfig.error();
  OperatorFlags flags;
  flags.kubeconfig = kubeconfig->string();
  auto& op = start(flags, "isolated");
  auto ready = op.wait_ready(kReadyTimeout);
  ASSERT_TRUE(ready) << ready.error();
  ASSERT_TRUE(poll_until([&] { return op.leader_status() == 1; }, 30s)) << op.log_tail();

  const auto cut_at = std::chrono::steady_clock::now();
  proxy.cut();
  ASSERT_TRUE(poll_until([&] { return !op.process().running(); }, 30s))
      << "still running " << seconds(std::chrono::steady_clock::now() - cut_at)
      << " s after its API server connection was cut:\n"
      << op.log_tail();
  std::cout << "[ measure ] exit after losing the API server: "
            << seconds(std::chrono::steady_clock::now() - cut_at) << " s (renew deadline 3 s)\n";
  EXPECT_EQ(op.process().how_it_ended(), "exited with status 1") << op.log_tail();
  EXPECT_NE(op.log_tail(20).find("lost the Lease"), std::string::npos) << op.log_tail();
}

// (g) One cache per kind in the process: the controller and the webhook share their informers
// (informer/factory.h), so each kind is listed and watched once (kstack_informers counts every
// informer running, whoever started it); and both still work from the shared caches.
TEST_F(OperatorE2E, EachKindHasOneInformerSharedByTheControllerAndTheWebhook) {
  OperatorFlags flags;
  flags.webhook_port = free_port();
  ASSERT_TRUE(register_webhook(flags.webhook_port));
  auto& op = start(flags);
  auto ready = op.wait_ready(kReadyTimeout);  // every informer is started before /readyz is 200
  ASSERT_TRUE(ready) << ready.error();
  const std::string scraped = op.metrics();
  const std::pair<const char*, const char*> kinds[] = {
      {"kstack.io", "stacks"},
      {"kstack.io", "apptypes"},
      {"kstack.io", "kstackconfigs"},
      {"storage.k8s.io", "storageclasses"},
      {"apps", "statefulsets"},
      {"", "services"},
      {"", "persistentvolumeclaims"},
      {"", "pods"},
      // Member recovery and disruption budgets (docs/api.md "Lost nodes").
      {"", "nodes"},
      {"", "persistentvolumes"},
      {"policy", "poddisruptionbudgets"}};
  for (const auto& [group, resource] : kinds) {
    EXPECT_EQ(metric_sum(
                  scraped, "kstack_informers",
                  {fmt::format(R"(group="{}")", group), fmt::format(R"(resource="{}")", resource)}),
              1.0)
        << group << "/" << resource << " in:\n"
        << scraped;
  }
  EXPECT_EQ(metric_sum(scraped, "kstack_informers"), 11.0) << scraped;

  // The webhook finds the AppType in the shared cache (else it refuses the Stack) and the
  // controller converges the Stack from it.
  auto bundle = wait_ca_bundle(30s);
  ASSERT_TRUE(bundle) << bundle.error();
  ASSERT_NO_FATAL_FAILURE(create_tiny_stack("shared"));
  auto converged = wait_stack_ready(*client_, ns_, "shared");
  ASSERT_TRUE(converged) << converged.error();
}

}  // namespace
}  // namespace kstack::testenv::e2e
