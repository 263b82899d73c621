// StageEffect: the call a run's stage makes (the planner's or an executor's request), built
// from its spec and state.
#include "router_service/stage_effect.h"

#include <algorithm>

#include "common/proto_time.h"
#include "router_service/children/child_group.h"
#include "router_service/step.h"
#include "router_service/subtasks.h"

namespace rein {

using rein::v1::Run;
using rein::v1::RunSpec;
using rein::v1::RunState;
using rein::v1::ToolSpec;

Effect StageEffect(const StageRouterOptions& options, const Run& run, absl::Time now) {
  Effect effect;
  const RunState& st = run.state();
  const RunSpec& spec = run.spec();
  absl::Time deadline = st.has_deadline() ? FromProtoTime(st.deadline()) : absl::InfiniteFuture();
  effect.deadline = std::min(now + FromProtoDuration(spec.limits().stage_timeout()), deadline);
  switch (st.stage()) {
    case rein::v1::INITIALIZING:
      effect.kind = Effect::Kind::kListTools;
      effect.list_tools.set_namespace_(spec.namespace_());
      break;
    case rein::v1::PLANNING: {
      effect.kind = Effect::Kind::kPlan;
      auto& req = effect.plan;
      req.set_run_id(run.run_id());
      req.set_goal(spec.goal());
      int first = std::max(0, st.completed_subtasks_size() - options.max_completed_in_plan);
      for (int i = first; i < st.completed_subtasks_size(); ++i) {
        *req.add_completed() = st.completed_subtasks(i);
      }
      req.set_latest_observation(st.latest_observation());
      int h = std::max(0, st.human_inputs_size() - options.max_human_inputs_in_request);
      for (int i = h; i < st.human_inputs_size(); ++i) *req.add_human_inputs() = st.human_inputs(i);
      *req.mutable_tools() = st.tools();
      req.set_replan_reason(st.replan_reason());
      req.set_propose_first_call(CombinesPlanDecide(spec));
      *req.mutable_model() = spec.model();
      req.set_iteration(st.iteration());
      OfferDelegation(spec, st, &req);
      break;
    }
    case rein::v1::DECIDING: {
      if (st.subtasks_size() == 0) break;  // cannot happen: DECIDING needs a subtask
      effect.kind = Effect::Kind::kDecide;
      auto& req = effect.decide;
      req.set_run_id(run.run_id());
      req.set_goal(spec.goal());
      *req.mutable_subtask() = st.subtasks(0);
      for (const std::string& name : st.subtasks(0).allowed_tools()) {
        if (const ToolSpec* tool = FindTool(st, name)) *req.add_tools() = *tool;
      }
      *req.mutable_run_tools() = st.tools();
      int a = std::max(0, st.recent_actions_size() - options.decide_actions);
      for (int i = a; i < st.recent_actions_size(); ++i) {
        *req.add_recent_actions() = st.recent_actions(i);
      }
      int h = std::max(0, st.human_inputs_size() - options.max_human_inputs_in_request);
      for (int i = h; i < st.human_inputs_size(); ++i) *req.add_human_inputs() = st.human_inputs(i);
      *req.mutable_model() = spec.model();
      req.set_iteration(st.iteration());
      break;
    }
    case rein::v1::EXECUTING: {
      effect.kind = Effect::Kind::kExecute;
      auto& req = effect.execute;
      req.set_call_id(st.pending_call().call_id());
      req.set_run_id(run.run_id());
      req.set_workspace(spec.workspace());
      req.set_namespace_(spec.namespace_());
      req.set_tool(st.pending_call().tool());
      req.set_args_json(st.pending_call().args_json());
      // The schema the run pinned at INITIALIZING: the executor refuses a changed tool.
      if (const ToolSpec* tool = FindTool(st, st.pending_call().tool())) {
        req.set_tool_schema_hash(tool->schema_hash());
      }
      effect.mutating = st.pending_call().mutating();
      *req.mutable_limits()->mutable_timeout() =
          ToProtoDuration(std::max(absl::ZeroDuration(), effect.deadline - now));
      break;
    }
    case rein::v1::EVALUATING: {
      if (st.subtasks_size() == 0 || st.recent_actions_size() == 0) break;
      effect.kind = Effect::Kind::kEvaluate;
      auto& req = effect.evaluate;
      req.set_run_id(run.run_id());
      req.set_goal(spec.goal());
      *req.mutable_subtask() = st.subtasks(0);
      *req.mutable_action() = st.recent_actions(st.recent_actions_size() - 1);
      req.set_observation(st.latest_observation());
      *req.mutable_run_tools() = st.tools();
      req.set_propose_next(CombinesEvaluateDecide(spec));
      *req.mutable_model() = spec.model();
      req.set_iteration(st.iteration());
      break;
    }
    default: break;
  }
  return effect;
}

}  // namespace rein
