// Test helper for plan() table tests: a small world — a Stack, its AppType and the owned objects
// a converged cluster holds for it (bench/reconciler/live_objects.h) — that a test edits, then
// turns into the Snapshot a pass would observe. Setup steps and server reads are answered by
// fakes, as the setup executor and Reconciler::reconcile would, so a test stays snapshot in →
// plan out.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "catalog/model.h"
#include "reconciler/plan.h"
#include "reconciler/snapshot.h"

namespace kstack::reconciler::testing {

inline constexpr std::string_view kNow = "2026-11-25T00:00:00Z";
inline constexpr std::string_view kStackUid = "stack-uid-1";

// Answers setup steps: every step succeeds; configure.status says `configure` (for the
// member's current container unless `status_container` is set); package_installed says
// `installed`. `per_member` overrides one member's outcome of one step.
struct FakeSetup {
  executor::SetupRunner::ConfigureStatus::State configure =
      executor::SetupRunner::ConfigureStatus::State::kNotStarted;
  int exit_code = 0;
  std::string status_container;
  bool installed = true;
  std::map<std::pair<std::string, executor::SetupStepKind>, executor::SetupOutcome> per_member;
  std::vector<executor::SetupStep> ran;
  // With `configure` kNotStarted: a container where `startscript --configure` was started
  // reports it done (exit 0) from then on, as a script that finishes at once.
  bool configure_finishes = false;
  std::set<std::string> configured_containers;

  executor::SetupOutcome run(const executor::SetupStep& step);
  std::vector<executor::SetupStepKind> kinds_for(const std::string& pod) const;
};

struct World {
  // Roles of AppType "kv": `server` (a port, so member Services) and `worker` (no ports).
  // With `package`, both roles have a setup package (eventList: `events`).
  explicit World(int servers = 3, int workers = 0, bool package = false,
                 std::vector<std::string> events = {"configure", "addnodes", "delnodes"});

  boost::json::value stack;  // as cached: status and all
  boost::json::value app;
  bool app_missing = false;
  std::map<std::string, boost::json::value> sets, services, pvcs, pods;  // live, by name
  std::map<std::string, boost::json::value> pdbs;                        // live, by name
  std::map<std::string, boost::json::value> nodes, volumes;              // cluster-scoped, by name
  const kube::ResourceType* pdb_type = nullptr;                          // null: not served
  std::optional<catalog::KStackConfig> config;
  bool setup_runner = true;
  bool notifier = true;
  std::string now = std::string(kNow);  // the pass's clock (RFC 3339)
  NotifyOutcomes notify;
  SetupOutcomes setup_outcomes;  // steps in flight or done, as the setup executor holds them
  std::map<std::string, boost::json::value> server_claims;  // what a live GET of a claim finds

  catalog::Stack decoded() const;
  Snapshot snapshot() const;
  // Replaces the owned objects by those of a converged cluster for the current spec.
  void converge();
  // Sets a role's member count (spec change: generation + 1).
  void set_members(const std::string& role, int members);
  void set_retention(std::string_view when_scaled, std::string_view when_deleted);
  void mark_deleted();
  // What the pass wrote: the status (and the finalizer) become the cached Stack's.
  void accept(const Plan& plan);
  // Passes until the status stops changing (at most `max` passes), setup answered by `setup`.
  Plan settle(FakeSetup& setup, int max = 10);
  Plan settle();

  // Edits of live objects.
  void remove_pod(const std::string& pod);
  void set_pod_ready(const std::string& pod, bool ready);
  void restart_container(const std::string& pod, const std::string& new_id);
  std::string container_of(const std::string& pod) const;
  void set_replicas(const std::string& set, std::int64_t replicas);

  // The status member `pod` (any role), or nullptr.
  const catalog::MemberStatus* member(const Plan& plan, const std::string& pod) const;

 private:
  std::uint64_t serial_ = 0;
};

// One pass: plan, answer what it asks with `setup` and world.server_claims, plan again (each
// setup step as if it finished and woke the next pass at once).
Plan pass(const World& world, FakeSetup& setup);
Plan pass(const World& world);

// Queries on a plan.
const catalog::Condition* condition(const Plan& plan, std::string_view type);
const Write* find_write(const Plan& plan, Write::Op op, std::string_view name);
std::vector<std::string> write_names(const Plan& plan, Write::Op op);
const EventSpec* find_event(const Plan& plan, std::string_view reason);
std::string member_state(const Plan& plan, const std::string& pod);
std::vector<std::vector<std::string>> pending_cmds(const Plan& plan, const std::string& pod);
std::int64_t replicas_in(const Plan& plan, std::string_view set);  // -1: not applied

}  // namespace kstack::reconciler::testing

namespace kstack::reconciler::testing {
// Names of the test world's objects (Stack "db").
std::string pod_of(std::string_view role, int ordinal);
std::string pvc_of(std::string_view role, int ordinal);
std::string set_of(std::string_view role);
std::string headless();
}  // namespace kstack::reconciler::testing
