// cmd/api_errors.h: every field error of a refusal on its own line, from Status objects as the
// API server sends them (recorded from the test control plane, tests/e2e/cli).
#include "cmd/api_errors.h"

#include <gtest/gtest.h>

namespace kstack::cmd {
namespace {

// kstack's webhook denying a Stack with three problems: the API server passes the webhook's
// message on, prefixed, with no details.causes.
constexpr const char* kWebhookDenial =
    R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"admission webhook \"validate.kstack.io\" denied the request: spec.roles[1].id: role \"nope\" is not a role of AppType etcd (roles: member); spec.roles[0].members: 0 is below the cardinality 1+ of role member; spec.serviceType: must be one of ClusterIP; NodePort; LoadBalancer","code":422})";

// The CRD's schema refusing two fields: reason Invalid with details.causes.
constexpr const char* kSchemaInvalid =
    R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Stack.kstack.io \"bad\" is invalid: [spec.roles[0].members: Invalid value: -1: spec.roles[0].members in body should be greater than or equal to 0, spec.serviceType: Unsupported value: \"Foo\": supported values: \"ClusterIP\", \"NodePort\", \"LoadBalancer\"]","reason":"Invalid","details":{"name":"bad","group":"kstack.io","kind":"Stack","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: -1: spec.roles[0].members in body should be greater than or equal to 0","field":"spec.roles[0].members"},{"reason":"FieldValueNotSupported","message":"Unsupported value: \"Foo\": supported values: \"ClusterIP\", \"NodePort\", \"LoadBalancer\"","field":"spec.serviceType"}]},"code":422})";

constexpr const char* kForbidden =
    R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"stacks.kstack.io \"etcd\" is forbidden: User \"bob\" cannot patch resource \"stacks\" in API group \"kstack.io\" in the namespace \"demo\"","reason":"Forbidden","details":{"name":"etcd","group":"kstack.io","kind":"stacks"},"code":403})";

TEST(Explain, AWebhookDenialIsOneLinePerFieldError) {
  auto r = explain(kube::error_from_response(422, kWebhookDenial));
  EXPECT_TRUE(r.denied);
  EXPECT_EQ(r.headline, R"(admission webhook "validate.kstack.io" denied the request)");
  EXPECT_EQ(r.fields,
            (std::vector<std::string>{
                R"(spec.roles[1].id: role "nope" is not a role of AppType etcd (roles: member))",
                "spec.roles[0].members: 0 is below the cardinality 1+ of role member",
                // "; " inside a reason does not split it: what follows is no field path.
                "spec.serviceType: must be one of ClusterIP; NodePort; LoadBalancer",
            }));
}

TEST(Explain, ASchemaRefusalIsOneLinePerCause) {
  auto r = explain(kube::error_from_response(422, kSchemaInvalid));
  EXPECT_TRUE(r.denied);
  EXPECT_EQ(r.headline, R"(Stack.kstack.io "bad" is invalid)");
  EXPECT_EQ(r.fields,
            (std::vector<std::string>{
                "spec.roles[0].members: Invalid value: -1: spec.roles[0].members in body should "
                "be greater than or equal to 0",
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
