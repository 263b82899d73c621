// Checks on planner requests that hold for every backend.
#include "planner_service/request_validation.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"

namespace rein {
namespace {

absl::Status ValidateCommon(absl::string_view goal, int32_t iteration) {
  if (goal.empty()) return absl::InvalidArgumentError("goal: must not be empty");
  if (goal.size() > kMaxGoalBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("goal: ", goal.size(), " bytes, more than the limit of ", kMaxGoalBytes));
  }
  if (iteration < 0) {
    return absl::InvalidArgumentError(absl::StrCat("iteration: ", iteration, " is negative"));
  }
  return absl::OkStatus();
}

absl::Status ValidateSubtask(const rein::v1::SubTask& subtask) {
  if (subtask.id().empty()) return absl::InvalidArgumentError("subtask.id: must not be empty");
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidatePlanRequest(const rein::v1::PlanRequest& request) {
  return ValidateCommon(request.goal(), request.iteration());
}

absl::Status ValidateDecideRequest(const rein::v1::DecideRequest& request) {
  RETURN_IF_ERROR(ValidateCommon(request.goal(), request.iteration()));
  return ValidateSubtask(request.subtask());
}

absl::Status ValidateEvaluateRequest(const rein::v1::EvaluateRequest& request) {
  RETURN_IF_ERROR(ValidateCommon(request.goal(), request.iteration()));
  return ValidateSubtask(request.subtask());
}

}  // namespace rein
