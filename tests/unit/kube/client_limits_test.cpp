// Which token bucket a request takes from: Events have their own when Config::event_qps is set
// (so a burst of Events never delays object writes), else every request shares the client's.
#include <memory>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "kube/client.h"
#include "kube/resource.h"

namespace kstack::kube {
namespace {

const ResourceType kCoreEvents{"", "v1", "events", "Event", true};

// Answers every request with 201 and an empty object; counts them.
class AnswerAll final : public Transport {
 public:
  explicit AnswerAll(int* sent) : sent_(sent) {}
  TransportStats stats() const override { return {}; }
  Result<HttpResponse> send(const HttpRequest& /*request*/, const CancelToken&) override {
    ++*sent_;
    HttpResponse r;
    r.status = 201;
    r.body = "{}";
    return r;
  }
  Result<HttpResponse> stream(const HttpRequest&, const ChunkHandler&, const CancelToken&,
                              std::chrono::milliseconds) override {
    return make_error(ErrorKind::kTransport, "no streams here");
  }

 private:
  int* sent_;
};

// Refills so slowly (a token per 1,000 s) that only the burst counts within a test.
Config slow_config(int burst) {
  Config c;
  c.server = "https://127.0.0.1:1";
  c.qps = 0.001;
  c.burst = burst;
  return c;
}

boost::json::value event() {
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", "s.1"}, {"namespace", "ns"}}},
          {"reason", "Created"}};
}

TEST(ClientLimits, EventsTakeTokensFromTheirOwnBucketWhenConfigured) {
  Config c = slow_config(2);
  c.event_qps = 0.001;
  c.event_burst = 3;
  int sent = 0;
  Client client(c, std::make_unique<AnswerAll>(&sent), "");
  ASSERT_NE(&client.limiter_for(kCoreEvents), &client.limiter_for(resources::kConfigMaps));
  EXPECT_EQ(&client.limiter_for(resources::kEvents), &client.limiter_for(kCoreEvents));

  // Three Events: more than the object bucket's burst, within the Events' own.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client.create(kCoreEvents, "ns", event()));
  EXPECT_EQ(sent, 3);
  // The objects' bucket is untouched (both tokens left), the Events' one is empty.
  RateLimiter& objects = client.limiter_for(resources::kConfigMaps);
  EXPECT_TRUE(objects.try_acquire());
  EXPECT_TRUE(objects.try_acquire());
  EXPECT_FALSE(objects.try_acquire());
  EXPECT_FALSE(client.limiter_for(kCoreEvents).try_acquire());
}

TEST(ClientLimits, WithoutAnEventRateEveryRequestSharesOneBucket) {
  int sent = 0;
  Client client(slow_config(2), std::make_unique<AnswerAll>(&sent), "");
  EXPECT_EQ(&client.limiter_for(kCoreEvents), &client.limiter_for(resources::kConfigMaps));
  ASSERT_TRUE(client.create(kCoreEvents, "ns", event()));
  RateLimiter& objects = client.limiter_for(resources::kConfigMaps);
  EXPECT_TRUE(objects.try_acquire());  // the Event took the other token
  EXPECT_FALSE(objects.try_acquire());
}

TEST(ClientLimits, OnlyTheEventsResourceOfTheCoreAndEventsGroupsIsAnEvent) {
  Config c = slow_config(2);
  c.event_qps = 10;
  int sent = 0;
  Client client(c, std::make_unique<AnswerAll>(&sent), "");
  const ResourceType other_events{"example.com", "v1", "events", "Event", true};
  EXPECT_EQ(&client.limiter_for(other_events), &client.limiter_for(resources::kConfigMaps));
  EXPECT_EQ(&client.limiter_for(resources::kPods), &client.limiter_for(resources::kConfigMaps));
}

}  // namespace
}  // namespace kstack::kube
