// Live upgrades survive SIGKILL (issue 12): the `kstack operator` process (its own kubeconfig
// and identity, as operator_kill_test.cpp starts it) rolls a Stack of four members from AppType
// roll-v1 to roll-v2 and back, again and again, and is SIGKILLed at chosen moments of those
// rollouts — while a member's --preupgrade hook runs, right after a member's pod was deleted,
// right after its new pod appeared (its setup under way), right after the new pod became Ready
// — and restarted each time. From a pod watch and the startscript's own reports over the whole
// run: in each rollout every member moved exactly once (one new pod), in order 3, 2, 1, 0, with
// its hook run before and its new pod configured with --upgrade-from; never two members
// unavailable at once (maxUnavailable 1); at the end of each rollout the Stack is Ready with
// every member on the StatefulSet's update revision.
// Kills: 10 by default (KSTACK_E2E_ROLLOUT_KILLS=N), spread over at least three rollouts, each
// kind of moment at least once; the seed is fixed by default and printed (KSTACK_E2E_SEED=N
// replays one, =random draws one). About two
// and a half minutes: a restarted operator waits out its predecessor's 8 s Lease.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "tests/e2e/reconciler/rollout_fixture.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using Kind = JournalEntry::Kind;

constexpr int kMembers = kRollMembers;
const auto& kApps = kRollApps;
const auto& kVersions = kRollVersions;
// One member's move takes a few seconds and a restarted operator waits out the Lease of the
// one it replaces: anything near this bound is a stuck rollout.
constexpr std::chrono::seconds kEventTimeout{120};

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before threads
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// The moments of one member's move, in the order they happen.
enum class Moment { kHookRunning, kPodDeleted, kPodCreated, kPodReady };
constexpr int kMoments = 4;

const char* to_string(Moment m) {
  switch (m) {
    case Moment::kHookRunning:
      return "while its --preupgrade runs";
    case Moment::kPodDeleted:
      return "right after its pod was deleted";
    case Moment::kPodCreated:
      return "after its new pod appeared (setup under way)";
    case Moment::kPodReady:
      return "right after its new pod became Ready";
  }
  return "";
}

struct Kill {
  int member = 0;
  Moment moment = Moment::kHookRunning;
  int delay_ms = 0;  // after the event
};

// `count` distinct kill moments of one rollout (members move 3, 2, 1, 0), in order.
std::vector<Kill> plan_kills(int count, std::mt19937& rng) {
  constexpr int kPositions = kMembers * kMoments;
  std::vector<int> positions(kPositions);
  std::iota(positions.begin(), positions.end(), 0);
  std::shuffle(positions.begin(), positions.end(), rng);
  positions.resize(static_cast<std::size_t>(std::clamp(count, 0, kPositions)));
  std::sort(positions.begin(), positions.end());
  std::vector<Kill> kills;
  for (int p : positions) {
    Kill k;
    k.member = kMembers - 1 - p / kMoments;
    k.moment = static_cast<Moment>(p % kMoments);
    // The hook takes a second: kill within it. Setup of a new pod takes a moment too.
    const int max_delay = k.moment == Moment::kHookRunning  ? 600
                          : k.moment == Moment::kPodCreated ? 1200
                                                            : 100;
    k.delay_ms = std::uniform_int_distribution<int>(0, max_delay)(rng);
    kills.push_back(k);
  }
  return kills;
}

// The kills of every rollout: `kills` spread evenly over `rollouts`, drawn again until each
// kind of moment is among them (when there are enough kills for that).
std::vector<std::vector<Kill>> plan_run(int kills, int rollouts, std::mt19937& rng) {
  for (int attempt = 0;; ++attempt) {
    std::vector<std::vector<Kill>> plan;
    std::set<Moment> kinds;
    for (int r = 0; r < rollouts; ++r) {
      plan.push_back(plan_kills(kills / rollouts + (r < kills % rollouts ? 1 : 0), rng));
      for (const auto& k : plan.back()) kinds.insert(k.moment);
    }
    if (static_cast<int>(kinds.size()) >= std::min(kills, kMoments) || attempt == 100) return plan;
  }
}

// Whether a journal entry is the event of `kill` in a rollout to `app` whose member pods had
// `old_uid` before it.
bool is_moment(const JournalEntry& e, const Kill& kill, const std::string& app,
               const std::map<std::string, std::string>& old_uid) {
  const auto pod = roll_pod(kill.member);
  if (e.pod != pod) return false;
  const auto& old = old_uid.at(pod);
  switch (kill.moment) {
    case Moment::kHookRunning:
      return e.kind == Kind::kScript && e.script.size() > 1 && e.script[1] == "preupgrade-start" &&
             e.arg("--to-app") == app;
    case Moment::kPodDeleted:
      return e.uid == old && (e.kind == Kind::kGone || (e.kind == Kind::kPod && e.deleting));
    case Moment::kPodCreated:
      return e.kind == Kind::kPod && e.uid != old;
    case Moment::kPodReady:
      return e.kind == Kind::kPod && e.uid != old && e.ready && !e.deleting;
  }
  return false;
}

class RolloutKillTest : public RolloutTest {
 protected:
  // Waits for the moment of `kill` (from journal index `from`), then SIGKILLs and restarts the
  // operator; the index after the entry it acted on (nullopt, with a failure, when the event
  // did not come or the operator had died on its own).
  std::optional<std::size_t> kill_at(const Kill& kill, std::size_t from, const std::string& app,
                                     const std::map<std::string, std::string>& old_uid,
                                     int number) {
    const bool seen_already =
        journal_
            .wait(
                from, [&](const JournalEntry& e) { return is_moment(e, kill, app, old_uid); }, 0ms)
            .has_value();
    auto at = journal_.wait(
        from, [&](const JournalEntry& e) { return is_moment(e, kill, app, old_uid); },
        kEventTimeout);
    if (!at) {
      ADD_FAILURE() << "no event for kill " << number << " (member " << kill.member << " "
                    << to_string(kill.moment) << ") in " << kEventTimeout.count() << " s\n"
                    << describe_stack(*client_, ns_, kRollStack);
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kill.delay_ms));
    if (!running_.running()) {
      ADD_FAILURE() << "the operator died on its own: " << running_.how_it_ended();
      return std::nullopt;
    }
    running_.kill_now();
    std::cout << fmt::format(
        "[ rollout ] kill {}: member {} {}{}, +{} ms: SIGKILL at {:.1f} s\n", number, kill.member,
        to_string(kill.moment),
        seen_already ? " (came while the restarted operator waited for the Lease: once it leads)"
                     : "",
        kill.delay_ms, journal_.now());
    start_operator();
    if (!wait_leading()) {
      ADD_FAILURE() << "the restarted operator does not lead";
      return std::nullopt;
    }
    return *at + 1;
  }

  // What the journal says about the rollout in entries [begin, end): each member moved once,
  // 3 to 0, after its hook ran for this target, and its new pod was configured with
  // --upgrade-from the previous AppType by the new package.
  void check_rollout(int number, std::size_t begin, std::size_t end, int from_v, int to_v,
                     const std::map<std::string, std::string>& old_uid) {
    const auto all = journal_.entries(begin);
    const std::vector<JournalEntry> entries(all.begin(),
                                            all.begin() + static_cast<std::ptrdiff_t>(end - begin));
    std::map<std::string, std::size_t> deleted_at;  // first sign of the old pod's deletion
    std::map<std::string, std::set<std::string>> new_uids;
    std::map<std::string, int> hooks;
    std::map<std::string, int> upgrade_configures;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const auto& e = entries[i];
      const auto& old = old_uid.count(e.pod) != 0 ? old_uid.at(e.pod) : std::string();
      if ((e.kind == Kind::kPod || e.kind == Kind::kGone) && e.uid != old) {
        new_uids[e.pod].insert(e.uid);
      }
      if (e.uid == old && (e.kind == Kind::kGone || e.deleting) && deleted_at.count(e.pod) == 0) {
        deleted_at[e.pod] = i;
      }
      if (e.kind != Kind::kScript || e.script.size() < 2) continue;
      if (e.script[1] == "preupgrade-start" && e.arg("--to-app") == kApps[to_v] &&
          deleted_at.count(e.pod) == 0) {
        EXPECT_EQ(e.script[0], kVersions[to_v]) << "the hook of the new package: " << e.describe();
        EXPECT_EQ(e.arg("--from-app"), kApps[from_v]) << e.describe();
        ++hooks[e.pod];
      }
      if (e.script[1] == "configure" && deleted_at.count(e.pod) != 0) {
        EXPECT_EQ(e.script[0], kVersions[to_v])
            << "configured by the new package: " << e.describe();
        if (e.arg("--upgrade-from") == kApps[from_v]) ++upgrade_configures[e.pod];
      }
    }
    std::string summary;
    for (int m = kMembers - 1; m >= 0; --m) {
      const auto pod = roll_pod(m);
      EXPECT_EQ(new_uids[pod].size(), 1u)
          << "rollout " << number << ": " << pod << " should have moved exactly once";
      EXPECT_EQ(deleted_at.count(pod), 1u) << "rollout " << number << ": " << pod << " never moved";
      EXPECT_GE(hooks[pod], 1) << "rollout " << number << ": no --preupgrade on " << pod
                               << " before it moved";
      EXPECT_GE(upgrade_configures[pod], 1)
          << "rollout " << number << ": " << pod << "'s new pod was not configured with "
          << "--upgrade-from " << kApps[from_v];
      if (m + 1 < kMembers && deleted_at.count(pod) != 0 &&
          deleted_at.count(roll_pod(m + 1)) != 0) {
        EXPECT_GT(deleted_at[pod], deleted_at[roll_pod(m + 1)])
            << "rollout " << number << ": " << pod << " moved before " << roll_pod(m + 1);
      }
      summary += fmt::format(" {}:{}", m, hooks[pod]);
    }
    std::cout << "[ rollout ] rollout " << number << " " << kApps[from_v] << " -> " << kApps[to_v]
              << ": --preupgrade runs per member (3..0)" << summary << "\n";
  }
};

TEST_F(RolloutKillTest, KilledDuringRollingUpgradesEveryMemberStillMovesOnceInOrderOneAtATime) {
  const int kills = env_int("KSTACK_E2E_ROLLOUT_KILLS", 10);
  const unsigned seed = e2e_seed(20261127U);
  // At least v1 -> v2 -> v1 -> v2, and at most 4 kills per rollout.
  const int rollouts = std::max(3, (kills + 3) / 4);
  std::cout << "[ rollout ] " << kills << " kills over " << rollouts << " rollouts, seed " << seed
            << "\n";
  std::mt19937 rng(seed);
  const auto plans = plan_run(kills, rollouts, rng);

  ASSERT_NO_FATAL_FAILURE(create_stack());

  const std::size_t first = journal_.size();
  std::size_t begin_next = first;  // rollouts' entries are contiguous: nothing falls between
  int killed = 0;
  for (int r = 0; r < rollouts; ++r) {
    const int from_v = r % 2;
    const int to_v = 1 - from_v;
    const auto old_uid = current_uids();
    const std::size_t begin = begin_next;
    const double started = journal_.now();
    const auto& plan = plans[static_cast<std::size_t>(r)];
    ASSERT_NO_FATAL_FAILURE(set_app(kApps[to_v]));

    std::size_t cursor = begin;
    for (const auto& kill : plan) {
      auto next = kill_at(kill, cursor, kApps[to_v], old_uid, ++killed);
      ASSERT_TRUE(next) << "kill " << killed << " of rollout " << r;
      cursor = *next;
    }
    const auto end = wait_rolled(kApps[to_v], begin);
    ASSERT_TRUE(end) << "rollout " << r << " to " << kApps[to_v];
    std::cout << fmt::format("[ rollout ] rollout {} {} -> {}: {} kills, done in {:.1f} s\n", r,
                             kApps[from_v], kApps[to_v], plan.size(), journal_.now() - started);
    check_rollout(r, begin, *end, from_v, to_v, old_uid);
    begin_next = *end;
  }

  // Never two members unavailable at once, from the first rollout to the end.
  PodStates pods;
  const auto entries = journal_.entries();
  for (std::size_t i = 0; i < first; ++i) replay(pods, entries[i]);
  int worst = unavailable(pods);
  for (std::size_t i = first; i < entries.size(); ++i) {
    replay(pods, entries[i]);
    const int n = unavailable(pods);
    EXPECT_LE(n, 1) << "two members unavailable at once at " << entries[i].describe();
    worst = std::max(worst, n);
  }
  std::cout << fmt::format(
      "[ rollout ] {} kills, {} rollouts, at most {} member unavailable at once, {:.1f} s in all\n",
      killed, rollouts, worst, journal_.now());
}

}  // namespace
}  // namespace kstack::testenv::e2e
