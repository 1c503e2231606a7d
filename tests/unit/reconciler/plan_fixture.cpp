#include "tests/unit/reconciler/plan_fixture.h"

#include <algorithm>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "bench/reconciler/live_objects.h"
#include "catalog/names.h"
#include "catalog/parse.h"
#include "reconciler/desired_state.h"
#include "reconciler/status.h"
#include "tests/unit/support/yaml_value.h"

namespace kstack::reconciler::testing {
namespace json = boost::json;
using executor::SetupOutcome;
using executor::SetupStepKind;

namespace {

constexpr const char* kApp = R"(
apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: kv, namespace: apps, uid: app-uid}
spec:
  label: {name: Key-value store}
  distroID: example/kv
  version: "1.0"
  configSchemaVersion: 1
  defaultImageRepoTag: example/kv:1.0
  defaultPersistDirs: [/var/lib/kv]
  services:
  - id: client
    label: {name: Client}
    endpoint: {port: 2379, urlScheme: http}
  roles:
  - id: server
    cardinality: "1+"
  - id: worker
    cardinality: "0+"
  config:
    roleServices:
    - {roleID: server, serviceIDs: [client]}
)";

constexpr const char* kStack = R"(
apiVersion: kstack.io/v1beta1
kind: Stack
metadata:
  name: db
  namespace: apps
  uid: stack-uid-1
  generation: 1
  resourceVersion: "100"
  creationTimestamp: "2026-01-01T00:00:00Z"
  finalizers: [kstack.io/cleanup]
spec:
  app: kv
  roles:
  - id: server
    members: 3
    storage: {size: 1Gi}
)";

json::value& role_of(json::value& stack, const std::string& role) {
  auto& roles = stack.at("spec").as_object()["roles"].as_array();
  for (auto& r : roles) {
    if (r.at("id").as_string() == role) return r;
  }
  roles.push_back(json::object{{"id", role}});
  return roles.back();
}

json::value* container_status(json::value& pod) {
  auto& cs = pod.at("status").as_object()["containerStatuses"].as_array();
  return cs.empty() ? nullptr : &cs.front();
}

}  // namespace

SetupOutcome FakeSetup::run(const executor::SetupStep& step) {
  ran.push_back(step);
  if (auto it = per_member.find({step.target.pod, step.kind}); it != per_member.end()) {
    return it->second;
  }
  SetupOutcome out;
  if (step.kind == SetupStepKind::kStartConfigure && configure_finishes) {
    configured_containers.insert(step.target.container_id);
  }
  if (step.kind == SetupStepKind::kReadConfigureStatus) {
    out.status.state = configure;
    if (configured_containers.contains(step.target.container_id)) {
      out.status.state = executor::SetupRunner::ConfigureStatus::State::kDone;
    }
    out.status.exit_code = exit_code;
    out.status.container_id =
        status_container.empty() ? step.target.container_id : status_container;
    if (exit_code != 0) out.status.stderr_tail = "boom";
  }
  if (step.kind == SetupStepKind::kCheckPackage) out.installed = installed;
  return out;
}

std::vector<SetupStepKind> FakeSetup::kinds_for(const std::string& pod) const {
  std::vector<SetupStepKind> kinds;
  for (const auto& s : ran) {
    if (s.target.pod == pod) kinds.push_back(s.kind);
  }
  return kinds;
}

World::World(int servers, int workers, bool package, std::vector<std::string> events) {
  app = kstack::testing::yaml(kApp);
  if (package) {
    auto& spec = app.at("spec").as_object();
    spec["defaultConfigPackage"] = json::object{{"packageURL", "file:///opt/kv/setup.tgz"}};
    json::array list;
    for (const auto& e : events) list.emplace_back(e);
    spec["defaultEventList"] = std::move(list);
  }
  stack = kstack::testing::yaml(kStack);
  role_of(stack, "server").as_object()["members"] = servers;
  if (workers > 0) role_of(stack, "worker").as_object()["members"] = workers;
  converge();
}

catalog::Stack World::decoded() const {
  catalog::FieldErrors ignored;
  return catalog::decode_stack(stack, ignored);
}

Snapshot World::snapshot() const {
  Snapshot s;
  s.key = "apps/db";
  s.object = informer::pack(stack);
  s.stack = decoded();
  catalog::FieldErrors ignored;
  if (s.stack.status) {
    s.old_status = catalog::decode_stack_status(catalog::to_json(*s.stack.status), ignored);
  }
  if (!app_missing) {
    s.app = catalog::FoundApp{catalog::decode_apptype(app, ignored), "local", "apps"};
  }
  auto share = [](const std::map<std::string, json::value>& from,
                  std::map<std::string, informer::ObjectPtr>& to) {
    for (const auto& [name, o] : from) to[name] = informer::pack(o);
  };
  share(sets, s.owned.stateful_sets);
  share(services, s.owned.services);
  share(pvcs, s.owned.pvcs);
  share(pods, s.owned.pods);
  share(pdbs, s.owned.pdbs);
  share(nodes, s.owned.nodes);
  share(volumes, s.owned.volumes);
  s.pdb_type = pdb_type;
  s.config = config;
  s.has_setup_runner = setup_runner;
  s.has_notifier = notifier;
  s.notify_max_attempts = 3;
  s.notify = notify;
  s.setup = setup_outcomes;
  s.now = now;
  s.clock = NotifyOutcome::Clock::time_point(std::chrono::hours(1000));
  s.poll_interval = std::chrono::milliseconds(2000);
  return s;
}

void World::converge() {
  catalog::FieldErrors ignored;
  const auto st = decoded();
  const auto a = catalog::decode_apptype(app, ignored);
  auto desired = desired_state(st, a, nullptr);
  ASSERT_TRUE(desired.has_value()) << desired.error().message;
  auto live = bench::live_objects(st, a, *desired, serial_);
  // Objects that exist stay as they are (their uids, container IDs and edits); those of the new
  // spec appear, the others go. StatefulSets take the new replicas.
  auto sync = [](std::vector<json::value>& from, std::map<std::string, json::value>& to,
                 bool replace) {
    std::map<std::string, json::value> next;
    for (auto& o : from) {
      const std::string name(o.at("metadata").at("name").as_string());
      auto it = to.find(name);
      next[name] = replace || it == to.end() ? std::move(o) : std::move(it->second);
    }
    to = std::move(next);
  };
  sync(live.stateful_sets, sets, true);
  sync(live.services, services, false);
  sync(live.pvcs, pvcs, false);
  sync(live.pods, pods, false);
}

void World::set_members(const std::string& role, int members) {
  role_of(stack, role).as_object()["members"] = members;
  auto& md = stack.at("metadata").as_object();
  md["generation"] = md["generation"].as_int64() + 1;
}

void World::set_retention(std::string_view when_scaled, std::string_view when_deleted) {
  stack.at("spec").as_object()["persistentVolumeClaimRetentionPolicy"] =
      json::object{{"whenScaled", when_scaled}, {"whenDeleted", when_deleted}};
}

void World::mark_deleted() {
  stack.at("metadata").as_object()["deletionTimestamp"] = "2026-11-25T00:00:00Z";
}

void World::accept(const Plan& plan) {
  auto& md = stack.at("metadata").as_object();
  if (plan.add_finalizer) md["finalizers"] = json::array{"kstack.io/cleanup"};
  if (plan.write_status) stack.as_object()["status"] = catalog::to_json(plan.status);
}

Plan World::settle(FakeSetup& setup, int max) {
  Plan p = pass(*this, setup);
  for (int i = 0; i < max && p.write_status; ++i) {
    accept(p);
    p = pass(*this, setup);
  }
  return p;
}

Plan World::settle() {
  FakeSetup setup;
  setup.configure = executor::SetupRunner::ConfigureStatus::State::kDone;
  return settle(setup);
}

void World::remove_pod(const std::string& pod) { pods.erase(pod); }

void World::set_pod_ready(const std::string& pod, bool ready) {
  for (auto& c : pods.at(pod).at("status").as_object()["conditions"].as_array()) {
    const auto type = c.at("type").as_string();
    if (type == "Ready" || type == "ContainersReady")
      c.as_object()["status"] = ready ? "True" : "False";
  }
}

void World::restart_container(const std::string& pod, const std::string& new_id) {
  auto* cs = container_status(pods.at(pod));
  cs->as_object()["containerID"] = new_id;
  cs->as_object()["restartCount"] = cs->at("restartCount").as_int64() + 1;
}

std::string World::container_of(const std::string& pod) const {
  auto copy = pods.at(pod);
  return std::string(container_status(copy)->at("containerID").as_string());
}

void World::set_replicas(const std::string& set, std::int64_t replicas) {
  sets.at(set).at("spec").as_object()["replicas"] = replicas;
}

const catalog::MemberStatus* World::member(const Plan& plan, const std::string& pod) const {
  for (const auto& r : plan.status.roles) {
    for (const auto& m : r.members) {
      if (m.pod == pod) return &m;
    }
  }
  return nullptr;
}

Plan pass(const World& world, FakeSetup& setup) {
  // The setup executor answers each started step before the next plan, as if its completions
  // woke passes that planned from them; the last plan is the one that starts nothing new.
  auto snap = world.snapshot();
  Findings found;
  Plan p = plan(snap, found);
  for (int round = 0; (!p.is_final() || !p.setup_steps.empty()) && round < 8; ++round) {
    for (const auto& name : p.claims_to_read) {
      auto it = world.server_claims.find(name);
      found.claims[name] =
          it == world.server_claims.end() ? informer::ObjectPtr{} : informer::pack(it->second);
    }
    for (const auto& step : p.setup_steps) {
      snap.setup[setup_key(step)] = SetupState{true, setup.run(step)};
    }
    p = plan(snap, found);
  }
  EXPECT_TRUE(p.is_final() && p.setup_steps.empty()) << "the plan keeps asking";
  return p;
}

Plan pass(const World& world) {
  FakeSetup setup;
  return pass(world, setup);
}

const catalog::Condition* condition(const Plan& plan, std::string_view type) {
  return find_condition(plan.status.conditions, type);
}

const Write* find_write(const Plan& plan, Write::Op op, std::string_view name) {
  for (const auto& w : plan.writes) {
    if (w.op == op && w.name == name) return &w;
  }
  return nullptr;
}

std::vector<std::string> write_names(const Plan& plan, Write::Op op) {
  std::vector<std::string> names;
  for (const auto& w : plan.writes) {
    if (w.op == op) names.push_back(w.name);
  }
  return names;
}

const EventSpec* find_event(const Plan& plan, std::string_view reason) {
  for (const auto& e : plan.events) {
    if (e.reason == reason) return &e;
  }
  return nullptr;
}

std::string member_state(const Plan& plan, const std::string& pod) {
  for (const auto& r : plan.status.roles) {
    for (const auto& m : r.members) {
      if (m.pod == pod) return m.state;
    }
  }
  return "(absent)";
}

std::vector<std::vector<std::string>> pending_cmds(const Plan& plan, const std::string& pod) {
  std::vector<std::vector<std::string>> out;
  for (const auto& r : plan.status.roles) {
    for (const auto& m : r.members) {
      if (m.pod != pod) continue;
      for (const auto& c : m.state_detail.pending_notify_cmds) out.push_back(c.arguments);
    }
  }
  return out;
}

std::int64_t replicas_in(const Plan& plan, std::string_view set) {
  const auto* w = find_write(plan, Write::Op::kApply, set);
  if (w == nullptr) return -1;
  return w->object.at("spec").at("replicas").as_int64();
}

}  // namespace kstack::reconciler::testing

namespace kstack::reconciler::testing {
std::string pod_of(std::string_view role, int ordinal) {
  return catalog::member_name("db", role, ordinal);
}
std::string pvc_of(std::string_view role, int ordinal) {
  return catalog::pvc_name("db", role, ordinal);
}
std::string set_of(std::string_view role) { return catalog::statefulset_name("db", role); }
std::string headless() { return catalog::headless_service_name("db"); }
}  // namespace kstack::reconciler::testing
