// The first transition of a fork.
#include "router_service/fork_start.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/proto_time.h"
#include "common/status_macros.h"
#include "router_service/proposals.h"
#include "router_service/step.h"
#include "router_service/subtasks.h"
#include "router_service/termination.h"

namespace rein {

using rein::v1::HumanInput;
using rein::v1::Run;
using rein::v1::RunState;
using rein::v1::Stage;
using rein::v1::SubTask;
using rein::v1::ToolCall;

absl::StatusOr<Transition> StartFork(const StageRouterOptions& options, const Run& run,
                                     const rein::v1::ForkedFrom& from,
                                     const rein::v1::ForkEdits& edits, bool workspace_at_fork,
                                     absl::Time now) {
  const RunState& point = run.state();
  if (IsTerminalStage(point.stage()) || point.stage() == rein::v1::STAGE_UNSPECIFIED) {
    return absl::FailedPreconditionError(
        absl::StrCat("at: run ", from.run_id(), " was ", rein::v1::Stage_Name(point.stage()),
                     " at that point (seq ", from.seq(), "); fork from a point before it ended"));
  }
  if (edits.has_plan() && edits.has_call()) {
    return absl::InvalidArgumentError("edits: plan and call cannot both be set");
  }
  // The starting state: the source's, with what belongs to the source's life reset.
  Run start = run;
  RunState& st0 = *start.mutable_state();
  st0.set_version(0);
  st0.clear_outcome();
  st0.set_cancel_requested(false);
  st0.set_call_dispatched(false);
  *st0.mutable_forked_from() = from;
  // What the source spent up to the point is counted in the source's row, not again here.
  st0.set_inherited_tokens(point.tokens_used());
  st0.set_inherited_cost_usd(point.cost_used_usd());
  *st0.mutable_started_at() = ToProtoTime(now);
  *st0.mutable_deadline() = ToProtoTime(now + FromProtoDuration(run.spec().limits().deadline()));
  // A pending call gets an id of the fork's own: the executors' journal must not answer it
  // with the source's reply.
  if (st0.has_pending_call() || st0.pause().has_pending_call()) {
    st0.set_call_counter(st0.call_counter() + 1);
    const std::string id = absl::StrCat(run.run_id(), "-", st0.call_counter());
    if (st0.has_pending_call()) st0.mutable_pending_call()->set_call_id(id);
    if (st0.pause().has_pending_call())
      st0.mutable_pause()->mutable_pending_call()->set_call_id(id);
  }
  Step s(start, now);
  RunState& st = s.state();
  auto* forked = s.AddEvent()->mutable_forked();
  *forked->mutable_from() = from;
  *forked->mutable_edits() = edits;
  forked->set_workspace(run.spec().workspace());
  forked->set_workspace_at_fork(workspace_at_fork);
  forked->set_log_format(kLogFormat);
  *forked->mutable_start() = point;  // as given: replay resets it the same way again
  const bool need_human =
      point.stage() == rein::v1::PAUSED && point.pause().reason() == rein::v1::NEED_HUMAN;
  if (edits.has_human_input()) {
    const std::string& text = edits.human_input().text();
    if (text.empty()) {
      return absl::InvalidArgumentError("edits.human_input.text: must not be empty");
    }
    if (text.size() > 16 * 1024) {
      return absl::InvalidArgumentError("edits.human_input.text: at most 16 KiB");
    }
    HumanInput* input = st.add_human_inputs();
    input->set_kind(HumanInput::ANSWER);
    input->set_text(text);
    if (need_human) input->set_question(point.pause().question());
    input->set_iteration(st.iteration());
    while (st.human_inputs_size() > options.max_human_inputs) {
      st.mutable_human_inputs()->erase(st.mutable_human_inputs()->begin());
    }
  }
  if (edits.has_plan()) {
    google::protobuf::RepeatedPtrField<SubTask> tasks = edits.plan().subtasks();
    if (tasks.empty()) return absl::InvalidArgumentError("edits.plan.subtasks: must not be empty");
    RunState without_stack = st;
    without_stack.clear_subtasks();
    RETURN_IF_ERROR(ValidateSubtasks(without_stack, "edits.plan.subtasks", &tasks));
    DropStack(st, "dropped: replaced by the fork's plan");
    *st.mutable_subtasks() = std::move(tasks);
    st.clear_pending_call();
    st.clear_pause();
    st.set_goal_achieved(false);
    s.MoveTo(rein::v1::DECIDING);
  } else if (edits.has_call()) {
    const bool pending = (st.stage() == rein::v1::EXECUTING && st.has_pending_call()) ||
                         (st.stage() == rein::v1::PAUSED && st.pause().has_pending_call() &&
                          !st.pause().pending_call().tool().empty());
    if (!pending) {
      return absl::FailedPreconditionError(absl::StrCat(
          "edits.call: run ", from.run_id(), " had no pending tool call at that point (stage ",
          rein::v1::Stage_Name(point.stage()),
          "); fork at a point in EXECUTING or paused before a tool"));
    }
    ASSIGN_OR_RETURN(ToolCall call, MakeCall(start, st, edits.call().tool(),
                                             edits.call().args_json(), "edits.call"));
    *st.mutable_pending_call() = call;
    st.clear_pause();
    s.MoveTo(rein::v1::EXECUTING);
  } else if (edits.has_human_input() && need_human) {
    const Stage resume = point.pause().resume_stage();
    st.clear_pause();
    s.MoveTo(resume);
  }
  Transition t = std::move(s).Finish();
  if (!t.snapshot) {
    Snapshot snap;
    snap.iteration = t.state.iteration();
    snap.version = t.state.version();
    t.state.SerializeToString(&snap.state);
    t.snapshot = std::move(snap);
  }
  return t;
}

}  // namespace rein
