// Tests of ServiceHost's wiring of --metrics_port and of its synchronous-server options.
#include "common/server.h"

#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "common/testing/http_get.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "rein/v1/planner.grpc.pb.h"

namespace rein {
namespace {

using ::testing::HasSubstr;

TEST(ServiceHostTest, MetricsPortServesTheGlobalMetrics) {
  ServiceHostOptions options;
  options.listen = "127.0.0.1:0";
  options.metrics_port = -1;  // any free port
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

TEST(ServiceHostTest, MetricsPortZeroServesNoMetrics) {
  ServiceHostOptions options;
  options.listen = "127.0.0.1:0";
  ServiceHost host(options);
  ASSERT_TRUE(host.Start({}).ok());
  EXPECT_GT(host.port(), 0);
  EXPECT_EQ(host.metrics_port(), 0);
}

// A planner whose Plan returns only once `expected` calls are inside it at the same time.
class BarrierPlanner final : public rein::v1::Planner::Service {
 public:
  explicit BarrierPlanner(int expected) : expected_(expected) {}
  grpc::Status Plan(grpc::ServerContext*, const rein::v1::PlanRequest*,
                    rein::v1::PlanResponse*) override {
    absl::MutexLock lock(&mu_);
    ++inside_;
    auto all_in = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return inside_ >= expected_; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&all_in), absl::Seconds(20))) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "the other calls never came in");
    }
    return grpc::Status::OK;
  }

 private:
  const int expected_;
  absl::Mutex mu_;
  int inside_ ABSL_GUARDED_BY(mu_) = 0;
};

// The router runs its synchronous methods on one queue with few idle pollers: a handler that
// blocks must still not hold up the others (each call in flight gets a thread of its own).
TEST(ServiceHostTest, OneSyncQueueWithOnePollerStillRunsCallsInParallel) {
  constexpr int kCalls = 8;
  BarrierPlanner planner(kCalls);
  ServiceHostOptions options;
  options.listen = "127.0.0.1:0";
  options.sync_server_cqs = 1;
  options.sync_server_min_pollers = 1;
  options.sync_server_max_pollers = 1;
  ServiceHost host(options);
  ASSERT_TRUE(host.Start({&planner}).ok());
  auto stub = rein::v1::Planner::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", host.port()), grpc::InsecureChannelCredentials()));
  std::vector<grpc::Status> results(kCalls);
  std::vector<std::thread> callers;
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&, i] {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      rein::v1::PlanResponse response;
      results[i] = stub->Plan(&context, rein::v1::PlanRequest(), &response);
    });
  }
  for (std::thread& t : callers) t.join();
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_TRUE(results[i].ok()) << i << ": " << results[i].error_message();
  }
  host.Shutdown(absl::ZeroDuration());
}

}  // namespace
}  // namespace rein
