// Leader election against a real kube-apiserver: two electors on one Lease.
#include "informer/leader_election.h"

#include <atomic>
#include <condition_variable>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/kube/client_fixture.h"

namespace kstack::informer {
namespace {

using kube::testing::admin;
using kube::testing::make_namespace;
using namespace std::chrono_literals;

// One elector on its own thread, with leadership as seen by its callbacks.
struct Candidate {
  Candidate(const std::string& ns, const std::string& name, LeaderElectionOptions base,
            std::atomic<int>& leaders, std::atomic<bool>& overlap)
      : leaders_(leaders), overlap_(overlap) {
    base.lease_namespace = ns;
    base.identity = name;
    LeaderCallbacks cb;
    cb.on_started_leading = [this] {
      if (leaders_.fetch_add(1) + 1 > 1) overlap_ = true;
      std::lock_guard lock(mu);
      leading = true;
      cv.notify_all();
    };
    cb.on_stopped_leading = [this] {
      leaders_.fetch_sub(1);
      std::lock_guard lock(mu);
      leading = false;
      stopped_at = std::chrono::steady_clock::now();
      cv.notify_all();
    };
    elector = std::make_unique<LeaderElector>(admin(), base, cb);
    thread = std::thread([this] { elector->run(cancel); });
  }
  ~Candidate() { stop(); }
  void stop() {
    cancel.cancel();
    if (thread.joinable()) thread.join();
  }
  bool wait_leading(std::chrono::seconds timeout) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, [&] { return leading; });
  }

  std::atomic<int>& leaders_;
  std::atomic<bool>& overlap_;
  std::unique_ptr<LeaderElector> elector;
  kube::CancelToken cancel;
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool leading = false;
  std::chrono::steady_clock::time_point stopped_at{};
};

LeaderElectionOptions fast(bool release) {
  LeaderElectionOptions o;
  o.lease_name = "kstack-test-lock";
  o.lease_duration = 4s;
  o.renew_deadline = 2s;
  o.retry_period = 500ms;
  o.release_on_cancel = release;
  return o;
}

Candidate* wait_for_a_leader(Candidate& a, Candidate& b, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (a.wait_leading(1s)) return &a;
    if (b.wait_leading(0s)) return &b;
  }
  return nullptr;
}

TEST(LeaderElection, ExactlyOneLeadsAndAKilledLeaderIsReplacedAfterTheLeaseExpires) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  std::atomic<int> leaders{0};
  std::atomic<bool> overlap{false};
  // The "kill": the leader stops without releasing (as a crashed process would).
  Candidate a(ns, "pod-a", fast(false), leaders, overlap);
  Candidate b(ns, "pod-b", fast(false), leaders, overlap);
  Candidate* first = wait_for_a_leader(a, b, 30s);
  ASSERT_NE(first, nullptr);
  Candidate* second = first == &a ? &b : &a;

  // Both campaign for a while: only one may lead. The callbacks check it at every transition
  // (`overlap` is set if a second leader starts before the first one stopped).
  EXPECT_FALSE(second->wait_leading(6s));  // longer than a lease: renewals keep it
  const auto killed_at = std::chrono::steady_clock::now();
  first->stop();
  ASSERT_TRUE(second->wait_leading(30s));
  const auto handover = std::chrono::steady_clock::now() - killed_at;

  EXPECT_FALSE(overlap.load());
  // lease duration + retry period, plus scheduling slack.
  EXPECT_LE(handover, 4s + 500ms + 1500ms)
      << std::chrono::duration_cast<std::chrono::milliseconds>(handover).count() << " ms";
  EXPECT_EQ(second->elector->observed_holder(), second == &a ? "pod-a" : "pod-b");
}

TEST(LeaderElection, GracefulReleaseHandsOverInUnderASecond) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  std::atomic<int> leaders{0};
  std::atomic<bool> overlap{false};
  auto opts = fast(true);
  opts.lease_duration = 15s;  // release must not wait for expiry
  opts.renew_deadline = 10s;
  opts.retry_period = 2s;
  Candidate a(ns, "pod-a", opts, leaders, overlap);
  Candidate b(ns, "pod-b", opts, leaders, overlap);
  Candidate* first = wait_for_a_leader(a, b, 30s);
  ASSERT_NE(first, nullptr);
  Candidate* second = first == &a ? &b : &a;
  ASSERT_FALSE(second->wait_leading(3s));

  first->stop();  // releases the Lease
  const auto released_at = first->stopped_at;
  ASSERT_TRUE(second->wait_leading(10s));
  const auto handover = std::chrono::steady_clock::now() - released_at;
  EXPECT_LT(handover, 1s) << std::chrono::duration_cast<std::chrono::milliseconds>(handover).count()
                          << " ms";
  EXPECT_FALSE(overlap.load());

  auto lease = c->get(kube::resources::kLeases, ns, "kstack-test-lock");
  ASSERT_TRUE(lease);
  EXPECT_EQ(kube::testing::str_at(*lease, "/spec/holderIdentity"),
            second == &a ? "pod-a" : "pod-b");
  EXPECT_EQ(lease->at_pointer("/spec/leaseTransitions").as_int64(), 1);
}

}  // namespace
}  // namespace kstack::informer
