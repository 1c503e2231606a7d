// docs/spec.md §4: "a no-op resync of a stable stack issues zero writes", counted on the
// Controller's own client (kube::RequestMetrics records every request by verb: GET, LIST, WATCH are
// reads; POST, PUT, PATCH, DELETE and EXEC are not). And what converging a new Stack costs. The
// same for Stacks with setup packages, PVCs and notifications: tests/e2e/stack_setup.
#include <iostream>
#include <string>

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

constexpr std::uint64_t kStableStacks = 20;
constexpr std::uint64_t kResyncPasses = 10;

TEST_F(ReconcilerTest, StableStacksCostNoWritesOnResyncAndANewStackOnlyAFewPerObject) {
  auto options = controller_options(ns_);
  options.resync_period = 1s;
  ASSERT_NO_FATAL_FAILURE(start_controller(options));
  ASSERT_TRUE(controller_);
  auto& controller = controller_->controller();
  auto& metrics = controller_->client().metrics();

  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < kStableStacks; ++i) {
    create(kStacks, fixture("tiny-stack.yaml", ns_, fmt::format("tiny-{:02}", i)));
  }
  auto all_ready = wait_for(
      *client_, kStacks, ns_, "",
      [](const Objects& o) {
        return o.size() == kStableStacks &&
               std::all_of(o.begin(), o.end(), [](const auto& s) { return stack_ready(s.second); });
      },
      kConvergeTimeout);
  ASSERT_TRUE(all_ready) << all_ready.error();
  std::cout << "[ writes ] " << kStableStacks << " one-member Stacks ready after "
            << seconds_since(start) << " s\n";

  // One full pass first: a write still owed from convergence is not a resync's fault.
  auto passes = controller.stats().resyncs;
  ASSERT_TRUE(
      wait_until([&] { return controller.stats().resyncs >= passes + kStableStacks; }, 30s));
  const auto before = metrics.snapshot();
  passes = controller.stats().resyncs;
  const auto reconciles = controller.stats().reconciles;
  ASSERT_TRUE(wait_until(
      [&] { return controller.stats().resyncs >= passes + kResyncPasses * kStableStacks; }, 60s))
      << kResyncPasses << " resync passes over " << kStableStacks << " Stacks";
  const auto stable = counts_since(before, metrics.snapshot());
  std::cout << "[ writes ] " << controller.stats().resyncs - passes << " resyncs, "
            << controller.stats().reconciles - reconciles << " reconciles of stable Stacks; "
            << "requests:\n"
            << format_counts(stable);
  EXPECT_EQ(write_count(stable), 0u) << "a no-op resync issues zero writes:\n"
                                     << format_counts(stable);

  // A new 5-member Stack from scratch. The floor is 13 object writes (headless Service, 2
  // StatefulSets, 5 member Services, 5 PVC adoptions) + the finalizer; on top come status
  // writes (one per pass that changed it: members create_pending -> creating -> ready, at most
  // ~3 per member) and Events (one per reason per pass: creations, adoptions, state changes).
  // 80 leaves room for passes that interleave with the pods' progress, and still catches a hot
  // loop or writes of unchanged objects.
  constexpr std::uint64_t kMaxConvergeWrites = 80;
  const auto before_new = metrics.snapshot();
  const auto created = std::chrono::steady_clock::now();
  create(kStacks, ring_stack(ns_, "fresh", 2, 3));
  auto ready = wait_stack_ready(*client_, ns_, "fresh");
  ASSERT_TRUE(ready) << ready.error();
  std::cout << "[ writes ] 5-member Stack ready after " << seconds_since(created) << " s\n";
  passes = controller.stats().resyncs;
  ASSERT_TRUE(
      wait_until([&] { return controller.stats().resyncs >= passes + kStableStacks + 1; }, 30s));
  const auto converge = counts_since(before_new, metrics.snapshot());
  std::cout << "[ writes ] converging a new 5-member Stack (2 roles, storage), requests:\n"
            << format_counts(converge) << "[ writes ] writes by verb:";
  for (const auto& [verb, n] : writes_by_verb(converge)) std::cout << " " << verb << "=" << n;
  std::cout << " total=" << write_count(converge) << "\n";
  EXPECT_LE(write_count(converge), kMaxConvergeWrites) << format_counts(converge);
  EXPECT_EQ(writes_by_verb(converge)["DELETE"], 0u) << "nothing to delete when creating";
}

// Deleting a namespace removes a Stack's objects before the Stack itself (the namespace
// controller goes through the API groups one by one); each removal is a watch event, and a pass
// that tried to create the object again would be refused (403 NamespaceTerminating), as would
// any Event. At most one such refusal per Stack, for an apply or for an Event: then the Stack is
// known to be going, and its finalizer is still removed.
TEST_F(ReconcilerTest, DeletingANamespaceCostsAtMostOneRefusedApplyAndOneRefusedEventPerStack) {
  ASSERT_NO_FATAL_FAILURE(start_controller(controller_options(ns_)));
  ASSERT_TRUE(controller_);
  auto& metrics = controller_->client().metrics();
  constexpr std::size_t kGoing = 2;
  for (std::size_t i = 0; i < kGoing; ++i) {
    create(kStacks, ring_stack(ns_, fmt::format("going-{}", i), 2, 3));
  }
  for (std::size_t i = 0; i < kGoing; ++i) {
    auto ready = wait_stack_ready(*client_, ns_, fmt::format("going-{}", i));
    ASSERT_TRUE(ready) << ready.error();
  }
  const auto before = metrics.snapshot();
  ASSERT_TRUE(client_->remove(kube::resources::kNamespaces, "", ns_));
  auto gone = wait_for(
      *client_, kStacks, ns_, "", [](const Objects& o) { return o.empty(); }, kConvergeTimeout);
  ASSERT_TRUE(gone) << "the controller lets go of the Stacks of a namespace being deleted: "
                    << gone.error();
  const auto during = counts_since(before, metrics.snapshot());
  std::cout << "[ writes ] deleting the namespace of " << kGoing << " ready Stacks, requests:\n"
            << format_counts(during);
  std::uint64_t refused_applies = 0, refused_events = 0;
  for (const auto& [key, n] : during) {
    if (key.second != "403") continue;
    (key.first == "POST" ? refused_events : refused_applies) += n;
  }
  EXPECT_LE(refused_applies, kGoing) << format_counts(during);
  EXPECT_LE(refused_events, kGoing) << format_counts(during);
}

}  // namespace
}  // namespace kstack::testenv::e2e
