// StageRouter: the pure stage logic of a run.
#include "router_service/stage_router.h"

#include <algorithm>
#include <set>
#include <utility>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/proto_time.h"
#include "common/status_macros.h"
#include "common/usage_payload.h"
#include "router_service/children/child_group.h"
#include "router_service/fork_start.h"
#include "router_service/price_table.h"
#include "router_service/proposals.h"
#include "router_service/review.h"
#include "router_service/stage_effect.h"
#include "router_service/step.h"
#include "router_service/subtasks.h"
#include "router_service/termination.h"

namespace rein {
namespace {

using rein::v1::Action;
using rein::v1::Pause;
using rein::v1::Run;
using rein::v1::RunSpec;
using rein::v1::RunState;
using rein::v1::Stage;
using rein::v1::SubTask;
using rein::v1::ToolCall;
using rein::v1::ToolSpec;

}  // namespace

void StageRouter::Recycle(RunState&& used) { RecycleState(std::move(used)); }

bool StageRouter::IsTerminal(Stage stage) { return IsTerminalStage(stage); }

bool StageRouter::IsFatalPlannerError(absl::StatusCode code) {
  return rein::IsFatalPlannerError(code);
}

Transition StageRouter::NewRun(const std::string& run_id, const std::string& request_id,
                               const RunSpec& spec, absl::Time now, Run* run) const {
  run->set_run_id(run_id);
  run->set_request_id(request_id);
  *run->mutable_spec() = spec;
  *run->mutable_created_at() = ToProtoTime(now);
  *run->mutable_updated_at() = ToProtoTime(now);
  RunState* st = run->mutable_state();
  st->set_stage(rein::v1::STAGE_UNSPECIFIED);
  st->set_version(0);
  *st->mutable_started_at() = ToProtoTime(now);
  *st->mutable_deadline() = ToProtoTime(now + FromProtoDuration(spec.limits().deadline()));
  Step s(*run, now);
  s.MoveTo(rein::v1::INITIALIZING);
  s.events().back().mutable_stage_changed()->set_log_format(kLogFormat);
  Transition t = std::move(s).Finish();
  *run->mutable_state() = t.state;
  return t;
}

Effect StageRouter::NextEffect(const Run& run, absl::Time now) const {
  return StageEffect(options_, run, now);
}

Applied StageRouter::Apply(const Run& run, const StageReply& reply, absl::Time now) const {
  struct Visitor {
    const StageRouter& router;
    const Run& run;
    absl::Time now;
    Applied operator()(const ToolsListed& r) const {
      if (r.tools.ok() && HasFileInfo(r.tools->tools())) {
        // The executors can check the workspace: do so before the run moves on.
        Effect check = router.NextEffect(run, now);
        check.kind = Effect::Kind::kCheckWorkspace;
        check.tools = *r.tools;
        check.execute =
            WorkspaceCheck(run.run_id(), run.spec().workspace(), run.spec().namespace_());
        return {std::nullopt, std::move(check)};
      }
      return {router.OnTools(run, r.tools, std::nullopt, now), std::nullopt};
    }
    Applied operator()(const WorkspaceChecked& r) const {
      return {router.OnTools(run, r.tools, r.workspace, now), std::nullopt};
    }
    Applied operator()(const Planned& r) const { return {router.OnPlan(run, r.reply, now), {}}; }
    Applied operator()(const Decided& r) const { return {router.OnDecide(run, r.reply, now), {}}; }
    Applied operator()(const Executed& r) const {
      return {router.OnExecute(run, r.reply, now), std::nullopt};
    }
    Applied operator()(const Evaluated& r) const {
      return {router.OnEvaluate(run, r.reply, now), std::nullopt};
    }
    Applied operator()(const ChildrenObserved& r) const {
      // Nothing to commit (no child started or ended yet): neither a transition nor a call.
      return {OnChildren(router.options(), run, r, now), std::nullopt};
    }
  };
  return std::visit(Visitor{*this, run, now}, reply);
}

Transition StageRouter::OnTools(
    const Run& run, const absl::StatusOr<rein::v1::ListToolsResponse>& tools,
    const std::optional<absl::StatusOr<rein::v1::ExecuteResponse>>& workspace,
    absl::Time now) const {
  Step s(run, now);
  if (!tools.ok()) {
    SpendRetry(s, rein::v1::INITIALIZING, absl::StatusCodeToString(tools.status().code()),
               absl::StrCat(kListToolsErrorPrefix, tools.status().message()));
    return std::move(s).Finish();
  }
  if (workspace.has_value()) {
    if (!workspace->ok()) {
      SpendRetry(s, rein::v1::INITIALIZING, absl::StatusCodeToString(workspace->status().code()),
                 absl::StrCat(kWorkspaceCheckErrorPrefix, workspace->status().message()));
      return std::move(s).Finish();
    }
    if (!(*workspace)->ok()) {
      if (EndIfLimited(s, /*begins_iteration=*/false)) return std::move(s).Finish();
      // No tool can run without the workspace, and retrying cannot bring it back.
      Terminate(s, rein::v1::FAILED, rein::v1::CONSECUTIVE_TOOL_FAILURES,
                WorkspaceGoneMessage(run, (*workspace)->error()));
      return std::move(s).Finish();
    }
  }
  RunState& st = s.state();
  st.clear_tools();
  if (run.spec().tools_size() == 0) {
    for (const ToolSpec& tool : tools->tools()) {
      if (!tool.mutating()) *st.add_tools() = tool;
    }
  } else {
    for (const std::string& name : run.spec().tools()) {
      auto it = std::find_if(tools->tools().begin(), tools->tools().end(),
                             [&](const ToolSpec& t) { return t.name() == name; });
      if (it == tools->tools().end()) {
        if (EndIfLimited(s, /*begins_iteration=*/false)) return std::move(s).Finish();
        Terminate(s, rein::v1::FAILED, rein::v1::INTERNAL,
                  absl::StrCat("tool \"", name, "\" is not offered by the executor"));
        return std::move(s).Finish();
      }
      *st.add_tools() = *it;
    }
  }
  Enter(s, rein::v1::PLANNING);
  return std::move(s).Finish();
}

Transition StageRouter::OnPlan(const Run& run, const absl::StatusOr<rein::v1::PlanResponse>& reply,
                               absl::Time now) const {
  Step s(run, now);
  RunState& st = s.state();
  if (!reply.ok()) {
    PlannerFailed(s, rein::v1::PLANNING, reply.status(), options_.prices.get());
    return std::move(s).Finish();
  }
  ChargeReply(s, reply->usage(), BackendOf(st, reply->backend()), options_.prices.get());
  if (!reply->backend().empty()) st.set_planner_backend(reply->backend());
  if (!reply->refusal().empty()) {
    Pause pause = MakePause(rein::v1::NEED_HUMAN, rein::v1::PLANNING,
                            absl::StrCat("the model refused to plan: ", reply->refusal()));
    pause.set_question(reply->refusal());
    PauseRun(s, std::move(pause));
    return std::move(s).Finish();
  }
  google::protobuf::RepeatedPtrField<SubTask> planned = reply->subtasks();
  if (absl::Status valid = ValidateSubtasks(st, "subtasks", &planned); !valid.ok()) {
    InvalidOutput(s, rein::v1::PLANNING, std::string(valid.message()), *reply);
    return std::move(s).Finish();
  }
  if (absl::Status fits = CheckDelegation(run.spec(), st, planned, "subtasks"); !fits.ok()) {
    InvalidOutput(s, rein::v1::PLANNING, std::string(fits.message()), *reply);
    return std::move(s).Finish();
  }
  const size_t event_index = s.events().size();
  auto* event = s.AddEvent()->mutable_plan();
  event->set_reasoning(reply->reasoning());
  *event->mutable_subtasks() = planned;
  event->set_goal_achieved(reply->goal_achieved());
  event->set_notes(reply->notes());
  event->set_planner_backend(reply->backend());
  *event->mutable_usage() = reply->usage();
  // A proposed first call: recorded as received, then kept or dropped (saying why) below.
  const bool proposed = reply->has_first_call();
  if (proposed) {
    event->mutable_first_call()->set_tool(reply->first_call().tool());
    event->mutable_first_call()->set_args_json(reply->first_call().args_json());
  }
  auto drop_first_call = [&](const std::string& why) {
    if (proposed) s.events()[event_index].mutable_plan()->set_first_call_dropped(why);
  };
  st.set_goal_achieved(reply->goal_achieved());
  AddNote(s, reply->notes(), options_.max_notes);
  if (planned.empty() && !reply->goal_achieved()) {
    drop_first_call("the plan has no subtasks");
    SpendRetry(s, rein::v1::PLANNING, "INVALID_OUTPUT",
               "the plan has no subtasks and the goal is not achieved")
        ->set_reply(reply->SerializeAsString());
    return std::move(s).Finish();
  }
  st.clear_replan_reason();
  // New subtasks go on top of the stack, in the planner's order.
  google::protobuf::RepeatedPtrField<SubTask> stack = planned;
  for (const SubTask& task : st.subtasks()) *stack.Add() = task;
  *st.mutable_subtasks() = std::move(stack);
  if (st.subtasks_size() == 0) {  // goal achieved, nothing pending
    drop_first_call("the plan has no subtasks");
    if (!reply->notes().empty() && PausesOnNotes(run.spec())) {
      PauseRun(s, MakePause(rein::v1::NOTES, rein::v1::FINISHED, reply->notes()));
    } else {
      FinishRun(s);
    }
    return std::move(s).Finish();
  }
  // Checked against the applied plan (its top subtask on top), before any pause or limit.
  std::optional<std::string> dropped;
  if (proposed) dropped = FirstCallProblem(run, st, *reply, planned.size());
  if (!reply->notes().empty() && PausesOnNotes(run.spec())) {
    PauseRun(s, MakePause(rein::v1::NOTES, rein::v1::DECIDING, reply->notes()));
  } else if (!planned.empty() && HasPausePoint(run.spec(), rein::v1::AFTER_PLAN)) {
    Pause pause = MakePause(rein::v1::PAUSE_POINT, rein::v1::DECIDING,
                            absl::StrCat("plan of ", planned.size(), " subtasks ready for review"));
    pause.set_point(rein::v1::AFTER_PLAN);
    PauseRun(s, std::move(pause));
  } else {
    Enter(s, rein::v1::DECIDING);
  }
  if (proposed && !dropped) dropped = KeepProposedCall(s, reply->first_call());
  if (dropped) drop_first_call(*dropped);
  return std::move(s).Finish();
}

Transition StageRouter::OnDecide(const Run& run,
                                 const absl::StatusOr<rein::v1::DecideResponse>& reply,
                                 absl::Time now) const {
  Step s(run, now);
  RunState& st = s.state();
  if (!reply.ok()) {
    PlannerFailed(s, rein::v1::DECIDING, reply.status(), options_.prices.get());
    return std::move(s).Finish();
  }
  ChargeReply(s, reply->usage(), BackendOf(st, reply->backend()), options_.prices.get());
  if (!reply->backend().empty()) st.set_planner_backend(reply->backend());
  if (st.subtasks_size() == 0) {
    Terminate(s, rein::v1::FAILED, rein::v1::INTERNAL, "DECIDING with an empty subtask stack");
    return std::move(s).Finish();
  }
  st.mutable_subtasks(0)->set_status(SubTask::IN_PROGRESS);
  if (!reply->refusal().empty()) {
    Pause pause = MakePause(rein::v1::NEED_HUMAN, rein::v1::DECIDING,
                            absl::StrCat("the model refused to decide: ", reply->refusal()));
    pause.set_question(reply->refusal());
    PauseRun(s, std::move(pause));
    return std::move(s).Finish();
  }
  auto* event = s.AddEvent()->mutable_decision();
  event->set_reasoning(reply->reasoning());
  event->set_subtask_id(st.subtasks(0).id());
  event->set_notes(reply->notes());
  event->set_planner_backend(reply->backend());
  *event->mutable_usage() = reply->usage();
  if (reply->has_tool_call()) {
    absl::StatusOr<ToolCall> call =
        MakeCall(run, st, reply->tool_call().tool(), reply->tool_call().args_json(), "tool_call");
    if (!call.ok()) {
      // Drop the decision (and the call counter MakeCall bumped): the output was invalid.
      Step retry(run, now);
      retry.state().mutable_subtasks(0)->set_status(SubTask::IN_PROGRESS);
      ChargeReply(retry, reply->usage(), BackendOf(st, reply->backend()), options_.prices.get());
      InvalidOutput(retry, rein::v1::DECIDING, std::string(call.status().message()), *reply);
      return std::move(retry).Finish();
    }
    *event->mutable_tool_call() = *call;
    AddNote(s, reply->notes(), options_.max_notes);
    *st.mutable_pending_call() = *call;
    Pause pause;
    if (!reply->notes().empty() && PausesOnNotes(run.spec())) {
      pause = MakePause(rein::v1::NOTES, rein::v1::EXECUTING, reply->notes());
    } else if (HasPausePoint(run.spec(), rein::v1::BEFORE_TOOL) ||
               (call->mutating() && HasPausePoint(run.spec(), rein::v1::BEFORE_MUTATING_TOOL))) {
      rein::v1::PausePoint point = HasPausePoint(run.spec(), rein::v1::BEFORE_TOOL)
                                       ? rein::v1::BEFORE_TOOL
                                       : rein::v1::BEFORE_MUTATING_TOOL;
      pause = MakePause(rein::v1::PAUSE_POINT, rein::v1::EXECUTING,
                        absl::StrCat("about to call ", call->tool(), " ", call->args_json()));
      pause.set_point(point);
    }
    if (pause.reason() != rein::v1::PAUSE_REASON_UNSPECIFIED) {
      *pause.mutable_pending_call() = *call;
      PauseRun(s, std::move(pause));
      return std::move(s).Finish();
    }
    Enter(s, rein::v1::EXECUTING);
    return std::move(s).Finish();
  }
  if (!reply->human_query().empty()) {
    event->set_human_query(reply->human_query());
    AddNote(s, reply->notes(), options_.max_notes);
    Pause pause = MakePause(rein::v1::NEED_HUMAN, rein::v1::DECIDING, reply->human_query());
    pause.set_question(reply->human_query());
    PauseRun(s, std::move(pause));
    return std::move(s).Finish();
  }
  Step retry(run, now);
  ChargeReply(retry, reply->usage(), BackendOf(st, reply->backend()), options_.prices.get());
  InvalidOutput(retry, rein::v1::DECIDING, "the decision has neither a tool_call nor a human_query",
                *reply);
  return std::move(retry).Finish();
}

Transition StageRouter::MarkDispatched(const Run& run, absl::Time now) const {
  Step s(run, now);
  s.state().set_call_dispatched(true);
  return std::move(s).Finish();
}

Transition StageRouter::OnExecute(const Run& run,
                                  const absl::StatusOr<rein::v1::ExecuteResponse>& reply,
                                  absl::Time now) const {
  Step s(run, now);
  RunState& st = s.state();
  if (!reply.ok() && (reply.status().code() == absl::StatusCode::kResourceExhausted ||
                      reply.status().code() == absl::StatusCode::kAborted)) {
    // The executor is full and did not run the call (RESOURCE_EXHAUSTED), or the call is still
    // running on a live executor ("in progress", ABORTED): it is asked again after a backoff
    // (the same call_id; the round_robin channel takes the next executor) without charging
    // the run's budget.
    auto* error = s.AddEvent()->mutable_error();
    error->set_stage(rein::v1::EXECUTING);
    error->set_code(absl::StatusCodeToString(reply.status().code()));
    error->set_message(absl::StrCat(kExecuteErrorPrefix, reply.status().message()));
    error->set_retry_spent(false);
    EndIfLimited(s, /*begins_iteration=*/false);
    return std::move(s).Finish();
  }
  if (!reply.ok()) {
    // A mutating call that was sent may have run even though no reply came back. It is asked
    // again, after a backoff, with the same call_id: the executors' call journal then answers
    // with its recorded reply, waits for it, or says that its outcome is unknown (below).
    SpendRetry(s, rein::v1::EXECUTING, absl::StatusCodeToString(reply.status().code()),
               absl::StrCat(kExecuteErrorPrefix, reply.status().message()));
    return std::move(s).Finish();
  }
  if (reply->outcome_unknown() && st.pending_call().mutating()) {
    // The executor that started the call died mid-call: whether it ran is unknown, and only a
    // person can say whether to run it again. No budget is spent: nothing failed that a retry
    // could fix.
    Pause pause = MakePause(
        rein::v1::RECOVERY, rein::v1::EXECUTING,
        absl::StrCat("mutating call ", st.pending_call().call_id(), " (", st.pending_call().tool(),
                     " ", st.pending_call().args_json(), "): executor ", reply->executor_id(),
                     " died mid-call, so whether it ran is unknown (", reply->error().message(),
                     "); approve to run it again as a new call, edit it, or reject"));
    *pause.mutable_pending_call() = st.pending_call();
    st.set_call_dispatched(false);
    PauseRun(s, std::move(pause));
    return std::move(s).Finish();
  }
  if (reply->replayed()) {
    auto* replayed = s.AddEvent()->mutable_call_replayed();
    replayed->set_call_id(st.pending_call().call_id());
    replayed->set_executor_id(reply->executor_id());
  }
  const ToolCall& call = st.pending_call();
  Action action;
  action.set_iteration(st.iteration());
  action.set_subtask_id(st.subtasks_size() > 0 ? st.subtasks(0).id() : "");
  action.set_call_id(call.call_id());
  action.set_tool(call.tool());
  action.set_args_json(call.args_json());
  action.set_ok(reply->ok());
  action.set_observation(Cap(reply->output(), options_.max_observation_bytes));
  if (!reply->ok()) {
    action.set_error(absl::StrCat(reply->error().code(), ": ", reply->error().message()));
  }
  *action.mutable_duration() = reply->duration();
  action.set_executor_id(reply->executor_id());
  st.set_latest_observation(
      reply->ok() ? action.observation()
                  : Cap(absl::StrCat("error ", action.error(), reply->output().empty() ? "" : "\n",
                                     reply->output()),
                        options_.max_observation_bytes));
  st.set_consecutive_tool_failures(reply->ok() ? 0 : st.consecutive_tool_failures() + 1);
  *st.add_recent_actions() = action;
  while (st.recent_actions_size() > run.spec().limits().action_window()) {
    st.mutable_recent_actions()->erase(st.mutable_recent_actions()->begin());
  }
  st.set_actions_total(st.actions_total() + 1);
  auto* event = s.AddEvent()->mutable_tool_result();
  *event->mutable_action() = action;
  event->set_truncated(reply->truncated());
  event->set_snapshot_skipped(reply->snapshot_skipped());
  st.clear_pending_call();
  st.set_call_dispatched(false);
  if (!reply->ok() && IsWorkspaceMissing(reply->error())) {
    // The workspace disappeared under the run: every further call would fail the same way.
    if (EndIfLimited(s, /*begins_iteration=*/false)) return std::move(s).Finish();
    Terminate(s, rein::v1::FAILED, rein::v1::CONSECUTIVE_TOOL_FAILURES,
              WorkspaceGoneMessage(run, reply->error()));
    return std::move(s).Finish();
  }
  Enter(s, rein::v1::EVALUATING);
  return std::move(s).Finish();
}

Transition StageRouter::OnEvaluate(const Run& run,
                                   const absl::StatusOr<rein::v1::EvaluateResponse>& reply,
                                   absl::Time now) const {
  Step s(run, now);
  RunState& st = s.state();
  if (!reply.ok()) {
    PlannerFailed(s, rein::v1::EVALUATING, reply.status(), options_.prices.get());
    return std::move(s).Finish();
  }
  ChargeReply(s, reply->usage(), BackendOf(st, reply->backend()), options_.prices.get());
  if (!reply->backend().empty()) st.set_planner_backend(reply->backend());
  if (!reply->refusal().empty()) {
    Pause pause = MakePause(rein::v1::NEED_HUMAN, rein::v1::EVALUATING,
                            absl::StrCat("the model refused to evaluate: ", reply->refusal()));
    pause.set_question(reply->refusal());
    PauseRun(s, std::move(pause));
    return std::move(s).Finish();
  }
  using Status = rein::v1::RunEvent::Evaluation;
  if (reply->status() != Status::COMPLETED && reply->status() != Status::FAILED &&
      reply->status() != Status::NEEDS_MORE_WORK) {
    InvalidOutput(s, rein::v1::EVALUATING,
                  absl::StrCat("status: must be COMPLETED, FAILED or NEEDS_MORE_WORK, got ",
                               static_cast<int>(reply->status())),
                  *reply);
    return std::move(s).Finish();
  }
  if (st.subtasks_size() == 0) {
    Terminate(s, rein::v1::FAILED, rein::v1::INTERNAL, "EVALUATING with an empty subtask stack");
    return std::move(s).Finish();
  }
  const size_t event_index = s.events().size();
  auto* event = s.AddEvent()->mutable_evaluation();
  event->set_reasoning(reply->reasoning());
  event->set_subtask_id(st.subtasks(0).id());
  event->set_status(reply->status());
  event->set_summary(reply->summary());
  event->set_goal_achieved(reply->goal_achieved());
  event->set_notes(reply->notes());
  event->set_planner_backend(reply->backend());
  *event->mutable_usage() = reply->usage();
  // A proposed next call (checked against the state before the subtask can be popped).
  const bool proposed = !reply->next_call().tool().empty();
  std::optional<std::string> dropped;
  if (proposed) {
    event->mutable_next_call()->set_tool(reply->next_call().tool());
    event->mutable_next_call()->set_args_json(reply->next_call().args_json());
    dropped = ProposalProblem(run, st, *reply);
  } else if (!reply->next_call_dropped().empty()) {
    dropped = reply->next_call_dropped();  // the planner's reason
  }
  if (reply->status() != Status::NEEDS_MORE_WORK) {
    EndSubtask(st, st.subtasks(0),
               reply->status() == Status::COMPLETED ? SubTask::COMPLETED : SubTask::FAILED,
               reply->summary());
    st.mutable_subtasks()->erase(st.mutable_subtasks()->begin());
  }
  st.set_goal_achieved(reply->goal_achieved());
  AddNote(s, reply->notes(), options_.max_notes);
  Stage next = NextAfterEvaluation(st);
  Pause pause;
  if (!reply->notes().empty() && PausesOnNotes(run.spec())) {
    pause = MakePause(rein::v1::NOTES, next, reply->notes());
  } else if (HasPausePoint(run.spec(), rein::v1::AFTER_EVALUATE)) {
    pause = MakePause(rein::v1::PAUSE_POINT, next,
                      absl::StrCat("subtask ", event->subtask_id(), " evaluated ",
                                   Status::Status_Name(reply->status())));
    pause.set_point(rein::v1::AFTER_EVALUATE);
  }
  ContinueAfterEvaluation(s, next, std::move(pause));
  if (proposed && !dropped) dropped = KeepProposedCall(s, reply->next_call());
  if (dropped) s.events()[event_index].mutable_evaluation()->set_next_call_dropped(*dropped);
  return std::move(s).Finish();
}

Transition StageRouter::OnProposedCall(const Run& run, absl::Time now) const {
  // Exactly a Decide reply carrying the call, with no usage of its own. A plan's call is for a
  // subtask nothing has been decided for yet (PENDING); an evaluation's is for the subtask it
  // judged, which its decision set IN_PROGRESS.
  const bool from_plan =
      run.state().subtasks_size() > 0 && run.state().subtasks(0).status() != SubTask::IN_PROGRESS;
  rein::v1::DecideResponse reply;
  reply.mutable_tool_call()->set_tool(run.state().pending_call().tool());
  reply.mutable_tool_call()->set_args_json(run.state().pending_call().args_json());
  reply.set_backend(run.state().planner_backend());
  Run deciding = run;
  deciding.mutable_state()->clear_pending_call();
  Transition t = OnDecide(deciding, reply, now);
  for (rein::v1::RunEvent& event : t.events) {
    if (!event.has_decision()) continue;
    if (from_plan) {
      event.mutable_decision()->set_from_plan(true);
    } else {
      event.mutable_decision()->set_from_evaluation(true);
    }
  }
  return t;
}

absl::StatusOr<Transition> StageRouter::OnReview(const Run& run, const rein::v1::Review& review,
                                                 int64_t expected_version, absl::Time now) const {
  return ApplyReview(options_, run, review, expected_version, now);
}

std::optional<Transition> StageRouter::OnCancel(const Run& run, bool call_in_flight,
                                                const std::string& reason, absl::Time now) const {
  if (IsTerminal(run.state().stage())) return std::nullopt;
  Step s(run, now);
  // A WAITING parent ends only once its children have (router_service/children): the cancel
  // is recorded, the children are cancelled, and the join ends the parent.
  if (call_in_flight || run.state().stage() == rein::v1::WAITING) {
    if (run.state().cancel_requested()) return std::nullopt;
    s.state().set_cancel_requested(true);
    s.AddEvent()->mutable_cancel_requested()->set_reason(reason);
  } else {
    Terminate(s, rein::v1::CANCELLED, rein::v1::CANCELLED_BY_USER,
              reason.empty() ? "cancelled by user" : absl::StrCat("cancelled by user: ", reason));
  }
  return std::move(s).Finish();
}

std::optional<Transition> StageRouter::OnRemoteCancel(const Run& run, const std::string& reason,
                                                      absl::Time now) const {
  // The owner may have a call in flight: the request is recorded and the owner ends the run. A
  // paused run has nothing in flight and ends here at once.
  return OnCancel(run, /*call_in_flight=*/run.state().stage() != rein::v1::PAUSED, reason, now);
}

NextStep StageRouter::Next(const Run& run, absl::Time now, absl::Time not_before) const {
  NextStep next;
  const RunState& st = run.state();
  if (IsTerminal(st.stage())) {
    next.kind = NextStep::Kind::kEnded;
    return next;
  }
  // A parent waiting for its children: its cancel and deadline reach them first.
  if (st.stage() == rein::v1::WAITING) return NextWaiting(run, now, not_before);
  if (std::optional<Transition> end = OnTick(run, now)) {
    next.kind = NextStep::Kind::kCommit;
    next.transition = std::move(end);
    return next;
  }
  const absl::Time deadline =
      st.has_deadline() ? FromProtoTime(st.deadline()) : absl::InfiniteFuture();
  if (st.stage() == rein::v1::PAUSED) {
    next.kind = st.has_deadline() ? NextStep::Kind::kWaitUntil : NextStep::Kind::kIdle;
    next.until = deadline;
    return next;
  }
  if (now < not_before) {
    next.kind = NextStep::Kind::kWaitUntil;
    next.until = std::min(not_before, deadline);  // the deadline may come first (rule 3)
    return next;
  }
  if (OpensGroup(st)) {
    // Delegated subtasks on top: they run as a parallel group of child runs.
    next.kind = NextStep::Kind::kCommit;
    next.transition = OpenGroup(options_, run, now);
    return next;
  }
  if (st.stage() == rein::v1::DECIDING && st.has_pending_call()) {
    // The last evaluation proposed the call: it is the decision, with no Decide request.
    next.kind = NextStep::Kind::kCommit;
    next.transition = OnProposedCall(run, now);
    return next;
  }
  if (st.stage() == rein::v1::EXECUTING && st.pending_call().mutating() && !st.call_dispatched()) {
    // Recorded before the call is sent, so that recovery never repeats it silently.
    next.kind = NextStep::Kind::kCommit;
    next.transition = MarkDispatched(run, now);
    return next;
  }
  Effect effect = NextEffect(run, now);
  if (effect.kind == Effect::Kind::kNone) {
    // A working stage with nothing to call: end the run rather than leave it hanging.
    next.kind = NextStep::Kind::kCommit;
    next.transition = FailInternal(run,
                                   absl::StrCat("the router found nothing to call in stage ",
                                                rein::v1::Stage_Name(st.stage())),
                                   now);
    return next;
  }
  next.kind = NextStep::Kind::kCall;
  next.effect = std::move(effect);
  return next;
}

absl::StatusOr<Transition> StageRouter::Fork(const Run& run, const rein::v1::ForkedFrom& from,
                                             const rein::v1::ForkEdits& edits,
                                             bool workspace_at_fork, absl::Time now) const {
  return StartFork(options_, run, from, edits, workspace_at_fork, now);
}

std::optional<Transition> StageRouter::OnTick(const Run& run, absl::Time now) const {
  const RunState& st = run.state();
  if (IsTerminal(st.stage())) return std::nullopt;
  if (!CancelledOrPastDeadline(st, now)) return std::nullopt;
  Step s(run, now);
  EndIfLimited(s, /*begins_iteration=*/false);
  return std::move(s).Finish();
}

Transition StageRouter::FailInternal(const Run& run, const std::string& message,
                                     absl::Time now) const {
  Step s(run, now);
  Terminate(s, rein::v1::FAILED, rein::v1::INTERNAL, message);
  return std::move(s).Finish();
}

}  // namespace rein
