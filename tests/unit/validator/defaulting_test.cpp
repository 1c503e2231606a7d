#include "validator/rules/defaulting.h"

#include <boost/json.hpp>
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

// Test-only RFC 6902 applier for the one operation defaulting emits ("add"), with RFC 6901
// pointer unescaping. Throws on anything it cannot apply, which fails the test.
std::string unescape(std::string_view token) {
  std::string out;
  for (std::size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~') {
      char next = token.at(++i);
      if (next != '0' && next != '1') throw std::runtime_error("bad escape");
      out += next == '1' ? '/' : '~';
    } else {
      out += token[i];
    }
  }
  return out;
}

void apply(json::value& doc, const json::array& patch) {
  for (const auto& op_v : patch) {
    const auto& op = op_v.as_object();
    if (op.at("op") != "add") throw std::runtime_error("unsupported op");
    std::string_view path = op.at("path").as_string();
    std::vector<std::string> tokens;
    for (std::size_t pos = 1; pos <= path.size();) {
      std::size_t next = path.find('/', pos);
      if (next == std::string_view::npos) next = path.size();
      tokens.push_back(unescape(path.substr(pos, next - pos)));
      pos = next + 1;
    }
    json::value* cur = &doc;
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
      cur = cur->is_array() ? &cur->as_array().at(std::stoul(tokens[i]))
                            : &cur->as_object().at(tokens[i]);
    }
    if (cur->is_array()) {
      auto& a = cur->as_array();
      if (tokens.back() == "-") {
        a.push_back(op.at("value"));
      } else {
        a.insert(a.begin() + std::stol(tokens.back()), op.at("value"));
      }
    } else {
      cur->as_object()[tokens.back()] = op.at("value");  // add replaces an existing member
    }
  }
}

json::object add(std::string path, json::value value) {
  return json::object{{"op", "add"}, {"path", std::move(path)}, {"value", std::move(value)}};
}

constexpr std::string_view kApp = R"(kind: AppType
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
)";

struct Fixture {
  catalog::MemoryCatalog memory;
  Fixture() {
    memory.add(yaml(kApp));
    json::value system_app = yaml(kApp);
    system_app.at("metadata").as_object()["namespace"] = "kstack-system";
    system_app.at("metadata").as_object()["name"] = "shared";
    memory.add(system_app);
    memory.add(json::object{
        {"kind", "StorageClass"},
        {"metadata",
         {{"name", "standard"},
          {"annotations", {{"storageclass.kubernetes.io/is-default-class", "true"}}}}}});
    memory.add(json::object{{"kind", "StorageClass"}, {"metadata", {{"name", "fast"}}}});
  }
  json::array patch(const json::value& object, const json::value* old_object = nullptr) {
    catalog::FieldErrors errors;
    auto s = catalog::decode_stack(object, errors);
    std::optional<catalog::Stack> old;
    if (old_object) old = catalog::decode_stack(*old_object, errors);
    auto patch = default_stack(s, old ? &*old : nullptr, memory.catalog());
    if (old_object) {  // the webhook decodes only the outline of the stored Stack
      auto outline = catalog::decode_stack_outline(*old_object, errors);
      EXPECT_EQ(default_stack(s, &outline, memory.catalog()), patch);
    }
    return patch;
  }
};

constexpr std::string_view kBareStack = R"(kind: Stack
metadata: {name: db, namespace: team-a}
spec:
  app: cassandra
  roles:
    - id: seed
      storage: {size: 20Gi}
    - id: worker
      members: 1
)";

TEST(Defaulting, FillsEverythingMissingWithExactOps) {
  Fixture f;
  auto p = f.patch(yaml(kBareStack));
  json::array want{add("/spec/appCatalog", "local"),
                   add("/spec/serviceType", "ClusterIP"),
                   add("/spec/namingScheme", "CrNameRole"),
                   add("/spec/roles/0/members", 2),
                   add("/spec/roles/0/storage/storageClassName", "standard"),
                   add("/metadata/finalizers", json::array{"kstack.io/cleanup"})};
  EXPECT_EQ(p, want) << json::serialize(p);
}

TEST(Defaulting, PatchedStackPassesValidation) {
  Fixture f;
  json::value stack = yaml(kBareStack);
  apply(stack, f.patch(stack));
  EXPECT_EQ(stack.at_pointer("/spec/roles/0/storage/storageClassName"), json::value("standard"));
  auto v = validate_stack_object(stack, f.memory.catalog());
  EXPECT_TRUE(v.empty()) << catalog::join(v);
  EXPECT_TRUE(f.patch(stack).empty()) << "defaulting is idempotent";
}

TEST(Defaulting, KStackConfigDefaultsWin) {
  Fixture f;
  f.memory.add(
      yaml("kind: KStackConfig\nmetadata: {name: kstack-config, namespace: "
           "kstack-system}\nspec: {defaultServiceType: NodePort, defaultNamingScheme: "
           "UID, defaultStorageClassName: fast}\n"));
  json::value stack = yaml(kBareStack);
  apply(stack, f.patch(stack));
  EXPECT_EQ(stack.at_pointer("/spec/serviceType"), json::value("NodePort"));
  EXPECT_EQ(stack.at_pointer("/spec/namingScheme"), json::value("UID"));
  EXPECT_EQ(stack.at_pointer("/spec/roles/0/storage/storageClassName"), json::value("fast"));
}

TEST(Defaulting, AppFoundInTheSystemNamespaceSaysSystem) {
  Fixture f;
  json::value stack = yaml(kBareStack);
  stack.at("spec").as_object()["app"] = "shared";
  auto p = f.patch(stack);
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p[0], add("/spec/appCatalog", "system"));
}

TEST(Defaulting, NothingToAddMeansAnEmptyPatch) {
  Fixture f;
  EXPECT_TRUE(f.patch(yaml(R"(kind: Stack
metadata: {name: db, namespace: team-a, finalizers: [kstack.io/cleanup]}
spec:
  app: cassandra
  appCatalog: local
  serviceType: LoadBalancer
  namingScheme: CrNameRole
  roles:
    - {id: seed, members: 3, storage: {size: 1Gi, storageClassName: ""}}
)"))
                  .empty());
}

TEST(Defaulting, UnresolvableDefaultsAreLeftForValidationToReport) {
  Fixture f;
  f.memory.remove("StorageClass", "standard");
  json::value stack = yaml(kBareStack);
  stack.at("spec").as_object()["app"] = "missing";
  auto p = f.patch(stack);
  json::array want{add("/spec/serviceType", "ClusterIP"), add("/spec/namingScheme", "CrNameRole"),
                   add("/metadata/finalizers", json::array{"kstack.io/cleanup"})};
  EXPECT_EQ(p, want) << json::serialize(p);
}

// The operator's cleanup finalizer goes on at CREATE, so that its first pass need not write it;
// other finalizers stay as they are, and an UPDATE never adds it (the operator removes it when
// its cleanup is done, and a Stack admitted while the webhook was down gets it from the
// operator).
TEST(Defaulting, CreateAddsTheCleanupFinalizerOnce) {
  Fixture f;
  json::value mine = yaml(kBareStack);
  mine.at("metadata").as_object()["finalizers"] = json::array{"example.com/mine"};
  auto p = f.patch(mine);
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p.back(), add("/metadata/finalizers/-", "kstack.io/cleanup")) << json::serialize(p);
  apply(mine, p);
  EXPECT_EQ(mine.at_pointer("/metadata/finalizers"),
            (json::array{"example.com/mine", "kstack.io/cleanup"}));
  EXPECT_TRUE(f.patch(mine).empty()) << "the finalizer is added once";

  json::value bare = yaml(kBareStack);
  apply(bare, f.patch(bare));
  EXPECT_EQ(bare.at_pointer("/metadata/finalizers"), (json::array{"kstack.io/cleanup"}));

  // UPDATE: without it (a removal the validating webhook refuses, or a cleanup finished by the
  // operator) nothing is added back.
  json::value old = bare;
  json::value updated = bare;
  updated.at("metadata").as_object().erase("finalizers");
  for (const auto& op : f.patch(updated, &old)) {
    EXPECT_FALSE(op.at("path").as_string().starts_with("/metadata")) << json::serialize(op);
  }
}

TEST(Defaulting, UpdateKeepsOldValuesForWhatTheNewObjectLeavesOut) {
  Fixture f;
  json::value old = yaml(R"(kind: Stack
metadata: {name: db, namespace: team-a}
spec:
  app: cassandra
  appCatalog: local
  serviceType: NodePort
  namingScheme: UID
  roles:
    - {id: seed, members: 5, storage: {size: 20Gi, storageClassName: fast}}
)");
  json::value replaced = yaml(kBareStack);  // e.g. kubectl replace of the original manifest
  auto p = f.patch(replaced, &old);
  json::array want{add("/spec/appCatalog", "local"), add("/spec/serviceType", "ClusterIP"),
                   add("/spec/namingScheme", "UID"), add("/spec/roles/0/members", 5),
                   add("/spec/roles/0/storage/storageClassName", "fast")};
  EXPECT_EQ(p, want) << json::serialize(p);
}

TEST(Defaulting, RunningRoleStorageKeepsExactlyTheOldClass) {
  Fixture f;
  json::value old = yaml(R"(kind: Stack
metadata: {name: db, namespace: team-a}
spec:
  app: cassandra
  appCatalog: local
  serviceType: ClusterIP
  namingScheme: CrNameRole
  roles:
    - {id: seed, members: 3, storage: {size: 20Gi}}
    - {id: worker, members: 1, storage: {size: 1Gi, storageClassName: ""}}
)");
  json::value replaced = old;
  replaced.at_pointer("/spec/roles/1/storage").as_object().erase("storageClassName");
  auto p = f.patch(replaced, &old);
  // seed had no class (admitted while the webhook was down): adding one now would change a
  // frozen field; worker had "" (no class), which is kept.
  json::array want{add("/spec/roles/1/storage/storageClassName", "")};
  EXPECT_EQ(p, want) << json::serialize(p);
}

TEST(Defaulting, JsonPointerEscaping) {
  EXPECT_EQ(json_pointer_escape("plain"), "plain");
  EXPECT_EQ(json_pointer_escape("a/b~c"), "a~1b~0c");
  EXPECT_EQ(json_pointer_escape("~/"), "~0~1");
  json::value doc = json::object{{"metadata", json::object{}}};
  apply(doc, json::array{add("/metadata/" + json_pointer_escape("kstack.io/x~y"), "v")});
  EXPECT_EQ(doc.at("metadata").at("kstack.io/x~y"), json::value("v"));
}

}  // namespace
}  // namespace kstack::validator
