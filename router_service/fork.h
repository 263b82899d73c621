// Fork points: the state of a recorded run at a point of its log, for ForkRun.
#ifndef REIN_ROUTER_SERVICE_FORK_H_
#define REIN_ROUTER_SERVICE_FORK_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rein/v1/router.pb.h"
#include "rein/v1/types.pb.h"
#include "router_service/stage_router.h"
#include "router_service/store/run_store.h"

namespace rein {

struct ForkPoint {
  rein::v1::RunState state;   // the source's state at the point
  rein::v1::ForkedFrom from;  // run_id, seq (last event of the point's transition), ...
  // The first mutating call the source sent to an executor after the point: the workspace as
  // it was at the point is the history's snapshot taken just before it ran. Empty when none
  // was sent (the source's workspace has not changed since, as far as this run goes).
  std::string first_mutating_call_after;
};

// Finds the point `request.at` names in `source` (its log `events`, seq 1.., and its
// `snapshots`): at.iteration is the state as that iteration began (the first snapshot of that
// iteration); at.seq is the state right after the transition that emitted event seq (from the
// snapshot of that version, else rebuilt by replaying the log up to it). INVALID_ARGUMENT
// naming `at` when the point does not exist (or none is given); FAILED_PRECONDITION naming
// at.seq when the state there cannot be rebuilt (the log diverges from this router before it).
absl::StatusOr<ForkPoint> FindForkPoint(const StageRouter& router, const rein::v1::Run& source,
                                        const std::vector<rein::v1::RunEvent>& events,
                                        const std::vector<Snapshot>& snapshots,
                                        const rein::v1::ForkRunRequest& request);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_FORK_H_
