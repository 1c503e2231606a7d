#include <gtest/gtest.h>

#include "kube/watch.h"

namespace kstack::kube {
namespace {

const std::string kStream =
    R"({"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"1"}}})"
    "\n"
    R"({"type":"MODIFIED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"2"}}})"
    "\n"
    R"({"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"3"}}})"
    "\n"
    R"({"type":"DELETED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"4"}}})"
    "\n";

std::string rv(const WatchEvent& e) {
  return std::string(e.object.at("metadata").at("resourceVersion").as_string());
}

TEST(WatchDecoder, DecodesEveryEventWhateverTheChunkSplit) {
  for (std::size_t chunk = 1; chunk <= kStream.size(); ++chunk) {
    WatchDecoder d;
    std::vector<WatchEvent> out;
    for (std::size_t i = 0; i < kStream.size(); i += chunk) {
      ASSERT_TRUE(d.feed(std::string_view(kStream).substr(i, chunk), out)) << "chunk " << chunk;
    }
    ASSERT_EQ(out.size(), 4u) << "chunk " << chunk;
    EXPECT_EQ(out[0].type, WatchEvent::Type::kAdded);
    EXPECT_EQ(out[1].type, WatchEvent::Type::kModified);
    EXPECT_EQ(out[2].type, WatchEvent::Type::kBookmark);
    EXPECT_EQ(out[3].type, WatchEvent::Type::kDeleted);
    EXPECT_EQ(rv(out[3]), "4");
    EXPECT_TRUE(d.at_boundary());
  }
}

TEST(WatchDecoder, ReportsPartialEventAtEndOfInput) {
  WatchDecoder d;
  std::vector<WatchEvent> out;
  ASSERT_TRUE(d.feed(R"({"type":"ADDED","obj)", out));
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(d.at_boundary());
}

TEST(WatchDecoder, ErrorEventWithExpiredStatusIsTypedGone) {
  WatchDecoder d;
  std::vector<WatchEvent> out;
  auto r =
      d.feed(R"js({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",
      "message":"too old resource version: 5 (10)","reason":"Expired","code":410}})js"
             "\n",
             out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kGone);
  EXPECT_NE(r.error().message.find("too old resource version"), std::string::npos);
}

TEST(WatchDecoder, MalformedJsonIsADecodeError) {
  WatchDecoder d;
  std::vector<WatchEvent> out;
  auto r = d.feed("{\"type\":\"ADDED\",,}\n", out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kDecode);
}

TEST(WatchDecoder, UnknownTypeAndMissingObjectAreDecodeErrors) {
  std::vector<WatchEvent> out;
  WatchDecoder a;
  EXPECT_EQ(a.feed(R"({"type":"WHAT","object":{}})", out).error().kind, ErrorKind::kDecode);
  WatchDecoder b;
  EXPECT_EQ(b.feed(R"({"type":"ADDED"})", out).error().kind, ErrorKind::kDecode);
}

TEST(WatchDecoder, WhitespaceAfterAnEventDoesNotCountTowardsItsSize) {
  // Found by fuzz_watch_decoder: the parser swallows the blank run after a value, which made
  // the same stream pass when split and fail when fed whole.
  const std::string event = R"({"type":"ADDED","object":{"a":"b"}})";
  ASSERT_LT(event.size(), 64u);
  WatchDecoder d(64);
  std::vector<WatchEvent> out;
  ASSERT_TRUE(d.feed(event + "\n" + std::string(100, ' ') + event + "\n", out));
  EXPECT_EQ(out.size(), 2u);
}

TEST(WatchDecoder, OversizedEventIsRefusedBeforeItIsBuffered) {
  WatchDecoder d(64);
  std::vector<WatchEvent> out;
  const std::string big = R"({"type":"ADDED","object":{"data":")" + std::string(200, 'x') + "\"}}";
  auto r = d.feed(big, out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kResponseTooLarge);
}

}  // namespace
}  // namespace kstack::kube
