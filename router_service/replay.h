// Replay: drives a recorded run (its spec and event log) through the current StageRouter,
// with the planner's replies, tool results, reviews and times taken from the log, and reports
// whether the router still does exactly what it did then. No model, executor or clock.
#ifndef REIN_ROUTER_SERVICE_REPLAY_H_
#define REIN_ROUTER_SERVICE_REPLAY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rein/v1/types.pb.h"
#include "router_service/event_description.h"
#include "router_service/stage_router.h"

namespace rein {

// Where the router of today departs from the recorded run.
struct Divergence {
  int64_t seq = 0;  // the recorded event that differs (or would come next)
  rein::v1::Stage stage = rein::v1::STAGE_UNSPECIFIED;  // the run's stage just before it
  std::string recorded;                                 // what the recorded run did
  std::string now;                                      // what the router does now
  std::string detail;                                   // the fields that differ
};

struct ReplayResult {
  std::optional<Divergence> divergence;  // none: identical
  int64_t events_replayed = 0;           // recorded events matched
  rein::v1::Run run;                     // the replayed run as of the last matched transition
};

struct ReplayOptions {
  // Stop once the transition holding event `stop_after_seq` has been matched (0 = replay the
  // whole log). The returned run is then the state right after that event's transition.
  int64_t stop_after_seq = 0;
};

// Replays `events` (the whole log of `recorded`, seq 1, 2, ... in order) through `router`.
// `recorded` supplies the run id, request id and spec, and the tools the executors listed (its
// state's tools). A log of another format is FAILED_PRECONDITION saying which format replay
// needs and which the log has; an empty log or one with gaps is INVALID_ARGUMENT. A run that
// cost money (RunState.cost_used_usd > 0) needs `router` to hold the price table it was priced
// with (StageRouterOptions::prices; FAILED_PRECONDITION without one): its events carry costs.
absl::StatusOr<ReplayResult> ReplayRun(const StageRouter& router, const rein::v1::Run& recorded,
                                       const std::vector<rein::v1::RunEvent>& events,
                                       const ReplayOptions& options = {});

// One line: "identical (N events)" or "diverges at seq S in STAGE: recorded ...; now ...".
std::string DescribeReplay(const ReplayResult& result);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_REPLAY_H_
