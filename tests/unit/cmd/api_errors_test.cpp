// cmd/api_errors.h: every field error of a refusal on its own line, from Status objects as the
// API server sends them (recorded from the test control plane, tests/e2e/cli).
#include "cmd/api_errors.h"

#include <gtest/gtest.h>

namespace kstack::cmd {
namespace {

// kstack's webhook denying a Stack with five problems, as the API server answered a server-side
// apply (recorded by tests/e2e/cli): the webhook's message passed on, prefixed, with no
// details.causes.
constexpr const char* kWebhookDenial =
    R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"admission webhook \"validate.kstack.io\" denied the request: spec.roles[0].members: must be at least 1 for cardinality \"1+\"; spec.roles[0].resources.requests[cpu]: is required: role \"member\" needs at least 100m (minResources); spec.roles[0].resources.requests[memory]: is required: role \"member\" needs at least 128Mi (minResources); spec.roles[0].storage: is required: role \"member\" needs persistent storage of at least 1Gi and does not support ephemeral mode; spec.roles[1].id: role \"nope\" is not defined by AppType \"etcd\"","code":422})";

// The CRD's schema refusing two fields: reason Invalid with details.causes (whose fields name
// the list, not the item, as the API server sends them).
constexpr const char* kSchemaInvalid =
    R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Stack.kstack.io \"bad\" is invalid: [spec.roles.members: Invalid value: -1: spec.roles.members in body should be greater than or equal to 0, spec.serviceType: Unsupported value: \"Foo\": supported values: \"ClusterIP\", \"NodePort\", \"LoadBalancer\"]","reason":"Invalid","details":{"name":"bad","group":"kstack.io","kind":"Stack","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: -1: spec.roles.members in body should be greater than or equal to 0","field":"spec.roles.members"},{"reason":"FieldValueNotSupported","message":"Unsupported value: \"Foo\": supported values: \"ClusterIP\", \"NodePort\", \"LoadBalancer\"","field":"spec.serviceType"}]},"code":422})";

constexpr const char* kForbidden =
    R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"stacks.kstack.io \"etcd\" is forbidden: User \"bob\" cannot patch resource \"stacks\" in API group \"kstack.io\" in the namespace \"demo\"","reason":"Forbidden","details":{"name":"etcd","group":"kstack.io","kind":"stacks"},"code":403})";

TEST(Explain, AWebhookDenialIsOneLinePerFieldError) {
  auto r = explain(kube::error_from_response(422, kWebhookDenial));
  EXPECT_TRUE(r.denied);
  EXPECT_EQ(r.headline, R"(admission webhook "validate.kstack.io" denied the request)");
  EXPECT_EQ(
      r.fields,
      (std::vector<std::string>{
          R"(spec.roles[0].members: must be at least 1 for cardinality "1+")",
          R"(spec.roles[0].resources.requests[cpu]: is required: role "member" needs at least 100m (minResources))",
          R"(spec.roles[0].resources.requests[memory]: is required: role "member" needs at least 128Mi (minResources))",
          R"(spec.roles[0].storage: is required: role "member" needs persistent storage of at least 1Gi and does not support ephemeral mode)",
          R"(spec.roles[1].id: role "nope" is not defined by AppType "etcd")",
      }));
}

TEST(Explain, TheClientsRequestPrefixIsDropped) {
  auto e = kube::error_from_response(422, kWebhookDenial);
  e.message = "PATCH /apis/kstack.io/v1beta1/namespaces/demo/stacks/x: " + e.message;
  auto r = explain(e);
  EXPECT_EQ(r.headline, R"(admission webhook "validate.kstack.io" denied the request)");
  EXPECT_EQ(r.fields.size(), 5u);
}

TEST(Explain, ASchemaRefusalIsOneLinePerCause) {
  auto r = explain(kube::error_from_response(422, kSchemaInvalid));
  EXPECT_TRUE(r.denied);
  EXPECT_EQ(r.headline, R"(Stack.kstack.io "bad" is invalid)");
  EXPECT_EQ(
      r.fields,
      (std::vector<std::string>{
          "spec.roles.members: Invalid value: -1: spec.roles.members in body should be "
          "greater than or equal to 0",
          R"(spec.serviceType: Unsupported value: "Foo": supported values: "ClusterIP", "NodePort", "LoadBalancer")",
      }));
}

TEST(Explain, OtherErrorsAreNotDenialsAndKeepTheServersReason) {
  auto r = explain(kube::error_from_response(403, kForbidden));
  EXPECT_FALSE(r.denied);
  EXPECT_TRUE(r.fields.empty());
  EXPECT_NE(r.headline.find("Forbidden (403)"), std::string::npos) << r.headline;
  EXPECT_NE(r.headline.find("cannot patch resource"), std::string::npos) << r.headline;
}

TEST(SplitFieldErrors, SplitsOnlyWhereAFieldPathFollows) {
  EXPECT_EQ(split_field_errors("a.b: x; c[0].d: y; not a field; e: z"),
            (std::vector<std::string>{"a.b: x", "c[0].d: y; not a field", "e: z"}));
  EXPECT_EQ(split_field_errors("one message"), (std::vector<std::string>{"one message"}));
}

}  // namespace
}  // namespace kstack::cmd
