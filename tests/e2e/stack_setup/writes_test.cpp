// docs/spec.md §4, "a no-op resync of a stable stack issues zero writes", for Stacks that do more
// than run pods (tests/e2e/reconciler/writes_test.cpp covers plain ones): members with PVCs, set
// up from a package (configmeta written, package installed, --configure run), old members told
// about a scale-up with --addnodes, and a member held in config_error. Counted on the
// Controller's own client, where EXEC (a setup step) counts as a write.
#include <iostream>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "tests/e2e/stack_setup/fixture.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using catalog::resources::kStacks;

constexpr std::uint64_t kResyncPasses = 10;

class ResyncWrites : public StackSetupTest {
 protected:
  void adjust_controller(reconciler::ControllerOptions& options) override {
    options.resync_period = 1s;
  }
};

TEST_F(ResyncWrites, StacksWithSetupStorageAndNotificationsCostNoWritesOnResync) {
  create_logapp("logapp");
  const auto start = std::chrono::steady_clock::now();
  create(kStacks, logapp_stack(ns_, "grown", "logapp", 2));
  create(kStacks, logapp_stack(ns_, "single", "logapp", 1));
  create(kStacks,
         logapp_stack(ns_, "broken", "logapp", 1,
                      {{std::string(kFailConfigurePodEnv), std::string("broken-worker-0")}}));
  for (const char* stack : {"grown", "single"}) {
    auto quiet = wait_quiet(stack);
    ASSERT_TRUE(quiet) << quiet.error();
  }
  // A third member: the first two each run one --addnodes naming it.
  scale("grown", 3);
  auto grown = wait_stack("grown", [](const json::value& s) {
    return stack_ready(s) && notifications_drained(s) && int_at(s, "/status/readyMembers") == 3;
  });
  ASSERT_TRUE(grown) << grown.error();
  for (const auto& pod : worker_pods("grown", 0, 2)) {
    const auto log = setup_log(pod);
    ASSERT_EQ(entries_of(log, "--addnodes").size(), 1u) << pod << ":\n" << describe_log(log);
  }
  auto broken = wait_stack("broken", [](const json::value& s) {
    auto members = status_members(s, "worker");
    return members.count("broken-worker-0") != 0 &&
           str_at(members.at("broken-worker-0"), "/state") == "config_error" &&
           notifications_drained(s);
  });
  ASSERT_TRUE(broken) << broken.error();
  std::cout << "[ writes ] 3 set-up Stacks (one scaled up, one in config_error) settled after "
            << seconds_since(start) << " s\n";

  auto& controller = controller_->controller();
  auto& metrics = controller_->client().metrics();
  constexpr std::uint64_t kStacksHere = 3;
  // One full pass first: a write still owed from convergence is not a resync's fault.
  auto passes = controller.stats().resyncs;
  ASSERT_TRUE(wait_until([&] { return controller.stats().resyncs >= passes + kStacksHere; }, 30s));
  const auto before = metrics.snapshot();
  passes = controller.stats().resyncs;
  const auto reconciles = controller.stats().reconciles;
  ASSERT_TRUE(wait_until(
      [&] { return controller.stats().resyncs >= passes + kResyncPasses * kStacksHere; }, 60s))
      << kResyncPasses << " resync passes over " << kStacksHere << " Stacks";
  const auto stable = counts_since(before, metrics.snapshot());
  std::cout << "[ writes ] " << controller.stats().resyncs - passes << " resyncs, "
            << controller.stats().reconciles - reconciles << " reconciles; requests:\n"
            << format_counts(stable);
  EXPECT_EQ(write_count(stable), 0u) << "a no-op resync issues zero writes (EXEC included):\n"
                                     << format_counts(stable);
  // Nothing ran again in the members either.
  for (const auto& pod : worker_pods("grown", 0, 3)) {
    const auto log = setup_log(pod);
    EXPECT_EQ(entries_of(log, "--configure").size(), 1u) << pod << ":\n" << describe_log(log);
  }
}

}  // namespace
}  // namespace kstack::testenv::e2e
