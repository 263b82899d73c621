// reinctl's one line per run event (`reinctl watch`, `reinctl events`).
#include "cli/event_line.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/text.h"

namespace rein::cli {

std::string EventLine(const v1::RunEvent& event) {
  std::string line = absl::StrCat("#", event.seq(), " ");
  switch (event.body_case()) {
    case v1::RunEvent::kStageChanged:
      if (event.stage_changed().from() == v1::STAGE_UNSPECIFIED) {
        absl::StrAppend(&line, "run started: ", v1::Stage_Name(event.stage_changed().to()));
      } else {
        absl::StrAppend(&line, v1::Stage_Name(event.stage_changed().from()), " -> ",
                        v1::Stage_Name(event.stage_changed().to()));
      }
      break;
    case v1::RunEvent::kPlan: {
      const v1::RunEvent::Plan& plan = event.plan();
      std::vector<std::string> ids;
      for (const v1::SubTask& subtask : plan.subtasks()) ids.push_back(OneLine(subtask.id(), 40));
      absl::StrAppend(&line, "plan: ", plan.subtasks_size(),
                      plan.subtasks_size() == 1 ? " subtask" : " subtasks");
      if (!ids.empty()) absl::StrAppend(&line, " [", absl::StrJoin(ids, ", "), "]");
      if (plan.goal_achieved()) absl::StrAppend(&line, "  goal achieved");
      if (!plan.first_call_dropped().empty()) {
        absl::StrAppend(
            &line, "  (first call dropped: ", OneLine(plan.first_call_dropped(), kLineBytes), ")");
      }
      if (!plan.planner_backend().empty()) {
        absl::StrAppend(&line, "  [planner: ", OneLine(plan.planner_backend(), 60), "]");
      }
      absl::StrAppend(&line, NotesSuffix(plan.notes()));
      break;
    }
    case v1::RunEvent::kDecision: {
      const v1::RunEvent::Decision& decision = event.decision();
      if (decision.has_tool_call()) {
        absl::StrAppend(&line, "decision: ", CallText(decision.tool_call()));
      } else {
        absl::StrAppend(&line,
                        "decision: ask a person: ", OneLine(decision.human_query(), kLineBytes));
      }
      if (!decision.subtask_id().empty()) {
        absl::StrAppend(&line, "  (subtask ", OneLine(decision.subtask_id(), 40), ")");
      }
      if (decision.from_evaluation()) absl::StrAppend(&line, "  proposed by the evaluation");
      if (decision.from_plan()) absl::StrAppend(&line, "  proposed by the plan");
      absl::StrAppend(&line, NotesSuffix(decision.notes()));
      break;
    }
    case v1::RunEvent::kToolResult: {
      const v1::Action& action = event.tool_result().action();
      absl::StrAppend(&line, "tool_result ", action.ok() ? "ok " : "FAILED ",
                      OneLine(action.tool(), 64), " ", FormatDurationProto(action.duration()));
      const std::string& text =
          action.ok() || action.error().empty() ? action.observation() : action.error();
      if (!text.empty()) absl::StrAppend(&line, ": ", OneLine(text, kLineBytes));
      if (event.tool_result().truncated()) absl::StrAppend(&line, " (output truncated)");
      break;
    }
    case v1::RunEvent::kEvaluation: {
      const v1::RunEvent::Evaluation& evaluation = event.evaluation();
      absl::StrAppend(&line, "evaluation ", OneLine(evaluation.subtask_id(), 40), " ",
                      v1::RunEvent::Evaluation::Status_Name(evaluation.status()));
      if (!evaluation.summary().empty()) {
        absl::StrAppend(&line, ": ", OneLine(evaluation.summary(), kLineBytes));
      }
      if (evaluation.goal_achieved()) absl::StrAppend(&line, "  goal achieved");
      if (!evaluation.next_call_dropped().empty()) {
        absl::StrAppend(&line, "  (", OneLine(evaluation.next_call_dropped(), kLineBytes), ")");
      }
      absl::StrAppend(&line, NotesSuffix(evaluation.notes()));
      break;
    }
    case v1::RunEvent::kPaused: {
      const v1::Pause& pause = event.paused().pause();
      absl::StrAppend(&line, "paused ", PauseText(pause));
      if (pause.has_pending_call()) {
        absl::StrAppend(&line, "  [pending call: ", CallText(pause.pending_call()), "]");
      }
      break;
    }
    case v1::RunEvent::kChildGroup:
      absl::StrAppend(&line, "group ", event.child_group().group(), ": ",
                      ChildList(event.child_group().children(), /*ends=*/false));
      break;
    case v1::RunEvent::kChildrenStarted:
      absl::StrAppend(&line, "children started: ",
                      ChildList(event.children_started().children(), /*ends=*/false));
      break;
    case v1::RunEvent::kChildrenJoined:
      absl::StrAppend(&line, "group ", event.children_joined().group(),
                      " joined: ", ChildList(event.children_joined().children(), /*ends=*/true));
      break;
    case v1::RunEvent::kResumed:
      absl::StrAppend(&line, "resumed ", ReviewText(event.resumed().review()), " -> ",
                      v1::Stage_Name(event.resumed().to()));
      break;
    case v1::RunEvent::kError: {
      const v1::RunEvent::Error& error = event.error();
      absl::StrAppend(&line, "error in ", v1::Stage_Name(error.stage()), " ",
                      OneLine(error.code(), 40), ": ", OneLine(error.message(), kLineBytes));
      if (error.retry_spent()) absl::StrAppend(&line, "  (retry spent)");
      break;
    }
    case v1::RunEvent::kFinished: {
      const v1::Outcome& outcome = event.finished().outcome();
      absl::StrAppend(&line, "finished ", v1::Stage_Name(outcome.status()), " ",
                      v1::TerminationReason_Name(outcome.reason()));
      if (!outcome.message().empty()) {
        absl::StrAppend(&line, ": ", OneLine(outcome.message(), kLineBytes));
      }
      if (outcome.has_usage() || outcome.cost_usd() > 0) {
        absl::StrAppend(&line, "  (", UsageText(outcome.usage(), outcome.cost_usd()), ")");
      }
      break;
    }
    case v1::RunEvent::kForked: {
      const v1::RunEvent::Forked& forked = event.forked();
      absl::StrAppend(&line, "forked from ", forked.from().run_id(), " at seq ",
                      forked.from().seq(), " (iteration ", forked.from().iteration(), ") in ",
                      v1::Stage_Name(forked.start().stage()), "; workspace ", forked.workspace(),
                      forked.workspace_at_fork() ? " as it was then" : " as it was at fork time");
      break;
    }
    case v1::RunEvent::kCallReissued:
      absl::StrAppend(&line, "call_reissued ", OneLine(event.call_reissued().from_call_id(), 80),
                      " runs again as ", OneLine(event.call_reissued().call_id(), 80),
                      " (approved after an unknown outcome)");
      break;
    case v1::RunEvent::kCancelRequested: {
      const std::string& reason = event.cancel_requested().reason();
      absl::StrAppend(&line, "cancel_requested", reason.empty() ? "" : ": ", OneLine(reason, 200),
                      " (ends once its call returns or its children end)");
      break;
    }
    case v1::RunEvent::kCallReplayed:
      absl::StrAppend(&line, "call_replayed ", OneLine(event.call_replayed().call_id(), 80),
                      ": already ran on ", OneLine(event.call_replayed().executor_id(), 80),
                      "; its recorded reply is used");
      break;
    case v1::RunEvent::BODY_NOT_SET: absl::StrAppend(&line, "(event without a body)"); break;
  }
  return line;
}

}  // namespace rein::cli
