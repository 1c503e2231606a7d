#include "informer/work_queue.h"

#include <array>
#include <atomic>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "informer/fake_clock.h"

namespace kstack::informer {
namespace {

using namespace std::chrono_literals;

constexpr auto kTestTimeout = 30s;  // real time; only reached when a test is broken

struct Fixture {
  explicit Fixture(WorkQueueOptions options = {}) : queue(with_fakes(std::move(options), *this)) {}

  static WorkQueueOptions with_fakes(WorkQueueOptions options, Fixture& f) {
    options.clock = f.clock;
    options.metrics = f.metrics;
    options.name = "test";
    return options;
  }

  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<CountingWorkQueueMetrics> metrics = std::make_shared<CountingWorkQueueMetrics>();
  WorkQueue queue;
};

WorkQueueOptions without_bucket() {
  WorkQueueOptions options;
  options.qps = 0;
  return options;
}

// Gets the ready key (there must be one) and marks it done.
std::string take(WorkQueue& queue) {
  EXPECT_GE(queue.len(), 1u);
  auto key = queue.get();
  EXPECT_TRUE(key.has_value());
  queue.done(*key);
  return key.value_or("");
}

// --- deduplication and per-key serialisation ---------------------------------------------------

TEST(WorkQueue, HandsOutKeysInTheOrderTheyWereAdded) {
  Fixture f;
  f.queue.add("ns/a");
  f.queue.add("ns/b");
  f.queue.add("ns/c");
  EXPECT_EQ(take(f.queue), "ns/a");
  EXPECT_EQ(take(f.queue), "ns/b");
  EXPECT_EQ(take(f.queue), "ns/c");
  EXPECT_EQ(f.queue.len(), 0u);
}

TEST(WorkQueue, AKeyAddedManyTimesWhileWaitingIsHandedOutOnce) {
  Fixture f;
  for (int i = 0; i < 10; ++i) f.queue.add("ns/a");
  f.queue.add("ns/b");
  EXPECT_EQ(f.queue.len(), 2u);
  EXPECT_EQ(take(f.queue), "ns/a");
  EXPECT_EQ(take(f.queue), "ns/b");
  EXPECT_EQ(f.queue.len(), 0u);
  EXPECT_EQ(f.metrics->counts().adds, 2u);
}

TEST(WorkQueue, AKeyReAddedWhileInFlightWaitsForDoneAndIsThenProcessedAgain) {
  Fixture f;
  f.queue.add("ns/a");
  ASSERT_EQ(f.queue.get(), "ns/a");
  f.queue.add("ns/a");
  f.queue.add("ns/a");
  EXPECT_EQ(f.queue.len(), 0u);  // not available to another worker

  // Another worker blocked in get() receives the other key, not the in-flight one.
  std::promise<std::optional<std::string>> other;
  std::thread worker([&] { other.set_value(f.queue.get()); });
  f.queue.add("ns/b");
  auto got = other.get_future();
  ASSERT_EQ(got.wait_for(kTestTimeout), std::future_status::ready);
  EXPECT_EQ(got.get(), "ns/b");
  worker.join();

  f.queue.done("ns/a");
  EXPECT_EQ(f.queue.len(), 1u);
  EXPECT_EQ(take(f.queue), "ns/a");
  f.queue.done("ns/b");
  EXPECT_EQ(f.queue.len(), 0u);
}

TEST(WorkQueue, DoneOfAKeyThatIsNotInFlightIsIgnored) {
  Fixture f;
  f.queue.add("ns/a");
  f.queue.done("ns/a");
  f.queue.done("ns/never-added");
  EXPECT_EQ(f.queue.len(), 1u);
  EXPECT_EQ(f.queue.in_flight(), 0u);
}

// Eight workers, many keys, each added many times from several threads and by its own
// reconcile: a key is never reconciled by two workers at once, and every key's last add is
// followed by a reconcile.
TEST(WorkQueue, EightWorkersNeverReconcileTheSameKeyConcurrently) {
  constexpr int kKeys = 16;
  constexpr int kProducers = 4;
  constexpr int kAddsPerProducerAndKey = 250;
  constexpr int kAddsPerKey = kProducers * kAddsPerProducerAndKey;
  constexpr int kSelfAddsPerKey = 50;
  WorkQueue queue;  // real clock: nothing here is delayed

  struct KeyState {
    std::atomic<int> in_flight{0};
    std::atomic<int> adds{0};       // incremented just before each add()
    std::atomic<int> last_seen{0};  // `adds` as read at the start of the latest reconcile
    std::atomic<int> self_adds{0};
  };
  std::array<KeyState, kKeys> keys;
  std::atomic<int> overlaps{0};
  std::atomic<int> reconciles{0};
  std::mutex mu;
  std::condition_variable progressed;

  auto index_of = [](const std::string& key) { return std::stoi(key.substr(3)); };
  Workers workers(queue, 8, [&](const std::string& key) {
    KeyState& k = keys[static_cast<std::size_t>(index_of(key))];
    if (k.in_flight.fetch_add(1) != 0) ++overlaps;
    const int seen = k.adds.load();
    // Re-add the key while it is in flight; the other workers must leave it alone meanwhile.
    if (k.self_adds.fetch_add(1) < kSelfAddsPerKey) queue.add(key);
    for (int i = 0; i < 10; ++i) std::this_thread::yield();
    k.last_seen.store(seen);
    k.in_flight.fetch_sub(1);
    ++reconciles;
    {
      std::lock_guard guard(mu);  // pairs with the waiter's predicate check
    }
    progressed.notify_all();
    return WorkResult::success();
  });

  std::vector<std::thread> producers;
  producers.reserve(kProducers);
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&] {
      for (int i = 0; i < kAddsPerProducerAndKey; ++i) {
        for (int k = 0; k < kKeys; ++k) {
          keys[static_cast<std::size_t>(k)].adds.fetch_add(1);
          queue.add("ns/" + std::to_string(k));
        }
      }
    });
  }
  for (auto& p : producers) p.join();

  std::unique_lock lock(mu);
  const bool all_seen = progressed.wait_for(lock, kTestTimeout, [&] {
    for (const auto& k : keys) {
      if (k.last_seen.load() != kAddsPerKey || k.self_adds.load() <= kSelfAddsPerKey) {
        return false;
      }
    }
    return true;
  });
  lock.unlock();
  workers.stop();

  EXPECT_TRUE(all_seen) << "some key's last add was never reconciled";
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GE(reconciles.load(), kKeys * kSelfAddsPerKey);
  EXPECT_LE(reconciles.load(), kKeys * (kAddsPerKey + kSelfAddsPerKey + 1));
}

// --- per-key backoff and the token bucket ------------------------------------------------------

// Expects `key` to become ready exactly `delay` from now (and not a nanosecond earlier).
void expect_ready_after(Fixture& f, const std::string& key, std::chrono::nanoseconds delay) {
  if (delay > 0ns) {
    f.clock->advance(delay - 1ns);
    EXPECT_EQ(f.queue.len(), 0u) << key << " ready before " << delay.count() << "ns";
    f.clock->advance(1ns);
  }
  EXPECT_EQ(f.queue.len(), 1u) << key << " not ready after " << delay.count() << "ns";
  EXPECT_EQ(take(f.queue), key);
}

TEST(WorkQueue, RateLimitedAddsBackOffExponentiallyFrom5msUpTo1000s) {
  Fixture f(without_bucket());
  std::chrono::nanoseconds expected = 5ms;
  for (int failures = 1; failures <= 25; ++failures) {
    f.queue.add_rate_limited("ns/a");
    EXPECT_EQ(f.queue.num_requeues("ns/a"), failures);
    expect_ready_after(f, "ns/a", expected);
    expected = std::min<std::chrono::nanoseconds>(expected * 2, 1000s);
  }
  EXPECT_EQ(expected, 1000s);  // the cap was reached (5ms * 2^18 > 1000s)
}

TEST(WorkQueue, DefaultBackoffAndBucketAreClientGosControllerDefaults) {
  const WorkQueueOptions defaults;
  EXPECT_EQ(defaults.base_delay, 5ms);
  EXPECT_EQ(defaults.max_delay, 1000s);
  EXPECT_EQ(defaults.qps, 10.0);
  EXPECT_EQ(defaults.burst, 100);
}

TEST(WorkQueue, ForgetResetsTheBackoffOfThatKeyOnly) {
  Fixture f(without_bucket());
  for (int i = 0; i < 3; ++i) {
    f.queue.add_rate_limited("ns/a");
    f.queue.add_rate_limited("ns/b");
    f.clock->advance(1h);
    take(f.queue);
    take(f.queue);
  }
  f.queue.forget("ns/a");
  EXPECT_EQ(f.queue.num_requeues("ns/a"), 0);
  EXPECT_EQ(f.queue.num_requeues("ns/b"), 3);
  f.queue.add_rate_limited("ns/a");
  expect_ready_after(f, "ns/a", 5ms);
  f.queue.add_rate_limited("ns/b");
  expect_ready_after(f, "ns/b", 40ms);
}

TEST(WorkQueue, TheTokenBucketAllowsABurstThenSpacesAddsAtQps) {
  WorkQueueOptions options;
  options.qps = 10;
  options.burst = 3;
  Fixture f(options);
  for (int i = 0; i < 5; ++i) f.queue.add_rate_limited("ns/" + std::to_string(i));
  f.clock->advance(5ms - 1ns);
  EXPECT_EQ(f.queue.len(), 0u);
  f.clock->advance(1ns);
  EXPECT_EQ(f.queue.len(), 3u);  // the burst, after each key's own 5ms backoff
  f.clock->advance(95ms - 1ns);
  EXPECT_EQ(f.queue.len(), 3u);
  f.clock->advance(1ns);
  EXPECT_EQ(f.queue.len(), 4u);  // 1/qps later
  f.clock->advance(100ms);
  EXPECT_EQ(f.queue.len(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(take(f.queue), "ns/" + std::to_string(i));
}

TEST(WorkQueue, ARateLimitedAddWaitsForTheLongerOfBackoffAndBucket) {
  WorkQueueOptions options;
  options.qps = 10;
  options.burst = 1;
  Fixture f(options);
  // Five failures of ns/a, each with a full bucket: pure backoff, 5ms..80ms.
  for (int i = 0; i < 5; ++i) {
    f.clock->advance(1h);
    f.queue.add_rate_limited("ns/a");
    f.clock->advance(1h);
    take(f.queue);
  }
  f.clock->advance(1h);
  f.queue.add_rate_limited("ns/x");  // takes the only token
  f.queue.add_rate_limited("ns/a");  // bucket: 100ms, backoff: 160ms
  f.queue.add_rate_limited("ns/b");  // bucket: 200ms, backoff: 5ms
  f.clock->advance(5ms);
  EXPECT_EQ(take(f.queue), "ns/x");
  f.clock->advance(155ms - 1ns);
  EXPECT_EQ(f.queue.len(), 0u);
  f.clock->advance(1ns);
  EXPECT_EQ(take(f.queue), "ns/a");
  f.clock->advance(40ms - 1ns);
  EXPECT_EQ(f.queue.len(), 0u);
  f.clock->advance(1ns);
  EXPECT_EQ(take(f.queue), "ns/b");
}

// --- add_after ---------------------------------------------------------------------------------

TEST(WorkQueue, AddAfterMakesTheKeyReadyOnlyOnceTheDelayHasPassed) {
  Fixture f;
  f.queue.add_after("ns/a", 100ms);
  EXPECT_EQ(f.queue.len(), 0u);
  expect_ready_after(f, "ns/a", 100ms);
  f.clock->advance(1h);
  EXPECT_EQ(f.queue.len(), 0u);  // once
}

TEST(WorkQueue, AddAfterWithoutPositiveDelayIsAnAdd) {
  Fixture f;
  f.queue.add_after("ns/a", 0ns);
  f.queue.add_after("ns/b", -1s);
  EXPECT_EQ(f.queue.len(), 2u);
}

TEST(WorkQueue, DelayedKeysBecomeReadyInDeadlineOrder) {
  Fixture f;
  f.queue.add_after("ns/slow", 3s);
  f.queue.add_after("ns/fast", 1s);
  f.queue.add_after("ns/medium", 2s);
  f.clock->advance(3s);
  EXPECT_EQ(take(f.queue), "ns/fast");
  EXPECT_EQ(take(f.queue), "ns/medium");
  EXPECT_EQ(take(f.queue), "ns/slow");
}

TEST(WorkQueue, AGetterBlockedOnADelayedKeyWakesWhenTheClockReachesIt) {
  Fixture f;
  std::promise<std::optional<std::string>> got;
  std::thread getter([&] { got.set_value(f.queue.get()); });
  f.queue.add_after("ns/a", 1s);
  ASSERT_TRUE(f.clock->await_waiters(1, kTestTimeout));  // the getter waits on the clock
  f.clock->advance(1s);
  auto result = got.get_future();
  ASSERT_EQ(result.wait_for(kTestTimeout), std::future_status::ready);
  EXPECT_EQ(result.get(), "ns/a");
  getter.join();
}

TEST(WorkQueue, AnEarlierAddAfterReplacesAPendingLaterOne) {
  Fixture f;
  f.queue.add_after("ns/a", 10s);
  f.queue.add_after("ns/a", 1s);
  expect_ready_after(f, "ns/a", 1s);
  f.clock->advance(1h);
  EXPECT_EQ(f.queue.len(), 0u);
}

TEST(WorkQueue, ALaterAddAfterOfAPendingKeyIsDropped) {
  Fixture f;
  f.queue.add_after("ns/a", 1s);
  f.queue.add_after("ns/a", 10s);
  expect_ready_after(f, "ns/a", 1s);
  f.clock->advance(1h);
  EXPECT_EQ(f.queue.len(), 0u);
}

TEST(WorkQueue, AnAddSupersedesAPendingAddAfter) {
  Fixture f;
  f.queue.add_after("ns/a", 1s);
  f.queue.add("ns/a");
  EXPECT_EQ(take(f.queue), "ns/a");
  f.clock->advance(1h);
  EXPECT_EQ(f.queue.len(), 0u);
}

TEST(WorkQueue, AddAfterOfAKeyAlreadyWaitingIsDropped) {
  Fixture f;
  f.queue.add("ns/a");
  f.queue.add_after("ns/a", 1s);
  EXPECT_EQ(take(f.queue), "ns/a");
  f.clock->advance(1h);
  EXPECT_EQ(f.queue.len(), 0u);
}

TEST(WorkQueue, AKeyDelayedWhileInFlightIsQueuedAtDoneIfItsDelayHasPassed) {
  Fixture f;
  f.queue.add("ns/a");
  ASSERT_EQ(f.queue.get(), "ns/a");
  f.queue.add_after("ns/a", 1s);
  f.clock->advance(1s);
  EXPECT_EQ(f.queue.len(), 0u);  // due, but still in flight
  f.queue.done("ns/a");
  EXPECT_EQ(take(f.queue), "ns/a");
}

// --- shutdown ----------------------------------------------------------------------------------

TEST(WorkQueue, ShutDownDropsQueuedAndDelayedKeysAndIgnoresLaterAdds) {
  Fixture f;
  f.queue.add("ns/a");
  f.queue.add_after("ns/b", 1s);
  f.queue.shut_down();
  EXPECT_TRUE(f.queue.shutting_down());
  EXPECT_EQ(f.queue.len(), 0u);
  EXPECT_EQ(f.queue.get(), std::nullopt);
  f.queue.add("ns/c");
  f.queue.add_after("ns/d", 1s);
  f.queue.add_rate_limited("ns/e");
  f.clock->advance(1h);
  EXPECT_EQ(f.queue.len(), 0u);
  EXPECT_EQ(f.queue.get(), std::nullopt);
}

TEST(WorkQueue, ShutDownWakesGettersBlockedOnAnEmptyQueue) {
  Fixture f;
  std::vector<std::thread> getters;
  getters.reserve(3);
  std::atomic<int> nullopts{0};
  for (int i = 0; i < 3; ++i) {
    getters.emplace_back([&] {
      if (!f.queue.get()) ++nullopts;
    });
  }
  f.queue.shut_down();
  for (auto& g : getters) g.join();
  EXPECT_EQ(nullopts.load(), 3);
}

TEST(WorkQueue, ShutDownWakesAGetterWaitingOnTheClock) {
  Fixture f;
  f.queue.add_after("ns/a", 1h);
  std::thread getter([&] { EXPECT_EQ(f.queue.get(), std::nullopt); });
  ASSERT_TRUE(f.clock->await_waiters(1, kTestTimeout));
  f.queue.shut_down();
  getter.join();
}

TEST(WorkQueue, ShutDownWithDrainWaitsForInFlightKeysAndDoesNotRequeueThem) {
  Fixture f;
  f.queue.add("ns/a");
  ASSERT_EQ(f.queue.get(), "ns/a");
  f.queue.add("ns/a");  // re-added while in flight
  f.queue.shut_down();  // so that the checks below do not depend on the drainer's progress

  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    f.queue.shut_down_with_drain();
    drained = true;
  });
  EXPECT_EQ(f.queue.get(), std::nullopt);
  f.queue.add("ns/b");
  EXPECT_EQ(f.queue.len(), 0u);
  EXPECT_FALSE(drained.load());  // "ns/a" is still in flight
  EXPECT_EQ(f.queue.in_flight(), 1u);

  f.queue.done("ns/a");
  drainer.join();
  EXPECT_TRUE(drained.load());
  EXPECT_EQ(f.queue.in_flight(), 0u);
  EXPECT_EQ(f.queue.len(), 0u);
  EXPECT_EQ(f.metrics->counts().work_durations.size(), 1u);
}

TEST(Workers, StopLetsTheInFlightReconcileFinishThenJoinsTheWorkers) {
  Fixture f;
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> finished{false};
  std::vector<std::string> reconciled;  // only touched by the single worker
  Workers workers(f.queue, 1, [&](const std::string& key) {
    reconciled.push_back(key);
    started.set_value();
    released.wait();
    finished = true;
    return WorkResult::retry("would be retried, were the queue not shut down");
  });
  f.queue.add("ns/a");
  started.get_future().wait();

  std::atomic<bool> finished_before_stop_returned{false};
  std::thread stopper([&] {
    workers.stop();
    finished_before_stop_returned = finished.load();
  });
  f.queue.shut_down();  // whether or not the stopper got there yet
  f.queue.add("ns/b");
  release.set_value();
  stopper.join();

  EXPECT_TRUE(finished_before_stop_returned.load());
  EXPECT_EQ(reconciled, std::vector<std::string>{"ns/a"});
  EXPECT_EQ(f.queue.in_flight(), 0u);
  EXPECT_EQ(f.queue.len(), 0u);
  workers.stop();  // idempotent
}

// --- the worker loop ---------------------------------------------------------------------------

TEST(Workers, ResultsAreAppliedAsControllerRuntimeDoes) {
  Fixture f(without_bucket());
  WorkResult next;
  const ReconcileFn reconcile = [&](const std::string&) { return next; };
  auto run = [&](WorkResult result) {
    next = std::move(result);
    ASSERT_EQ(f.queue.len(), 1u);
    ASSERT_TRUE(process_next_work_item(f.queue, reconcile));
    EXPECT_EQ(f.queue.in_flight(), 0u);
  };
  f.queue.add("ns/a");

  run(WorkResult::retry("transient"));  // requeued with backoff
  EXPECT_EQ(f.queue.num_requeues("ns/a"), 1);
  f.clock->advance(5ms);

  run(WorkResult::requeue());  // requeued with backoff, no error
  EXPECT_EQ(f.queue.num_requeues("ns/a"), 2);
  f.clock->advance(10ms);

  run(WorkResult::requeue_after(30s));  // forgotten, then requeued after the delay
  EXPECT_EQ(f.queue.num_requeues("ns/a"), 0);
  f.clock->advance(30s - 1ns);
  EXPECT_EQ(f.queue.len(), 0u);
  f.clock->advance(1ns);

  run(WorkResult::retry("again"));
  f.clock->advance(5ms);
  run(WorkResult::terminal("hopeless"));  // not requeued; failures kept
  EXPECT_EQ(f.queue.num_requeues("ns/a"), 1);
  f.clock->advance(1h);
  EXPECT_EQ(f.queue.len(), 0u);

  f.queue.add("ns/a");
  run(WorkResult::success());  // forgotten, not requeued
  EXPECT_EQ(f.queue.num_requeues("ns/a"), 0);
  f.clock->advance(1h);
  EXPECT_EQ(f.queue.len(), 0u);
}

TEST(Workers, AReconcileThatThrowsIsRetriedWithBackoff) {
  Fixture f(without_bucket());
  f.queue.add("ns/a");
  ASSERT_TRUE(process_next_work_item(
      f.queue, [](const std::string&) -> WorkResult { throw std::runtime_error("boom"); }));
  EXPECT_EQ(f.queue.num_requeues("ns/a"), 1);
  EXPECT_EQ(f.queue.in_flight(), 0u);
  expect_ready_after(f, "ns/a", 5ms);
}

TEST(Workers, ProcessNextWorkItemReturnsFalseOnceShutDown) {
  Fixture f;
  f.queue.shut_down();
  bool called = false;
  EXPECT_FALSE(process_next_work_item(f.queue, [&](const std::string&) {
    called = true;
    return WorkResult::success();
  }));
  EXPECT_FALSE(called);
}

// --- metrics -----------------------------------------------------------------------------------

TEST(WorkQueue, MetricsCountAddsRetriesDepthLatencyAndWorkDuration) {
  Fixture f(without_bucket());
  f.queue.add("ns/a");
  f.queue.add("ns/a");  // deduplicated: not an add
  f.queue.add("ns/b");
  EXPECT_EQ(f.metrics->counts().depth, 2u);

  f.clock->advance(30ms);
  ASSERT_EQ(f.queue.get(), "ns/a");
  EXPECT_EQ(f.metrics->counts().depth, 1u);
  f.clock->advance(70ms);
  f.queue.done("ns/a");

  f.queue.add_after("ns/c", 1s);  // a retry; an add once due
  f.queue.add_rate_limited("ns/d");
  auto counts = f.metrics->counts();
  EXPECT_EQ(counts.adds, 2u);
  EXPECT_EQ(counts.retries, 2u);
  ASSERT_EQ(counts.queue_latencies.size(), 1u);
  EXPECT_EQ(counts.queue_latencies[0], 30ms);
  ASSERT_EQ(counts.work_durations.size(), 1u);
  EXPECT_EQ(counts.work_durations[0], 70ms);

  f.clock->advance(1s);
  EXPECT_EQ(take(f.queue), "ns/b");
  EXPECT_EQ(take(f.queue), "ns/d");
  EXPECT_EQ(take(f.queue), "ns/c");
  counts = f.metrics->counts();
  EXPECT_EQ(counts.adds, 4u);
  EXPECT_EQ(counts.depth, 0u);
  ASSERT_EQ(counts.queue_latencies.size(), 4u);
  EXPECT_EQ(counts.queue_latencies[1], 1100ms);  // ns/b waited since the first add
}

}  // namespace
}  // namespace kstack::informer
