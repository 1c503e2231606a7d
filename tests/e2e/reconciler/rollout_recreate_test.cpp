// Live upgrades (issue 12): a member that loses its pod before its turn in a rollout (the test
// deletes it, as an eviction or a node loss would) comes back on the template it still runs —
// the old one: the partition is above it — and is set up as that template's AppType says, with
// its package, not the new AppType's; in its turn it then moves like the others: its hook, one
// new pod, --configure --upgrade-from.
#include <iostream>
#include <map>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/e2e/reconciler/rollout_fixture.h"

namespace kstack::testenv::e2e {
namespace {

using namespace std::chrono_literals;
using Kind = JournalEntry::Kind;

constexpr std::chrono::seconds kStepTimeout{90};

using RolloutRecreateTest = RolloutTest;

TEST_F(RolloutRecreateTest, AMemberRecreatedBeforeItsTurnIsSetUpAsItsOldTemplateThenMovesOnce) {
  ASSERT_NO_FATAL_FAILURE(create_stack());
  const auto old_uid = current_uids();
  const std::size_t begin = journal_.size();
  const auto member3 = roll_pod(3);
  const auto member0 = roll_pod(0);
  std::string old_revision;
  for (const auto& e : journal_.entries()) {
    if (e.kind == Kind::kPod && e.pod == member0) old_revision = e.revision;
  }
  ASSERT_NO_FATAL_FAILURE(set_app(kRollApps[1]));

  // Member 3 moves first; meanwhile member 0's pod goes.
  auto moving = journal_.wait(
      begin,
      [&](const JournalEntry& e) {
        return e.pod == member3 && e.uid == old_uid.at(member3) &&
               (e.kind == Kind::kGone || e.deleting);
      },
      kStepTimeout);
  ASSERT_TRUE(moving) << "member 3 did not move";
  auto removed = client_->remove(kube::resources::kPods, ns_, member0);
  ASSERT_TRUE(removed) << removed.error().to_string();

  auto recreated = journal_.wait(
      *moving,
      [&](const JournalEntry& e) {
        return e.kind == Kind::kPod && e.pod == member0 && e.uid != old_uid.at(member0);
      },
      kStepTimeout);
  ASSERT_TRUE(recreated) << "member 0 was not recreated";
  const auto entries = journal_.entries();
  const auto& again = entries[*recreated];
  EXPECT_EQ(again.revision, old_revision) << "recreated before its turn: the old template";
  auto configured = journal_.wait(
      *recreated,
      [&](const JournalEntry& e) {
        return e.kind == Kind::kScript && e.pod == member0 && e.script.size() > 1 &&
               e.script[1] == "configure";
      },
      kStepTimeout);
  ASSERT_TRUE(configured) << "member 0's recreated pod was not configured";
  const auto configure = journal_.entries()[*configured];
  std::cout << "[ rollout ] member 0 recreated on " << again.revision << ", set up by "
            << configure.describe() << "\n";
  EXPECT_EQ(configure.script[0], kRollVersions[0])
      << "a pod of roll-v1's template is set up by roll-v1's package: " << configure.describe();
  EXPECT_EQ(configure.arg("--upgrade-from"), "") << "it did not move: " << configure.describe();

  // The rollout finishes, member 0 moving in its turn, once more, after its hook.
  const auto end = wait_rolled(kRollApps[1], begin);
  ASSERT_TRUE(end);
  const auto all = journal_.entries();
  bool hooked = false;
  bool moved = false;
  bool set_up = false;
  std::map<std::string, int> uids;
  for (std::size_t i = *recreated; i < *end; ++i) {
    const auto& e = all[i];
    if (e.pod != member0) continue;
    if (e.kind == Kind::kScript && e.script.size() > 1 && e.script[1] == "preupgrade-start" &&
        !moved) {
      hooked = true;
    }
    if (e.uid == again.uid && (e.kind == Kind::kGone || e.deleting)) moved = true;
    if (e.kind == Kind::kPod) ++uids[e.uid];
    if (moved && e.kind == Kind::kScript && e.script.size() > 1 && e.script[1] == "configure") {
      set_up =
          set_up || (e.script[0] == kRollVersions[1] && e.arg("--upgrade-from") == kRollApps[0]);
    }
  }
  EXPECT_TRUE(hooked) << "no --preupgrade on member 0 before it moved";
  EXPECT_TRUE(moved) << "member 0's recreated pod never moved";
  EXPECT_EQ(uids.size(), 2u) << "member 0: its recreated pod and the one it moved to";
  EXPECT_TRUE(set_up) << "member 0's new pod was not set up by roll-v2's package with "
                         "--upgrade-from roll-v1";
}

}  // namespace
}  // namespace kstack::testenv::e2e
