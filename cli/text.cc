// reinctl's text pieces: one-line cuts of untrusted text, durations, calls, reviews, pauses,
// children and usage, shared by the event lines and the reports.
#include "cli/text.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/proto_time.h"

namespace rein::cli {

// absl::FormatDuration, but zero is "0s" rather than "0".
std::string FormatDurationWithUnit(absl::Duration d) {
  if (d == absl::ZeroDuration()) return "0s";
  return absl::FormatDuration(d);
}

std::string FormatDurationProto(const google::protobuf::Duration& d) {
  return FormatDurationWithUnit(FromProtoDuration(d));
}

std::string CallText(const v1::ToolCall& call) {
  return absl::StrCat(OneLine(call.tool(), 64), " ", OneLine(call.args_json(), kLineBytes));
}

std::string ReviewText(const v1::Review& review) {
  std::string text;
  switch (review.kind_case()) {
    case v1::Review::kApprove: text = "approve"; break;
    case v1::Review::kReject:
      text = absl::StrCat(review.reject().abort() ? "reject (abort): " : "reject: ",
                          OneLine(review.reject().feedback(), kLineBytes));
      break;
    case v1::Review::kEditPlan:
      text = absl::StrCat("edit-plan: ", review.edit_plan().subtasks_size(), " subtasks");
      break;
    case v1::Review::kEditToolCall:
      text = absl::StrCat("edit-call: ", OneLine(review.edit_tool_call().tool(), 64), " ",
                          OneLine(review.edit_tool_call().args_json(), kLineBytes));
      break;
    case v1::Review::kAnswer:
      text = absl::StrCat("answer: ", OneLine(review.answer().text(), kLineBytes));
      break;
    case v1::Review::KIND_NOT_SET: text = "(empty review)"; break;
  }
  if (!review.reviewer().empty()) absl::StrAppend(&text, " by ", OneLine(review.reviewer(), 64));
  return text;
}

std::string PauseText(const v1::Pause& pause) {
  std::string text = v1::PauseReason_Name(pause.reason());
  if (pause.reason() == v1::PAUSE_POINT) {
    absl::StrAppend(&text, " ", v1::PausePoint_Name(pause.point()));
  }
  if (pause.reason() == v1::NEED_HUMAN && !pause.question().empty()) {
    absl::StrAppend(&text, ": ", OneLine(pause.question(), kLineBytes));
  } else if (!pause.detail().empty()) {
    absl::StrAppend(&text, ": ", OneLine(pause.detail(), kLineBytes));
  }
  return text;
}

std::string NotesSuffix(const std::string& notes) {
  if (notes.empty()) return "";
  return absl::StrCat("  notes: ", OneLine(notes, kLineBytes));
}

std::string OneLine(absl::string_view text, size_t max_bytes) {
  text = absl::StripAsciiWhitespace(text);
  size_t newline = text.find('\n');
  bool cut = false;
  if (newline != absl::string_view::npos) {
    text = absl::StripTrailingAsciiWhitespace(text.substr(0, newline));
    cut = true;
  }
  if (text.size() > max_bytes) {
    size_t end = max_bytes;
    // Back up over UTF-8 continuation bytes so no character is split.
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    text = text.substr(0, end);
    cut = true;
  }
  std::string out(text);
  for (char& c : out) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) c = ' ';
  }
  if (cut) out += "...";
  return out;
}

// A group's children on one line: each subtask, its run id (or why it did not start) and,
// with `ends`, its outcome.
std::string ChildList(const google::protobuf::RepeatedPtrField<v1::ChildRun>& children, bool ends) {
  std::vector<std::string> parts;
  for (const v1::ChildRun& child : children) {
    std::string part = OneLine(child.subtask_id(), 40);
    if (!child.run_id().empty()) absl::StrAppend(&part, " -> ", child.run_id());
    if (!child.start_error().empty()) {
      absl::StrAppend(&part, " (not started: ", OneLine(child.start_error(), 120), ")");
    }
    if (ends) {
      absl::StrAppend(&part, " ", v1::Stage_Name(child.outcome().status()), " (",
                      v1::TerminationReason_Name(child.outcome().reason()), ")");
    }
    parts.push_back(std::move(part));
  }
  return absl::StrJoin(parts, ", ");
}

std::string UsageText(const v1::Usage& usage, double cost_usd, double cost_budget_usd) {
  std::string out = absl::StrCat("input ", usage.input_tokens(), "  output ", usage.output_tokens(),
                                 "  cache read ", usage.cache_read_input_tokens(), "  cache write ",
                                 usage.cache_creation_input_tokens(), "  cost ",
                                 absl::StrFormat("$%.6f", cost_usd));
  if (cost_budget_usd > 0) absl::StrAppend(&out, absl::StrFormat("/$%.6f", cost_budget_usd));
  return out;
}

}  // namespace rein::cli
