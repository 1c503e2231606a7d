// Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics: a candidate
// takes the lease only when the holder has not renewed it for lease_duration (measured on the
// candidate's own clock from when it last saw the record change, so clock skew does not
// matter); the leader renews every retry_period and steps down if it could not renew within
// renew_deadline — before anyone else may take the lease. On graceful shutdown the leader
// releases the lease, and candidates watch the Lease so they take over at once.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <boost/json/value.hpp>

#include "kube/client.h"

namespace kstack::informer {

// client-go / controller-runtime defaults.
inline constexpr std::chrono::milliseconds kDefaultLeaseDuration{15'000};
inline constexpr std::chrono::milliseconds kDefaultRenewDeadline{10'000};
inline constexpr std::chrono::milliseconds kDefaultRetryPeriod{2'000};

struct LeaderElectionOptions {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // default: default_identity()
  std::chrono::milliseconds lease_duration = kDefaultLeaseDuration;
  std::chrono::milliseconds renew_deadline = kDefaultRenewDeadline;
  std::chrono::milliseconds retry_period = kDefaultRetryPeriod;
  bool release_on_cancel = true;
};

struct LeaderCallbacks {
  std::function<void()> on_started_leading;
  // Called when leadership ends (lost or released). Work must stop before it returns.
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& holder)> on_new_leader;
};

// "<pod name or hostname>_<random suffix>": unique per process, readable in the Lease.
std::string default_identity();

class LeaderElector {
 public:
  LeaderElector(std::shared_ptr<kube::Client> client, LeaderElectionOptions options,
                LeaderCallbacks callbacks);

  // Campaigns, leads, and campaigns again after losing the lease, until `cancel` fires; then
  // releases the lease if it holds it (release_on_cancel) and returns.
  void run(const kube::CancelToken& cancel);

  bool is_leader() const { return leader_.load(); }
  const std::string& identity() const { return options_.identity; }
  std::string observed_holder() const;

 private:
  enum class Attempt { kAcquired, kHeldByOther, kFailed };
  Attempt try_acquire_or_renew();
  void wait_for_change(std::chrono::milliseconds max_wait, const kube::CancelToken& cancel);
  void lead(const kube::CancelToken& cancel);
  void release();
  void observe(const boost::json::value& lease);

  std::shared_ptr<kube::Client> client_;
  LeaderElectionOptions options_;
  LeaderCallbacks callbacks_;
  std::atomic<bool> leader_{false};

  mutable std::mutex mu_;
  boost::json::value observed_;  // the last Lease read or written
  std::string observed_holder_;
  std::string observed_renew_;
  std::chrono::steady_clock::time_point observed_at_{};
};

}  // namespace kstack::informer
