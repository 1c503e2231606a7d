// The pure parts of exec over WebSocket (kube/exec.h): frames, the exec query, the exit status on
// the error channel, the container ID check.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "kube/exec.h"

namespace kstack::kube::exec_detail {
namespace {

// Decodes a query string as Go's url.ParseQuery does on the server ('+' is a space, %XX a
// byte): the oracle for "every argument arrives literally".
std::vector<std::pair<std::string, std::string>> parse_query_like_go(std::string_view query) {
  const auto decode = [](std::string_view in) {
    std::string out;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (in[i] == '+') {
        out += ' ';
      } else if (in[i] == '%' && i + 2 < in.size()) {
        out += static_cast<char>(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16));
        i += 2;
      } else {
        out += in[i];
      }
    }
    return out;
  };
  std::vector<std::pair<std::string, std::string>> params;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const auto eq = pair.find('=');
    params.emplace_back(decode(pair.substr(0, eq)),
                        eq == std::string_view::npos ? "" : decode(pair.substr(eq + 1)));
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
  }
  return params;
}

std::vector<std::string> commands_of(std::string_view path) {
  std::vector<std::string> out;
  const auto q = path.find('?');
  for (auto& [k, v] : parse_query_like_go(path.substr(q + 1))) {
    if (k == "command") out.push_back(v);
  }
  return out;
}

TEST(ExecPath, ListsContainerCommandAndStreamsInTheApiServersForm) {
  auto path = exec_path("ns", "web-0", {"sh", "-c", "echo hi"}, ExecOptions{}, false);
  ASSERT_TRUE(path) << path.error().to_string();
  EXPECT_EQ(*path,
            "/api/v1/namespaces/ns/pods/web-0/exec?container=app&command=sh&command=-c"
            "&command=echo%20hi&stdout=true&stderr=true");
}

TEST(ExecPath, AsksForStdinOnlyWhenAttachedAndDropsStderrWithATty) {
  ExecOptions o;
  o.container = "side car";
  o.tty = true;
  auto path = exec_path("ns", "p", {"cat"}, o, true);
  ASSERT_TRUE(path);
  EXPECT_EQ(*path,
            "/api/v1/namespaces/ns/pods/p/exec?container=side%20car&command=cat&stdin=true"
            "&stdout=true&tty=true");
}

TEST(ExecPath, PassesHostileArgumentsLiterally) {
  const std::vector<std::string> argv = {"printf",
                                         "%s",
                                         "; rm -rf / $(id)",
                                         "`id`&&x=1&command=evil",
                                         "a+b c%20d%",
                                         "#frag?q=1",
                                         "",  // an empty argument is an argument
                                         "line1\nline2\ttab",
                                         "\xc3\xbc\xe6\x97\xa5\xe6\x9c\xac",
                                         "--",
                                         "'\"\\"};
  auto path = exec_path("ns", "p", argv, ExecOptions{}, false);
  ASSERT_TRUE(path) << path.error().to_string();
  EXPECT_EQ(commands_of(*path), argv);
  const std::string query = path->substr(path->find('?') + 1);
  // Nothing the server would split on or reinterpret is left raw.
  for (const char c : std::string_view(" ;$`+#?\n\"'\\")) {
    EXPECT_EQ(query.find(c), std::string::npos) << "raw '" << c << "' in " << query;
  }
}

TEST(ExecPath, RefusesWhatCannotBeSentOrNamed) {
  EXPECT_EQ(exec_path("ns", "p", {}, ExecOptions{}, false).error().kind,
            ErrorKind::kInvalidArgument);
  EXPECT_EQ(exec_path("ns", "p", {"a", std::string("b\0c", 3)}, ExecOptions{}, false).error().kind,
            ErrorKind::kInvalidArgument);
  EXPECT_EQ(exec_path("a/b", "p", {"ls"}, ExecOptions{}, false).error().kind,
            ErrorKind::kInvalidArgument);
  EXPECT_EQ(exec_path("ns", "..", {"ls"}, ExecOptions{}, false).error().kind,
            ErrorKind::kInvalidArgument);
  EXPECT_EQ(exec_path("", "p", {"ls"}, ExecOptions{}, false).error().kind,
            ErrorKind::kInvalidArgument);
}

TEST(Frames, CarryTheChannelInTheFirstByteAndAnyBytesAfter) {
  const std::string payload("a\0\xff\n", 4);
  const std::string message = encode_frame(kStdout, payload);
  ASSERT_EQ(message.size(), 5u);
  EXPECT_EQ(message[0], '\x01');
  auto frame = decode_frame(message);
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->channel, kStdout);
  EXPECT_EQ(frame->data, payload);

  auto status_only = decode_frame(std::string(1, '\x03'));
  ASSERT_TRUE(status_only);
  EXPECT_EQ(status_only->channel, kError);
  EXPECT_TRUE(status_only->data.empty());

  EXPECT_FALSE(decode_frame(""));
}

TEST(Frames, EndStdinWithTheCloseSignalOnV5AndAnEmptyStdinMessageBefore) {
  EXPECT_EQ(stdin_eof_frame(Protocol::kV5), std::string("\xff\x00", 2));
  EXPECT_EQ(stdin_eof_frame(Protocol::kV4), std::string(1, '\0'));
  EXPECT_EQ(stdin_eof_frame(Protocol::kV1), std::string(1, '\0'));
}

TEST(Protocols, AreTheOffersOnlyWithNoneMeaningChannelK8sIo) {
  EXPECT_EQ(parse_protocol("v5.channel.k8s.io"), Protocol::kV5);
  EXPECT_EQ(parse_protocol("v4.channel.k8s.io"), Protocol::kV4);
  EXPECT_EQ(parse_protocol("channel.k8s.io"), Protocol::kV1);
  EXPECT_EQ(parse_protocol(""), Protocol::kV1);
  EXPECT_FALSE(parse_protocol("base64.channel.k8s.io"));
  EXPECT_FALSE(parse_protocol("v4.channel.k8s.io, channel.k8s.io"));
  EXPECT_EQ(kProtocolOffer.find("v5"), 0u);
}

TEST(ExitStatus, SuccessIsExitZero) {
  for (auto p : {Protocol::kV4, Protocol::kV5}) {
    auto s = parse_exit_status(p, R"({"metadata":{},"status":"Success"})");
    ASSERT_TRUE(s) << s.error().to_string();
    EXPECT_EQ(s->exit_code, 0);
  }
}

TEST(ExitStatus, NothingOnTheErrorChannelIsExitZero) {
  for (auto p : {Protocol::kV1, Protocol::kV4, Protocol::kV5}) {
    auto s = parse_exit_status(p, "");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->exit_code, 0);
  }
}

constexpr std::string_view kExit3 =
    R"({"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: exit status 3",)"
    R"("reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}})";

TEST(ExitStatus, NonZeroExitCodeCarriesTheCodeInItsExitCodeCause) {
  auto s = parse_exit_status(Protocol::kV4, kExit3);
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->exit_code, 3);
  EXPECT_EQ(s->message, "command terminated with non-zero exit code: exit status 3");
  auto s255 = parse_exit_status(
      Protocol::kV5,
      R"({"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[)"
      R"({"reason":"Other","message":"x"},{"reason":"ExitCode","message":"255"}]}})");
  ASSERT_TRUE(s255);
  EXPECT_EQ(s255->exit_code, 255);
}

TEST(ExitStatus, ABrokenNonZeroExitCodeIsADecodeError) {
  for (
      std::string_view bad :
      {R"({"status":"Failure","reason":"NonZeroExitCode"})",
       R"({"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"x3"}]}})",
       R"({"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"256"}]}})",
       R"({"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"-1"}]}})",
       R"({"status":"Maybe"})", "not json", "[1,2]"}) {
    auto s = parse_exit_status(Protocol::kV4, bad);
    ASSERT_FALSE(s) << bad;
    EXPECT_EQ(s.error().kind, ErrorKind::kDecode) << bad;
  }
}

TEST(ExitStatus, OtherFailuresAreTypedErrorsWithTheServersMessage) {
  auto internal = parse_exit_status(
      Protocol::kV4,
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"error executing command in container: no such file","reason":"InternalError","code":500})");
  ASSERT_FALSE(internal);
  EXPECT_EQ(internal.error().kind, ErrorKind::kInternal);
  EXPECT_EQ(internal.error().http_status, 500);
  EXPECT_NE(internal.error().message.find("no such file"), std::string::npos);

  auto not_found = parse_exit_status(
      Protocol::kV4, R"({"status":"Failure","message":"gone","reason":"NotFound","code":404})");
  ASSERT_FALSE(not_found);
  EXPECT_EQ(not_found.error().kind, ErrorKind::kNotFound);

  auto bare = parse_exit_status(Protocol::kV4, R"({"status":"Failure","message":"boom"})");
  ASSERT_FALSE(bare);
  EXPECT_EQ(bare.error().kind, ErrorKind::kInternal);
  EXPECT_EQ(bare.error().message, "boom");
}

TEST(ExitStatus, ChannelK8sIoSaysOnlyThatANonZeroExitHappened) {
  auto s =
      parse_exit_status(Protocol::kV1, "command terminated with non-zero exit code: exit status 3");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->exit_code, kExitCodeUnknown);
  EXPECT_EQ(s->message, "command terminated with non-zero exit code: exit status 3");

  auto other = parse_exit_status(Protocol::kV1, "error executing command in container: nope");
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().kind, ErrorKind::kInternal);

  // A server that sends a Status anyway is understood.
  auto structured =
      parse_exit_status(Protocol::kV1, std::string(kExit3).insert(1, R"("kind":"Status",)"));
  ASSERT_TRUE(structured);
  EXPECT_EQ(structured->exit_code, 3);
}

TEST(ContainerId, IsTheIdOfTheNamedContainer) {
  const auto pod = boost::json::parse(R"({"status":{"containerStatuses":[
      {"name":"sidecar","containerID":"containerd://aaa"},
      {"name":"app","containerID":"containerd://bbb"}]}})");
  EXPECT_EQ(container_id(pod, "app"), "containerd://bbb");
  EXPECT_EQ(container_id(pod, "sidecar"), "containerd://aaa");
  EXPECT_EQ(container_id(pod, "other"), "");
  EXPECT_EQ(container_id(boost::json::parse(R"({"status":{"phase":"Pending"}})"), "app"), "");
  EXPECT_EQ(container_id(boost::json::parse(R"({"status":{"containerStatuses":[{"name":"app"}]}})"),
                         "app"),
            "");
}

}  // namespace
}  // namespace kstack::kube::exec_detail
