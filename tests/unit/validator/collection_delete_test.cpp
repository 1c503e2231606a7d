// A collection DELETE (DELETE /apis/kstack.io/v1beta1/namespaces/NS/apptypes) reaches the webhook
// as one review per item, each with request.name EMPTY and the item only in oldObject (object
// null), dryRun set for ?dryRun=All. The rules must find the name there, as they do for a
// DELETE by name.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/memory_catalog.h"
#include "catalog/yaml.h"
#include "tests/unit/support/yaml_value.h"
#include "validator/rules/handler.h"

namespace kstack::validator {
namespace {
namespace json = boost::json;

using kstack::testing::yaml;

constexpr std::string_view kApp = R"(apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: cassandra, namespace: team-a, uid: 5c1d, resourceVersion: "41"}
spec:
  label: {name: C}
  distroID: c
  version: "1"
  configSchemaVersion: 1
  defaultImageRepoTag: c:1
  roles:
    - {id: seed, cardinality: "2+"}
  config: {selectedRoles: [seed]}
)";

constexpr std::string_view kStack = R"(apiVersion: kstack.io/v1beta1
kind: Stack
metadata: {name: db, namespace: team-a, finalizers: [kstack.io/cleanup]}
spec:
  app: cassandra
  appCatalog: local
  roles:
    - {id: seed, members: 3}
)";

constexpr std::string_view kConfig = R"(apiVersion: kstack.io/v1beta1
kind: KStackConfig
metadata: {name: kstack-config, namespace: kstack-system}
spec: {}
)";

// What the API server sends for one item of a collection DELETE.
AdmissionRequest collection_item(std::string_view kind, std::string_view resource,
                                 std::string_view ns, json::value old_object, bool dry_run) {
  AdmissionRequest r;
  r.api_version = "admission.k8s.io/v1";
  r.uid = "b8a4";
  r.group = "kstack.io";
  r.version = "v1beta1";
  r.kind = std::string(kind);
  r.resource = std::string(resource);
  r.operation = "DELETE";
  r.name = "";  // not set for a collection DELETE
  r.namespace_name = std::string(ns);
  r.username = "alice";
  r.dry_run = dry_run;
  r.old_object = std::move(old_object);
  return r;
}

struct Fixture {
  catalog::MemoryCatalog memory;
  RulesHandler handler{memory.catalog()};
  Fixture() {
    memory.add(yaml(kApp));
    memory.add(yaml(kStack));
  }
};

TEST(CollectionDelete, AnAppTypeInUseIsRefusedAndNamedWithAndWithoutDryRun) {
  Fixture f;
  for (bool dry_run : {true, false}) {
    const auto r =
        f.handler.validate(collection_item("AppType", "apptypes", "team-a", yaml(kApp), dry_run));
    EXPECT_FALSE(r.allowed) << "dryRun=" << dry_run;
    EXPECT_EQ(r.code, 422);
    EXPECT_EQ(r.message,
              "metadata.name: AppType team-a/cassandra cannot be deleted while used by 1 stack "
              "(team-a/db)");
  }
}

TEST(CollectionDelete, TheNamespaceIsTakenFromOldObjectWhenTheRequestHasNone) {
  Fixture f;
  const auto r = f.handler.validate(collection_item("AppType", "apptypes", "", yaml(kApp), true));
  EXPECT_FALSE(r.allowed);
  EXPECT_NE(r.message.find("team-a/db"), std::string::npos) << r.message;
}

TEST(CollectionDelete, AnAppTypeNoStackUsesIsDeleted) {
  Fixture f;
  ASSERT_TRUE(f.memory.remove("Stack", "team-a/db"));
  EXPECT_TRUE(
      f.handler.validate(collection_item("AppType", "apptypes", "team-a", yaml(kApp), false))
          .allowed);
}

// Stacks (finalizer and all) and the KStackConfig may go in a collection DELETE as they may by
// name: the finalizer is the operator's to remove afterwards, and no owned field is written.
TEST(CollectionDelete, StacksAndTheKStackConfigAreDeletedAsByName) {
  Fixture f;
  f.memory.add(yaml(kConfig));
  EXPECT_TRUE(f.handler.validate(collection_item("Stack", "stacks", "team-a", yaml(kStack), false))
                  .allowed);
  EXPECT_TRUE(f.handler
                  .validate(collection_item("KStackConfig", "kstackconfigs", "kstack-system",
                                            yaml(kConfig), true))
                  .allowed);
}

}  // namespace
}  // namespace kstack::validator
