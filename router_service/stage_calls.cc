// The calls of an Effect, sent to the planner or the executors.
#include "router_service/stage_calls.h"

#include <map>
#include <utility>

namespace rein {

std::shared_ptr<PendingCall> SendCall(PlannerClient* planner, ExecutorClient* executor,
                                      const Effect& effect, std::function<void(StageReply)> done) {
  switch (effect.kind) {
    case Effect::Kind::kListTools:
      return executor->ListTools(effect.list_tools, effect.deadline,
                                 [done](absl::StatusOr<rein::v1::ListToolsResponse> tools) {
                                   done(ToolsListed{std::move(tools)});
                                 });
    case Effect::Kind::kCheckWorkspace:
      return executor->Execute(
          effect.execute, effect.deadline,
          [done, tools = effect.tools](absl::StatusOr<rein::v1::ExecuteResponse> workspace) {
            done(WorkspaceChecked{tools, std::move(workspace)});
          });
    case Effect::Kind::kPlan:
      return planner->Plan(effect.plan, effect.deadline,
                           [done](absl::StatusOr<rein::v1::PlanResponse> reply) {
                             done(Planned{std::move(reply)});
                           });
    case Effect::Kind::kDecide:
      return planner->Decide(effect.decide, effect.deadline,
                             [done](absl::StatusOr<rein::v1::DecideResponse> reply) {
                               done(Decided{std::move(reply)});
                             });
    case Effect::Kind::kExecute:
      return executor->Execute(effect.execute, effect.deadline,
                               [done](absl::StatusOr<rein::v1::ExecuteResponse> reply) {
                                 done(Executed{std::move(reply)});
                               });
    case Effect::Kind::kEvaluate:
      return planner->Evaluate(effect.evaluate, effect.deadline,
                               [done](absl::StatusOr<rein::v1::EvaluateResponse> reply) {
                                 done(Evaluated{std::move(reply)});
                               });
    case Effect::Kind::kChildren:  // started and observed by the child driver, never sent here
    case Effect::Kind::kNone: break;
  }
  return nullptr;
}

const std::string& CallLabel(Effect::Kind kind) {
  static const auto* labels = new std::map<Effect::Kind, std::string>{
      {Effect::Kind::kListTools, R"(call="ListTools")"},
      {Effect::Kind::kCheckWorkspace, R"(call="CheckWorkspace")"},
      {Effect::Kind::kPlan, R"(call="Plan")"},
      {Effect::Kind::kDecide, R"(call="Decide")"},
      {Effect::Kind::kExecute, R"(call="Execute")"},
      {Effect::Kind::kEvaluate, R"(call="Evaluate")"},
      {Effect::Kind::kChildren, R"(call="Children")"},
      {Effect::Kind::kNone, R"(call="none")"},
  };
  return labels->at(kind);
}

}  // namespace rein
