#include "validator/rules/handler.h"

#include <atomic>
#include <thread>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/memory_catalog.h"
#include "catalog/yaml.h"
#include "tests/unit/support/yaml_value.h"

namespace kstack::validator {
namespace {
namespace json = boost::json;

using kstack::testing::yaml;

constexpr std::string_view kOperator = "system:serviceaccount:kstack-system:kstack";

constexpr std::string_view kApp = R"(apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: cassandra, namespace: team-a}
spec:
  label: {name: C}
  distroID: c
  version: "1"
  configSchemaVersion: 1
  defaultImageRepoTag: c:1
  roles:
    - {id: seed, cardinality: "2+"}
    - {id: worker, cardinality: "0+"}
  config: {selectedRoles: [seed]}
)";

constexpr std::string_view kStack = R"(apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: db, namespace: team-a}
spec:
  app: cassandra
  appCatalog: local
  serviceType: ClusterIP
  namingScheme: CrNameRole
  roles:
    - {id: seed, members: 3}
)";

struct Fixture {
  catalog::MemoryCatalog memory;
  RulesHandler handler{memory.catalog()};
  Fixture() { memory.add(yaml(kApp)); }

  static AdmissionRequest request(std::string_view kind, std::string_view op, json::value object,
                                  json::value old_object = nullptr,
                                  std::string_view user = "alice") {
    AdmissionRequest r;
    r.uid = "u-1";
    r.group = "kstack.io";
    r.version = "v1beta1";
    r.kind = std::string(kind);
    r.operation = std::string(op);
    r.username = std::string(user);
    const auto& src = object.is_null() ? old_object : object;
    if (const auto* md = src.is_object() ? src.get_object().if_contains("metadata") : nullptr) {
      const auto& mo = md->as_object();
      if (const auto* n = mo.if_contains("name")) r.name = std::string(n->as_string());
      if (const auto* ns = mo.if_contains("namespace")) {
        r.namespace_name = std::string(ns->as_string());
      }
    }
    r.object = std::move(object);
    r.old_object = std::move(old_object);
    return r;
  }
};

json::value with(json::value v, std::string_view ptr, json::value x) {
  auto slash = ptr.rfind('/');
  v.at_pointer(ptr.substr(0, slash)).as_object()[ptr.substr(slash + 1)] = std::move(x);
  return v;
}

TEST(RulesHandler, InvalidAppTypeIsDenied422WithEveryProblem) {
  Fixture f;
  auto app = with(with(yaml(kApp), "/spec/configSchemaVersion", 0), "/spec/roles/1/id", "seed");
  auto resp = f.handler.validate(Fixture::request("AppType", "CREATE", app));
  EXPECT_FALSE(resp.allowed);
  EXPECT_EQ(resp.code, 422);
  EXPECT_EQ(resp.reason, "");  // see do_validate: kubectl would hide the message
  EXPECT_EQ(resp.message,
            "spec.configSchemaVersion: must be greater than or equal to 1; "
            "spec.roles[1].id: duplicate role id \"seed\"");
}

TEST(RulesHandler, ValidObjectsAreAllowed) {
  Fixture f;
  EXPECT_TRUE(f.handler.validate(Fixture::request("AppType", "CREATE", yaml(kApp))).allowed);
  EXPECT_TRUE(f.handler.validate(Fixture::request("Stack", "CREATE", yaml(kStack))).allowed);
}

TEST(RulesHandler, AppTypeInUseCannotChangeOrGo) {
  Fixture f;
  f.memory.add(yaml(kStack));
  auto changed = with(yaml(kApp), "/spec/version", "2");
  auto upd = f.handler.validate(Fixture::request("AppType", "UPDATE", changed, yaml(kApp)));
  EXPECT_FALSE(upd.allowed);
  EXPECT_EQ(upd.code, 422);
  EXPECT_EQ(upd.message,
            "spec.version: cannot be changed while the AppType is used by 1 stack (team-a/db)");
  auto del = f.handler.validate(Fixture::request("AppType", "DELETE", nullptr, yaml(kApp)));
  EXPECT_FALSE(del.allowed);
  EXPECT_EQ(del.message,
            "metadata.name: AppType team-a/cassandra cannot be deleted while used by 1 stack "
            "(team-a/db)");

  EXPECT_TRUE(
      f.handler.validate(Fixture::request("AppType", "UPDATE", yaml(kApp), yaml(kApp))).allowed);
  auto relabelled = with(yaml(kApp), "/metadata/labels", json::object{{"tier", "db"}});
  EXPECT_TRUE(
      f.handler.validate(Fixture::request("AppType", "UPDATE", relabelled, yaml(kApp))).allowed);
  f.memory.remove("Stack", "team-a/db");
  EXPECT_TRUE(
      f.handler.validate(Fixture::request("AppType", "DELETE", nullptr, yaml(kApp))).allowed);
}

TEST(RulesHandler, StatusSubresourceIsForbiddenExceptForTheOperator) {
  Fixture f;
  auto with_status = with(yaml(kStack), "/status", json::object{{"state", "ready"}});
  auto r = Fixture::request("Stack", "UPDATE", with_status, yaml(kStack));
  r.sub_resource = "status";
  auto denied = f.handler.validate(r);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.code, 403);
  EXPECT_EQ(denied.reason, "Forbidden");
  EXPECT_EQ(denied.message,
            "status: may only be written by the operator (" + std::string(kOperator) + ")");
  r.username = std::string(kOperator);
  EXPECT_TRUE(f.handler.validate(r).allowed);
}

TEST(RulesHandler, OperatorIdentityIsConfigurable) {
  catalog::MemoryCatalog memory;
  RulesHandler handler(memory.catalog(), RulesOptions{"system:serviceaccount:ops:op", ""});
  auto r = Fixture::request("Stack", "UPDATE", yaml(kStack), yaml(kStack), kOperator);
  r.sub_resource = "status";
  EXPECT_EQ(handler.validate(r).code, 403);
  r.username = "system:serviceaccount:ops:op";
  EXPECT_TRUE(handler.validate(r).allowed);
}

TEST(RulesHandler, ForbiddenWinsAndTheMessageStillListsEverything) {
  Fixture f;
  auto bad = with(yaml(kStack), "/metadata/finalizers", json::array{"kstack.io/cleanup"});
  bad = with(std::move(bad), "/spec/serviceType", "Nope");
  auto resp = f.handler.validate(Fixture::request("Stack", "UPDATE", bad, yaml(kStack)));
  EXPECT_EQ(resp.code, 403);
  EXPECT_NE(resp.message.find("metadata.finalizers: the finalizer kstack.io/cleanup may only be "
                              "added by the operator"),
            std::string::npos)
      << resp.message;
  EXPECT_NE(resp.message.find("; spec.serviceType: unsupported value"), std::string::npos)
      << resp.message;
}

TEST(RulesHandler, UnchangedSpecUpdatesOnlyCheckOwnership) {
  Fixture f;
  f.memory.remove("AppType", "team-a/cassandra");  // the app is gone: the spec would not validate
  auto relabelled = with(yaml(kStack), "/metadata/labels", json::object{{"team", "a"}});
  EXPECT_TRUE(
      f.handler.validate(Fixture::request("Stack", "UPDATE", relabelled, yaml(kStack))).allowed);
  // The operator removing its finalizer from a Stack being deleted.
  auto old = with(yaml(kStack), "/metadata/finalizers", json::array{"kstack.io/cleanup"});
  auto r = Fixture::request("Stack", "UPDATE", yaml(kStack), old, kOperator);
  EXPECT_TRUE(f.handler.validate(r).allowed);
}

// cassandra's next revision: same distroID, lists cassandra in upgradeFrom.
json::value upgraded_app() {
  json::value app = yaml(kApp);
  app.at("metadata").as_object()["name"] = "cassandra-r2";
  app.at("spec").as_object()["upgradeFrom"] = json::array{"cassandra"};
  app.at("spec").as_object()["defaultImageRepoTag"] = "c:2";
  return app;
}

TEST(RulesHandler, StackMayMoveToAnAppTypeListingItsAppAlsoInDryRun) {
  Fixture f;
  f.memory.add(upgraded_app());
  auto r = Fixture::request("Stack", "UPDATE", with(yaml(kStack), "/spec/app", "cassandra-r2"),
                            yaml(kStack));
  auto resp = f.handler.validate(r);
  EXPECT_TRUE(resp.allowed) << resp.message;
  r.dry_run = true;
  resp = f.handler.validate(r);
  EXPECT_TRUE(resp.allowed) << resp.message;
}

TEST(RulesHandler, StackAppChangeElsewhereIsDeniedNamingTheAllowedTargets) {
  Fixture f;
  f.memory.add(upgraded_app());
  auto other = yaml(kApp);
  other.at("metadata").as_object()["name"] = "other";  // same distroID, no upgradeFrom
  f.memory.add(other);
  auto r =
      Fixture::request("Stack", "UPDATE", with(yaml(kStack), "/spec/app", "other"), yaml(kStack));
  for (bool dry_run : {false, true}) {
    r.dry_run = dry_run;
    auto resp = f.handler.validate(r);
    EXPECT_FALSE(resp.allowed);
    EXPECT_EQ(resp.code, 422);
    EXPECT_EQ(resp.message,
              "spec.app: cannot change from \"cassandra\" to \"other\": allowed upgrade of "
              "\"cassandra\" is \"cassandra-r2\" (AppTypes of distroID \"c\" whose upgradeFrom "
              "lists \"cassandra\")")
        << "dry run " << dry_run;
  }
}

TEST(RulesHandler, StackAppChangeWithoutAnyUpgradeIsDenied) {
  Fixture f;  // only cassandra: nothing lists it
  auto changed = with(yaml(kStack), "/spec/app", "other");
  auto resp = f.handler.validate(Fixture::request("Stack", "UPDATE", changed, yaml(kStack)));
  EXPECT_EQ(resp.code, 422);
  EXPECT_NE(resp.message.find("spec.app: cannot change from \"cassandra\" to \"other\": no "
                              "AppType lists \"cassandra\" in its upgradeFrom"),
            std::string::npos)
      << resp.message;
}

TEST(RulesHandler, RunningRolesMayChangeButNotTheirStorage) {
  Fixture f;
  f.memory.add(yaml("kind: StorageClass\nmetadata: {name: fast}\n"));
  auto before = with(yaml(kStack), "/spec/roles/0/storage",
                     json::object{{"size", "1Gi"}, {"storageClassName", "fast"}});
  auto resized = with(before, "/spec/roles/0/resources",
                      json::object{{"requests", json::object{{"cpu", "2"}}}});
  resized =
      with(resized, "/spec/roles/0/env", json::array{json::object{{"name", "A"}, {"value", "b"}}});
  auto resp = f.handler.validate(Fixture::request("Stack", "UPDATE", resized, before));
  EXPECT_TRUE(resp.allowed) << resp.message;
  auto grown = with(before, "/spec/roles/0/storage",
                    json::object{{"size", "2Gi"}, {"storageClassName", "fast"}});
  resp = f.handler.validate(Fixture::request("Stack", "UPDATE", grown, before));
  EXPECT_EQ(resp.code, 422);
  EXPECT_NE(resp.message.find("spec.roles[0].storage: cannot change while role \"seed\" has "
                              "members"),
            std::string::npos)
      << resp.message;
}

TEST(RulesHandler, DeletesOfStacksAndConfigAreAllowed) {
  Fixture f;
  auto stack = with(yaml(kStack), "/metadata/finalizers", json::array{"kstack.io/cleanup"});
  EXPECT_TRUE(f.handler.validate(Fixture::request("Stack", "DELETE", nullptr, stack)).allowed);
  auto cfg =
      yaml("kind: KStackConfig\nmetadata: {name: kstack-config, namespace: kstack-system}\n");
  EXPECT_TRUE(f.handler.validate(Fixture::request("KStackConfig", "DELETE", nullptr, cfg)).allowed);
}

TEST(RulesHandler, KStackConfigIsValidated) {
  Fixture f;
  auto cfg = yaml("kind: KStackConfig\nmetadata: {name: settings, namespace: kstack-system}\n");
  auto resp = f.handler.validate(Fixture::request("KStackConfig", "CREATE", cfg));
  EXPECT_EQ(resp.code, 422);
  EXPECT_EQ(resp.message,
            "metadata.name: must be \"kstack-config\": the operator reads only that object");
}

TEST(RulesHandler, OtherKindsGroupsAndOperationsAreAllowed) {
  Fixture f;
  auto garbage = json::value(42);
  EXPECT_TRUE(f.handler.validate(Fixture::request("ConfigMap", "CREATE", garbage)).allowed);
  auto other = Fixture::request("AppType", "CREATE", garbage);
  other.group = "example.com";
  EXPECT_TRUE(f.handler.validate(other).allowed);
  EXPECT_TRUE(f.handler.validate(Fixture::request("Stack", "CONNECT", garbage)).allowed);
}

TEST(RulesHandler, MalformedObjectsAreDeniedNotThrown) {
  Fixture f;
  for (const auto& obj : {json::value(42), json::value(json::array{1}), json::value(nullptr),
                          json::value(json::object{{"spec", "x"}})}) {
    for (std::string_view kind : {"AppType", "Stack", "KStackConfig"}) {
      auto resp = f.handler.validate(Fixture::request(kind, "CREATE", obj));
      EXPECT_FALSE(resp.allowed) << kind << " " << json::serialize(obj);
      EXPECT_EQ(resp.code, 422);
      EXPECT_NO_THROW(f.handler.mutate(Fixture::request(kind, "CREATE", obj)));
    }
  }
}

TEST(RulesHandler, WarningsRideAlongWithTheAnswer) {
  Fixture f;
  auto stack = with(yaml(kStack), "/spec/connections", json::object{});
  auto resp = f.handler.validate(Fixture::request("Stack", "CREATE", stack));
  EXPECT_TRUE(resp.allowed);
  ASSERT_EQ(resp.warnings.size(), 1u);
  EXPECT_EQ(resp.warnings[0], "spec.connections: not yet supported by kstack; ignored");
}

TEST(RulesHandler, DryRunGetsTheSameAnswer) {
  Fixture f;
  auto r = Fixture::request("Stack", "CREATE", with(yaml(kStack), "/spec/roles/0/members", 1));
  auto normal = f.handler.validate(r);
  r.dry_run = true;
  auto dry = f.handler.validate(r);
  EXPECT_EQ(normal.message, dry.message);
  EXPECT_EQ(normal.code, dry.code);
}

TEST(RulesHandler, AStoppedStacksSpecChangeIsDeniedAlsoInDryRun) {
  Fixture f;
  auto stopped = with(yaml(kStack), "/spec/stopped", true);
  auto scaled = with(stopped, "/spec/roles/0/members", 4);
  auto r = Fixture::request("Stack", "UPDATE", scaled, stopped);
  for (bool dry_run : {false, true}) {
    r.dry_run = dry_run;
    auto resp = f.handler.validate(r);
    EXPECT_FALSE(resp.allowed) << "dry run " << dry_run;
    EXPECT_EQ(resp.code, 422);
    EXPECT_EQ(resp.message,
              "spec.roles[0].members: cannot change while the Stack is stopped (spec.stopped: "
              "true); resume it first (set spec.stopped to false in an update of its own)")
        << "dry run " << dry_run;
  }
  // Stopping, resuming and relabelling a stopped Stack each go through, dry run or not.
  auto relabelled = with(stopped, "/metadata/labels", json::object{{"tier", "db"}});
  for (bool dry_run : {false, true}) {
    for (auto [object, old_object] :
         {std::pair{stopped, yaml(kStack)}, std::pair{yaml(kStack), stopped},
          std::pair{relabelled, stopped}}) {
      auto ok = Fixture::request("Stack", "UPDATE", object, old_object);
      ok.dry_run = dry_run;
      auto resp = f.handler.validate(ok);
      EXPECT_TRUE(resp.allowed) << resp.message;
    }
  }
}

TEST(RulesHandler, StackRoleBelowItsMinAvailableIsAllowedWithAWarning) {
  Fixture f;
  auto quorum = with(with(yaml(kApp), "/metadata/name", "quorum"), "/spec/roles/0/minAvailable", 4);
  f.memory.add(quorum);
  auto stack = with(yaml(kStack), "/spec/app", "quorum");
  auto resp = f.handler.validate(Fixture::request("Stack", "CREATE", stack));
  EXPECT_TRUE(resp.allowed) << resp.message;
  ASSERT_EQ(resp.warnings.size(), 1u);
  EXPECT_EQ(resp.warnings[0],
            "spec.roles[0].members: 3 members of role \"seed\", not more than minAvailable 4 of "
            "AppType \"quorum\": the PodDisruptionBudget allows no eviction, so no member of it "
            "can be evicted (node drains wait)");
  auto enough = with(stack, "/spec/roles/0/members", 5);
  EXPECT_TRUE(f.handler.validate(Fixture::request("Stack", "CREATE", enough)).warnings.empty());
}

TEST(RulesHandler, MutateDefaultsStacksOnly) {
  Fixture f;
  auto bare =
      yaml("kind: Stack\nmetadata: {name: db}\nspec: {app: cassandra, roles: [{id: seed}]}\n");
  auto r = Fixture::request("Stack", "CREATE", bare);
  r.namespace_name = "team-a";  // the object itself names no namespace: the request's counts
  auto resp = f.handler.mutate(r);
  EXPECT_TRUE(resp.allowed);
  ASSERT_TRUE(resp.patch.has_value());
  EXPECT_EQ(resp.patch->size(), 5u) << json::serialize(*resp.patch);
  EXPECT_EQ(resp.patch->at(0).at("value"), json::value("local"));

  EXPECT_FALSE(f.handler.mutate(Fixture::request("AppType", "CREATE", yaml(kApp))).patch);
  auto status = Fixture::request("Stack", "UPDATE", bare, bare);
  status.sub_resource = "status";
  EXPECT_FALSE(f.handler.mutate(status).patch);
  auto deleting = with(bare, "/metadata/deletionTimestamp", "2024-01-01T00:00:00Z");
  EXPECT_FALSE(f.handler.mutate(Fixture::request("Stack", "UPDATE", deleting, bare)).patch);
  auto finalized = with(yaml(kStack), "/metadata/finalizers", json::array{"kstack.io/cleanup"});
  EXPECT_FALSE(f.handler.mutate(Fixture::request("Stack", "CREATE", finalized)).patch);
  EXPECT_FALSE(f.handler.mutate(Fixture::request("Stack", "UPDATE", yaml(kStack), finalized)).patch)
      << "an UPDATE never puts the finalizer back";
}

// What the API server does with a new Stack: the mutating webhook adds kstack's cleanup
// finalizer (so the operator need not), and the validating webhook, which sees the mutated
// object, lets a user's CREATE carry it — but not a user's later UPDATE that adds or drops it.
TEST(RulesHandler, CreateGetsTheCleanupFinalizerAndValidationAcceptsIt) {
  Fixture f;
  auto resp = f.handler.mutate(Fixture::request("Stack", "CREATE", yaml(kStack)));
  ASSERT_TRUE(resp.patch.has_value());
  json::array want{json::object{{"op", "add"},
                                {"path", "/metadata/finalizers"},
                                {"value", json::array{"kstack.io/cleanup"}}}};
  EXPECT_EQ(*resp.patch, want) << json::serialize(*resp.patch);
  auto mutated = with(yaml(kStack), "/metadata/finalizers", json::array{"kstack.io/cleanup"});
  auto created = f.handler.validate(Fixture::request("Stack", "CREATE", mutated));
  EXPECT_TRUE(created.allowed) << created.message;
  EXPECT_EQ(f.handler.validate(Fixture::request("Stack", "UPDATE", yaml(kStack), mutated)).code,
            403);
  EXPECT_EQ(f.handler.validate(Fixture::request("Stack", "UPDATE", mutated, yaml(kStack))).code,
            403);

  // An operator that reconciles one namespace (--watch-namespace) finalizes only Stacks there:
  // elsewhere no controller of its would ever remove the finalizer.
  RulesHandler scoped(f.memory.catalog(), RulesOptions{std::string(kOperator), "team-b"});
  EXPECT_FALSE(scoped.mutate(Fixture::request("Stack", "CREATE", yaml(kStack))).patch);
  auto elsewhere = with(yaml(kStack), "/metadata/namespace", "team-b");
  auto in_scope = scoped.mutate(Fixture::request("Stack", "CREATE", elsewhere));
  ASSERT_TRUE(in_scope.patch.has_value());
  EXPECT_EQ(in_scope.patch->back().at("path"), json::value("/metadata/finalizers"));
}

TEST(RulesHandler, IsSafeToCallFromManyThreads) {
  Fixture f;
  auto good = Fixture::request("Stack", "CREATE", yaml(kStack));
  auto bad = Fixture::request("Stack", "CREATE", with(yaml(kStack), "/spec/roles/0/members", 1));
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        if (t == 0 && i % 10 == 0) f.memory.add(yaml(kApp));  // the cache keeps changing
        if (!f.handler.validate(good).allowed) ++wrong;
        if (f.handler.validate(bad).allowed) ++wrong;
        if (!f.handler.mutate(good).allowed) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace kstack::validator
