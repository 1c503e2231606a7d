// The owned objects and claims of a pass (docs/reconciler.md steps 7–9) and the cleanup of a
// Stack being deleted (finalizer kstack.io/cleanup).
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "reconciler/plan_internal.h"
#include "tests/unit/reconciler/plan_fixture.h"

namespace kstack::reconciler::testing {
namespace {
namespace json = boost::json;
using Op = Write::Op;
using Kind = informer::WorkResult::Kind;

World settled(int servers = 3, int workers = 0) {
  World w(servers, workers);
  w.settle();
  return w;
}

json::object& metadata(json::value& object) { return object.at("metadata").as_object(); }

TEST(PlanObjects, ANewStackCreatesItsHeadlessServiceStatefulSetsAndMemberServices) {
  World w(2, 1);
  w.sets.clear();
  w.services.clear();
  w.pods.clear();
  w.pvcs.clear();
  const auto p = pass(w);
  // The StatefulSets go last: their partition depends on the members' states (plan_rollout).
  EXPECT_EQ(write_names(p, Op::kApply),
            (std::vector<std::string>{headless(), "db-server-0", "db-server-1", set_of("server"),
                                      set_of("worker")}));
  for (const auto& wr : p.writes) EXPECT_EQ(wr.event.reason, "Created") << wr.name;
  EXPECT_EQ(p.status.cluster_service, headless());
}

TEST(PlanObjects, DriftOnAStatefulSetIsRepairedNamingTheFirstDifference) {
  auto w = settled();
  auto& image = w.sets.at(set_of("server"))
                    .at("spec")
                    .at("template")
                    .at("spec")
                    .at("containers")
                    .at(0)
                    .as_object()["image"];
  const json::value original = image;
  image = "someone/else:1";
  const auto p = pass(w);
  const auto* wr = find_write(p, Op::kApply, set_of("server"));
  ASSERT_NE(wr, nullptr);
  EXPECT_EQ(wr->event.reason, "Repaired");
  EXPECT_EQ(wr->object.at("spec").at("template").at("spec").at("containers").at(0).at("image"),
            original);
  // A changed template is a rollout like any other: the partition holds every member where it
  // is (the restored template is what they run, so none will move).
  EXPECT_EQ(wr->object.at("spec").at("updateStrategy").at("rollingUpdate").at("partition"), 3);
}

TEST(PlanObjects, ASpecChangeIsAnUpdateNotARepair) {
  auto w = settled();
  w.stack.at("spec").at("roles").at(0).as_object()["env"] =
      json::array{json::object{{"name", "MODE"}, {"value", "fast"}}};
  w.set_members("server", 3);
  const auto p = pass(w);
  const auto* wr = find_write(p, Op::kApply, set_of("server"));
  ASSERT_NE(wr, nullptr);
  EXPECT_EQ(wr->event.reason, "Updated");
}

TEST(PlanObjects, AnOwnedServiceNoMemberWantsIsDeleted) {
  auto w = settled();
  auto extra = w.services.at("db-server-0");
  metadata(extra)["name"] = "db-server-9";
  w.services["db-server-9"] = extra;
  const auto p = pass(w);
  EXPECT_EQ(write_names(p, Op::kDelete), std::vector<std::string>{"db-server-9"});
  EXPECT_EQ(find_write(p, Op::kDelete, "db-server-9")->event.reason, "Deleted");
}

TEST(PlanObjects, AServiceTheStackDoesNotOwnIsLeftAlone) {
  auto w = settled();
  auto extra = w.services.at("db-server-0");
  metadata(extra)["name"] = "db-server-9";
  metadata(extra).erase("ownerReferences");
  w.services["db-server-9"] = extra;
  EXPECT_TRUE(pass(w).writes.empty());
}

TEST(PlanObjects, AStatefulSetBeingDeletedIsNotAppliedAndThePassWaits) {
  auto w = settled();
  auto& sts = w.sets.at(set_of("server"));
  metadata(sts)["deletionTimestamp"] = "2026-11-25T00:00:00Z";
  sts.at("spec").as_object()["replicas"] = 1;
  const auto p = pass(w);
  EXPECT_EQ(find_write(p, Op::kApply, set_of("server")), nullptr);
  EXPECT_EQ(p.result.kind, Kind::kRequeueAfter);
}

TEST(PlanObjects, AClaimWithoutAControllerIsAdopted) {
  auto w = settled();
  metadata(w.pvcs.at(pvc_of("server", 1))).erase("ownerReferences");
  const auto p = pass(w);
  const auto* wr = find_write(p, Op::kApply, pvc_of("server", 1));
  ASSERT_NE(wr, nullptr);
  EXPECT_EQ(wr->event.reason, "Adopted");
  EXPECT_EQ(wr->object.at("metadata").at("ownerReferences").at(0).at("uid").as_string(), kStackUid);
}

TEST(PlanObjects, AReleasedClaimIsAdoptedAgainByAMemberOfTheSameNameAndLosesItsMark) {
  auto w = settled();
  auto& md = metadata(w.pvcs.at(pvc_of("server", 1)));
  md.erase("ownerReferences");
  md["annotations"].as_object()["kstack.io/retained"] = "whenScaled";
  const auto p = pass(w);
  const auto* wr = find_write(p, Op::kApply, pvc_of("server", 1));
  ASSERT_NE(wr, nullptr);
  EXPECT_FALSE(wr->object.at("metadata").as_object().contains("annotations"));
}

TEST(PlanObjects, AClaimControlledByAnotherOwnerIsLeftAndTheStackDegraded) {
  auto w = settled();
  metadata(w.pvcs.at(pvc_of("server", 1)))["ownerReferences"] = json::array{json::object{
      {"apiVersion", "v1"}, {"kind", "X"}, {"name", "x"}, {"uid", "other"}, {"controller", true}}};
  const auto p = pass(w);
  EXPECT_TRUE(p.writes.empty());
  EXPECT_EQ(condition(p, "Degraded")->reason, "PVCMissing");
  EXPECT_NE(condition(p, "Degraded")->message.find("another owner (other)"), std::string::npos);
}

TEST(PlanObjects, AClaimTheCacheLacksWhileItsPodExistsIsReadFromTheServerAndAdopted) {
  auto w = settled();
  auto claim = w.pvcs.at(pvc_of("server", 1));
  metadata(claim).erase("labels");  // why the filtered cache lost it
  w.pvcs.erase(pvc_of("server", 1));
  w.server_claims[pvc_of("server", 1)] = claim;
  const auto first = plan(w.snapshot());
  EXPECT_EQ(first.claims_to_read, std::vector<std::string>{pvc_of("server", 1)});
  const auto p = pass(w);
  const auto* wr = find_write(p, Op::kApply, pvc_of("server", 1));
  ASSERT_NE(wr, nullptr);
  EXPECT_EQ(wr->object.at("metadata").at("labels").at("kstack.io/stack"), "db");
  EXPECT_EQ(condition(p, "Degraded")->status, "False");
}

TEST(PlanObjects, AClaimGoneFromCacheAndServerWhileItsPodExistsIsPVCMissing) {
  auto w = settled();
  w.pvcs.erase(pvc_of("server", 1));
  const auto p = pass(w);
  EXPECT_TRUE(p.writes.empty());
  EXPECT_EQ(condition(p, "Degraded")->reason, "PVCMissing");
  EXPECT_EQ(p.result.kind, Kind::kRequeueAfter);
}

TEST(PlanCleanup, ADeletedStackHasItsStatefulSetsServicesAndClaimsDeleted) {
  auto w = settled(2);
  w.mark_deleted();
  const auto p = pass(w);
  EXPECT_EQ(write_names(p, Op::kDelete),
            (std::vector<std::string>{set_of("server"), headless(), "db-server-0", "db-server-1",
                                      pvc_of("server", 0), pvc_of("server", 1)}));
  EXPECT_FALSE(p.remove_finalizer);
  EXPECT_FALSE(p.write_status);
  EXPECT_EQ(p.result.kind, Kind::kRequeueAfter);
}

TEST(PlanCleanup, ADeletedStackWithNothingLeftLosesItsFinalizer) {
  auto w = settled(2);
  w.mark_deleted();
  w.sets.clear();
  w.services.clear();
  w.pods.clear();
  w.pvcs.clear();
  const auto p = pass(w);
  EXPECT_TRUE(p.writes.empty());
  EXPECT_TRUE(p.remove_finalizer);
  EXPECT_EQ(p.result.kind, Kind::kSuccess);
}

TEST(PlanCleanup, PodsStillRunningKeepTheFinalizer) {
  auto w = settled(2);
  w.mark_deleted();
  w.sets.clear();
  w.services.clear();
  w.pvcs.clear();
  const auto p = pass(w);
  EXPECT_FALSE(p.remove_finalizer);
  EXPECT_EQ(p.result.kind, Kind::kRequeueAfter);
}

TEST(PlanCleanup, WithWhenDeletedRetainClaimsAreReleasedNotDeletedAndDoNotHoldTheFinalizer) {
  auto w = settled(2);
  w.set_retention("Delete", "Retain");
  w.mark_deleted();
  w.sets.clear();
  w.services.clear();
  w.pods.clear();
  const auto p = pass(w);
  EXPECT_EQ(write_names(p, Op::kRetain),
            (std::vector<std::string>{pvc_of("server", 0), pvc_of("server", 1)}));
  EXPECT_EQ(p.writes.front().object.at("metadata").at("annotations").at("kstack.io/retained"),
            "whenDeleted");
  EXPECT_EQ(p.writes.front().event.action, "Delete");
  EXPECT_TRUE(p.remove_finalizer);
}

TEST(PlanCleanup, AClaimOfAnEarlierStackOfTheSameNameIsKept) {
  auto w = settled(1);
  auto& md = metadata(w.pvcs.at(pvc_of("server", 0)));
  md.erase("ownerReferences");
  md["creationTimestamp"] = "2025-06-01T00:00:00Z";  // older than the Stack
  w.mark_deleted();
  const auto p = pass(w);
  EXPECT_EQ(find_write(p, Op::kDelete, pvc_of("server", 0)), nullptr);
}

TEST(PlanCleanup, AClaimMadeForTheStackButNeverAdoptedIsDeletedWithIt) {
  auto w = settled(1);
  metadata(w.pvcs.at(pvc_of("server", 0))).erase("ownerReferences");
  w.mark_deleted();
  const auto p = pass(w);
  EXPECT_NE(find_write(p, Op::kDelete, pvc_of("server", 0)), nullptr);
}

TEST(PlanCleanup, ObjectsAlreadyBeingDeletedAreNotDeletedAgainButAreWaitedFor) {
  auto w = settled(1);
  w.services.clear();
  w.pods.clear();
  w.pvcs.clear();
  metadata(w.sets.at(set_of("server")))["deletionTimestamp"] = "2026-11-25T00:00:00Z";
  w.mark_deleted();
  const auto p = pass(w);
  EXPECT_TRUE(p.writes.empty());
  EXPECT_FALSE(p.remove_finalizer);
}

TEST(PlanCleanup, ADeletedStackWithoutTheFinalizerIsLeftToTheGarbageCollector) {
  auto w = settled(1);
  w.mark_deleted();
  w.stack.at("metadata").as_object()["finalizers"] = json::array{};
  const auto p = pass(w);
  EXPECT_TRUE(p.writes.empty());
  EXPECT_FALSE(p.remove_finalizer);
  EXPECT_FALSE(p.add_finalizer);
  EXPECT_EQ(p.result.kind, Kind::kSuccess);
}

// detail::at walks plain pointers itself (it runs for every owned object in every pass); it
// must find what json::value::find_pointer finds, and nothing where that reports an error.
TEST(PlanAt, FindsWhatFindPointerFinds) {
  const auto v = json::parse(R"({"metadata":{"name":"a","labels":{"kstack.io/stack":"s","":"e"},
      "ownerReferences":[{"uid":"u0"},{"uid":"u1"}]},"spec":{"n":null,"list":[[1,2],{"k":3}]}})");
  for (std::string_view pointer : {"",
                                   "/",
                                   "/metadata",
                                   "/metadata/name",
                                   "/metadata/name/x",
                                   "/metadata/missing",
                                   "/metadata/labels/kstack.io~1stack",
                                   "/metadata/labels/",
                                   "/metadata/ownerReferences/0/uid",
                                   "/metadata/ownerReferences/1/uid",
                                   "/metadata/ownerReferences/2/uid",
                                   "/metadata/ownerReferences/01/uid",
                                   "/metadata/ownerReferences/-",
                                   "/metadata/ownerReferences/x",
                                   "/metadata/ownerReferences/-1",
                                   "/metadata/ownerReferences/",
                                   "/spec/n",
                                   "/spec/n/x",
                                   "/spec/list/0/1",
                                   "/spec/list/1/k",
                                   "/spec/list/1/0",
                                   "metadata",
                                   "//",
                                   "/spec//"}) {
    boost::system::error_code ec;
    EXPECT_EQ(detail::at(v, pointer), v.find_pointer(pointer, ec)) << pointer;
  }
}

}  // namespace
}  // namespace kstack::reconciler::testing
