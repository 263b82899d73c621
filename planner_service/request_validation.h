// Checks on planner requests that hold for every backend: a bad request is INVALID_ARGUMENT
// naming the field.
#ifndef REIN_PLANNER_SERVICE_REQUEST_VALIDATION_H_
#define REIN_PLANNER_SERVICE_REQUEST_VALIDATION_H_

#include <cstddef>

#include "absl/status/status.h"
#include "rein/v1/planner.pb.h"

namespace rein {

// The largest goal accepted (the router's limit on RunSpec.goal).
inline constexpr size_t kMaxGoalBytes = 16 * 1024;

// OK, or INVALID_ARGUMENT whose message names the offending field: `goal` (empty or longer
// than kMaxGoalBytes), `iteration` (negative), `subtask.id` (empty, decide and evaluate).
absl::Status ValidatePlanRequest(const rein::v1::PlanRequest& request);
absl::Status ValidateDecideRequest(const rein::v1::DecideRequest& request);
absl::Status ValidateEvaluateRequest(const rein::v1::EvaluateRequest& request);

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_REQUEST_VALIDATION_H_
