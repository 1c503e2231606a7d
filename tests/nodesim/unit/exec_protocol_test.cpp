// The exec endpoint's request parsing, subprotocol negotiation and status payloads.
#include "tests/nodesim/exec_protocol.h"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace kstack::nodesim {
namespace {

TEST(ExecTarget, ParsesTheApiServersForwardedRequest) {
  auto p = parse_exec_target(
      "/exec/ns1/web-0/app?command=sh&command=-c&command=echo+hi%3B+rm+-rf+%2F&error=1&output=1");
  ASSERT_TRUE(p) << p.error();
  EXPECT_EQ(p->namespace_name, "ns1");
  EXPECT_EQ(p->pod, "web-0");
  EXPECT_EQ(p->container, "app");
  EXPECT_TRUE(p->pod_uid.empty());
  EXPECT_EQ(p->command, (std::vector<std::string>{"sh", "-c", "echo hi; rm -rf /"}));
  EXPECT_TRUE(p->stdout);
  EXPECT_TRUE(p->stderr);
  EXPECT_FALSE(p->stdin);
  EXPECT_FALSE(p->tty);
}

TEST(ExecTarget, KeepsEveryArgumentLiterally) {
  auto p = parse_exec_target(
      "/exec/n/p/c?command=printf&command=%25s%5Cn&command=%24%28id%29&command=a%2Bb&"
      "command=&input=1");
  ASSERT_TRUE(p) << p.error();
  EXPECT_EQ(p->command, (std::vector<std::string>{"printf", "%s\\n", "$(id)", "a+b", ""}));
  EXPECT_TRUE(p->stdin);
}

TEST(ExecTarget, AcceptsTheFormWithPodUid) {
  auto p = parse_exec_target("/exec/n/p/1234-uid/c?command=ls&output=true");
  ASSERT_TRUE(p) << p.error();
  EXPECT_EQ(p->pod_uid, "1234-uid");
  EXPECT_EQ(p->container, "c");
}

TEST(ExecTarget, TerminalHasNoSeparateStderr) {
  auto p = parse_exec_target("/exec/n/p/c?command=sh&input=1&output=1&error=1&tty=1");
  ASSERT_TRUE(p) << p.error();
  EXPECT_TRUE(p->tty);
  EXPECT_FALSE(p->stderr);
}

TEST(ExecTarget, RefusesBadRequests) {
  EXPECT_FALSE(parse_exec_target("/exec/n/p/c?output=1"));              // no command
  EXPECT_FALSE(parse_exec_target("/exec/n/p/c?command=ls"));            // no stream
  EXPECT_FALSE(parse_exec_target("/exec/n/p?command=ls&output=1"));     // no container
  EXPECT_FALSE(parse_exec_target("/exec/n/../c?command=ls&output=1"));  // traversal
  EXPECT_FALSE(parse_exec_target("/exec/n/p/c?command=%zz&output=1"));  // bad escape
  EXPECT_FALSE(parse_exec_target("/exec/n/p%2Fx/c?command=ls&output=1"));
}

TEST(Negotiation, FollowsTheClientsPreference) {
  auto v5 = negotiate_protocol("v5.channel.k8s.io, v4.channel.k8s.io");
  ASSERT_TRUE(v5);
  EXPECT_EQ(v5->protocol, StreamProtocol::kV5);
  EXPECT_EQ(v5->name, "v5.channel.k8s.io");
  auto v4 = negotiate_protocol("v4.channel.k8s.io,channel.k8s.io");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->protocol, StreamProtocol::kV4);
  auto skip = negotiate_protocol("base64.channel.k8s.io, channel.k8s.io");
  ASSERT_TRUE(skip);
  EXPECT_EQ(skip->protocol, StreamProtocol::kV1);
}

TEST(Negotiation, NoHeaderMeansV1WithoutSubprotocol) {
  auto none = negotiate_protocol("");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->protocol, StreamProtocol::kV1);
  EXPECT_TRUE(none->name.empty());
  EXPECT_FALSE(negotiate_protocol("v4.base64.channel.k8s.io"));
}

TEST(Negotiation, AServerRestrictedToOldProtocolsPicksTheClientsBestRemainingChoice) {
  const std::string offer = "v5.channel.k8s.io, v4.channel.k8s.io, channel.k8s.io";
  auto v4 = negotiate_protocol(offer, {StreamProtocol::kV4});
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->protocol, StreamProtocol::kV4);
  EXPECT_EQ(v4->name, "v4.channel.k8s.io");
  auto v1 = negotiate_protocol(offer, {StreamProtocol::kV1});
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->protocol, StreamProtocol::kV1);
  EXPECT_EQ(v1->name, "channel.k8s.io");
  EXPECT_FALSE(negotiate_protocol("v5.channel.k8s.io", {StreamProtocol::kV4}));
  EXPECT_FALSE(negotiate_protocol("", {StreamProtocol::kV4}));  // no header means v1
}

TEST(Negotiation, ProtocolSetsParseFromNamesAndRejectUnknownOnes) {
  auto set = parse_protocol_set("v4.channel.k8s.io, channel.k8s.io,v4.channel.k8s.io");
  ASSERT_TRUE(set) << set.error();
  EXPECT_EQ(*set, (ProtocolSet{StreamProtocol::kV4, StreamProtocol::kV1}));
  auto unknown = parse_protocol_set("v4.channel.k8s.io,v6.channel.k8s.io");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("\"v6.channel.k8s.io\""), std::string::npos) << unknown.error();
  EXPECT_FALSE(parse_protocol_set(""));
  EXPECT_EQ(all_protocols().front(), StreamProtocol::kV5);
  EXPECT_EQ(protocol_name(StreamProtocol::kV1), "channel.k8s.io");
}

TEST(Status, SuccessIsTheKubeletsExactPayload) {
  EXPECT_EQ(success_status(), R"({"metadata":{},"status":"Success"})");
}

TEST(Status, NonZeroExitCarriesTheCodeAsACause) {
  auto text = exit_code_status(3, {"sh", "-c", "exit 3"});
  auto v = boost::json::parse(text);
  EXPECT_EQ(v.at("status"), "Failure");
  EXPECT_EQ(v.at("reason"), "NonZeroExitCode");
  EXPECT_EQ(v.at("details").at("causes").at(0).at("reason"), "ExitCode");
  EXPECT_EQ(v.at("details").at("causes").at(0).at("message"), "3");
  EXPECT_EQ(
      text.rfind(
          R"({"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: )",
          0),
      0u)
      << text;
}

TEST(Status, OlderProtocolsGetTextAndNothingOnSuccess) {
  EXPECT_FALSE(final_error_channel_payload(StreamProtocol::kV1, 0, {"true"}));
  auto failure = final_error_channel_payload(StreamProtocol::kV3, 2, {"false"});
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->rfind("command terminated with non-zero exit code", 0), 0u);
  EXPECT_EQ(final_error_channel_payload(StreamProtocol::kV4, 0, {"true"}), success_status());
}

TEST(Status, InternalErrorIsAStatusObject) {
  auto v = boost::json::parse(internal_error_status("no \"such\" container"));
  EXPECT_EQ(v.at("reason"), "InternalError");
  EXPECT_EQ(v.at("code"), 500);
}

}  // namespace
}  // namespace kstack::nodesim
