// Reviews of a paused run.
#include "router_service/review.h"

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
using rein::v1::Pause;
using rein::v1::Run;
using rein::v1::RunState;
using rein::v1::Stage;
using rein::v1::SubTask;
using rein::v1::ToolCall;

absl::StatusOr<Transition> ApplyReview(const StageRouterOptions& options, const Run& run,
                                       const rein::v1::Review& review, int64_t expected_version,
                                       absl::Time now) {
  const RunState& old = run.state();
  if (old.stage() != rein::v1::PAUSED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run ", run.run_id(), " is ", rein::v1::Stage_Name(old.stage()), ", not PAUSED"));
  }
  if (expected_version != old.version()) {
    return absl::FailedPreconditionError(
        absl::StrCat("stale version: the review was made against version ", expected_version,
                     ", the run is at version ", old.version()));
  }
  const Pause& pause = old.pause();
  Step s(run, now);
  RunState& st = s.state();
  auto resumed = [&](Stage to) {
    auto* event = s.AddEvent()->mutable_resumed();
    *event->mutable_review() = review;
    event->set_to(to);
  };
  // Goes on to the pause's resume stage (the pending call, if any, is run).
  auto go_on = [&](Stage to) {
    resumed(to);
    if (pause.reason() == rein::v1::STAGNATED) st.set_stagnation_mark(st.actions_total());
    if (to == rein::v1::EXECUTING) {
      *st.mutable_pending_call() = pause.pending_call();
      st.set_call_dispatched(false);
      if (pause.reason() == rein::v1::RECOVERY) {
        // Approving a call whose outcome is unknown runs it again: under a new call_id, since
        // the journal answers the old one with "unknown" for ever.
        st.set_call_counter(st.call_counter() + 1);
        st.mutable_pending_call()->set_call_id(absl::StrCat(run.run_id(), "-", st.call_counter()));
        auto* reissued = s.AddEvent()->mutable_call_reissued();
        reissued->set_from_call_id(pause.pending_call().call_id());
        reissued->set_call_id(st.pending_call().call_id());
      }
    }
    if (to == rein::v1::FINISHED) {
      FinishRun(s);
    } else {
      Enter(s, to);
    }
  };
  switch (review.kind_case()) {
    case rein::v1::Review::kApprove:
      if (pause.reason() == rein::v1::NEED_HUMAN) {
        return absl::FailedPreconditionError(
            "the run waits for an answer (NEED_HUMAN): use answer, reject or edit_plan");
      }
      go_on(pause.resume_stage());
      break;
    case rein::v1::Review::kAnswer: {
      if (review.answer().text().empty()) {
        return absl::InvalidArgumentError("review.answer.text: must not be empty");
      }
      if (review.answer().text().size() > 16 * 1024) {
        return absl::InvalidArgumentError("review.answer.text: at most 16 KiB");
      }
      HumanInput* input = st.add_human_inputs();
      input->set_kind(HumanInput::ANSWER);
      input->set_text(review.answer().text());
      input->set_question(pause.question().empty() ? pause.detail() : pause.question());
      input->set_iteration(st.iteration());
      while (st.human_inputs_size() > options.max_human_inputs) {
        st.mutable_human_inputs()->erase(st.mutable_human_inputs()->begin());
      }
      go_on(pause.resume_stage());
      break;
    }
    case rein::v1::Review::kReject: {
      if (review.reject().feedback().size() > 16 * 1024) {
        return absl::InvalidArgumentError("review.reject.feedback: at most 16 KiB");
      }
      resumed(review.reject().abort() ? rein::v1::FAILED : rein::v1::PLANNING);
      if (review.reject().abort()) {
        Terminate(s, rein::v1::FAILED, rein::v1::REJECTED_BY_REVIEWER,
                  absl::StrCat("rejected by reviewer: ", review.reject().feedback()));
        break;
      }
      if (!review.reject().feedback().empty()) {
        HumanInput* input = st.add_human_inputs();
        input->set_kind(HumanInput::FEEDBACK);
        input->set_text(review.reject().feedback());
        input->set_iteration(st.iteration());
      }
      st.set_replan_reason(absl::StrCat("rejected by reviewer: ", review.reject().feedback()));
      DropStack(st, absl::StrCat("dropped: rejected by reviewer: ", review.reject().feedback()));
      st.clear_pending_call();
      st.set_call_dispatched(false);
      st.set_goal_achieved(false);
      Enter(s, rein::v1::PLANNING);
      break;
    }
    case rein::v1::Review::kEditPlan: {
      google::protobuf::RepeatedPtrField<SubTask> tasks = review.edit_plan().subtasks();
      if (tasks.empty()) {
        return absl::InvalidArgumentError("review.edit_plan.subtasks: must not be empty");
      }
      RunState without_stack = st;
      without_stack.clear_subtasks();
      if (absl::Status valid = ValidateSubtasks(without_stack, "review.edit_plan.subtasks", &tasks);
          !valid.ok()) {
        return valid;
      }
      resumed(rein::v1::DECIDING);
      DropStack(st, "dropped: replaced by the reviewer's plan");
      *st.mutable_subtasks() = std::move(tasks);
      st.clear_pending_call();
      st.set_call_dispatched(false);
      st.set_goal_achieved(false);
      if (pause.reason() == rein::v1::STAGNATED) st.set_stagnation_mark(st.actions_total());
      Enter(s, rein::v1::DECIDING);
      break;
    }
    case rein::v1::Review::kEditToolCall: {
      if (!pause.has_pending_call() || pause.pending_call().tool().empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("the run is paused for ", rein::v1::PauseReason_Name(pause.reason()),
                         " with no pending tool call; edit_tool_call needs one"));
      }
      absl::StatusOr<ToolCall> call =
          MakeCall(run, st, review.edit_tool_call().tool(), review.edit_tool_call().args_json(),
                   "review.edit_tool_call");
      if (!call.ok()) return call.status();
      resumed(rein::v1::EXECUTING);
      *st.mutable_pending_call() = *call;
      st.set_call_dispatched(false);
      Enter(s, rein::v1::EXECUTING);
      break;
    }
    default:
      return absl::InvalidArgumentError(
          "review: one of approve, reject, edit_plan, edit_tool_call, answer is required");
  }
  return std::move(s).Finish();
}

}  // namespace rein
