// One-line descriptions of run events.
#include "router_service/event_description.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace rein {
namespace {

using rein::v1::RunEvent;

constexpr size_t kMaxDescribe = 400;

std::string Shorten(std::string text) { return ShortenDescription(std::move(text)); }

}  // namespace

std::string ShortenDescription(std::string text) {
  if (text.size() > kMaxDescribe) text = absl::StrCat(text.substr(0, kMaxDescribe), "...");
  return text;
}

std::string DescribeEvent(const RunEvent& event) {
  switch (event.body_case()) {
    case RunEvent::kStageChanged:
      return absl::StrCat("stage_changed: ", rein::v1::Stage_Name(event.stage_changed().from()),
                          " -> ", rein::v1::Stage_Name(event.stage_changed().to()));
    case RunEvent::kPlan: {
      std::string ids;
      for (const auto& t : event.plan().subtasks())
        absl::StrAppend(&ids, ids.empty() ? "" : ", ", t.id());
      return Shorten(
          absl::StrCat("plan: [", ids, "] goal_achieved=", event.plan().goal_achieved()));
    }
    case RunEvent::kDecision:
      if (event.decision().has_tool_call()) {
        return Shorten(absl::StrCat("decision: ", event.decision().tool_call().tool(), " ",
                                    event.decision().tool_call().args_json()));
      }
      return Shorten(absl::StrCat("decision: ask \"", event.decision().human_query(), "\""));
    case RunEvent::kToolResult:
      return Shorten(absl::StrCat("tool_result: ", event.tool_result().action().tool(),
                                  event.tool_result().action().ok() ? " ok" : " failed: ",
                                  event.tool_result().action().error()));
    case RunEvent::kEvaluation:
      return Shorten(
          absl::StrCat("evaluation: ", event.evaluation().subtask_id(), " ",
                       rein::v1::RunEvent::Evaluation::Status_Name(event.evaluation().status())));
    case RunEvent::kPaused:
      return Shorten(
          absl::StrCat("paused: ", rein::v1::PauseReason_Name(event.paused().pause().reason()), " ",
                       event.paused().pause().detail()));
    case RunEvent::kResumed:
      return absl::StrCat("resumed: to ", rein::v1::Stage_Name(event.resumed().to()));
    case RunEvent::kCallReplayed:
      return absl::StrCat("call_replayed: ", event.call_replayed().call_id(), " from ",
                          event.call_replayed().executor_id());
    case RunEvent::kCancelRequested:
      return Shorten(absl::StrCat("cancel_requested: ", event.cancel_requested().reason()));
    case RunEvent::kCallReissued:
      return absl::StrCat("call_reissued: ", event.call_reissued().from_call_id(), " as ",
                          event.call_reissued().call_id());
    case RunEvent::kChildGroup:
      return absl::StrCat("child_group ", event.child_group().group(), ": ",
                          event.child_group().children_size(), " children");
    case RunEvent::kChildrenStarted:
      return absl::StrCat("children_started: ", event.children_started().children_size());
    case RunEvent::kChildrenJoined:
      return absl::StrCat("children_joined: group ", event.children_joined().group());
    case RunEvent::kError:
      return Shorten(absl::StrCat("error: ", rein::v1::Stage_Name(event.error().stage()), " ",
                                  event.error().code(), " ", event.error().message()));
    case RunEvent::kFinished:
      return Shorten(
          absl::StrCat("finished: ", rein::v1::Stage_Name(event.finished().outcome().status()), " ",
                       rein::v1::TerminationReason_Name(event.finished().outcome().reason())));
    case RunEvent::kForked:
      return absl::StrCat("forked: from ", event.forked().from().run_id(), " at seq ",
                          event.forked().from().seq());
    case RunEvent::BODY_NOT_SET: break;
  }
  return "(no event)";
}

}  // namespace rein
