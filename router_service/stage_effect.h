// StageEffect: the call a run's stage makes (the planner's or an executor's request), built
// from its spec and state.
#ifndef REIN_ROUTER_SERVICE_STAGE_EFFECT_H_
#define REIN_ROUTER_SERVICE_STAGE_EFFECT_H_

#include "absl/time/time.h"
#include "rein/v1/types.pb.h"
#include "router_service/transition.h"

namespace rein {

// The call for the run's stage at `now` (StageRouter::NextEffect): ListTools in INITIALIZING,
// Plan, Decide, the pending call's Execute, Evaluate; kNone for the other stages and for a
// working stage that has nothing to call. Its deadline is the stage timeout or the run's
// deadline, whichever comes first. Pure.
Effect StageEffect(const StageRouterOptions& options, const rein::v1::Run& run, absl::Time now);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STAGE_EFFECT_H_
