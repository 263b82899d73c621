// Tests of ServiceHost's wiring of --metrics_listen.
#include "common/server.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "common/testing/http_get.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::testing::HasSubstr;

TEST(ServiceHostTest, MetricsListenServesTheGlobalMetrics) {
  ServiceHostOptions options;
  options.listen = "127.0.0.1:0";
  options.metrics_listen = "127.0.0.1:0";  // any free port
  ServiceHost host(options);
  ASSERT_TRUE(host.Start({}).ok());
  ASSERT_GT(host.metrics_port(), 0);
  Metrics::Global().Add("rein_server_test_total", 1);
  absl::StatusOr<HttpReply> reply = HttpGet(host.metrics_port(), "/metrics");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->status, 200);
  EXPECT_THAT(reply->body, HasSubstr("rein_server_test_total 1"));
  host.Shutdown(absl::ZeroDuration());
}

TEST(ServiceHostTest, NoMetricsListenServesNoMetrics) {
  ServiceHostOptions options;
  options.listen = "127.0.0.1:0";
  ServiceHost host(options);
  ASSERT_TRUE(host.Start({}).ok());
  EXPECT_GT(host.port(), 0);
  EXPECT_EQ(host.metrics_port(), 0);
}

TEST(ServiceHostTest, APortAlreadyInUseIsRefusedNotShared) {
  ServiceHostOptions options;
  ServiceHost first(options);
  ASSERT_TRUE(first.Start({}).ok());
  options.listen = absl::StrCat("127.0.0.1:", first.port());
  ServiceHost second(options);
  absl::Status status = second.Start({});
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(status.message(), HasSubstr(options.listen));
}

}  // namespace
}  // namespace rein
