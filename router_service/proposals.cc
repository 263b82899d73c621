// Calls a model proposes with a plan or an evaluation.
#include "router_service/proposals.h"

#include "absl/strings/str_cat.h"
#include "router_service/subtasks.h"

namespace rein {

using rein::v1::Run;
using rein::v1::RunState;
using rein::v1::ToolCall;

// Why the call an evaluation proposed cannot be the next decision, or nullopt when it can:
// asked for, with NEEDS_MORE_WORK and no goal claim, and a call a Decide reply could carry (a
// tool the top subtask may use, a JSON object of arguments).
std::optional<std::string> ProposalProblem(const Run& run, const RunState& st,
                                           const rein::v1::EvaluateResponse& reply) {
  if (!CombinesEvaluateDecide(run.spec())) {
    return "not asked for: the run's combine_evaluate_decide is false";
  }
  if (reply.status() != rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK || reply.goal_achieved()) {
    return "a next call comes only with status NEEDS_MORE_WORK and goal_achieved false";
  }
  RunState scratch = st;  // MakeCall bumps the call counter: the real call is made later
  absl::StatusOr<ToolCall> call =
      MakeCall(run, scratch, reply.next_call().tool(), reply.next_call().args_json(), "next_call");
  if (!call.ok()) return std::string(call.status().message());
  return std::nullopt;
}

// Why the first call a plan proposed cannot be the next decision, or nullopt when it can: asked
// for, and a call a Decide reply for the plan's top subtask could carry. `st` holds the applied
// plan (its top subtask on top of the stack).
std::optional<std::string> FirstCallProblem(const Run& run, const RunState& st,
                                            const rein::v1::PlanResponse& reply, int planned) {
  if (!CombinesPlanDecide(run.spec())) {
    return "not asked for: the run's combine_plan_decide is false";
  }
  if (planned == 0) return "the plan has no subtasks";
  if (reply.first_call().tool().empty()) return "first_call.tool: missing";
  RunState scratch = st;  // MakeCall bumps the call counter: the real call is made later
  absl::StatusOr<ToolCall> call = MakeCall(run, scratch, reply.first_call().tool(),
                                           reply.first_call().args_json(), "first_call");
  if (!call.ok()) return std::string(call.status().message());
  return std::nullopt;
}

// Keeps the proposed call `call` as the DECIDING stage's pending call when the transition in
// `s` went on to DECIDING: Next commits it as the decision (OnProposedCall), after the checks of
// rules 1 and 3, as if a Decide reply had come. Otherwise returns why it was not kept.
std::optional<std::string> KeepProposedCall(Step& s, const ToolCall& call) {
  RunState& st = s.state();
  if (st.stage() == rein::v1::DECIDING) {
    st.mutable_pending_call()->set_tool(call.tool());
    st.mutable_pending_call()->set_args_json(call.args_json());
    return std::nullopt;
  }
  return absl::StrCat("the run went on to ", rein::v1::Stage_Name(st.stage()),
                      st.stage() == rein::v1::PAUSED
                          ? absl::StrCat(" (", rein::v1::PauseReason_Name(st.pause().reason()), ")")
                          : "",
                      ", not DECIDING");
}

}  // namespace rein
