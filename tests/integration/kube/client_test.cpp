// The REST client against a real kube-apiserver: every verb, typed errors, pagination,
// authentication and authorization failures, custom resources and discovery.
#include <set>
#include <thread>

#include <boost/json/monotonic_resource.hpp>
#include <gtest/gtest.h>

#include "tests/integration/kube/client_fixture.h"

namespace kstack::kube {
namespace {

using testing::admin;
using testing::config_map;
using testing::make_namespace;
using testing::str_at;
namespace json = boost::json;

const ResourceType kWidgets{"test.kstack.io", "v1", "widgets", "Widget", true};

// Installs the Widget CRD once per binary and waits (with a watch) until it is Established.
void ensure_widget_crd(Client& client) {
  static bool done = false;
  if (done) return;
  json::value crd = json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.test.kstack.io"},
    "spec": {"group": "test.kstack.io", "scope": "Namespaced",
      "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
      "versions": [{"name": "v1", "served": true, "storage": true,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
          "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
          "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}})");
  auto created = client.create(resources::kCustomResourceDefinitions, "", crd);
  ASSERT_TRUE(created || created.error().is(ErrorKind::kAlreadyExists))
      << created.error().to_string();
  WatchOptions wo;
  wo.field_selector = "metadata.name=widgets.test.kstack.io";
  wo.timeout_seconds = 60;
  bool established = false;
  auto w = client.watch(resources::kCustomResourceDefinitions, "", wo, [&](WatchEvent&& ev) {
    boost::system::error_code ec;
    const auto* conds = ev.object.find_pointer("/status/conditions", ec);
    if (conds && conds->is_array()) {
      for (const auto& c : conds->as_array()) {
        if (c.at("type") == "Established" && c.at("status") == "True") established = true;
      }
    }
    return !established;
  });
  ASSERT_TRUE(w) << w.error().to_string();
  ASSERT_TRUE(established);
  // Discovery can lag the Established condition by a moment; the first create retries.
  done = true;
}

TEST(Client, ConfigMapCreateGetListUpdateDelete) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  auto created = c->create(resources::kConfigMaps, ns, config_map("a", {{"k", "v1"}}));
  ASSERT_TRUE(created) << created.error().to_string();
  EXPECT_FALSE(str_at(*created, "/metadata/uid").empty());

  auto got = c->get(resources::kConfigMaps, ns, "a");
  ASSERT_TRUE(got) << got.error().to_string();
  EXPECT_EQ(str_at(*got, "/data/k"), "v1");

  json::value changed = *got;
  changed.at("data").as_object()["k"] = "v2";
  auto updated = c->update(resources::kConfigMaps, ns, changed);
  ASSERT_TRUE(updated) << updated.error().to_string();
  EXPECT_EQ(str_at(*updated, "/data/k"), "v2");
  EXPECT_NE(str_at(*updated, "/metadata/resourceVersion"),
            str_at(*got, "/metadata/resourceVersion"));

  auto list = c->list(resources::kConfigMaps, ns);
  ASSERT_TRUE(list) << list.error().to_string();
  std::set<std::string> names;
  for (const auto& item : list->at("items").as_array())
    names.insert(str_at(item, "/metadata/name"));
  EXPECT_TRUE(names.count("a"));

  auto removed = c->remove(resources::kConfigMaps, ns, "a");
  ASSERT_TRUE(removed) << removed.error().to_string();
  auto gone = c->get(resources::kConfigMaps, ns, "a");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(gone.error().http_status, 404);
}

TEST(Client, CreatingAnExistingObjectIsTypedAlreadyExists) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  ASSERT_TRUE(c->create(resources::kConfigMaps, ns, config_map("dup")));
  auto again = c->create(resources::kConfigMaps, ns, config_map("dup"));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind, ErrorKind::kAlreadyExists);
}

TEST(Client, UpdateWithStaleResourceVersionIsTypedConflict) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  auto v1 = c->create(resources::kConfigMaps, ns, config_map("c"));
  ASSERT_TRUE(v1);
  json::value first = *v1;
  first.at("data").as_object()["k"] = "first";
  ASSERT_TRUE(c->update(resources::kConfigMaps, ns, first));
  json::value stale = *v1;  // still carries the original resourceVersion
  stale.at("data").as_object()["k"] = "stale";
  auto r = c->update(resources::kConfigMaps, ns, stale);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kConflict);
  EXPECT_EQ(r.error().http_status, 409);
  EXPECT_EQ(str_at(*c->get(resources::kConfigMaps, ns, "c"), "/data/k"), "first");
}

TEST(Client, InvalidObjectIsTypedInvalidWithFieldCauses) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  auto r = c->create(resources::kConfigMaps, ns, config_map("Not_A_Valid_Name"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalid);
  ASSERT_FALSE(r.error().causes.empty());
  EXPECT_EQ(r.error().causes[0].field, "metadata.name");
}

TEST(Client, AllFourPatchKindsOnAConfigMap) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  ASSERT_TRUE(c->create(resources::kConfigMaps, ns, config_map("p", {{"a", "1"}})));

  auto j = c->patch(resources::kConfigMaps, ns, "p", PatchType::kJson,
                    R"([{"op":"add","path":"/data/b","value":"2"}])");
  ASSERT_TRUE(j) << j.error().to_string();
  EXPECT_EQ(str_at(*j, "/data/b"), "2");

  auto m = c->patch(resources::kConfigMaps, ns, "p", PatchType::kMerge,
                    R"({"data":{"a":null,"c":"3"}})");
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_FALSE(m->at("data").as_object().contains("a"));
  EXPECT_EQ(str_at(*m, "/data/c"), "3");

  auto s = c->patch(resources::kConfigMaps, ns, "p", PatchType::kStrategicMerge,
                    R"({"metadata":{"labels":{"tier":"db"}},"data":{"d":"4"}})");
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(str_at(*s, "/metadata/labels/tier"), "db");
  EXPECT_EQ(str_at(*s, "/data/b"), "2");

  PatchOptions apply{.field_manager = "kstack-test", .force = true};
  auto a = c->patch(resources::kConfigMaps, ns, "p", PatchType::kApply,
                    R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p"},
                        "data":{"e":"5"}})",
                    apply);
  ASSERT_TRUE(a) << a.error().to_string();
  EXPECT_EQ(str_at(*a, "/data/e"), "5");
  bool managed = false;
  for (const auto& mf : a->at_pointer("/metadata/managedFields").as_array()) {
    managed = managed || str_at(mf, "/manager") == "kstack-test";
  }
  EXPECT_TRUE(managed);

  auto bad = c->patch(resources::kConfigMaps, ns, "p", PatchType::kJson,
                      R"([{"op":"test","path":"/data/e","value":"wrong"}])");
  ASSERT_FALSE(bad);
  EXPECT_TRUE(bad.error().is(ErrorKind::kInvalid) || bad.error().is(ErrorKind::kUnexpectedStatus))
      << bad.error().to_string();
}

TEST(Client, ApplyWithoutFieldManagerIsRefusedLocally) {
  auto c = admin();
  const auto before = c->metrics().total();
  auto r = c->patch(resources::kConfigMaps, "default", "x", PatchType::kApply, "{}");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(c->metrics().total(), before);
}

TEST(Client, PaginationWithLimitTwoReturnsAllFiveExactlyOnce) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(c->create(resources::kConfigMaps, ns, config_map("page-" + std::to_string(i))));
  }
  ListOptions o;
  o.limit = 2;
  o.field_selector = "metadata.name!=kube-root-ca.crt";  // namespaces may get this one (>=1.20)
  std::multiset<std::string> seen;
  int pages = 0;
  for (;;) {
    auto page = c->list(resources::kConfigMaps, ns, o);
    ASSERT_TRUE(page) << page.error().to_string();
    ++pages;
    EXPECT_LE(page->at("items").as_array().size(), 2u);
    for (const auto& item : page->at("items").as_array())
      seen.insert(str_at(item, "/metadata/name"));
    o.continue_token = str_at(*page, "/metadata/continue");
    if (o.continue_token.empty()) break;
  }
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen, (std::multiset<std::string>{"page-0", "page-1", "page-2", "page-3", "page-4"}));

  ListOptions all;
  all.limit = 2;
  all.field_selector = o.field_selector;
  auto merged = c->list_all(resources::kConfigMaps, ns, all);
  ASSERT_TRUE(merged) << merged.error().to_string();
  EXPECT_EQ(merged->at("items").as_array().size(), 5u);
  EXPECT_FALSE(str_at(*merged, "/metadata/resourceVersion").empty());
  EXPECT_TRUE(str_at(*merged, "/metadata/continue").empty());
}

TEST(Client, LabelSelectorFiltersList) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  ASSERT_TRUE(c->create(resources::kConfigMaps, ns, config_map("x", {}, {{"app", "x"}})));
  ASSERT_TRUE(c->create(resources::kConfigMaps, ns, config_map("y", {}, {{"app", "y"}})));
  ListOptions o;
  o.label_selector = "app in (x,z)";
  auto r = c->list(resources::kConfigMaps, ns, o);
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_EQ(r->at("items").as_array().size(), 1u);
  EXPECT_EQ(str_at(r->at("items").at(0), "/metadata/name"), "x");
}

// The reflector parses each LIST page into an arena of its own (informer/reflector.cpp): the
// whole List, items included, must come from the storage given.
TEST(Client, AListPageIsAllocatedFromTheStorageGiven) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  ASSERT_TRUE(c->create(resources::kConfigMaps, ns,
                        config_map("a", {{"k", std::string(300, 'v')}}, {{"app", "arena"}})));
  ListOptions o;  // not the namespace's kube-root-ca.crt, which the controller-manager adds
  o.label_selector = "app=arena";
  boost::json::monotonic_resource arena;
  auto r = c->list(resources::kConfigMaps, ns, o, &arena);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->storage().get(), &arena);
  const auto& items = r->at("items").as_array();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].storage().get(), &arena);
  EXPECT_EQ(str_at(items[0], "/data/k"), std::string(300, 'v'));
  auto plain = c->list(resources::kConfigMaps, ns, o);
  ASSERT_TRUE(plain) << plain.error().to_string();
  EXPECT_NE(plain->storage().get(), &arena);
}

TEST(Client, DeletePreconditionOnWrongUidIsConflictAndKeepsTheObject) {
  auto c = admin();
  const auto ns = make_namespace(*c);
  ASSERT_TRUE(c->create(resources::kConfigMaps, ns, config_map("d")));
  DeleteOptions o;
  o.precondition_uid = "00000000-0000-0000-0000-000000000000";
  o.propagation_policy = "Foreground";
  auto r = c->remove(resources::kConfigMaps, ns, "d", o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kConflict);
  EXPECT_TRUE(c->get(resources::kConfigMaps, ns, "d"));
}

TEST(Client, CustomResourceVerbsStatusSubresourceAndDiscovery) {
  auto c = admin();
  ensure_widget_crd(*c);
  const auto ns = make_namespace(*c);

  // Resolving the kind needs the new group in discovery.
  Result<ResourceType> rt = make_error(ErrorKind::kNotFound, "not yet");
  for (int i = 0; i < 50 && !rt; ++i) {
    rt = c->discover("test.kstack.io/v1", "Widget");
    if (!rt) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // discovery refresh
  }
  ASSERT_TRUE(rt) << rt.error().to_string();
  EXPECT_EQ(rt->plural, "widgets");
  EXPECT_TRUE(rt->namespaced);

  json::value w = json::parse(R"({"apiVersion":"test.kstack.io/v1","kind":"Widget",
      "metadata":{"name":"w1"},"spec":{"size":1}})");
  auto created = c->create(*rt, ns, w);
  ASSERT_TRUE(created) << created.error().to_string();

  json::value upd = *created;
  upd.at("spec").as_object()["size"] = 2;
  upd.as_object()["status"] = json::object{{"phase", "ignored-by-main-resource"}};
  auto updated = c->update(*rt, ns, upd);
  ASSERT_TRUE(updated) << updated.error().to_string();
  EXPECT_EQ(updated->at_pointer("/spec/size").as_int64(), 2);
  EXPECT_FALSE(updated->as_object().contains("status"));

  json::value st = *updated;
  st.as_object()["status"] = json::object{{"phase", "Ready"}};
  auto status = c->update_status(*rt, ns, st);
  ASSERT_TRUE(status) << status.error().to_string();
  EXPECT_EQ(str_at(*status, "/status/phase"), "Ready");

  auto merged = c->patch(*rt, ns, "w1", PatchType::kMerge, R"({"spec":{"color":"red"}})");
  ASSERT_TRUE(merged) << merged.error().to_string();
  EXPECT_EQ(str_at(*merged, "/spec/color"), "red");
  auto jp = c->patch(*rt, ns, "w1", PatchType::kJson,
                     R"([{"op":"replace","path":"/spec/size","value":3}])");
  ASSERT_TRUE(jp) << jp.error().to_string();
  EXPECT_EQ(jp->at_pointer("/spec/size").as_int64(), 3);
  auto ap = c->patch(*rt, ns, "w1", PatchType::kApply,
                     R"({"apiVersion":"test.kstack.io/v1","kind":"Widget","metadata":{"name":"w1"},
                         "spec":{"shape":"round"}})",
                     PatchOptions{.field_manager = "kstack-test", .force = true});
  ASSERT_TRUE(ap) << ap.error().to_string();
  EXPECT_EQ(str_at(*ap, "/spec/shape"), "round");
  auto sp = c->patch(*rt, ns, "w1", PatchType::kStrategicMerge, R"({"spec":{"a":1}})");
  ASSERT_FALSE(sp);  // custom resources have no strategic merge
  EXPECT_EQ(sp.error().kind, ErrorKind::kUnsupportedMedia) << sp.error().to_string();
  auto sts =
      c->patch(*rt, ns, "w1", PatchType::kMerge, R"({"status":{"phase":"Done"}})", {}, "status");
  ASSERT_TRUE(sts) << sts.error().to_string();
  EXPECT_EQ(str_at(*sts, "/status/phase"), "Done");

  auto list = c->list(*rt, ns);
  ASSERT_TRUE(list);
  EXPECT_EQ(list->at("items").as_array().size(), 1u);
  ASSERT_TRUE(c->remove(*rt, ns, "w1"));
  EXPECT_EQ(c->get(*rt, ns, "w1").error().kind, ErrorKind::kNotFound);

  auto sts_rt = c->discover("apps/v1", "StatefulSet");
  ASSERT_TRUE(sts_rt);
  EXPECT_EQ(*sts_rt, resources::kStatefulSets);
  EXPECT_EQ(c->discover("apps/v1", "NoSuchKind").error().kind, ErrorKind::kNotFound);
}

TEST(Client, BadTokenIsTypedUnauthorized) {
  auto cfg = testing::config_for(testenv::kAdminUser);
  cfg.credentials = static_token("not-a-real-token");
  auto c = Client::create(cfg);
  ASSERT_TRUE(c);
  auto r = (*c)->get(resources::kNamespaces, "", "default");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kUnauthorized);
  EXPECT_EQ(r.error().http_status, 401);
}

TEST(Client, WrongCaIsATlsErrorThatSaysSo) {
  auto cfg = testing::config_for(testenv::kAdminUser);
  cfg.ca_pem.clear();  // the system trust store does not know the test CA
  auto c = Client::create(cfg);
  ASSERT_TRUE(c);
  auto r = (*c)->get(resources::kNamespaces, "", "default");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kTls) << r.error().to_string();
  EXPECT_NE(r.error().message.find("certificate"), std::string::npos) << r.error().message;
}

TEST(Client, UserWithoutRbacPermissionIsTypedForbidden) {
  auto alice = testing::client_for("alice");
  auto r = alice->list(resources::kConfigMaps, "default");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kForbidden);
  EXPECT_NE(r.error().message.find("alice"), std::string::npos) << r.error().message;
}

TEST(Client, RequestCountersByVerbAndCode) {
  auto c = admin();
  ASSERT_TRUE(c->get(resources::kNamespaces, "", "default"));
  ASSERT_FALSE(c->get(resources::kNamespaces, "", "no-such-namespace"));
  ASSERT_TRUE(c->list(resources::kNamespaces, ""));
  const auto counts = c->metrics().snapshot();
  EXPECT_EQ(counts.at({"GET", "200"}), 1u);
  EXPECT_EQ(counts.at({"GET", "404"}), 1u);
  EXPECT_EQ(counts.at({"LIST", "200"}), 1u);
  EXPECT_EQ(c->metrics().total(), 3u);
}

TEST(Client, RateLimiterSpacesRequestsAtConfiguredQps) {
  auto cfg = testing::config_for(testenv::kAdminUser);
  cfg.qps = 20;
  cfg.burst = 1;
  auto c = Client::create(cfg);
  ASSERT_TRUE(c);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*c)->get(resources::kNamespaces, "", "default"));
  // 1 burst token + 4 more at 20/s: at least 200 ms by construction of the bucket.
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(195));
}

}  // namespace
}  // namespace kstack::kube
