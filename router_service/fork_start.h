// The first transition of a fork (StageRouter::Fork): the source's state at the point, reset
// for a run of its own, with the edits applied.
#ifndef REIN_ROUTER_SERVICE_FORK_START_H_
#define REIN_ROUTER_SERVICE_FORK_START_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rein/v1/types.pb.h"
#include "router_service/transition.h"

namespace rein {

// StageRouter::Fork, with the router's options.
absl::StatusOr<Transition> StartFork(const StageRouterOptions& options, const rein::v1::Run& run,
                                     const rein::v1::ForkedFrom& from,
                                     const rein::v1::ForkEdits& edits, bool workspace_at_fork,
                                     absl::Time now);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_FORK_START_H_
