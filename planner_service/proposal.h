// Proposal: checks the next call an Evaluate reply proposes (EvaluateResponse.next_call).
#ifndef REIN_PLANNER_SERVICE_PROPOSAL_H_
#define REIN_PLANNER_SERVICE_PROPOSAL_H_

#include "rein/v1/planner.pb.h"

namespace rein {

// Keeps `reply`'s next_call only when a Decide reply for the same subtask could carry it: the
// request asked for one (propose_next), the reply says NEEDS_MORE_WORK with goal_achieved
// false, the tool is one of the subtask's allowed tools among the run's tools and args_json is
// a JSON object. Otherwise clears it and says why in next_call_dropped; the evaluation itself
// stands. Sets next_call.mutating from the tool's spec. Never fails: the reply is model output.
void CheckProposedCall(const rein::v1::EvaluateRequest& request, rein::v1::EvaluateResponse* reply);

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_PROPOSAL_H_
