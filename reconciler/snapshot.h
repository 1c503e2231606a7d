// What one Stack's pass plans from (observe → plan → act): an immutable snapshot of the caches
// for that Stack — the Stack, its AppType, the KStackConfig, the owned objects, the outcomes of
// its notifications and setup steps — and the clock, plus the Findings the pass made while
// planning (claims it had to read from the server). plan() reads nothing else.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "catalog/catalog.h"
#include "catalog/model.h"
#include "executor/actuators.h"
#include "informer/store.h"
#include "observer/observer.h"
#include "reconciler/notifier.h"
#include "reconciler/setup_executor.h"

namespace kstack::reconciler {

struct Snapshot {
  std::string key;             // "<namespace>/<name>"
  informer::ObjectPtr object;  // the cached Stack, never null
  catalog::Stack stack;        // decoded from `object`, its status moved to old_status
  // Its status in the canonical form this pass writes (decoded from its own JSON), so an
  // unchanged status compares equal.
  catalog::StackStatus old_status;
  std::optional<catalog::FoundApp> app;  // nullopt: the AppType is missing
  std::optional<catalog::KStackConfig> config;
  observer::Observed owned;  // from the caches

  // Setup: without a runner, members of roles with a package end in config_error saying so;
  // without a notifier, notifications stay queued.
  bool has_setup_runner = false;
  bool has_notifier = false;
  int notify_max_attempts = NotifierOptions{}.max_attempts;
  NotifyOutcomes notify;  // for members in the Stack's namespace
  SetupOutcomes setup;    // the Stack's setup steps: in flight or done

  std::string now;                         // RFC 3339, for condition transitions
  NotifyOutcome::Clock::time_point clock;  // for notification retries
  std::chrono::milliseconds poll_interval{2000};
  // PodDisruptionBudget as the API server serves it; null: not served (roles that declare
  // minAvailable get none, and the Stack says so).
  const kube::ResourceType* pdb_type = nullptr;

  std::string ns() const { return stack.metadata.namespace_name; }
  std::string name() const { return stack.metadata.name; }
};

// What a pass found out after a plan asked (Plan::claims_to_read). The pass plans again with
// them until the plan asks for nothing more.
struct Findings {
  // Claims read from the server because the cache lacked them: null = not found (or the read
  // failed).
  std::map<std::string, informer::ObjectPtr> claims;
};

}  // namespace kstack::reconciler
