// PlannerBackend: the one model question per stage (plan, decide, evaluate), behind which sit
// the `scripted` and `anthropic` backends.
#ifndef REIN_PLANNER_SERVICE_PLANNER_BACKEND_H_
#define REIN_PLANNER_SERVICE_PLANNER_BACKEND_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rein/v1/planner.pb.h"

namespace rein {

// Answers the planner's three stage questions. Requests reaching a backend have passed
// request validation (see request_validation.h). A backend never answers after `deadline`
// (absl::InfiniteFuture() = none): work that would outlive it ends with DEADLINE_EXCEEDED.
// Error codes follow planner.proto: INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED,
// NOT_FOUND, FAILED_PRECONDITION and OUT_OF_RANGE are fatal for the run; INTERNAL "invalid
// output: ..." is a reply that failed validation; UNAVAILABLE, RESOURCE_EXHAUSTED and
// DEADLINE_EXCEEDED are transient. Every successful reply has `backend` set to name() and
// `usage` filled in.
//
// Implementations are thread-safe and keep no per-run state: the router may repeat a call
// (after a crash or a retry), and the same request must be answered the same way.
class PlannerBackend {
 public:
  virtual ~PlannerBackend() = default;

  virtual absl::StatusOr<rein::v1::PlanResponse> Plan(const rein::v1::PlanRequest& request,
                                                      absl::Time deadline) = 0;
  virtual absl::StatusOr<rein::v1::DecideResponse> Decide(const rein::v1::DecideRequest& request,
                                                          absl::Time deadline) = 0;
  virtual absl::StatusOr<rein::v1::EvaluateResponse> Evaluate(
      const rein::v1::EvaluateRequest& request, absl::Time deadline) = 0;

  // The label written into every reply's `backend`: "scripted" or "anthropic:<model>".
  virtual std::string name() const = 0;
};

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_PLANNER_BACKEND_H_
