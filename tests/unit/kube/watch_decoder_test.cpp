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

TEST(WatchDecoder, AnEventWhoseObjectIsNotAnObjectIsADecodeError) {
  for (const char* line :
       {R"({"type":"ADDED","object":5})", R"({"type":"MODIFIED","object":[]})",
        R"({"type":"DELETED","object":"x"})", R"({"type":"BOOKMARK","object":null})"}) {
    WatchDecoder d;
    std::vector<WatchEvent> out;
    auto r = d.feed(std::string(line) + "\n", out);
    ASSERT_FALSE(r) << line;
    EXPECT_EQ(r.error().kind, ErrorKind::kDecode) << line;
    EXPECT_TRUE(out.empty()) << line;
  }
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

// Feeds `stream` in two parts split at `at`, stopping at the first error as the contract asks.
Result<void> feed_split(WatchDecoder& d, std::string_view stream, std::size_t at,
                        std::vector<WatchEvent>& out) {
  if (auto r = d.feed(stream.substr(0, at), out); !r) return r;
  return d.feed(stream.substr(at), out);
}

TEST(WatchDecoder, NumbersDecodeToTheExactDoubleWhateverTheChunkSplit) {
  // Found by fuzz_watch_decoder: Boost.JSON's own parser read 33333.3333332333233 as
  // 33333.333333233328 when the stream came whole and as 33333.33333323332 (the exact double)
  // when split; and it reads 1.2E85 as 1.2000000000000002E85 either way.
  // (Inside an object: an event's object must be one, AnEventWhoseObjectIsNotAnObject...)
  const std::string stream = R"({"type":"ADDED","object":{"n":33333.3333332333233}})"
                             "33333\n"
                             R"({"type":"ADDED","object":{"n":1.2E85}})";
  for (std::size_t at = 0; at <= stream.size(); ++at) {
    WatchDecoder d;
    std::vector<WatchEvent> out;
    EXPECT_FALSE(feed_split(d, stream, at, out)) << "a bare number is no event; split at " << at;
    ASSERT_EQ(out.size(), 1u) << "split at " << at;
    EXPECT_EQ(out[0].object, boost::json::value({{"n", 33333.3333332333233}})) << "split at " << at;
  }
  const std::string_view event = std::string_view(stream).substr(stream.find('\n') + 1);
  for (std::size_t at = 0; at <= event.size(); ++at) {
    WatchDecoder d;
    std::vector<WatchEvent> out;
    ASSERT_TRUE(feed_split(d, event, at, out)) << "split at " << at;
    ASSERT_EQ(out.size(), 1u) << "split at " << at;
    EXPECT_EQ(out[0].object.at("n"), boost::json::value(1.2E85)) << "split at " << at;
  }
}

TEST(WatchDecoder, ANumberBeyondTheRangeOfADoubleIsADecodeError) {
  // Boost.JSON would make it infinity, which serializes as the non-JSON `Infinity`.
  WatchDecoder d;
  std::vector<WatchEvent> out;
  auto r = d.feed(R"({"type":"ADDED","object":{"n":-1e400}})"
                  "\n",
                  out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kDecode);
  EXPECT_NE(r.error().message.find("beyond the range of a double"), std::string::npos)
      << r.error().message;
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace kstack::kube
