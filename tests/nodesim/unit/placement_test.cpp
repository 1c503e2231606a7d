// Placement of claims no pod has pinned to a node: every simulator computes the same node from
// the same caches, claims made together spread, lost (NotReady) nodes get none.
#include "tests/nodesim/placement.h"

#include <memory>

#include <boost/json/parse.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

namespace kstack::nodesim {
namespace {

namespace json = boost::json;
using ObjectPtr = DomPtr;

ObjectPtr object(const std::string& text) {
  return std::make_shared<const json::value>(json::parse(text));
}

ObjectPtr node(const std::string& name, const std::string& ready = "True", bool simulated = true) {
  return object(fmt::format(
      R"({{"metadata":{{"name":"{}","labels":{{"kstack.io/nodesim":"{}"}}}},
          "status":{{"conditions":[{{"type":"MemoryPressure","status":"False"}},
                                  {{"type":"Ready","status":"{}"}}]}}}})",
      name, simulated ? "true" : "false", ready));
}

// A pending claim created at second `second` of a minute.
ObjectPtr claim(const std::string& name, int second, const std::string& selected_node = "") {
  std::string annotations =
      selected_node.empty()
          ? std::string("{}")
          : fmt::format(R"({{"volume.kubernetes.io/selected-node":"{}"}})", selected_node);
  return object(fmt::format(
      R"({{"metadata":{{"name":"{0}","namespace":"ns","uid":"uid-{0}",
          "creationTimestamp":"2026-11-27T15:00:{1:02}Z","annotations":{2}}},
          "spec":{{"storageClassName":"standard"}},"status":{{"phase":"Pending"}}}})",
      name, second, annotations));
}

ObjectPtr volume(const std::string& claim_name, const std::string& on_node) {
  return object(fmt::format(
      R"({{"metadata":{{"name":"pvc-uid-{0}","annotations":{{
          "pv.kubernetes.io/provisioned-by":"kstack.io/nodesim",
          "kstack.io/nodesim-node":"{1}"}}}},
          "spec":{{"claimRef":{{"namespace":"ns","name":"{0}","uid":"uid-{0}"}}}}}})",
      claim_name, on_node));
}

PlacementInput input(std::vector<ObjectPtr> nodes, std::vector<ObjectPtr> claims,
                     std::vector<ObjectPtr> volumes = {}) {
  PlacementInput in;
  in.nodes = std::move(nodes);
  in.claims = std::move(claims);
  in.volumes = std::move(volumes);
  in.served = [](const json::value&) { return true; };
  in.pinned = [](const json::value& c) {
    boost::system::error_code ec;
    const auto* n = c.find_pointer("/metadata/annotations/volume.kubernetes.io~1selected-node", ec);
    return n != nullptr && n->is_string() ? std::string(n->get_string()) : std::string();
  };
  return in;
}

TEST(Placement, ClaimsMadeTogetherSpreadOverTheNodesInCreationAndNameOrder) {
  auto a = claim("data-db-0", 1), b = claim("data-db-1", 1), c = claim("data-db-2", 1);
  auto in = input({node("n-c"), node("n-a"), node("n-b")}, {c, a, b});
  EXPECT_EQ(placement_node(*a, in), "n-a");
  EXPECT_EQ(placement_node(*b, in), "n-b");
  EXPECT_EQ(placement_node(*c, in), "n-c");
}

TEST(Placement, TheSameAnswerOnceEarlierClaimsHaveTheirVolumes) {
  // A simulator that already sees the volume of data-db-0 places data-db-1 where one that
  // does not (its cache is behind) places it.
  auto a = claim("data-db-0", 1), b = claim("data-db-1", 1);
  auto behind = input({node("n-a"), node("n-b"), node("n-c")}, {a, b});
  auto ahead = input({node("n-a"), node("n-b"), node("n-c")}, {b}, {volume("data-db-0", "n-a")});
  EXPECT_EQ(placement_node(*b, behind), "n-b");
  EXPECT_EQ(placement_node(*b, ahead), "n-b");
}

TEST(Placement, TheNodeWithTheFewestVolumesPinnedClaimsIncluded) {
  auto x = claim("x", 5);
  auto in = input({node("n-a"), node("n-b"), node("n-c")},
                  {x, claim("pinned", 1, "n-c"), claim("pinned-2", 2, "n-b")},
                  {volume("old", "n-a"), volume("other", "n-b")});
  EXPECT_EQ(placement_node(*x, in), "n-a");  // a: 1 volume, b: 2, c: 1 pinned claim; a < c
  in.volumes.push_back(volume("more", "n-a"));
  EXPECT_EQ(placement_node(*x, in), "n-c");
}

TEST(Placement, LostAndForeignNodesGetNothing) {
  auto x = claim("x", 1);
  EXPECT_EQ(placement_node(*x, input({node("n-a", "Unknown"), node("n-b")}, {x})), "n-b");
  EXPECT_EQ(placement_node(*x, input({node("n-a", "False"), node("n-b", "Unknown")}, {x})), "");
  EXPECT_EQ(placement_node(*x, input({node("n-a", "True", false), node("n-b")}, {x})), "n-b");
}

TEST(Placement, BoundOrTerminatingClaimsAndUnservedOnesDoNotCount) {
  auto x = claim("x", 9);
  auto bound = object(R"({"metadata":{"name":"b","namespace":"ns","uid":"uid-b",
      "creationTimestamp":"2026-11-27T15:00:01Z"},"spec":{"volumeName":"pv-b"},
      "status":{"phase":"Bound"}})");
  auto terminating = object(R"({"metadata":{"name":"t","namespace":"ns","uid":"uid-t",
      "creationTimestamp":"2026-11-27T15:00:01Z","deletionTimestamp":"2026-11-27T15:00:02Z"},
      "spec":{},"status":{"phase":"Pending"}})");
  auto unserved = claim("u", 1);
  auto in = input({node("n-a"), node("n-b")}, {bound, terminating, unserved, x});
  in.served = [](const json::value& c) {
    return c.at_pointer("/metadata/name").as_string() != "u";
  };
  EXPECT_EQ(placement_node(*x, in), "n-a");
}

}  // namespace
}  // namespace kstack::nodesim
