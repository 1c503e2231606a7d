// An AdmissionReview as the API server sends it for one item of a collection DELETE
// (DELETE /apis/kstack.io/v1beta1/namespaces/team-a/apptypes?dryRun=All): request.name is
// empty, object is null, the item is in oldObject. Decoded and judged by the real rules.
#include <gtest/gtest.h>

#include "catalog/memory_catalog.h"
#include "tests/unit/validator/admission/support.h"
#include "validator/admission.h"
#include "validator/rules/handler.h"

namespace kstack::validator {
namespace {

using testing::parse_json;

constexpr std::string_view kReview = R"({
  "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
  "request": {
    "uid": "0f6e2c1a-5b7d-4c1e-9d5e-0c3b2a1f9e8d",
    "kind": {"group": "kstack.io", "version": "v1beta1", "kind": "AppType"},
    "resource": {"group": "kstack.io", "version": "v1beta1", "resource": "apptypes"},
    "requestKind": {"group": "kstack.io", "version": "v1beta1", "kind": "AppType"},
    "requestResource": {"group": "kstack.io", "version": "v1beta1", "resource": "apptypes"},
    "namespace": "team-a",
    "operation": "DELETE",
    "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
    "object": null,
    "oldObject": {
      "apiVersion": "kstack.io/v1beta1", "kind": "AppType",
      "metadata": {"name": "cassandra", "namespace": "team-a", "uid": "5c1d",
                   "resourceVersion": "41"},
      "spec": {"label": {"name": "C"}, "distroID": "c", "version": "1",
               "configSchemaVersion": 1, "defaultImageRepoTag": "c:1",
               "roles": [{"id": "seed", "cardinality": "2+"}],
               "config": {"selectedRoles": ["seed"]}}
    },
    "dryRun": true,
    "options": {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
                "propagationPolicy": "Background", "dryRun": ["All"]}
  }
})";

TEST(CollectionDeleteReview, AnAppTypeInUseIsRefusedByNameFromOldObject) {
  catalog::MemoryCatalog memory;
  const auto request = decode_review(kReview);
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ(request->name, "");
  EXPECT_TRUE(request->dry_run);
  ASSERT_TRUE(memory.add(request->old_object));
  ASSERT_TRUE(memory.add(parse_json(R"({"apiVersion": "kstack.io/v1beta1", "kind": "Stack",
      "metadata": {"name": "db", "namespace": "team-a"},
      "spec": {"app": "cassandra", "roles": [{"id": "seed", "members": 3}]}})")));
  RulesHandler rules(memory.catalog());

  const auto answer = parse_json(encode_review(*request, rules.validate(*request)));
  EXPECT_EQ(answer.at_pointer("/response/uid"), "0f6e2c1a-5b7d-4c1e-9d5e-0c3b2a1f9e8d");
  EXPECT_EQ(answer.at_pointer("/response/allowed"), false);
  EXPECT_EQ(answer.at_pointer("/response/status/code"), 422);
  EXPECT_EQ(answer.at_pointer("/response/status/message"),
            "metadata.name: AppType team-a/cassandra cannot be deleted while used by 1 stack "
            "(team-a/db)");
}

}  // namespace
}  // namespace kstack::validator
