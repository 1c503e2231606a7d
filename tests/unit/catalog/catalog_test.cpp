#include "catalog/catalog.h"

#include <boost/json.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <gtest/gtest.h>

#include "catalog/memory_catalog.h"
#include "catalog/parse.h"
#include "catalog/yaml.h"
#include "tests/unit/support/yaml_value.h"

namespace kstack::catalog {
namespace {
namespace json = boost::json;

using kstack::testing::yaml;

json::value apptype(std::string_view ns, std::string_view name, std::string_view version) {
  json::value v = yaml(R"(kind: AppType
spec:
  label: {name: A}
  distroID: a
  configSchemaVersion: 1
  defaultImageRepoTag: img
  roles: [{id: r, cardinality: "1"}]
)");
  v.as_object()["metadata"] = json::object{{"name", name}, {"namespace", ns}};
  v.at("spec").as_object()["version"] = version;
  return v;
}

json::value stack(std::string_view ns, std::string_view name, std::string_view app,
                  std::string_view where = {}) {
  json::object spec{{"app", app}, {"roles", json::array{}}};
  if (!where.empty()) spec["appCatalog"] = where;
  return json::object{{"kind", "Stack"},
                      {"metadata", {{"name", name}, {"namespace", ns}}},
                      {"spec", std::move(spec)}};
}

json::value storage_class(std::string_view name, bool is_default, std::string_view created,
                          bool beta = false) {
  json::object md{{"name", name}, {"creationTimestamp", created}};
  if (is_default) {
    md["annotations"] =
        json::object{{beta ? kBetaDefaultClassAnnotation : kDefaultClassAnnotation, "true"}};
  }
  return json::object{{"kind", "StorageClass"}, {"metadata", std::move(md)}};
}

std::vector<std::string> keys(const std::vector<informer::ObjectPtr>& objects) {
  std::vector<std::string> out;
  out.reserve(objects.size());
  for (const auto& o : objects) out.push_back(informer::object_key(*o));
  return out;
}

TEST(Catalog, FindsTheAppLocallyFirstThenInTheSystemNamespace) {
  MemoryCatalog m;
  m.add(apptype("kstack-system", "db", "system-version"));
  m.add(apptype("team-a", "db", "local-version"));
  const auto& c = m.catalog();

  auto local = c.find_app("team-a", "db");
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(local->catalog, "local");
  EXPECT_EQ(local->namespace_name, "team-a");
  EXPECT_EQ(local->app.spec.version, "local-version");

  auto system = c.find_app("team-b", "db");
  ASSERT_TRUE(system.has_value());
  EXPECT_EQ(system->catalog, "system");
  EXPECT_EQ(system->namespace_name, "kstack-system");

  EXPECT_FALSE(c.find_app("team-a", "missing").has_value());
}

TEST(Catalog, AppCatalogPinsWhereTheAppIsLookedUp) {
  MemoryCatalog m;
  m.add(apptype("kstack-system", "db", "system-version"));
  m.add(apptype("team-a", "db", "local-version"));
  const auto& c = m.catalog();
  EXPECT_EQ(c.find_app("team-a", "db", "system")->app.spec.version, "system-version");
  EXPECT_FALSE(c.find_app("team-b", "db", "local").has_value());
  EXPECT_FALSE(c.find_app("team-a", "db", "elsewhere").has_value());

  FieldErrors errors;
  auto s = decode_stack(stack("team-a", "s", "db", "system"), errors);
  EXPECT_EQ(c.find_app(s)->catalog, "system");
}

TEST(Catalog, SystemNamespaceIsConfigurable) {
  CatalogOptions opts;
  opts.system_namespace = "ops";
  MemoryCatalog m(opts);
  m.add(apptype("ops", "db", "v"));
  EXPECT_EQ(m.catalog().system_namespace(), "ops");
  EXPECT_EQ(m.catalog().find_app("team-a", "db")->namespace_name, "ops");
}

TEST(Catalog, ListsTheAppsOfOneNamespaceByName) {
  MemoryCatalog m;
  m.add(apptype("team-a", "db-r2", "2"));
  m.add(apptype("kstack-system", "db", "system"));
  m.add(apptype("team-a", "db", "1"));
  std::vector<std::string> names;
  for (const auto& a : m.catalog().apps_in("team-a")) names.push_back(a.metadata.name);
  EXPECT_EQ(names, (std::vector<std::string>{"db", "db-r2"}));
  EXPECT_TRUE(m.catalog().apps_in("team-b").empty());
}

TEST(Catalog, IndexListsTheStacksUsingAnAppAndFollowsChanges) {
  MemoryCatalog m;
  m.add(stack("team-a", "s1", "db", "local"));
  m.add(stack("team-a", "s2", "db", "system"));
  m.add(stack("team-b", "s3", "db", "system"));
  m.add(stack("team-a", "s4", "other", "local"));
  const auto& c = m.catalog();
  EXPECT_EQ(keys(c.stacks_using("team-a", "db")), std::vector<std::string>{"team-a/s1"});
  EXPECT_EQ(keys(c.stacks_using("kstack-system", "db")),
            (std::vector<std::string>{"team-a/s2", "team-b/s3"}));

  m.add(stack("team-a", "s1", "other", "local"));  // re-pointed: leaves the db index
  EXPECT_TRUE(c.stacks_using("team-a", "db").empty());
  m.remove("Stack", "team-b/s3");
  EXPECT_EQ(keys(c.stacks_using("kstack-system", "db")), std::vector<std::string>{"team-a/s2"});
}

TEST(Catalog, AStackWithoutAppCatalogProtectsBothPossibleApps) {
  auto index = stacks_by_app_index("kstack-system");
  EXPECT_EQ(index(*informer::pack(stack("team-a", "s", "db"))),
            (std::vector<std::string>{"team-a/db", "kstack-system/db"}));
  EXPECT_EQ(index(*informer::pack(stack("kstack-system", "s", "db"))),
            std::vector<std::string>{"kstack-system/db"});
  EXPECT_TRUE(index(*informer::pack(json::object{{"metadata", {{"name", "x"}}}})).empty());
}

TEST(Catalog, ReadsKStackConfigOnlyFromTheOperatorNamespace) {
  MemoryCatalog m;
  EXPECT_FALSE(m.catalog().config().has_value());
  m.add(
      yaml("kind: KStackConfig\nmetadata: {name: kstack-config, namespace: elsewhere}\n"
           "spec: {defaultServiceType: NodePort}\n"));
  EXPECT_FALSE(m.catalog().config().has_value());
  m.add(
      yaml("kind: KStackConfig\nmetadata: {name: kstack-config, namespace: kstack-system}\n"
           "spec: {defaultServiceType: NodePort, defaultStorageClassName: gold}\n"));
  ASSERT_TRUE(m.catalog().config().has_value());
  EXPECT_EQ(m.catalog().config()->spec.default_service_type, "NodePort");
  EXPECT_EQ(m.catalog().default_storage_class(), "gold");  // config wins over the cluster
}

TEST(Catalog, StorageClassesExistenceAndTheNewestDefault) {
  MemoryCatalog m;
  const auto& c = m.catalog();
  EXPECT_TRUE(c.knows_storage_classes());
  EXPECT_FALSE(c.cluster_default_storage_class().has_value());
  m.add(storage_class("slow", false, "2024-01-01T00:00:00Z"));
  m.add(storage_class("old-default", true, "2023-01-01T00:00:00Z", /*beta=*/true));
  EXPECT_EQ(c.cluster_default_storage_class(), "old-default");
  m.add(storage_class("new-default", true, "2024-06-01T00:00:00Z"));
  EXPECT_EQ(c.cluster_default_storage_class(), "new-default");
  EXPECT_EQ(c.default_storage_class(), "new-default");
  EXPECT_TRUE(c.storage_class_exists("slow"));
  EXPECT_FALSE(c.storage_class_exists("fast"));
}

TEST(Catalog, OfflineCatalogDoesNotKnowStorageClasses) {
  MemoryCatalog m(CatalogOptions{}, /*know_storage_classes=*/false);
  EXPECT_FALSE(m.catalog().knows_storage_classes());
  EXPECT_FALSE(m.catalog().storage_class_exists("anything"));
}

TEST(Catalog, WorksOverPlainStoresWithoutMemoryCatalog) {
  informer::Store apptypes, stacks;
  apptypes.upsert(informer::pack(apptype("kstack-system", "db", "v")));
  stacks.upsert(informer::pack(stack("ns", "s", "db", "system")));
  Catalog c(CatalogStores{&apptypes, &stacks, nullptr, nullptr});
  EXPECT_TRUE(c.find_app("ns", "db").has_value());
  EXPECT_EQ(keys(c.stacks_using("kstack-system", "db")), std::vector<std::string>{"ns/s"});
  EXPECT_FALSE(c.config().has_value());
  EXPECT_FALSE(c.knows_storage_classes());
}

TEST(Catalog, DecodedAppsAreSharedUntilTheStoreReplacesTheObject) {
  MemoryCatalog m;
  m.add(apptype("team-a", "db", "1"));
  const auto& c = m.catalog();
  auto first = c.find_app_ref("team-a", "db");
  auto again = c.find_app_ref("team-a", "db");
  ASSERT_TRUE(first.has_value() && again.has_value());
  EXPECT_EQ(first->app.get(), again->app.get());  // decoded once
  EXPECT_EQ(first->app->spec.version, "1");
  EXPECT_EQ(first->catalog, "local");

  m.add(apptype("team-a", "db", "2"));  // an update: a new object under the same key
  auto updated = c.find_app_ref("team-a", "db");
  ASSERT_TRUE(updated.has_value());
  EXPECT_EQ(updated->app->spec.version, "2");
  EXPECT_EQ(c.find_app("team-a", "db")->app.spec.version, "2");
  EXPECT_EQ(first->app->spec.version, "1");  // a holder keeps what it was given

  ASSERT_TRUE(m.remove("AppType", "team-a/db"));
  EXPECT_FALSE(c.find_app_ref("team-a", "db").has_value());
  EXPECT_FALSE(c.find_app("team-a", "db").has_value());
}

TEST(Catalog, DecodedConfigFollowsTheStore) {
  MemoryCatalog m;
  const auto& c = m.catalog();
  EXPECT_EQ(c.config_ref(), nullptr);
  auto config = [](std::string_view service_type) {
    return json::value{{"kind", "KStackConfig"},
                       {"metadata", {{"name", "kstack-config"}, {"namespace", "kstack-system"}}},
                       {"spec", {{"defaultServiceType", service_type}}}};
  };
  m.add(config("NodePort"));
  EXPECT_EQ(c.config_ref()->spec.default_service_type, "NodePort");
  EXPECT_EQ(c.config_ref().get(), c.config_ref().get());
  m.add(config("LoadBalancer"));
  EXPECT_EQ(c.config_ref()->spec.default_service_type, "LoadBalancer");
  EXPECT_EQ(c.config()->spec.default_service_type, "LoadBalancer");
  ASSERT_TRUE(m.remove("KStackConfig", "kstack-system/kstack-config"));
  EXPECT_EQ(c.config_ref(), nullptr);
  EXPECT_FALSE(c.config().has_value());
}

TEST(Catalog, DecodeStackCopiesOrBorrowsTheObject) {
  const json::value object = stack("team-a", "s", "db", "local");
  FieldErrors errors;
  Stack borrowed = decode_stack(object, errors, DecodeSource::kBorrow);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(borrowed.borrowed, &object);
  EXPECT_TRUE(borrowed.raw.is_null()) << "a borrowing decode copied the object";
  EXPECT_EQ(&to_json(borrowed), &object);
  EXPECT_EQ(borrowed.spec.app, "db");
  EXPECT_EQ(borrowed.spec.app_catalog, "local");
  EXPECT_EQ(borrowed.metadata.namespace_name, "team-a");
  Stack copied = decode_stack(object, errors);
  EXPECT_EQ(copied.borrowed, nullptr);
  EXPECT_EQ(copied.raw, object);
  EXPECT_NE(&to_json(copied), &object);
  EXPECT_EQ(to_json(copied), object);
  EXPECT_EQ(copied.raw.storage().get(), json::storage_ptr().get());  // the default resource

  const json::value app = apptype("team-a", "db", "1.0");
  AppType app_borrowed = decode_apptype(app, errors, DecodeSource::kBorrow);
  EXPECT_EQ(&to_json(app_borrowed), &app);
  EXPECT_TRUE(app_borrowed.raw.is_null());
  EXPECT_EQ(decode_apptype(app, errors).raw, app);
  EXPECT_TRUE(errors.empty());
}

// Borrowing, the model's JSON members are views of the object's own (the webhook's request
// arena: nothing copied, nothing to free); copying, copies in the default storage, as the model
// outlives the object.
TEST(Catalog, DecodeStackBorrowingViewsItsJsonMembers) {
  json::monotonic_resource arena;
  json::value object(stack("team-a", "s", "db", "local"), json::storage_ptr(&arena));
  auto& roles = object.at("spec").at("roles").as_array();
  roles.push_back(json::object{{"id", "db"}, {"members", 1}});
  auto& role = roles.at(0).as_object();
  role["env"] = json::array{json::object{{"name", "A"}, {"value", "1"}}};
  role["affinity"] = json::object{{"nodeAffinity", json::object{}}};
  role["tolerations"] = json::array{json::object{{"key", "k"}, {"operator", "Exists"}}};
  FieldErrors errors;
  const Stack borrowed = decode_stack(object, errors, DecodeSource::kBorrow);
  ASSERT_TRUE(errors.empty()) << errors.front().to_string();
  ASSERT_EQ(borrowed.spec.roles.size(), 1u);
  const auto& r = borrowed.spec.roles[0];
  EXPECT_EQ(r.env, role["env"]);
  EXPECT_EQ(r.affinity, role["affinity"]);
  EXPECT_EQ(r.tolerations, role["tolerations"]);
  // Borrowing, the members are the object's own, not copies.
  EXPECT_EQ(&*r.env, role.if_contains("env"));
  EXPECT_EQ(&*r.affinity, role.if_contains("affinity"));
  EXPECT_EQ(&*r.tolerations, role.if_contains("tolerations"));
  const Stack copied = decode_stack(object, errors);
  const auto& c = copied.spec.roles[0];
  EXPECT_EQ(c.env, role["env"]);
  for (const JsonMember* m : {&c.env, &c.affinity, &c.tolerations}) {
    const json::value& v = **m;
    EXPECT_FALSE(m->is_view()) << json::serialize(v);
    EXPECT_EQ(v.storage().get(), json::storage_ptr().get()) << json::serialize(v);
  }
}

}  // namespace
}  // namespace kstack::catalog
