// The termination rules of a run (docs/DESIGN.md, "The rules, in order"), as pure functions of its
// spec, state and the time.
#ifndef REIN_ROUTER_SERVICE_TERMINATION_H_
#define REIN_ROUTER_SERVICE_TERMINATION_H_

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "rein/v1/types.pb.h"

namespace rein {

// Why a run must end now.
struct Verdict {
  rein::v1::TerminationReason reason;
  std::string message;
};

// Rules 1-6 in order (the first that holds wins): 1 cancel requested, 2 max_iterations (only
// when `begins_iteration`: the transition would start another iteration), 3 the deadline,
// 4 the retry budget, 5 consecutive tool failures, 6 the token budget (tokens_used >
// token_budget) and right after it the cost budget (cost_used_usd > cost_budget_usd, US
// dollars), each only when set.
std::optional<Verdict> CheckLimits(const rein::v1::RunSpec& spec, const rein::v1::RunState& st,
                                   absl::Time now, bool begins_iteration);

// Rule 7: the stagnation pattern, if any, among the actions recorded since the last
// stagnation mark (the same call with the same observation `stagnation_window` times; the
// same call failing 3 times; two calls alternating over 6). What to do about it depends on
// the spec's on_stagnation and is the stage router's.
std::optional<std::string> DetectStagnation(const rein::v1::RunSpec& spec,
                                            const rein::v1::RunState& st);

// Rule 8: the run may finish only when the goal is achieved AND no subtask is pending.
bool MayFinish(const rein::v1::RunState& st);

// Rule 3's test alone: the run has a deadline and `now` is at or past it.
bool PastDeadline(const rein::v1::RunState& st, absl::Time now);

// Rules 1 or 3 hold: the run must end whatever a call in flight returns.
bool CancelledOrPastDeadline(const rein::v1::RunState& st, absl::Time now);

// CANCELLED for CANCELLED_BY_USER, FAILED for every other reason of CheckLimits.
rein::v1::Stage TerminalStageFor(rein::v1::TerminationReason reason);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_TERMINATION_H_
