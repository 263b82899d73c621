// The calls of an Effect, sent to the planner or the executors, each reply as a StageReply.
#ifndef REIN_ROUTER_SERVICE_STAGE_CALLS_H_
#define REIN_ROUTER_SERVICE_STAGE_CALLS_H_

#include <functional>
#include <memory>
#include <string>

#include "router_service/clients.h"
#include "router_service/transition.h"

namespace rein {

// Sends `effect`'s call; `done` gets its reply (once, on the client's thread). nullptr for
// Effect::Kind::kNone.
std::shared_ptr<PendingCall> SendCall(PlannerClient* planner, ExecutorClient* executor,
                                      const Effect& effect, std::function<void(StageReply)> done);

// The `call` label of a call's metrics, e.g. `call="Plan"` (built once: every reply records
// two).
const std::string& CallLabel(Effect::Kind kind);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STAGE_CALLS_H_
