// Tests of the planner's request validation.
#include "planner_service/request_validation.h"

#include <string>

#include "gtest/gtest.h"

namespace rein {
namespace {

TEST(RequestValidationTest, ValidPlanRequestIsOk) {
  rein::v1::PlanRequest request;
  request.set_goal("g");
  EXPECT_TRUE(ValidatePlanRequest(request).ok());
}

TEST(RequestValidationTest, EmptyGoalIsInvalidArgumentNamingGoal) {
  rein::v1::PlanRequest plan;
  absl::Status status = ValidatePlanRequest(plan);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "goal: must not be empty");

  rein::v1::DecideRequest decide;
  decide.mutable_subtask()->set_id("a");
  EXPECT_EQ(ValidateDecideRequest(decide).message(), "goal: must not be empty");

  rein::v1::EvaluateRequest evaluate;
  evaluate.mutable_subtask()->set_id("a");
  EXPECT_EQ(ValidateEvaluateRequest(evaluate).message(), "goal: must not be empty");
}

TEST(RequestValidationTest, OversizedGoalIsInvalidArgument) {
  rein::v1::PlanRequest request;
  request.set_goal(std::string(kMaxGoalBytes + 1, 'g'));
  absl::Status status = ValidatePlanRequest(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "goal: 16385 bytes, more than the limit of 16384");
  request.set_goal(std::string(kMaxGoalBytes, 'g'));
  EXPECT_TRUE(ValidatePlanRequest(request).ok());
}

TEST(RequestValidationTest, NegativeIterationIsInvalidArgument) {
  rein::v1::PlanRequest request;
  request.set_goal("g");
  request.set_iteration(-1);
  absl::Status status = ValidatePlanRequest(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "iteration: -1 is negative");
}

TEST(RequestValidationTest, MissingSubtaskIdIsInvalidArgumentNamingSubtaskId) {
  rein::v1::DecideRequest decide;
  decide.set_goal("g");
  absl::Status status = ValidateDecideRequest(decide);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "subtask.id: must not be empty");

  rein::v1::EvaluateRequest evaluate;
  evaluate.set_goal("g");
  evaluate.mutable_subtask()->set_description("no id");
  status = ValidateEvaluateRequest(evaluate);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "subtask.id: must not be empty");

  decide.mutable_subtask()->set_id("a");
  evaluate.mutable_subtask()->set_id("a");
  EXPECT_TRUE(ValidateDecideRequest(decide).ok());
  EXPECT_TRUE(ValidateEvaluateRequest(evaluate).ok());
}

}  // namespace
}  // namespace rein
