// Tests of Metrics (counters, gauges, histograms on prometheus-cpp) and its HTTP endpoint.
#include "common/metrics.h"

#include <string>

#include "absl/status/statusor.h"
#include "common/testing/http_get.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsTest, CounterAddsPerLabelSet) {
  Metrics metrics;
  metrics.Add("rein_test_calls_total", 1, R"(stage="plan",code="OK")");
  metrics.Add("rein_test_calls_total", 2, R"(stage="plan",code="OK")");
  metrics.Add("rein_test_calls_total", 1, R"(stage="decide",code="UNAVAILABLE")");
  metrics.Add("rein_test_commits_total", 1);
  const std::string text = metrics.Render();
  EXPECT_THAT(text, HasSubstr("# TYPE rein_test_calls_total counter\n"));
  EXPECT_THAT(text, HasSubstr(R"(rein_test_calls_total{code="OK",stage="plan"} 3)"));
  EXPECT_THAT(text, HasSubstr(R"(rein_test_calls_total{code="UNAVAILABLE",stage="decide"} 1)"));
  EXPECT_THAT(text, HasSubstr("rein_test_commits_total 1"));
}

TEST(MetricsTest, NegativeCounterDeltaIsIgnored) {
  Metrics metrics;
  metrics.Add("rein_test_total", 2);
  metrics.Add("rein_test_total", -1);
  EXPECT_THAT(metrics.Render(), HasSubstr("rein_test_total 2"));
}

TEST(MetricsTest, GaugeKeepsTheLastValue) {
  Metrics metrics;
  metrics.Set("rein_test_active_runs", 5);
  metrics.Set("rein_test_active_runs", 3);
  metrics.Set("rein_test_sandbox", 1, R"(state="bwrap")");
  const std::string text = metrics.Render();
  EXPECT_THAT(text, HasSubstr("# TYPE rein_test_active_runs gauge\n"));
  EXPECT_THAT(text, HasSubstr("rein_test_active_runs 3"));
  EXPECT_THAT(text, HasSubstr(R"(rein_test_sandbox{state="bwrap"} 1)"));
}

TEST(MetricsTest, HistogramHasBucketsSumAndCount) {
  Metrics metrics;
  metrics.Observe("rein_test_commit_seconds", 0.0002);
  metrics.Observe("rein_test_commit_seconds", 0.003);
  metrics.Observe("rein_test_commit_seconds", 500);
  metrics.Observe("rein_test_call_seconds", 0.5, R"(call="decide")");
  const std::string text = metrics.Render();
  EXPECT_THAT(text, HasSubstr("# TYPE rein_test_commit_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr(R"(rein_test_commit_seconds_bucket{le="0.0001"} 0)"));
  EXPECT_THAT(text, HasSubstr(R"(rein_test_commit_seconds_bucket{le="0.00025"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(rein_test_commit_seconds_bucket{le="0.005"} 2)"));
  EXPECT_THAT(text, HasSubstr(R"(rein_test_commit_seconds_bucket{le="120"} 2)"));
  EXPECT_THAT(text, HasSubstr(R"(rein_test_commit_seconds_bucket{le="+Inf"} 3)"));
  EXPECT_THAT(text, HasSubstr("rein_test_commit_seconds_count 3"));
  EXPECT_THAT(text, HasSubstr("rein_test_commit_seconds_sum 500.0032"));
  EXPECT_THAT(text, HasSubstr(R"(rein_test_call_seconds_bucket{call="decide",le="0.5"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(rein_test_call_seconds_count{call="decide"} 1)"));
}

TEST(MetricsTest, NameKeepsItsFirstType) {
  Metrics metrics;
  metrics.Add("rein_test_x", 1);
  metrics.Set("rein_test_x", 7);
  metrics.Observe("rein_test_x", 7);
  const std::string text = metrics.Render();
  EXPECT_THAT(text, HasSubstr("# TYPE rein_test_x counter\n"));
  EXPECT_THAT(text, HasSubstr("rein_test_x 1"));
  EXPECT_THAT(text, Not(HasSubstr("rein_test_x 7")));
}

TEST(MetricsTest, MalformedLabelsOrNamesAreIgnored) {
  Metrics metrics;
  metrics.Add("rein_test_total", 1, "code=OK");
  metrics.Add("rein_test_total", 1, R"(code="OK)");
  metrics.Add("bad name", 1);
  metrics.Add("rein_test_total", 1, R"(bad-label="x")");
  EXPECT_THAT(metrics.Render(), Not(HasSubstr("rein_test_total{")));
  EXPECT_THAT(metrics.Render(), Not(HasSubstr("bad name")));
  metrics.Add("rein_test_total", 1, R"(code="OK")");
  EXPECT_THAT(metrics.Render(), HasSubstr(R"(rein_test_total{code="OK"} 1)"));
}

TEST(ParseMetricLabelsTest, ParsesPairsAndEscapes) {
  EXPECT_EQ(ParseMetricLabels(""), (std::map<std::string, std::string>{}));
  EXPECT_EQ(ParseMetricLabels(R"(method="StartRun",code="OK")"),
            (std::map<std::string, std::string>{{"method", "StartRun"}, {"code", "OK"}}));
  EXPECT_EQ(ParseMetricLabels(R"(a="x\"y\\z\n", b="")"),
            (std::map<std::string, std::string>{{"a", "x\"y\\z\n"}, {"b", ""}}));
  EXPECT_EQ(ParseMetricLabels("a=x"), std::nullopt);
  EXPECT_EQ(ParseMetricLabels(R"(a="x)"), std::nullopt);
  EXPECT_EQ(ParseMetricLabels(R"(a="x" b="y")"), std::nullopt);
  EXPECT_EQ(ParseMetricLabels(R"(a="x",a="y")"), std::nullopt);
  EXPECT_EQ(ParseMetricLabels(R"(="x")"), std::nullopt);
  EXPECT_EQ(ParseMetricLabels(R"(a="\t")"), std::nullopt);
}

TEST(MetricsHttpServerTest, ScrapeShowsCountersAndHistogramBuckets) {
  Metrics metrics;
  metrics.Add("rein_test_rpcs_total", 4, R"(method="StartRun",code="OK")");
  metrics.Observe("rein_test_commit_seconds", 0.0003);
  MetricsHttpServer server(&metrics);
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  ASSERT_GT(server.port(), 0);
  absl::StatusOr<HttpReply> reply = HttpGet(server.port(), "/metrics");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->status, 200);
  EXPECT_THAT(reply->body, HasSubstr(R"(rein_test_rpcs_total{code="OK",method="StartRun"} 4)"));
  EXPECT_THAT(reply->body, HasSubstr(R"(rein_test_commit_seconds_bucket{le="0.0005"} 1)"));
  EXPECT_THAT(reply->body, HasSubstr("rein_test_commit_seconds_count 1"));

  metrics.Observe("rein_test_commit_seconds", 0.0003);
  reply = HttpGet(server.port(), "/metrics");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_THAT(reply->body, HasSubstr("rein_test_commit_seconds_count 2"));
}

TEST(MetricsHttpServerTest, OtherPathsAreNotFound) {
  Metrics metrics;
  MetricsHttpServer server(&metrics);
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  absl::StatusOr<HttpReply> reply = HttpGet(server.port(), "/");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->status, 404);
}

TEST(MetricsHttpServerTest, PortInUseIsUnavailable) {
  Metrics metrics;
  MetricsHttpServer first(&metrics);
  ASSERT_TRUE(first.Start("127.0.0.1:0").ok());
  MetricsHttpServer second(&metrics);
  const absl::Status status = second.Start(absl::StrCat("127.0.0.1:", first.port()));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(std::to_string(first.port())));
}

TEST(MetricsHttpServerTest, ListensOnTheGivenAddressOnly) {
  Metrics metrics;
  MetricsHttpServer server(&metrics);
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  ASSERT_TRUE(HttpGet("127.0.0.1", server.port(), "/metrics").ok());
  // Every 127/8 address reaches this machine: a server on 0.0.0.0 would answer here too.
  EXPECT_FALSE(HttpGet("127.0.0.2", server.port(), "/metrics").ok());
  MetricsHttpServer everywhere(&metrics);
  ASSERT_TRUE(everywhere.Start("0.0.0.0:0").ok());
  EXPECT_TRUE(HttpGet("127.0.0.2", everywhere.port(), "/metrics").ok());
}

TEST(MetricsListenAddressTest, DefaultsToLoopbackAndRefusesBadFlags) {
  EXPECT_EQ(*MetricsListenAddress("", 0), "");
  EXPECT_EQ(*MetricsListenAddress("", 9090), "127.0.0.1:9090");
  EXPECT_EQ(*MetricsListenAddress("0.0.0.0:9090", 0), "0.0.0.0:9090");
  EXPECT_EQ(*MetricsListenAddress("[::1]:9090", 0), "[::1]:9090");
  EXPECT_EQ(MetricsListenAddress("0.0.0.0:9090", 9090).status().message(),
            "--metrics_listen and --metrics_port: give one (--metrics_port=P serves on "
            "127.0.0.1:P)");
  EXPECT_EQ(MetricsListenAddress("", 70000).status().message(),
            "--metrics_port: must be in 0..65535, got 70000");
  EXPECT_EQ(MetricsListenAddress("9090", 0).status().message(),
            "--metrics_listen: \"9090\" is not HOST:PORT");
  EXPECT_EQ(MetricsListenAddress("host:http", 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MetricsHttpServerTest, StopClosesThePort) {
  Metrics metrics;
  MetricsHttpServer server(&metrics);
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  const int port = server.port();
  server.Stop();
  EXPECT_FALSE(HttpGet(port, "/metrics").ok());
}

}  // namespace
}  // namespace rein
