// Calls a model proposes with a plan (first_call) or an evaluation (next_call): whether one can
// be the next decision, and keeping it as DECIDING's pending call.
#ifndef REIN_ROUTER_SERVICE_PROPOSALS_H_
#define REIN_ROUTER_SERVICE_PROPOSALS_H_

#include <optional>
#include <string>

#include "rein/v1/planner.pb.h"
#include "rein/v1/types.pb.h"
#include "router_service/step.h"

namespace rein {

// Why the call an evaluation proposed cannot be the next decision, or nullopt when it can:
// asked for, with NEEDS_MORE_WORK and no goal claim, and a call a Decide reply could carry (a
// tool the top subtask may use, a JSON object of arguments).
std::optional<std::string> ProposalProblem(const rein::v1::Run& run, const rein::v1::RunState& st,
                                           const rein::v1::EvaluateResponse& reply);

// Why the first call a plan proposed cannot be the next decision, or nullopt when it can: asked
// for, and a call a Decide reply for the plan's top subtask could carry. `st` holds the applied
// plan (its top subtask on top of the stack).
std::optional<std::string> FirstCallProblem(const rein::v1::Run& run, const rein::v1::RunState& st,
                                            const rein::v1::PlanResponse& reply, int planned);

// Keeps the proposed call `call` as the DECIDING stage's pending call when the transition in
// `s` went on to DECIDING: Next commits it as the decision (OnProposedCall), after the checks of
// rules 1 and 3, as if a Decide reply had come. Otherwise returns why it was not kept.
std::optional<std::string> KeepProposedCall(Step& s, const rein::v1::ToolCall& call);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_PROPOSALS_H_
