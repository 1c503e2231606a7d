// plan() and live upgrades (plan_rollout.cpp): a changed pod template holds every member, then
// kstack lowers the StatefulSet partition one member at a time, highest ordinal first, after
// the new AppType's --preupgrade; a failed hook stops the rollout; reverting restarts the
// member whose hook ran; paused holds; maxUnavailable lets several go; the moved member is set
// up again with --upgrade-from. The StatefulSet controller is played by RolloutWorld below.
#include <algorithm>
#include <functional>
#include <stdexcept>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/parse.h"
#include "reconciler/desired_state.h"
#include "reconciler/status.h"
#include "tests/unit/reconciler/plan_fixture.h"

namespace kstack::reconciler::testing {
namespace {

namespace json = boost::json;
using executor::SetupOutcome;
using executor::SetupStepKind;
using Op = Write::Op;

const std::vector<std::string> kEvents = {"configure", "addnodes", "delnodes", "preupgrade",
                                          "upgradenodes"};

std::string revision_of(const std::string& set, const json::value& tmpl) {
  return fmt::format("{}-{:x}", set, std::hash<std::string>{}(json::serialize(tmpl)) & 0xffffff);
}

// The world plus the StatefulSet controller: a write that changes a set's template gives it a
// new update revision (seen at once); a pod at or above the partition whose revision differs
// is made anew from the update revision (new uid and container, Ready); a deleted pod comes
// back from the update revision at or above the partition, else from the current one.
struct RolloutWorld {
  World w{3, 0, true, kEvents};
  FakeSetup setup;
  std::vector<std::string> recreated;  // pods, in the order the controller made them anew
  // For each recreation: whether every other member of the Stack was ready in the status the
  // pass that let it go wrote.
  std::vector<bool> others_ready;
  std::uint64_t serial = 0;
  std::map<std::string, json::value> templates;  // by revision, as ControllerRevisions keep them

  RolloutWorld() {
    setup.configure = executor::SetupRunner::ConfigureStatus::State::kNotStarted;
    setup.configure_finishes = true;
    // Templates as kstack writes them, revisions as the controller names them.
    catalog::FieldErrors ignored;
    const auto desired =
        desired_state(w.decoded(), catalog::decode_apptype(w.app, ignored), nullptr);
    if (!desired) throw std::runtime_error(desired.error().message);
    for (const auto& role : desired->roles) {
      w.sets.at(role.stateful_set_name).at("spec").as_object()["template"] =
          role.stateful_set.at("spec").at("template");
    }
    for (auto& [name, set] : w.sets) {
      const auto rev = revision_of(name, set.at("spec").at("template"));
      templates[rev] = set.at("spec").at("template");
      auto& st = set.at("status").as_object();
      st["currentRevision"] = rev;
      st["updateRevision"] = rev;
      for (auto& [pod, obj] : w.pods) {
        if (pod.starts_with(name + "-")) {
          obj.at("metadata").at("labels").as_object()["controller-revision-hash"] = rev;
        }
      }
    }
    w.settle(setup);
  }

  json::value& set() { return w.sets.at(set_of("server")); }
  std::int64_t partition() {
    return set().at("spec").at("updateStrategy").at("rollingUpdate").at("partition").as_int64();
  }
  std::string update_revision() {
    return std::string(set().at("status").at("updateRevision").as_string());
  }
  std::string revision_of_pod(const std::string& pod) {
    return std::string(
        w.pods.at(pod).at("metadata").at("labels").at("controller-revision-hash").as_string());
  }

  void change_env(const std::string& value) {
    w.stack.at("spec").at("roles").at(0).as_object()["env"] =
        json::array{json::object{{"name", "MODE"}, {"value", value}}};
    bump();
  }
  void bump() {
    auto& md = w.stack.at("metadata").as_object();
    md["generation"] = md["generation"].as_int64() + 1;
  }

  void remake(const std::string& pod, const std::string& rev, const json::value& tmpl) {
    auto& o = w.pods.at(pod).as_object();
    auto& md = o["metadata"].as_object();
    md["uid"] = fmt::format("pod-uid-{}", ++serial);
    md["labels"].as_object()["controller-revision-hash"] = rev;
    md["annotations"] = tmpl.at("metadata").as_object().contains("annotations")
                            ? tmpl.at("metadata").at("annotations")
                            : json::object{};
    w.restart_container(pod, fmt::format("containerd://new-{}", serial));
    w.set_pod_ready(pod, true);
    recreated.push_back(pod);
  }

  // Takes the plan's writes to StatefulSets and pods, then plays the controller.
  void act(const Plan& p) {
    for (const auto& wr : p.writes) {
      if (wr.op == Op::kApply && wr.type == &kube::resources::kStatefulSets) {
        auto& live = w.sets.at(wr.name).as_object();
        auto& spec = live["spec"].as_object();
        const auto& want = wr.object.at("spec").as_object();
        const bool changed = !(spec["template"] == want.at("template"));
        spec["replicas"] = want.at("replicas");
        spec["updateStrategy"] = want.at("updateStrategy");
        spec["template"] = want.at("template");
        auto& md = live["metadata"].as_object();
        md["generation"] = md["generation"].as_int64() + 1;
        auto& st = live["status"].as_object();
        st["observedGeneration"] = md["generation"];
        if (changed) {
          st["updateRevision"] = revision_of(wr.name, want.at("template"));
          templates[std::string(st["updateRevision"].as_string())] = want.at("template");
        }
      }
      if (wr.op == Op::kDelete && wr.type == &kube::resources::kPods) {
        const auto& st = set().at("status");
        const auto ord = ordinal_of(wr.name).value_or(0);
        const auto rev = ord >= partition() ? st.at("updateRevision") : st.at("currentRevision");
        record_others_ready(p, wr.name);
        remake(wr.name, std::string(rev.as_string()), templates.at(std::string(rev.as_string())));
      }
    }
    const auto update = update_revision();
    bool all = true;
    for (auto& [pod, obj] : w.pods) {
      if (ordinal_of(pod).value_or(0) >= partition() && revision_of_pod(pod) != update) {
        record_others_ready(p, pod);
        remake(pod, update, set().at("spec").at("template"));
      }
      all = all && revision_of_pod(pod) == update;
    }
    if (all) set().at("status").as_object()["currentRevision"] = update;
  }

  void record_others_ready(const Plan& p, const std::string& moving) {
    bool ready = true;
    for (const auto& r : p.status.roles) {
      for (const auto& m : r.members) {
        if (m.pod != moving && m.state != "ready") ready = false;
      }
    }
    others_ready.push_back(ready);
  }

  std::vector<std::string> repairs;          // notes of "Repaired" object events: drift kstack saw
  std::vector<std::string> partition_moves;  // notes of "RollingUpdate" object events

  // One pass: planned, its status accepted, its writes carried out by the controller.
  Plan step() {
    auto p = pass(w, setup);
    for (const auto& wr : p.writes) {
      if (wr.event.reason == "Repaired") repairs.push_back(wr.event.note);
      if (wr.event.reason == "RollingUpdate") partition_moves.push_back(wr.event.note);
    }
    w.accept(p);
    act(p);
    return p;
  }

  // Passes until `done` holds for one (at most `max`).
  Plan until(const std::function<bool(const Plan&)>& done, int max = 30) {
    Plan p;
    for (int i = 0; i < max; ++i) {
      p = step();
      if (done(p)) return p;
    }
    ADD_FAILURE() << "no pass reached the expected state in " << max << " passes";
    return p;
  }

  static bool settled(const Plan& p) {
    const auto* ready = condition(p, "Ready");
    return ready != nullptr && ready->status == "True";
  }

  std::vector<std::string> hooks_ran() const {
    std::vector<std::string> pods;
    for (const auto& s : setup.ran) {
      if (s.kind == SetupStepKind::kPreupgrade) pods.push_back(s.target.pod);
    }
    return pods;
  }
};

SetupOutcome hook_exit(int code) {
  SetupOutcome out;
  out.run.exit_code = code;
  out.run.stderr_tail = "cannot hand over leadership";
  return out;
}

TEST(PlanRollout, ASettledStackHasItsMembersOnTheTemplateWithPartitionZero) {
  RolloutWorld r;
  auto p = pass(r.w, r.setup);
  EXPECT_FALSE(p.write_status);
  EXPECT_EQ(p.status.update_summary, "3/3");
  EXPECT_EQ(p.status.roles.at(0).update_revision, r.update_revision());
  EXPECT_EQ(p.status.roles.at(0).members.at(1).template_revision, r.update_revision());
  EXPECT_EQ(p.status.roles.at(0).members.at(1).app, "kv");
  EXPECT_EQ(r.partition(), 0);
}

TEST(PlanRollout, ANewTemplateHoldsEveryMemberUntilKstackLetsThemGo) {
  RolloutWorld r;
  r.change_env("fast");
  const auto p = pass(r.w, r.setup);
  const auto* wr = find_write(p, Op::kApply, set_of("server"));
  ASSERT_NE(wr, nullptr);
  EXPECT_EQ(wr->object.at("spec").at("updateStrategy").at("rollingUpdate").at("partition"), 3);
  EXPECT_EQ(wr->object.at("spec").at("template").at("spec").at("containers").at(0).at("env"),
            (json::array{json::object{{"name", "MODE"}, {"value", "fast"}}}));
  EXPECT_EQ(condition(p, "Progressing")->reason, "RollingUpdate");
  EXPECT_EQ(condition(p, "Ready")->status, "False");
  EXPECT_EQ(p.status.state, "updating");
  EXPECT_TRUE(r.hooks_ran().empty()) << "no hook before the controller has the new revision";
}

TEST(PlanRollout, MembersMoveOneAtATimeHighestOrdinalFirstEachAfterItsHook) {
  RolloutWorld r;
  const auto before = r.update_revision();
  r.change_env("fast");
  const auto p = r.until(RolloutWorld::settled);
  EXPECT_EQ(r.recreated, (std::vector<std::string>{pod_of("server", 2), pod_of("server", 1),
                                                   pod_of("server", 0)}));
  EXPECT_EQ(r.others_ready, (std::vector<bool>{true, true, true}))
      << "a member moved while another was not ready";
  EXPECT_EQ(r.hooks_ran(), r.recreated) << "each member's --preupgrade runs once, before it moves";
  EXPECT_TRUE(r.repairs.empty()) << "a rollout is no drift: " << r.repairs.front();
  EXPECT_EQ(r.partition_moves,
            (std::vector<std::string>{"StatefulSet db-server partition 3 -> 2",
                                      "StatefulSet db-server partition 2 -> 1",
                                      "StatefulSet db-server partition 1 -> 0"}));
  EXPECT_NE(r.update_revision(), before);
  EXPECT_EQ(r.partition(), 0);
  EXPECT_EQ(p.status.update_summary, "3/3");
  EXPECT_EQ(p.status.state, "ready");
  for (const auto& m : p.status.roles.at(0).members) {
    EXPECT_EQ(m.template_revision, r.update_revision()) << m.pod;
    EXPECT_EQ(m.state_detail.last_configured_revision, r.update_revision()) << m.pod;
  }
}

TEST(PlanRollout, TheHookGetsTheAppTypesAndRunsFromTheStagedPackage) {
  RolloutWorld r;
  r.change_env("fast");
  r.until([&](const Plan&) { return !r.hooks_ran().empty(); });
  std::vector<SetupStepKind> kinds;
  for (const auto& s : r.setup.ran) {
    if (s.target.pod != pod_of("server", 2)) continue;
    if (s.kind == SetupStepKind::kStageUpgrade) {
      EXPECT_EQ(s.package.package_url, "file:///opt/kv/setup.tgz");
    }
    if (s.kind == SetupStepKind::kPreupgrade) {
      EXPECT_EQ(s.arguments,
                (std::vector<std::string>{"--preupgrade", "--from-app", "kv", "--to-app", "kv"}));
    }
    kinds.push_back(s.kind);
  }
  ASSERT_GE(kinds.size(), 2U);
  EXPECT_EQ(kinds[kinds.size() - 2], SetupStepKind::kStageUpgrade);
  EXPECT_EQ(kinds.back(), SetupStepKind::kPreupgrade);
}

TEST(PlanRollout, AMemberMovedToAnotherAppTypeIsSetUpAgainAsAnUpgrade) {
  RolloutWorld r;
  const auto before = r.update_revision();
  r.w.app.at("metadata").as_object()["name"] = "kv-2";
  r.w.stack.at("spec").as_object()["app"] = "kv-2";
  r.bump();
  r.until([&](const Plan&) { return r.recreated.size() == 1; });
  r.setup.ran.clear();
  r.until([&](const Plan& p) { return member_state(p, pod_of("server", 2)) == "ready"; });
  std::vector<SetupStepKind> kinds = r.setup.kinds_for(pod_of("server", 2));
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), SetupStepKind::kCheckPackage), 0)
      << "the new package is installed whatever is there";
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), SetupStepKind::kInstallPackage), 1);
  bool saw_configure = false;
  for (const auto& s : r.setup.ran) {
    if (s.target.pod == pod_of("server", 2) && s.kind == SetupStepKind::kStartConfigure) {
      EXPECT_EQ(s.arguments, (std::vector<std::string>{"--upgrade-from", "kv"}));
      saw_configure = true;
    }
    if (s.target.pod == pod_of("server", 2) && s.kind == SetupStepKind::kWriteConfig) {
      EXPECT_NE(s.configmeta.find(
                    fmt::format(R"("upgrade_from":{{"app":"kv","revision":"{}"}})", before)),
                std::string::npos)
          << s.configmeta;
      EXPECT_NE(s.env.find("KSTACK_UPGRADE_FROM_APP='kv'"), std::string::npos);
    }
  }
  EXPECT_TRUE(saw_configure);
}

TEST(PlanRollout, AMemberMovedWithinItsAppTypeIsSetUpAsANewPod) {
  RolloutWorld r;
  r.change_env("fast");
  r.until([&](const Plan&) { return r.recreated.size() == 1; });
  r.setup.ran.clear();
  r.until([&](const Plan& p) { return member_state(p, pod_of("server", 2)) == "ready"; });
  bool saw_configure = false;
  for (const auto& s : r.setup.ran) {
    if (s.target.pod != pod_of("server", 2)) continue;
    if (s.kind == SetupStepKind::kStartConfigure) {
      EXPECT_TRUE(s.arguments.empty()) << "no --upgrade-from when the AppType is the same";
      saw_configure = true;
    }
    if (s.kind == SetupStepKind::kWriteConfig) {
      EXPECT_EQ(s.configmeta.find("upgrade_from"), std::string::npos);
    }
    EXPECT_NE(s.kind, SetupStepKind::kCheckPackage) << "the package is installed anew";
  }
  EXPECT_TRUE(saw_configure) << "configure runs again in the new pod";
}

TEST(PlanRollout, AFailedHookStopsTheRolloutAndNamesTheMemberAndItsOutput) {
  RolloutWorld r;
  r.setup.per_member[{pod_of("server", 2), SetupStepKind::kPreupgrade}] = hook_exit(3);
  const auto before = r.update_revision();
  r.change_env("fast");
  auto p = r.until([](const Plan& q) {
    const auto* c = condition(q, "Progressing");
    return c != nullptr && c->reason == "UpgradeFailed";
  });
  const auto* c = condition(p, "Progressing");
  EXPECT_EQ(c->status, "False");
  EXPECT_NE(c->message.find(pod_of("server", 2)), std::string::npos) << c->message;
  EXPECT_NE(c->message.find("exited 3 (output: cannot hand over leadership)"), std::string::npos)
      << c->message;
  const auto* m = r.w.member(p, pod_of("server", 2));
  EXPECT_EQ(m->state_detail.preupgrade_stderr, "cannot hand over leadership");
  EXPECT_FALSE(m->state_detail.preupgrade_succeeded);
  // Nothing else moves, and the hook is not tried again, however many passes follow.
  for (int i = 0; i < 5; ++i) p = r.step();
  EXPECT_TRUE(r.recreated.empty());
  EXPECT_EQ(r.partition(), 3);
  EXPECT_EQ(r.hooks_ran(), (std::vector<std::string>{pod_of("server", 2)}));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.revision_of_pod(pod_of("server", i)), before);
}

TEST(PlanRollout, RevertingAfterAFailedHookRestartsThatMemberAndTheStackIsReadyAgain) {
  RolloutWorld r;
  r.setup.per_member[{pod_of("server", 2), SetupStepKind::kPreupgrade}] = hook_exit(3);
  const auto before = r.update_revision();
  const auto original_env = r.w.stack.at("spec").at("roles").at(0).as_object().if_contains("env");
  ASSERT_EQ(original_env, nullptr);
  r.change_env("fast");
  r.until([](const Plan& q) { return condition(q, "Progressing")->reason == "UpgradeFailed"; });
  r.w.stack.at("spec").at("roles").at(0).as_object().erase("env");
  r.bump();
  const auto p = r.until(RolloutWorld::settled);
  EXPECT_EQ(r.update_revision(), before);
  EXPECT_EQ(r.recreated, (std::vector<std::string>{pod_of("server", 2)}))
      << "only the member whose hook ran starts afresh";
  EXPECT_EQ(p.status.update_summary, "3/3");
  EXPECT_TRUE(r.w.member(p, pod_of("server", 2))->state_detail.preupgrade_revision.empty());
}

TEST(PlanRollout, AMemberNotReadyTenMinutesAfterItMovedStopsTheRollout) {
  RolloutWorld r;
  r.change_env("fast");
  r.until([&](const Plan&) { return r.recreated.size() == 1; });
  // Its new pod never passes its readiness probe.
  r.w.set_pod_ready(pod_of("server", 2), false);
  r.w.now = "2026-11-25T00:09:59Z";
  auto p = r.step();
  r.w.set_pod_ready(pod_of("server", 2), false);
  EXPECT_EQ(condition(p, "Progressing")->reason, "RollingUpdate") << "within the deadline";
  EXPECT_EQ(r.w.member(p, pod_of("server", 2))->state_detail.moved_at, std::string(kNow));
  r.w.now = "2026-11-25T00:10:01Z";
  p = r.step();
  const auto* c = condition(p, "Progressing");
  EXPECT_EQ(c->reason, "UpgradeFailed");
  EXPECT_NE(c->message.find("member db-server-2 was let go"), std::string::npos) << c->message;
  EXPECT_NE(c->message.find("not ready on it 600 s later"), std::string::npos) << c->message;
  for (int i = 0; i < 3; ++i) r.step();
  EXPECT_EQ(r.recreated.size(), 1U) << "nothing else moves";
  // It becomes ready after all: the rollout goes on.
  r.w.set_pod_ready(pod_of("server", 2), true);
  r.until(RolloutWorld::settled);
  EXPECT_EQ(r.recreated.size(), 3U);
}

TEST(PlanRollout, PausedHoldsTheRolloutBetweenMembers) {
  RolloutWorld r;
  r.change_env("fast");
  r.until([&](const Plan&) { return r.recreated.size() == 1; });
  r.w.stack.at("spec").as_object()["paused"] = true;
  r.bump();
  Plan p;
  for (int i = 0; i < 6; ++i) p = r.step();
  EXPECT_EQ(r.recreated.size(), 1U);
  EXPECT_EQ(condition(p, "Progressing")->reason, "Paused");
  EXPECT_EQ(condition(p, "Progressing")->status, "False");
  EXPECT_EQ(p.status.update_summary, "1/3");
  r.w.stack.at("spec").as_object()["paused"] = false;
  r.bump();
  r.until(RolloutWorld::settled);
  EXPECT_EQ(r.recreated.size(), 3U);
}

TEST(PlanRollout, MaxUnavailableLetsThatManyMembersMoveAtOnce) {
  RolloutWorld r;
  r.w.stack.at("spec").at("roles").at(0).as_object()["maxUnavailable"] = 2;
  r.change_env("fast");
  const auto p = r.until([&](const Plan&) { return !r.recreated.empty(); });
  EXPECT_EQ(r.recreated, (std::vector<std::string>{pod_of("server", 1), pod_of("server", 2)}))
      << "both let go in one pass (the controller makes them in name order)";
  (void)p;
  r.until(RolloutWorld::settled);
  EXPECT_EQ(r.recreated.size(), 3U);
}

TEST(PlanRollout, AnOperatorThatForgotItsStepsResumesWithoutMovingAnyoneTwice) {
  RolloutWorld r;
  r.change_env("fast");
  r.until([&](const Plan&) { return r.recreated.size() == 1; });
  // A new process: no setup outcomes, no notifications in memory; only the cluster and status.
  r.w.setup_outcomes.clear();
  FakeSetup fresh;
  fresh.configure = executor::SetupRunner::ConfigureStatus::State::kNotStarted;
  fresh.configure_finishes = true;
  fresh.configured_containers = r.setup.configured_containers;
  r.setup = fresh;
  r.until(RolloutWorld::settled);
  EXPECT_EQ(r.recreated, (std::vector<std::string>{pod_of("server", 2), pod_of("server", 1),
                                                   pod_of("server", 0)}));
  const auto hooks = r.hooks_ran();
  EXPECT_EQ(std::count(hooks.begin(), hooks.end(), pod_of("server", 2)), 0)
      << "the member that already moved gets no second hook";
}

TEST(PlanRollout, TheOthersAreToldWhichMembersMoved) {
  RolloutWorld r;
  r.w.notifier = false;  // keep the queues to look at them
  r.change_env("fast");
  const auto p = r.until([&](const Plan& q) {
    const auto* m = r.w.member(q, pod_of("server", 2));
    return m->state_detail.last_configured_revision == r.update_revision() && m->state == "ready";
  });
  const auto fqdn = fmt::format("{}.{}.apps.svc.cluster.local", pod_of("server", 2), headless());
  EXPECT_EQ(pending_cmds(p, pod_of("server", 0)),
            (std::vector<std::vector<std::string>>{
                {"--upgradenodes", "--role", "server", "--fqdns", fqdn}}));
  EXPECT_TRUE(pending_cmds(p, pod_of("server", 2)).empty());
}

// A new AppType with its own package; the Stack moves to it.
void move_to_kv2(RolloutWorld& r) {
  r.w.app.at("metadata").as_object()["name"] = "kv-2";
  r.w.app.at("spec").as_object()["defaultConfigPackage"] =
      json::object{{"packageURL", "file:///opt/kv/setup-2.tgz"}};
  r.w.stack.at("spec").as_object()["app"] = "kv-2";
  r.bump();
}

TEST(PlanRollout, AMemberRemadeBeforeItsTurnIsSetUpWithThePackageItRan) {
  RolloutWorld r;
  const auto old_revision = r.update_revision();
  move_to_kv2(r);
  r.until([&](const Plan&) { return r.recreated.size() == 1; });
  // Member 0's pod is deleted before its turn: the controller makes it from the current
  // (old) revision.
  r.remake(pod_of("server", 0), old_revision, r.templates.at(old_revision));
  r.setup.ran.clear();
  r.until([&](const Plan& p) {
    return member_state(p, pod_of("server", 0)) == "ready" &&
           r.w.member(p, pod_of("server", 0))->template_revision == old_revision;
  });
  for (const auto& s : r.setup.ran) {
    if (s.target.pod != pod_of("server", 0)) continue;
    if (s.kind == SetupStepKind::kInstallPackage) {
      EXPECT_EQ(s.package.package_url, "file:///opt/kv/setup.tgz") << "its template's package";
    }
    if (s.kind == SetupStepKind::kStartConfigure) {
      EXPECT_TRUE(s.arguments.empty());
    }
  }
  const auto p = r.until(RolloutWorld::settled);
  EXPECT_EQ(r.w.member(p, pod_of("server", 0))->state_detail.last_configured_package,
            "file:///opt/kv/setup-2.tgz");
}

TEST(PlanRollout, APackageOnlyThePodsAnnotationNamesIsNotInstalled) {
  RolloutWorld r;
  const auto old_revision = r.update_revision();
  move_to_kv2(r);
  r.until([&](const Plan&) { return r.recreated.size() == 1; });
  r.remake(pod_of("server", 0), old_revision, r.templates.at(old_revision));
  r.w.pods.at(pod_of("server", 0))
      .at("metadata")
      .at("annotations")
      .as_object()["kstack.io/setup-package"] = "configmap://kstack-secrets/token";
  r.setup.ran.clear();
  const auto p = r.step();
  EXPECT_EQ(member_state(p, pod_of("server", 0)), "config_error");
  EXPECT_NE(r.w.member(p, pod_of("server", 0))
                ->state_detail.config_error_detail.find("configmap://kstack-secrets/token"),
            std::string::npos);
  for (const auto& s : r.setup.ran) {
    if (s.target.pod == pod_of("server", 0)) {
      EXPECT_NE(s.kind, SetupStepKind::kInstallPackage);
    }
  }
}

TEST(PlanRollout, ANewAppTypeAloneChangesTheTemplate) {
  RolloutWorld r;
  r.w.app.at("metadata").as_object()["name"] = "kv-2";
  r.w.stack.at("spec").as_object()["app"] = "kv-2";
  r.bump();
  const auto p = r.until(RolloutWorld::settled);
  EXPECT_EQ(r.recreated.size(), 3U);
  for (const auto& m : p.status.roles.at(0).members) {
    EXPECT_EQ(m.app, "kv-2") << m.pod;
    EXPECT_EQ(m.state_detail.last_configured_app, "kv-2") << m.pod;
  }
}

}  // namespace
}  // namespace kstack::reconciler::testing
