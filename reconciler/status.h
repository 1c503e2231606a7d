// Pure pieces of the Stack status (docs/spec.md §2.2): how a member's state follows from its pod,
// the member-state rollup, the standard conditions and the stack state. The reconciler
// combines them; keeping them free of I/O lets the unit tests pin every transition.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "catalog/model.h"
#include "informer/packed.h"

namespace kstack::reconciler {

// Condition types and the reasons kstack uses.
inline constexpr std::string_view kConditionReady = "Ready";
inline constexpr std::string_view kConditionProgressing = "Progressing";
inline constexpr std::string_view kConditionDegraded = "Degraded";

inline constexpr std::string_view kReasonAppTypeMissing = "AppTypeMissing";
inline constexpr std::string_view kReasonInvalidSpec = "InvalidSpec";
inline constexpr std::string_view kReasonApplyFailed = "ApplyFailed";
inline constexpr std::string_view kReasonPvcMissing = "PVCMissing";
inline constexpr std::string_view kReasonConfigError = "ConfigError";
inline constexpr std::string_view kReasonNotifyFailed = "NotifyFailed";
inline constexpr std::string_view kReasonAsExpected = "AsExpected";
inline constexpr std::string_view kReasonAllMembersReady = "AllMembersReady";
inline constexpr std::string_view kReasonMembersNotReady = "MembersNotReady";
inline constexpr std::string_view kReasonCreating = "Creating";
inline constexpr std::string_view kReasonScaling = "Scaling";
inline constexpr std::string_view kReasonRecovering = "Recovering";
inline constexpr std::string_view kReasonStable = "Stable";
inline constexpr std::string_view kReasonBlocked = "Blocked";
inline constexpr std::string_view kReasonRollingUpdate = "RollingUpdate";
inline constexpr std::string_view kReasonUpgradeFailed = "UpgradeFailed";
inline constexpr std::string_view kReasonPaused = "Paused";
// spec.stopped: Progressing True while the pods go, then Ready and Progressing False.
inline constexpr std::string_view kReasonStopping = "Stopping";
inline constexpr std::string_view kReasonStopped = "Stopped";
// Progressing: a role's first members wait for the roles it dependsOn to be ready.
inline constexpr std::string_view kReasonWaitingForDependencies = "WaitingForDependencies";
// Degraded: a member's node is lost (docs/api.md "Lost nodes").
inline constexpr std::string_view kReasonNodeLost = "NodeLost";
// Degraded: a role declares minAvailable but the API server serves no PodDisruptionBudget.
inline constexpr std::string_view kReasonNoDisruptionBudget = "NoDisruptionBudget";

// What the member's pod says, from the cache (nullptr pod = no pod).
struct PodView {
  bool exists = false;
  bool deleting = false;       // deletionTimestamp set
  bool unschedulable = false;  // PodScheduled=False
  std::string scheduling_message;
  bool scheduled = false;
  bool running_ready = false;   // phase Running and Ready=True
  std::string container_id;     // of container "app", "" before it started
  std::string container_state;  // running | waiting | terminated | absent
  std::int64_t restart_count = 0;
  std::string uid;
  std::string revision;  // label controller-revision-hash: the StatefulSet revision it runs
  std::string app;       // annotation kstack.io/app: the AppType its template came from
  // annotation kstack.io/setup-package: the package of that template ("" without one);
  // meaningful when `app` is set (templates older than the annotations have neither).
  std::string package;
};
PodView view_pod(const informer::PackedValue* pod);

// The member's next state without a setup package (issue 6 adds the setup stage):
// no pod or unscheduled -> create_pending; pod starting -> creating; Running+Ready -> ready.
std::string_view member_state(const PodView& pod);

// The ordinal at the end of "<stack>-<role>-<n>", or nullopt.
std::optional<std::int64_t> ordinal_of(std::string_view member_name);

// Sets (or adds) a condition. lastTransitionTime changes only when `status` changes;
// reason/message/observedGeneration are updated in place. `now` is RFC 3339.
void set_condition(std::vector<catalog::Condition>& conditions, std::string_view type,
                   std::string_view status, std::string_view reason, std::string_view message,
                   std::int64_t observed_generation, std::string_view now);
const catalog::Condition* find_condition(const std::vector<catalog::Condition>& conditions,
                                         std::string_view type);

// Seconds-precision RFC 3339 UTC ("2026-11-22T03:52:04Z"), as metav1.Time.
std::string rfc3339_now();

// Two statuses carry the same information (serialised forms compared).
bool same_status(const catalog::StackStatus& a, const catalog::StackStatus& b);

}  // namespace kstack::reconciler
