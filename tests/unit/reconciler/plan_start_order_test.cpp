// plan() table tests of AppType dependsOn (docs/api.md "Command, arguments and start order"):
// a role's members wait for their first pods (at creation, and when a stopped Stack resumes)
// until every member of the roles it depends on is ready; once the role runs, nothing holds it
// back again.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "reconciler/status.h"
#include "tests/unit/reconciler/plan_fixture.h"

namespace kstack::reconciler::testing {
namespace {

namespace json = boost::json;

// Two servers and two workers; the workers depend on the servers. Nothing exists yet.
World fresh_world() {
  World w(2, 2);
  w.app.at_pointer("/spec/roles/1").as_object()["dependsOn"] = json::array{"server"};
  w.sets.clear();
  w.pods.clear();
  w.stack.as_object().erase("status");
  return w;
}

// The servers' pods exist (and are Ready); the workers' StatefulSet is at 0, as kstack left it.
void start_servers(World& w) {
  w.converge();
  w.remove_pod(pod_of("worker", 0));
  w.remove_pod(pod_of("worker", 1));
  w.set_replicas(set_of("worker"), 0);
}

TEST(PlanStartOrder, ARolesFirstMembersWaitForTheRolesItDependsOn) {
  auto w = fresh_world();
  auto p = pass(w);
  EXPECT_EQ(replicas_in(p, set_of("server")), 2);
  EXPECT_EQ(replicas_in(p, set_of("worker")), 0);
  EXPECT_EQ(member_state(p, pod_of("worker", 0)), "create_pending");
  const auto* progressing = condition(p, "Progressing");
  ASSERT_NE(progressing, nullptr);
  EXPECT_EQ(progressing->reason, kReasonWaitingForDependencies);
  EXPECT_NE(progressing->message.find("role worker waits for server (0/2 ready)"),
            std::string::npos)
      << progressing->message;
  EXPECT_EQ(p.status.state, "creating");
  w.accept(p);

  // One server is up, the other not yet: the workers still wait.
  start_servers(w);
  w.set_pod_ready(pod_of("server", 1), false);
  p = pass(w);
  EXPECT_EQ(member_state(p, pod_of("server", 0)), "ready");
  EXPECT_EQ(replicas_in(p, set_of("worker")), -1) << "the workers' StatefulSet stays at 0";
  EXPECT_NE(condition(p, "Progressing")->message.find("server (1/2 ready)"), std::string::npos);
  w.accept(p);

  // Every server ready: the workers start in the same pass.
  w.set_pod_ready(pod_of("server", 1), true);
  p = pass(w);
  EXPECT_EQ(replicas_in(p, set_of("worker")), 2);
  EXPECT_NE(condition(p, "Progressing")->reason, kReasonWaitingForDependencies);
}

TEST(PlanStartOrder, AStartedRoleIsNotHeldBackWhenItsDependencyGoesUnready) {
  auto w = fresh_world();
  w.accept(pass(w));
  start_servers(w);
  w.accept(pass(w));  // releases the workers
  w.converge();       // their pods run
  w.accept(w.settle());
  ASSERT_EQ(member_state(pass(w), pod_of("worker", 1)), "ready");

  w.set_pod_ready(pod_of("server", 0), false);
  auto p = pass(w);
  EXPECT_EQ(replicas_in(p, set_of("worker")), -1) << "the workers keep their 2 replicas";
  EXPECT_EQ(member_state(p, pod_of("worker", 0)), "ready");
  EXPECT_NE(condition(p, "Progressing")->reason, kReasonWaitingForDependencies);

  // A scale-up while a dependency is down is not held either.
  w.set_members("worker", 3);
  p = pass(w);
  EXPECT_EQ(replicas_in(p, set_of("worker")), 3);
}

TEST(PlanStartOrder, RolesWithoutDependenciesAreNotHeldAndAResumeIsAStart) {
  World plain(2, 2);
  plain.sets.clear();
  plain.pods.clear();
  plain.stack.as_object().erase("status");
  auto p = pass(plain);
  EXPECT_EQ(replicas_in(p, set_of("worker")), 2);

  // Resuming a stopped Stack is a start: the workers wait for the servers again.
  auto w = fresh_world();
  w.accept(pass(w));
  start_servers(w);
  w.accept(pass(w));
  w.converge();
  w.accept(w.settle());
  auto bump = [&w](bool stopped) {
    w.stack.at("spec").as_object()["stopped"] = stopped;
    auto& md = w.stack.at("metadata").as_object();
    md["generation"] = md["generation"].as_int64() + 1;
  };
  bump(true);
  p = pass(w);
  EXPECT_EQ(replicas_in(p, set_of("worker")), 0);
  EXPECT_EQ(replicas_in(p, set_of("server")), 0);
  w.accept(p);
  w.set_replicas(set_of("worker"), 0);
  w.set_replicas(set_of("server"), 0);
  for (const auto& pod :
       {pod_of("server", 0), pod_of("server", 1), pod_of("worker", 0), pod_of("worker", 1)}) {
    w.remove_pod(pod);
  }
  w.accept(pass(w));
  EXPECT_EQ(member_state(pass(w), pod_of("worker", 0)), "stopped");
  bump(false);
  p = pass(w);
  EXPECT_EQ(replicas_in(p, set_of("server")), 2);
  EXPECT_EQ(replicas_in(p, set_of("worker")), -1) << "the workers' StatefulSet stays at 0";
  EXPECT_EQ(condition(p, "Progressing")->reason, kReasonWaitingForDependencies);
}

}  // namespace
}  // namespace kstack::reconciler::testing
