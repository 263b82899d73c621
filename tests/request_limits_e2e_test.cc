// End-to-end: each service refuses a request over its receive limit with RESOURCE_EXHAUSTED
// naming the limit, and keeps serving afterwards.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rein/v1/executor.grpc.pb.h"
#include "rein/v1/planner.grpc.pb.h"
#include "tests/cluster.h"
#include "tests/repo_cluster.h"

namespace rein::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kRouterLimit = 4 << 20;  // the default of every service
constexpr int kPlannerLimit = 4 << 20;
constexpr int kExecutorLimit = 8 << 20;  // write_file's content, JSON-escaped

class RequestLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = RepoCluster("limits", ThreeStepScript(0), {{"README.md", kRepoReadme}});
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
  }

  static std::shared_ptr<grpc::Channel> Channel(const std::string& target) {
    return grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  }

  static void Deadline(grpc::ClientContext* context) {
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  }

  std::unique_ptr<Cluster> cluster_;
};

TEST_F(RequestLimitsTest, RouterRefusesARequestOverItsLimitAndKeepsServing) {
  rein::v1::RunSpec spec;
  spec.set_goal(std::string(kRouterLimit + 1024, 'g'));
  spec.set_workspace("repo");
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kResourceExhausted) << run.status();
  EXPECT_THAT(run.status().message(), HasSubstr(absl::StrCat(kRouterLimit)));

  // Just under the limit, the request reaches the router, which names the field.
  spec.set_goal(std::string(kRouterLimit - 4096, 'g'));
  run = cluster_->StartRun(spec);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument) << run.status();
  EXPECT_THAT(run.status().message(), HasSubstr("spec.goal"));

  spec.set_goal("list the files");
  run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok()) << run.status();
  absl::StatusOr<rein::v1::Run> done =
      cluster_->WaitForStage(run->run_id(), rein::v1::FINISHED, absl::Seconds(30));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state().stage(), rein::v1::FINISHED);
}

TEST_F(RequestLimitsTest, PlannerRefusesARequestOverItsLimitAndKeepsServing) {
  auto planner = rein::v1::Planner::NewStub(Channel(cluster_->planner_target()));
  rein::v1::PlanRequest request;
  request.set_run_id("r");
  request.set_goal(std::string(kPlannerLimit + 1024, 'g'));
  rein::v1::PlanResponse response;
  {
    grpc::ClientContext context;
    Deadline(&context);
    grpc::Status status = planner->Plan(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(absl::StrCat(kPlannerLimit)));
  }
  request.set_goal("list the files");
  grpc::ClientContext context;
  Deadline(&context);
  grpc::Status status = planner->Plan(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_GT(response.subtasks_size(), 0);
}

TEST_F(RequestLimitsTest, ExecutorRefusesARequestOverItsLimitAndKeepsServing) {
  auto executor = rein::v1::Executor::NewStub(Channel(cluster_->executor_target()));
  rein::v1::ExecuteRequest request;
  request.set_call_id("big");
  request.set_workspace("repo");
  request.set_tool("read_file");
  request.set_args_json(std::string(kExecutorLimit + 1024, ' '));
  rein::v1::ExecuteResponse response;
  {
    grpc::ClientContext context;
    Deadline(&context);
    grpc::Status status = executor->Execute(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(absl::StrCat(kExecutorLimit)));
  }
  // A 5 MiB request, over the other services' limit, still reaches the executor.
  request.set_args_json(std::string(5 << 20, ' '));
  {
    grpc::ClientContext context;
    Deadline(&context);
    grpc::Status status = executor->Execute(&context, request, &response);
    EXPECT_NE(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  }
  rein::v1::ListToolsResponse tools;
  grpc::ClientContext context;
  Deadline(&context);
  grpc::Status status = executor->ListTools(&context, rein::v1::ListToolsRequest(), &tools);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_GT(tools.tools_size(), 0);
}

}  // namespace
}  // namespace rein::testing
