#include "observer/observer.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace kstack::observer {
namespace {
namespace json = boost::json;

informer::ObjectPtr object(std::string_view ns, std::string_view name, std::string_view stack = {},
                           std::string_view kind = "Service") {
  json::object md{{"name", name}, {"namespace", ns}};
  if (!stack.empty()) md["labels"] = json::object{{"kstack.io/stack", stack}};
  return informer::pack(
      json::object{{"apiVersion", "v1"}, {"kind", kind}, {"metadata", std::move(md)}});
}

std::vector<std::string> names(const std::map<std::string, informer::ObjectPtr>& m) {
  std::vector<std::string> out;
  for (const auto& [name, obj] : m) {
    EXPECT_EQ(informer::object_name(*obj), name);
    out.push_back(name);
  }
  return out;
}

using Names = std::vector<std::string>;

struct ObserverTest : ::testing::Test {
  informer::Store sts, svc, pvc, pod;
  Observer observer{Stores{&sts, &svc, &pvc, &pod}};
};

TEST(StackIndex, IsNamespaceSlashStackLabel) {
  auto f = stack_index();
  EXPECT_EQ(f(*object("apps", "db-server", "db")), Names{"apps/db"});
}

TEST(StackIndex, ObjectsWithoutTheLabelAreNotIndexed) {
  auto f = stack_index();
  EXPECT_TRUE(f(*object("apps", "x")).empty());
  EXPECT_TRUE(f(*informer::pack(json::object{{"metadata", {{"labels", {{"kstack.io/stack", 3}}}}}}))
                  .empty());
  EXPECT_TRUE(f(*informer::pack(json::value(nullptr))).empty());
}

TEST_F(ObserverTest, ObserveReturnsEachKindOfOneStackKeyedByName) {
  sts.upsert(object("apps", "db-server", "db", "StatefulSet"));
  sts.upsert(object("apps", "db-proxy", "db", "StatefulSet"));
  svc.upsert(object("apps", "db", "db"));
  svc.upsert(object("apps", "db-server-0", "db"));
  pvc.upsert(object("apps", "data-db-server-0", "db", "PersistentVolumeClaim"));
  pod.upsert(object("apps", "db-server-0", "db", "Pod"));

  const auto o = observer.observe("apps", "db");
  EXPECT_EQ(names(o.stateful_sets), (Names{"db-proxy", "db-server"}));
  EXPECT_EQ(names(o.services), (Names{"db", "db-server-0"}));
  EXPECT_EQ(names(o.pvcs), Names{"data-db-server-0"});
  EXPECT_EQ(names(o.pods), Names{"db-server-0"});
}

TEST_F(ObserverTest, ObserveIgnoresOtherStacksOtherNamespacesAndUnlabelledObjects) {
  svc.upsert(object("apps", "db", "db"));
  svc.upsert(object("apps", "cache", "cache"));  // another stack
  svc.upsert(object("other", "db", "db"));       // same stack name, other namespace
  svc.upsert(object("apps", "db-extra"));        // no kstack label
  const auto o = observer.observe("apps", "db");
  EXPECT_EQ(names(o.services), Names{"db"});
  EXPECT_TRUE(o.stateful_sets.empty());
  EXPECT_EQ(names(observer.observe("other", "db").services), Names{"db"});
  EXPECT_TRUE(observer.observe("apps", "nothing").services.empty());
}

TEST_F(ObserverTest, ObserveFollowsLabelChangesAndDeletions) {
  svc.upsert(object("apps", "s", "db"));
  EXPECT_EQ(observer.observe("apps", "db").services.size(), 1u);
  svc.upsert(object("apps", "s"));  // label removed
  EXPECT_TRUE(observer.observe("apps", "db").services.empty());
  svc.upsert(object("apps", "s", "db"));
  svc.erase("apps/s");
  EXPECT_TRUE(observer.observe("apps", "db").services.empty());
}

TEST(Observer, IndexesObjectsAlreadyInTheStores) {
  informer::Store svc;
  svc.upsert(object("apps", "db", "db"));
  Observer observer(Stores{nullptr, &svc, nullptr, nullptr});
  EXPECT_EQ(names(observer.observe("apps", "db").services), Names{"db"});
}

TEST_F(ObserverTest, GettersFindOneObjectByNamespaceAndName) {
  sts.upsert(object("apps", "db-server", "db", "StatefulSet"));
  svc.upsert(object("apps", "db", "db"));
  pvc.upsert(object("apps", "data-db-server-0", "db", "PersistentVolumeClaim"));
  pod.upsert(object("apps", "db-server-0", {}, "Pod"));  // found by name even without label

  ASSERT_NE(observer.stateful_set("apps", "db-server"), nullptr);
  EXPECT_EQ(informer::object_name(*observer.service("apps", "db")), "db");
  EXPECT_NE(observer.pvc("apps", "data-db-server-0"), nullptr);
  EXPECT_NE(observer.pod("apps", "db-server-0"), nullptr);
  EXPECT_EQ(observer.service("other", "db"), nullptr);
  EXPECT_EQ(observer.stateful_set("apps", "db"), nullptr);  // a Service, not a StatefulSet
}

TEST(Observer, MissingStoresObserveNothing) {
  Observer observer(Stores{});
  const auto o = observer.observe("apps", "db");
  EXPECT_TRUE(o.stateful_sets.empty() && o.services.empty() && o.pvcs.empty() && o.pods.empty());
  EXPECT_EQ(observer.stateful_set("apps", "db"), nullptr);
  EXPECT_EQ(observer.service("apps", "db"), nullptr);
  EXPECT_EQ(observer.pvc("apps", "db"), nullptr);
  EXPECT_EQ(observer.pod("apps", "db"), nullptr);
}

}  // namespace
}  // namespace kstack::observer
