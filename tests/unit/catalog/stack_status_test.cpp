// The rollout fields of the Stack status (docs/api.md "Upgrades"): decoded, encoded back
// identically, omitted when empty so that a status written before them is unchanged, and
// refused by type with their path.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/parse.h"
#include "catalog/yaml.h"

namespace kstack::catalog {
namespace {
namespace json = boost::json;

json::value yaml(std::string_view text) {
  auto doc = parse_yaml(text);
  EXPECT_TRUE(doc.has_value());
  return doc.has_value() ? *doc : json::value();
}

// A status as the operator writes it in the middle of a rollout.
constexpr std::string_view kRollingStatus = R"(observedGeneration: 7
state: updating
readyMembers: 2
desiredMembers: 3
memberSummary: 2/3
updatedMembers: 1
updateSummary: 1/3
roles:
  - id: member
    statefulSet: db-member
    members:
      - pod: db-member-0
        nodeID: 1
        state: ready
        templateRevision: db-member-6d8f
        app: etcd
        stateDetail:
          lastConfiguredRevision: db-member-6d8f
          lastConfiguredApp: etcd
          preupgradeRevision: db-member-7c9a
          preupgradeContainer: containerd://abc
          upgradeError: "--preupgrade exited 3"
          preupgradeStdout: draining
          preupgradeStderr: "cannot drain: leader"
      - pod: db-member-2
        nodeID: 3
        state: ready
        templateRevision: db-member-7c9a
        app: etcd-r2
        stateDetail:
          lastConfiguredRevision: db-member-7c9a
          lastConfiguredApp: etcd-r2
          preupgradeRevision: db-member-7c9a
          preupgradeContainer: containerd://def
          preupgradeSucceeded: true
    updateRevision: db-member-7c9a
    updatedMembers: 1
    partition: 2
memberStateRollup: {membershipChanging: false, membersDown: false, membersInitializing: false,
  membersWaiting: false, membersRestarting: false, configErrors: false,
  membersNotScheduled: false}
)";

TEST(StackStatus, DecodesEveryRolloutField) {
  FieldErrors errors;
  StackStatus s = decode_stack_status(yaml(kRollingStatus), errors);
  ASSERT_TRUE(errors.empty()) << join(errors);
  EXPECT_EQ(s.updated_members, 1);
  EXPECT_EQ(s.update_summary, "1/3");
  ASSERT_EQ(s.roles.size(), 1u);
  const auto& r = s.roles[0];
  EXPECT_EQ(r.update_revision, "db-member-7c9a");
  EXPECT_EQ(r.updated_members, 1);
  EXPECT_EQ(r.partition, 2);
  ASSERT_EQ(r.members.size(), 2u);
  const auto& old = r.members[0];
  EXPECT_EQ(old.template_revision, "db-member-6d8f");
  EXPECT_EQ(old.app, "etcd");
  EXPECT_EQ(old.state_detail.last_configured_revision, "db-member-6d8f");
  EXPECT_EQ(old.state_detail.last_configured_app, "etcd");
  EXPECT_EQ(old.state_detail.preupgrade_revision, "db-member-7c9a");
  EXPECT_EQ(old.state_detail.preupgrade_container, "containerd://abc");
  EXPECT_FALSE(old.state_detail.preupgrade_succeeded);
  EXPECT_EQ(old.state_detail.upgrade_error, "--preupgrade exited 3");
  EXPECT_EQ(old.state_detail.preupgrade_stdout, "draining");
  EXPECT_EQ(old.state_detail.preupgrade_stderr, "cannot drain: leader");
  const auto& moved = r.members[1];
  EXPECT_EQ(moved.app, "etcd-r2");
  EXPECT_TRUE(moved.state_detail.preupgrade_succeeded);
}

TEST(StackStatus, RolloutFieldsSurviveEncodeDecode) {
  json::value in = yaml(kRollingStatus);
  FieldErrors errors;
  StackStatus s = decode_stack_status(in, errors);
  ASSERT_TRUE(errors.empty()) << join(errors);
  EXPECT_EQ(to_json(s), in) << json::serialize(to_json(s));
}

TEST(StackStatus, EmptyRolloutFieldsAreOmitted) {
  StackStatus s;
  s.ready_members = 1;
  s.desired_members = 1;
  RoleStatus r;
  r.id = "member";
  MemberStatus m;
  m.pod = "db-member-0";
  m.state = kMemberReady;
  r.members.push_back(m);
  s.roles.push_back(r);
  json::value out = to_json(s);
  const auto& o = out.as_object();
  EXPECT_FALSE(o.contains("updatedMembers"));
  EXPECT_FALSE(o.contains("updateSummary"));
  const auto& ro = o.at("roles").as_array()[0].as_object();
  EXPECT_FALSE(ro.contains("updateRevision"));
  EXPECT_FALSE(ro.contains("updatedMembers"));
  EXPECT_FALSE(ro.contains("partition"));
  const auto& mo = ro.at("members").as_array()[0].as_object();
  EXPECT_FALSE(mo.contains("templateRevision"));
  EXPECT_FALSE(mo.contains("app"));
  EXPECT_TRUE(mo.at("stateDetail").as_object().empty()) << json::serialize(mo);
}

// A status written by an operator that predates live upgrades reads and writes back unchanged,
// so the operator's compare-before-write sees no difference after an upgrade of kstack.
TEST(StackStatus, AStatusWithoutRolloutFieldsRoundTripsUnchanged) {
  json::value in = yaml(R"(observedGeneration: 2
state: ready
conditions:
  - {type: Ready, status: "True", reason: AllMembersReady, message: ok,
     lastTransitionTime: "2024-01-01T00:00:00Z", observedGeneration: 2}
clusterService: db
lastNodeID: 1
configGeneration: 1
readyMembers: 1
desiredMembers: 1
memberSummary: 1/1
roles:
  - id: member
    statefulSet: db-member
    members:
      - pod: db-member-0
        service: db-member-0
        nodeID: 1
        state: ready
        stateDetail: {lastSetupGeneration: 1, lastConfiguredContainer: containerd://abc}
memberStateRollup: {membershipChanging: false, membersDown: false, membersInitializing: false,
  membersWaiting: false, membersRestarting: false, configErrors: false,
  membersNotScheduled: false}
)");
  FieldErrors errors;
  StackStatus s = decode_stack_status(in, errors);
  ASSERT_TRUE(errors.empty()) << join(errors);
  EXPECT_EQ(to_json(s), in) << json::serialize(to_json(s));
}

TEST(StackStatus, RolloutFieldsOfTheWrongTypeAreNamed) {
  FieldErrors errors;
  decode_stack_status(yaml(R"(updatedMembers: "1"
updateSummary: 3
roles:
  - id: member
    updateRevision: 5
    updatedMembers: one
    partition: "2"
    members:
      - templateRevision: 1
        app: [etcd]
        stateDetail:
          lastConfiguredRevision: 1
          lastConfiguredApp: {}
          preupgradeRevision: 2
          preupgradeContainer: 3
          preupgradeSucceeded: "true"
          upgradeError: 4
          preupgradeStdout: 5
          preupgradeStderr: 6
)"),
                      errors);
  std::vector<std::string> fields;
  for (const auto& e : errors) fields.push_back(e.field);
  const std::string sd = "status.roles[0].members[0].stateDetail.";
  for (const std::string& want :
       {std::string("status.updatedMembers"), std::string("status.updateSummary"),
        std::string("status.roles[0].updateRevision"),
        std::string("status.roles[0].updatedMembers"), std::string("status.roles[0].partition"),
        std::string("status.roles[0].members[0].templateRevision"),
        std::string("status.roles[0].members[0].app"), sd + "lastConfiguredRevision",
        sd + "lastConfiguredApp", sd + "preupgradeRevision", sd + "preupgradeContainer",
        sd + "preupgradeSucceeded", sd + "upgradeError", sd + "preupgradeStdout",
        sd + "preupgradeStderr"}) {
    EXPECT_NE(std::find(fields.begin(), fields.end(), want), fields.end())
        << want << " missing from: " << join(errors);
  }
}

// Member recovery (docs/api.md "Lost nodes"): stateDetail.recovery and .replacing.
TEST(StackStatus, RecoveryFieldsSurviveEncodeDecode) {
  json::value in = yaml(R"y(readyMembers: 1
desiredMembers: 2
roles:
  - id: member
    members:
      - pod: db-member-0
        nodeID: 1
        state: creating
        stateDetail:
          recovery: "waiting for node n2 (memberRecovery.localStorage: Keep)"
      - pod: db-member-1
        nodeID: 2
        state: creating
        stateDetail: {recovery: "claims recreated", replacing: true}
memberStateRollup: {membershipChanging: false, membersDown: false, membersInitializing: false,
  membersWaiting: false, membersRestarting: false, configErrors: false,
  membersNotScheduled: false}
)y");
  FieldErrors errors;
  StackStatus s = decode_stack_status(in, errors);
  ASSERT_TRUE(errors.empty()) << join(errors);
  const auto& members = s.roles.at(0).members;
  EXPECT_EQ(members[0].state_detail.recovery,
            "waiting for node n2 (memberRecovery.localStorage: Keep)");
  EXPECT_FALSE(members[0].state_detail.replacing);
  EXPECT_EQ(members[1].state_detail.recovery, "claims recreated");
  EXPECT_TRUE(members[1].state_detail.replacing);
  EXPECT_EQ(to_json(s), in) << json::serialize(to_json(s));
}

TEST(StackStatus, EmptyRecoveryFieldsAreOmittedAndWrongTypesNamed) {
  MemberStateDetail empty;
  StackStatus s;
  RoleStatus r;
  r.id = "member";
  MemberStatus m;
  m.pod = "db-member-0";
  m.state = kMemberStopped;
  m.state_detail = empty;
  r.members.push_back(m);
  s.roles.push_back(r);
  json::value out = to_json(s);
  const auto& mo = out.at("roles").as_array()[0].at("members").as_array()[0].as_object();
  EXPECT_TRUE(mo.at("stateDetail").as_object().empty()) << json::serialize(mo);
  EXPECT_EQ(mo.at("state"), "stopped");

  FieldErrors errors;
  decode_stack_status(yaml(R"(roles:
  - id: member
    members:
      - stateDetail: {recovery: 1, replacing: "yes"}
)"),
                      errors);
  const std::string sd = "status.roles[0].members[0].stateDetail.";
  std::vector<std::string> fields;
  for (const auto& e : errors) fields.push_back(e.field);
  for (const std::string& want : {sd + "recovery", sd + "replacing"}) {
    EXPECT_NE(std::find(fields.begin(), fields.end(), want), fields.end())
        << want << " missing from: " << join(errors);
  }
}

}  // namespace
}  // namespace kstack::catalog
