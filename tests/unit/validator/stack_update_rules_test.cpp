// What may change on a Stack once it exists (validate_stack_update): spec.app only along
// upgradeFrom, every field of a running role but its storage.
#include <functional>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/memory_catalog.h"
#include "catalog/parse.h"
#include "catalog/yaml.h"
#include "tests/unit/support/yaml_value.h"
#include "validator/rules/stack_rules.h"

namespace kstack::validator {
namespace {
namespace json = boost::json;
using kstack::testing::yaml;

// An AppType of team-a (or of `ns`) named `name`, of distroID `distro`, upgradable from `from`.
json::value app(std::string_view name, std::string_view distro, json::array from = {},
                std::string_view ns = "team-a") {
  json::value v = yaml(R"(kind: AppType
spec:
  label: {name: A}
  version: "1"
  configSchemaVersion: 1
  defaultImageRepoTag: img
  roles: [{id: seed, cardinality: "1+"}, {id: worker, cardinality: "0+"}]
)");
  v.as_object()["metadata"] = json::object{{"name", name}, {"namespace", ns}};
  auto& spec = v.at("spec").as_object();
  spec["distroID"] = distro;
  if (!from.empty()) spec["upgradeFrom"] = std::move(from);
  return v;
}

// The catalog every test runs against: cassandra with two upgrades (r2, r3), an unrelated
// distro listing cassandra, a cassandra-distro AppType that does not list it, and one in
// another namespace that lists it.
struct Apps {
  catalog::MemoryCatalog memory;
  Apps() {
    memory.add(app("cassandra", "cassandra"));
    memory.add(app("cassandra-r3", "cassandra", {"cassandra", "cassandra-r2"}));
    memory.add(app("cassandra-r2", "cassandra", {"cassandra"}));
    memory.add(app("scylla", "scylla", {"cassandra"}));
    memory.add(app("cassandra-fork", "cassandra"));
    memory.add(app("cassandra-r9", "cassandra", {"cassandra"}, "kstack-system"));
  }
};

json::value old_stack_json() {
  auto v = catalog::parse_yaml(R"(kind: Stack
metadata: {name: db, namespace: team-a}
spec:
  app: cassandra
  appCatalog: local
  serviceType: ClusterIP
  namingScheme: CrNameRole
  roles:
    - id: seed
      members: 3
      resources: {requests: {cpu: "1"}}
      storage: {size: 20Gi, storageClassName: fast}
      podLabels: {team: a}
    - id: worker
      members: 0
      resources: {requests: {cpu: "1"}}
)");
  EXPECT_TRUE(v.has_value());
  return *v;
}

void set_app(json::value& s, std::string_view app) { s.at("spec").as_object()["app"] = app; }

// The stored Stack (old_stack_json() edited by `stored`) updated by `mutate`, against the
// catalog of Apps plus what `more` adds.
Violations update_of(const std::function<void(json::value&)>& stored,
                     const std::function<void(json::value&)>& mutate,
                     const std::function<void(Apps&)>& more = nullptr) {
  json::value before = old_stack_json();
  if (stored) stored(before);
  json::value after = before;
  mutate(after);
  catalog::FieldErrors errors;
  auto a = catalog::decode_stack(before, errors);
  auto b = catalog::decode_stack(after, errors);
  EXPECT_TRUE(errors.empty()) << catalog::join(errors);
  Apps c;
  if (more) more(c);
  auto v = validate_stack_update(a, b, c.memory.catalog());
  // The webhook's way, from the stored object as JSON (decoding only what the rules read unless
  // they need more), must say the same.
  EXPECT_EQ(catalog::join(validate_stack_update(before, b, c.memory.catalog())), catalog::join(v));
  return v;
}

Violations update(const std::function<void(json::value&)>& mutate) {
  return update_of(nullptr, mutate);
}

// spec.app from `from` to `to`.
Violations app_change(std::string_view from, std::string_view to,
                      const std::function<void(Apps&)>& more = nullptr) {
  return update_of([&](json::value& s) { set_app(s, from); },
                   [&](json::value& s) { set_app(s, to); }, more);
}

json::object& role(json::value& s, std::size_t i) {
  return s.at("spec").at("roles").as_array().at(i).as_object();
}

TEST(StackUpdate, AppMayMoveToAnAppTypeThatListsItInUpgradeFrom) {
  EXPECT_TRUE(update([](json::value& s) { set_app(s, "cassandra-r2"); }).empty());
  EXPECT_TRUE(update([](json::value& s) { set_app(s, "cassandra-r3"); }).empty());
}

TEST(StackUpdate, AppRefusedElsewhereNamingTheAllowedTargets) {
  const std::string allowed =
      "allowed upgrades of \"cassandra\" are \"cassandra-r2\", \"cassandra-r3\" (AppTypes of "
      "distroID \"cassandra\" whose upgradeFrom lists \"cassandra\")";
  // Same distroID, but cassandra-fork does not list cassandra; scylla lists it but is another
  // distro; cassandra-r9 lists it but lives in another namespace; nope does not exist.
  for (std::string_view to : {"cassandra-fork", "scylla", "cassandra-r9", "nope"}) {
    auto v = update([&](json::value& s) { set_app(s, to); });
    ASSERT_EQ(v.size(), 1u) << to << ": " << catalog::join(v);
    EXPECT_EQ(v[0].to_string(),
              fmt::format("spec.app: cannot change from \"cassandra\" to \"{}\": {}", to, allowed));
  }
}

TEST(StackUpdate, AppRefusedWhenNothingListsTheCurrentOne) {
  // A downgrade: only what cassandra's upgradeFrom says counts.
  auto v = app_change("cassandra-r3", "cassandra");
  ASSERT_EQ(v.size(), 1u) << catalog::join(v);
  EXPECT_EQ(v[0].to_string(),
            "spec.app: cannot change from \"cassandra-r3\" to \"cassandra\": no AppType lists "
            "\"cassandra-r3\" in its upgradeFrom");
}

TEST(StackUpdate, AppMayGoBackToWhatAMemberStillRuns) {
  // A rollout from cassandra to cassandra-r2 under way: member 0 still runs cassandra. Going
  // back is a rollback, though cassandra does not list cassandra-r2.
  json::value before = old_stack_json();
  set_app(before, "cassandra-r2");
  before.as_object()["status"] = json::object{
      {"roles", json::array{json::object{
                    {"id", "seed"},
                    {"members",
                     json::array{json::object{{"pod", "db-seed-0"}, {"app", "cassandra"}},
                                 json::object{{"pod", "db-seed-1"}, {"app", "cassandra-r2"}}}}}}}};
  catalog::FieldErrors errors;
  auto a = catalog::decode_stack(before, errors);
  ASSERT_TRUE(errors.empty()) << catalog::join(errors);
  Apps c;
  for (std::string_view to : {"cassandra", "cassandra-fork"}) {
    json::value after = before;
    set_app(after, to);
    auto b = catalog::decode_stack(after, errors);
    auto v = validate_stack_update(a, b, c.memory.catalog());
    if (to == "cassandra") {
      EXPECT_TRUE(v.empty()) << catalog::join(v);
    } else {
      EXPECT_EQ(v.size(), 1u) << "nobody runs " << to;
    }
  }
  // Once no member runs cassandra any more, going back needs cassandra to list cassandra-r2.
  auto& members = before.at("status").at("roles").at(0).at("members").as_array();
  members.at(0).as_object()["app"] = "cassandra-r2";
  a = catalog::decode_stack(before, errors);
  json::value after = before;
  set_app(after, "cassandra");
  EXPECT_EQ(
      validate_stack_update(a, catalog::decode_stack(after, errors), c.memory.catalog()).size(),
      1u);
}

TEST(StackUpdate, AppRefusedWhenOnlyAnotherDistroListsTheCurrentOne) {
  auto v = app_change("cassandra-fork", "scylla-2",
                      [](Apps& c) { c.memory.add(app("scylla-2", "scylla", {"cassandra-fork"})); });
  ASSERT_EQ(v.size(), 1u) << catalog::join(v);
  EXPECT_EQ(v[0].to_string(),
            "spec.app: cannot change from \"cassandra-fork\" to \"scylla-2\": no AppType lists "
            "\"cassandra-fork\" in its upgradeFrom with distroID \"cassandra\" (\"scylla-2\" of "
            "another distroID)");
}

TEST(StackUpdate, AppRefusedWhenTheCurrentAppTypeIsGone) {
  auto v = app_change("gone", "cassandra-r2");
  ASSERT_EQ(v.size(), 1u) << catalog::join(v);
  EXPECT_EQ(v[0].field, "spec.app");
  EXPECT_NE(v[0].reason.find("the current AppType \"gone\" is not found"), std::string::npos)
      << v[0].reason;
}

TEST(StackUpdate, AppUpgradeFollowsTheSystemCatalogWhenTheStackUsesIt) {
  json::value before = old_stack_json();
  before.at("spec").as_object()["appCatalog"] = "system";
  json::value after = before;
  set_app(after, "cassandra-r9");
  catalog::FieldErrors errors;
  auto a = catalog::decode_stack(before, errors);
  auto b = catalog::decode_stack(after, errors);
  Apps c;
  c.memory.add(app("cassandra", "cassandra", {}, "kstack-system"));
  EXPECT_TRUE(validate_stack_update(a, b, c.memory.catalog()).empty());
  set_app(after, "cassandra-r2");  // of team-a: not where this Stack finds its app
  b = catalog::decode_stack(after, errors);
  auto v = validate_stack_update(a, b, c.memory.catalog());
  ASSERT_EQ(v.size(), 1u) << catalog::join(v);
  EXPECT_NE(v[0].reason.find("allowed upgrade of \"cassandra\" is \"cassandra-r9\""),
            std::string::npos)
      << v[0].reason;
}

TEST(StackUpdate, AppCatalogIsImmutableOnceSet) {
  auto v = update([](json::value& s) { s.at("spec").as_object()["appCatalog"] = "system"; });
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(), "spec.appCatalog: field is immutable (was \"local\")");
  // Left out of the new object: the defaulting webhook puts the old value back.
  EXPECT_TRUE(update([](json::value& s) { s.at("spec").as_object().erase("appCatalog"); }).empty());
}

TEST(StackUpdate, NamingSchemeIsImmutableOnceSet) {
  auto v = update([](json::value& s) { s.at("spec").as_object()["namingScheme"] = "UID"; });
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].field, "spec.namingScheme");
}

TEST(StackUpdate, RunningRoleStorageIsFrozenWithTheReason) {
  const std::string want =
      "spec.roles[0].storage: cannot change while role \"seed\" has members: the size and class "
      "are in the StatefulSet's volumeClaimTemplates, which Kubernetes does not let change";
  for (json::value storage :
       {json::value(json::object{{"size", "40Gi"}, {"storageClassName", "fast"}}),
        json::value(json::object{{"size", "20Gi"}, {"storageClassName", "slow"}}),
        json::value(json::object{{"size", "20480Mi"}, {"storageClassName", "fast"}}),
        json::value(nullptr)}) {
    auto v = update([&](json::value& s) { role(s, 0)["storage"] = storage; });
    ASSERT_EQ(v.size(), 1u) << json::serialize(storage) << ": " << catalog::join(v);
    EXPECT_EQ(v[0].to_string(), want);
  }
  // Storage on a role without members is free (no volumeClaimTemplate to keep yet).
  auto v = update([](json::value& s) { role(s, 1)["storage"] = json::object{{"size", "1Gi"}}; });
  EXPECT_TRUE(v.empty()) << catalog::join(v);
}

TEST(StackUpdate, RunningRolesMayChangeEveryOtherField) {
  auto v = update([](json::value& s) {
    role(s, 0)["resources"] = json::object{{"requests", {{"cpu", "2"}}}};
    role(s, 0)["env"] = json::array{json::object{{"name", "HEAP"}, {"value", "2g"}}};
    role(s, 0)["affinity"] = json::object{{"nodeAffinity", json::object{}}};
    role(s, 0)["nodeSelector"] = json::object{{"disk", "ssd"}};
    role(s, 0)["tolerations"] = json::array{json::object{{"key", "k"}, {"operator", "Exists"}}};
    role(s, 0)["serviceAccountName"] = "other";
    role(s, 0)["maxUnavailable"] = 2;
    set_app(s, "cassandra-r2");
  });
  EXPECT_TRUE(v.empty()) << catalog::join(v);
}

TEST(StackUpdate, RunningRolesMayScaleAndRelabel) {
  EXPECT_TRUE(update([](json::value& s) {
                role(s, 0)["members"] = 5;
                role(s, 0)["podLabels"] = json::object{{"team", "b"}};
                role(s, 0)["podAnnotations"] = json::object{{"x", "y"}};
                role(s, 0)["serviceLabels"] = json::object{{"s", "t"}};
                role(s, 0)["serviceAnnotations"] = json::object{{"u", "v"}};
                s.at("spec").as_object()["serviceType"] = "NodePort";
              }).empty());
}

TEST(StackUpdate, RolesWithoutMembersAddedOrRemovedRolesAreFree) {
  EXPECT_TRUE(update([](json::value& s) {
                role(s, 1)["resources"] = json::object{{"requests", {{"cpu", "4"}}}};
                s.at("spec").at("roles").as_array().push_back(
                    json::object{{"id", "arbiter"}, {"members", 1}});
              }).empty());
  EXPECT_TRUE(update([](json::value& s) {
                auto& roles = s.at("spec").at("roles").as_array();
                roles.erase(roles.begin());  // removing a running role scales it to zero
              }).empty());
}

TEST(StackUpdate, ReorderedRolesAreComparedById) {
  EXPECT_TRUE(update([](json::value& s) {
                auto& roles = s.at("spec").at("roles").as_array();
                std::swap(roles[0], roles[1]);
              }).empty());
}

// spec.stopped (docs/api.md "Stop and resume"): stopping and resuming are updates of their own,
// and a stopped Stack's spec does not change.
void set_stopped(json::value& s, bool stopped) { s.at("spec").as_object()["stopped"] = stopped; }

TEST(StackUpdate, AStoppedStacksSpecCannotChangeAndTheFirstChangedFieldIsNamed) {
  auto v = update_of([](json::value& s) { set_stopped(s, true); },
                     [](json::value& s) {
                       role(s, 0)["members"] = 5;
                       role(s, 1)["members"] = 2;
                     });
  ASSERT_EQ(v.size(), 1u) << catalog::join(v);
  EXPECT_EQ(v[0].to_string(),
            "spec.roles[0].members: cannot change while the Stack is stopped (spec.stopped: "
            "true); resume it first (set spec.stopped to false in an update of its own)");
}

TEST(StackUpdate, StoppedRuleNamesMapKeysAddedFieldsAndAddedRoles) {
  auto stopped = [](json::value& s) { set_stopped(s, true); };
  auto label = update_of(stopped, [](json::value& s) {
    role(s, 0)["podLabels"] = json::object{{"team", "b"}};
  });
  ASSERT_EQ(label.size(), 1u);
  EXPECT_EQ(label[0].field, "spec.roles[0].podLabels[team]");
  auto added = update_of(stopped, [](json::value& s) { role(s, 1)["maxUnavailable"] = 2; });
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].field, "spec.roles[1].maxUnavailable");
  auto new_role = update_of(stopped, [](json::value& s) {
    s.at("spec").at("roles").as_array().push_back(json::object{{"id", "arbiter"}});
  });
  ASSERT_EQ(new_role.size(), 1u);
  EXPECT_EQ(new_role[0].field, "spec.roles[2]");
  auto top = update_of(stopped, [](json::value& s) { s.at("spec").as_object()["paused"] = true; });
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].field, "spec.paused");
  // Written null is the same as absent, as elsewhere in Kubernetes.
  EXPECT_TRUE(update_of(stopped, [](json::value& s) { role(s, 1)["env"] = nullptr; }).empty());
}

// A Stack stored without the fields the mutating webhook defaults (made before the webhook
// ran, or before a default existed) is stopped by an update that the webhook completes with
// them: that is no change of the spec. A different value in such a field still is.
TEST(StackUpdate, DefaultsTheWebhookAddsInTheStoppingUpdateAreNoChange) {
  auto bare = [](json::value& s) {
    auto& spec = s.at("spec").as_object();
    spec.erase("appCatalog");
    spec.erase("serviceType");
    spec.erase("namingScheme");
  };
  auto defaulted = [](json::value& s) {
    set_stopped(s, true);
    auto& spec = s.at("spec").as_object();
    spec["appCatalog"] = "local";
    spec["serviceType"] = "ClusterIP";
    spec["namingScheme"] = "CrNameRole";
  };
  auto stop = update_of(bare, defaulted);
  EXPECT_TRUE(stop.empty()) << catalog::join(stop);
  auto other = update_of(bare, [&](json::value& s) {
    defaulted(s);
    s.at("spec").as_object()["serviceType"] = "NodePort";
  });
  ASSERT_EQ(other.size(), 1u) << catalog::join(other);
  EXPECT_EQ(other[0].field, "spec.serviceType");
}

TEST(StackUpdate, AChangeInTheUpdateThatStopsOrResumesIsRefused) {
  const std::string why =
      "cannot change in the same update that sets spec.stopped (stop or resume in an update of "
      "its own)";
  auto stop = update([](json::value& s) {
    set_stopped(s, true);
    role(s, 0)["members"] = 1;
  });
  ASSERT_EQ(stop.size(), 1u) << catalog::join(stop);
  EXPECT_EQ(stop[0].to_string(), "spec.roles[0].members: " + why);
  auto resume = update_of([](json::value& s) { set_stopped(s, true); },
                          [](json::value& s) {
                            set_stopped(s, false);
                            s.at("spec").as_object()["serviceType"] = "NodePort";
                          });
  ASSERT_EQ(resume.size(), 1u) << catalog::join(resume);
  EXPECT_EQ(resume[0].to_string(), "spec.serviceType: " + why);

  // Alone, stopping, resuming and metadata changes go through.
  EXPECT_TRUE(update([](json::value& s) { set_stopped(s, true); }).empty());
  auto resume_alone = update_of([](json::value& s) { set_stopped(s, true); },
                                [](json::value& s) { set_stopped(s, false); });
  EXPECT_TRUE(resume_alone.empty()) << catalog::join(resume_alone);
  // Absent is false: dropping the field resumes too.
  auto dropped = update_of([](json::value& s) { set_stopped(s, true); },
                           [](json::value& s) { s.at("spec").as_object().erase("stopped"); });
  EXPECT_TRUE(dropped.empty()) << catalog::join(dropped);
  // Metadata is not spec: labels may change on a stopped Stack.
  auto relabel = update_of([](json::value& s) { set_stopped(s, true); },
                           [](json::value& s) {
                             s.at("metadata").as_object()["labels"] = json::object{{"a", "b"}};
                           });
  EXPECT_TRUE(relabel.empty()) << catalog::join(relabel);
}

// Stored objects of every shape (the webhook may see objects stored before it ran, or written
// around it): the rules read the stored JSON as the whole decode reads it, whatever is wrong
// with it, for updates that stop, resume, change the app or change nothing of that.
TEST(StackUpdate, TheStoredObjectIsReadAsTheWholeDecodeReadsIt) {
  const std::vector<std::function<void(json::value&)>> stored = {
      nullptr,
      [](json::value& s) { s.at("spec").as_object()["stopped"] = true; },
      [](json::value& s) { s.at("spec").as_object()["stopped"] = "yes"; },
      [](json::value& s) { s.at("spec").as_object()["app"] = 7; },
      [](json::value& s) { s.at("spec").as_object().erase("app"); },
      [](json::value& s) { s.at("spec").as_object()["appCatalog"] = json::array{}; },
      [](json::value& s) { s.at("spec").as_object()["namingScheme"] = nullptr; },
      [](json::value& s) { role(s, 0)["members"] = "3"; },
      [](json::value& s) { role(s, 0)["members"] = 2.5; },
      [](json::value& s) { role(s, 0).erase("id"); },
      [](json::value& s) { role(s, 1)["id"] = "seed"; },
      [](json::value& s) { s.at("spec").at("roles").as_array().emplace_back(4); },
      [](json::value& s) { s.at("spec").as_object()["roles"] = json::object{}; },
      [](json::value& s) { s.as_object().erase("spec"); },
      [](json::value& s) { s.as_object()["spec"] = "spec"; },
      [](json::value& s) { s.at("metadata").as_object().erase("namespace"); },
      [](json::value& s) { s.as_object()["metadata"] = 1; },
      [](json::value& s) {
        s.as_object()["status"] = json::object{
            {"roles", json::array{json::object{
                          {"id", "seed"},
                          {"members", json::array{json::object{{"app", "cassandra-fork"}}}}}}}};
      },
      [](json::value& s) { s = json::array{}; },
      // What the defaults of a stopped Stack's spec depend on: a running role's storage class.
      [](json::value& s) { role(s, 0).at("storage").as_object().erase("storageClassName"); },
      [](json::value& s) {
        s.at("spec").as_object()["stopped"] = true;
        role(s, 0).at("storage").as_object().erase("storageClassName");
      },
  };
  const std::vector<std::function<void(json::value&)>> changes = {
      [](json::value&) {},
      [](json::value& s) { set_app(s, "cassandra-r2"); },
      [](json::value& s) { set_app(s, "cassandra-fork"); },
      [](json::value& s) { s.at("spec").as_object()["stopped"] = true; },
      [](json::value& s) { s.at("spec").as_object()["stopped"] = false; },
      [](json::value& s) { s.at("spec").as_object()["appCatalog"] = "system"; },
      [](json::value& s) { s.at("spec").as_object()["namingScheme"] = "UID"; },
      [](json::value& s) {
        role(s, 0)["storage"] = json::object{{"size", "30Gi"}};
      },
      [](json::value& s) { role(s, 0)["members"] = 5; },
      [](json::value& s) { role(s, 0).at("storage").as_object().erase("storageClassName"); },
      [](json::value& s) {
        s.at("spec").as_object()["stopped"] = true;
        role(s, 0).at("storage").as_object().erase("storageClassName");
      },
  };
  Apps c;
  c.memory.add(
      yaml("kind: KStackConfig\nmetadata: {name: kstack-config, namespace: kstack-system}\n"
           "spec: {defaultStorageClassName: fast-default}\n"));
  const auto& catalog = c.memory.catalog();
  std::size_t refused = 0;
  for (std::size_t i = 0; i < stored.size(); ++i) {
    json::value before = old_stack_json();
    if (stored[i]) stored[i](before);
    for (std::size_t k = 0; k < changes.size(); ++k) {
      json::value after = old_stack_json();
      changes[k](after);
      catalog::FieldErrors errors;
      auto b = catalog::decode_stack(after, errors, catalog::DecodeSource::kBorrow);
      auto a = catalog::decode_stack(before, errors, catalog::DecodeSource::kBorrow);
      if (a.metadata.namespace_name.empty()) a.metadata.namespace_name = b.metadata.namespace_name;
      auto whole = catalog::join(validate_stack_update(a, b, catalog));
      EXPECT_EQ(catalog::join(validate_stack_update(before, b, catalog)), whole)
          << "stored shape " << i << ", change " << k;
      refused += whole.empty() ? 0 : 1;
    }
  }
  // The pairs reach the rules that refuse, not only the ones that let through.
  EXPECT_GT(refused, stored.size());
}

}  // namespace
}  // namespace kstack::validator
