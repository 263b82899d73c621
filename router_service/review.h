// Reviews of a paused run: approve, reject, edit the plan or the call, answer, each as a
// transition (StageRouter::OnReview).
#ifndef REIN_ROUTER_SERVICE_REVIEW_H_
#define REIN_ROUTER_SERVICE_REVIEW_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rein/v1/types.pb.h"
#include "router_service/transition.h"

namespace rein {

// StageRouter::OnReview, with the router's options.
absl::StatusOr<Transition> ApplyReview(const StageRouterOptions& options, const rein::v1::Run& run,
                                       const rein::v1::Review& review, int64_t expected_version,
                                       absl::Time now);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_REVIEW_H_
