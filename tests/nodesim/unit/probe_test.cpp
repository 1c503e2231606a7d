// The httpGet probe read from a container's spec (--http-probes): ports by name or number, the
// API's defaults, and what cannot be probed.
#include "tests/nodesim/probe.h"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace kstack::nodesim {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

json::value container(std::string_view probe) {
  return json::parse(std::string(R"({"name":"operator","ports":[)"
                                 R"({"name":"webhook","containerPort":9443},)"
                                 R"({"name":"probes","containerPort":8081}],)"
                                 R"("readinessProbe":)") +
                     std::string(probe) + "}");
}

TEST(HttpGetProbe, APortNameResolvesToTheContainersPortOnThePodIp) {
  auto probe = http_get_probe(
      container(R"({"httpGet":{"path":"/readyz","port":"probes"},"periodSeconds":5})"),
      "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(probe.has_value());
  ASSERT_TRUE(*probe) << probe->error();
  EXPECT_EQ((*probe)->host, "127.0.0.7");
  EXPECT_EQ((*probe)->port, 8081);
  EXPECT_EQ((*probe)->path, "/readyz");
  EXPECT_EQ((*probe)->period, 5s);
  EXPECT_EQ((*probe)->timeout, 1s);
  EXPECT_EQ((*probe)->failure_threshold, 3);
}

TEST(HttpGetProbe, ANumberedPortAndAnExplicitHostAreTakenAsWritten) {
  auto probe = http_get_probe(
      container(R"({"httpGet":{"host":"127.0.0.1","port":9000},"failureThreshold":1})"),
      "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(probe.has_value() && *probe);
  EXPECT_EQ((*probe)->host, "127.0.0.1");
  EXPECT_EQ((*probe)->port, 9000);
  EXPECT_EQ((*probe)->path, "/");
  EXPECT_EQ((*probe)->failure_threshold, 1);
}

TEST(HttpGetProbe, AnUndeclaredPortNameOrHttpsIsAnErrorNamingTheField) {
  auto unknown =
      http_get_probe(container(R"({"httpGet":{"port":"metrics"}})"), "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(unknown.has_value());
  ASSERT_FALSE(*unknown);
  EXPECT_EQ(unknown->error(),
            "readinessProbe.httpGet.port: container \"operator\" has no port named \"metrics\"");
  auto https = http_get_probe(container(R"({"httpGet":{"port":8081,"scheme":"HTTPS"}})"),
                              "readinessProbe", "127.0.0.7");
  ASSERT_TRUE(https.has_value());
  EXPECT_FALSE(*https);
}

TEST(HttpGetProbe, NoProbeOrAnotherKindIsNothingToRun) {
  EXPECT_FALSE(
      http_get_probe(container(R"({"exec":{"command":["true"]}})"), "readinessProbe", "127.0.0.7")
          .has_value());
  EXPECT_FALSE(http_get_probe(container("null"), "livenessProbe", "127.0.0.7").has_value());
}

TEST(HttpGetProbe, NothingListeningIsAFailureSayingWhere) {
  HttpGetProbe probe;
  probe.host = "127.0.0.1";
  probe.port = 1;  // privileged, never bound by a test
  auto result = run_http_get(probe);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().find("http://127.0.0.1:1/: connect:"), std::string::npos)
      << result.error();
}

}  // namespace
}  // namespace kstack::nodesim
