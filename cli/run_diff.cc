// reinctl diff: two runs side by side.
#include "cli/run_diff.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rein::cli {
namespace {

std::string FirstLine(const std::string& text, size_t max) {
  std::string line = text.substr(0, text.find('\n'));
  std::replace(line.begin(), line.end(), '\t', ' ');
  if (line.size() > max) line = absl::StrCat(line.substr(0, max), "...");
  return line;
}

std::string Fit(const std::string& text, int width) {
  if (static_cast<int>(text.size()) <= width) {
    return absl::StrCat(text, std::string(width - text.size(), ' '));
  }
  return absl::StrCat(text.substr(0, width - 3), "...");
}

}  // namespace

std::vector<std::string> RunSteps(const std::vector<rein::v1::RunEvent>& events) {
  std::vector<std::string> steps;
  for (const rein::v1::RunEvent& e : events) {
    switch (e.body_case()) {
      case rein::v1::RunEvent::kForked:
        steps.push_back(absl::StrCat("forked: from ", e.forked().from().run_id(), " seq ",
                                     e.forked().from().seq()));
        break;
      case rein::v1::RunEvent::kPlan: {
        std::string ids;
        for (const auto& t : e.plan().subtasks()) {
          absl::StrAppend(&ids, ids.empty() ? "" : ", ", t.id());
        }
        steps.push_back(absl::StrCat("plan: [", ids, "]", e.plan().goal_achieved() ? " done" : ""));
        break;
      }
      case rein::v1::RunEvent::kDecision:
        if (e.decision().has_tool_call()) {
          steps.push_back(absl::StrCat("call: ", e.decision().tool_call().tool(), " ",
                                       FirstLine(e.decision().tool_call().args_json(), 80)));
        } else {
          steps.push_back(absl::StrCat("ask: ", FirstLine(e.decision().human_query(), 80)));
        }
        break;
      case rein::v1::RunEvent::kToolResult: {
        const auto& a = e.tool_result().action();
        steps.push_back(absl::StrCat("  -> ", a.ok() ? "ok: " : "failed: ",
                                     FirstLine(a.ok() ? a.observation() : a.error(), 80)));
        break;
      }
      case rein::v1::RunEvent::kEvaluation:
        steps.push_back(
            absl::StrCat("eval: ", e.evaluation().subtask_id(), " ",
                         rein::v1::RunEvent::Evaluation::Status_Name(e.evaluation().status())));
        break;
      case rein::v1::RunEvent::kPaused:
        steps.push_back(
            absl::StrCat("paused: ", rein::v1::PauseReason_Name(e.paused().pause().reason())));
        break;
      case rein::v1::RunEvent::kResumed:
        steps.push_back(absl::StrCat("resumed: to ", rein::v1::Stage_Name(e.resumed().to())));
        break;
      case rein::v1::RunEvent::kError:
        steps.push_back(absl::StrCat("error: ", rein::v1::Stage_Name(e.error().stage()), " ",
                                     e.error().code()));
        break;
      case rein::v1::RunEvent::kFinished:
        steps.push_back(
            absl::StrCat("end: ", rein::v1::Stage_Name(e.finished().outcome().status()), " ",
                         rein::v1::TerminationReason_Name(e.finished().outcome().reason())));
        break;
      default: break;
    }
  }
  return steps;
}

std::string FormatRunDiff(const rein::v1::Run& a, const std::vector<rein::v1::RunEvent>& a_events,
                          const rein::v1::Run& b, const std::vector<rein::v1::RunEvent>& b_events,
                          int width) {
  std::vector<std::string> left = RunSteps(a_events);
  std::vector<std::string> right = RunSteps(b_events);
  // A fork is shown after the steps it shares with its source (up to the fork point), so
  // that the two columns line up where they part.
  auto shared_prefix = [](const std::vector<rein::v1::RunEvent>& source_events, int64_t seq,
                          const std::vector<rein::v1::RunEvent>& fork_events) {
    std::vector<rein::v1::RunEvent> prefix;
    for (const auto& e : source_events) {
      if (e.seq() <= seq) prefix.push_back(e);
    }
    std::vector<std::string> steps = RunSteps(prefix);
    for (const std::string& step : RunSteps(fork_events)) steps.push_back(step);
    return steps;
  };
  if (b.state().forked_from().run_id() == a.run_id() && !a.run_id().empty()) {
    right = shared_prefix(a_events, b.state().forked_from().seq(), b_events);
  } else if (a.state().forked_from().run_id() == b.run_id() && !b.run_id().empty()) {
    left = shared_prefix(b_events, a.state().forked_from().seq(), a_events);
  }
  std::string out = absl::StrCat(Fit(a.run_id(), width), "   ", b.run_id(), "\n");
  absl::StrAppend(&out,
                  Fit(absl::StrCat(rein::v1::Stage_Name(a.state().stage()), ", iteration ",
                                   a.state().iteration()),
                      width),
                  "   ", rein::v1::Stage_Name(b.state().stage()), ", iteration ",
                  b.state().iteration(), "\n");
  absl::StrAppend(&out, std::string(width, '-'), "   ", std::string(width, '-'), "\n");
  int same = 0;
  int first_difference = -1;
  const size_t n = std::max(left.size(), right.size());
  for (size_t i = 0; i < n; ++i) {
    const bool has_left = i < left.size();
    const bool has_right = i < right.size();
    char mark = ' ';
    if (has_left && has_right) {
      mark = left[i] == right[i] ? ' ' : '|';
    } else {
      mark = has_left ? '<' : '>';
    }
    if (mark == ' ') {
      ++same;
    } else if (first_difference < 0) {
      first_difference = static_cast<int>(i) + 1;
    }
    absl::StrAppend(&out, Fit(has_left ? left[i] : "", width), " ", std::string(1, mark), " ",
                    has_right ? right[i] : "", "\n");
  }
  if (first_difference < 0) {
    absl::StrAppend(&out, "the runs took the same steps (", same, ")\n");
  } else {
    absl::StrAppend(&out, "same steps: ", same, ", first difference at step ", first_difference,
                    "\n");
  }
  return out;
}

}  // namespace rein::cli
