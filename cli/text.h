// reinctl's text pieces: one-line cuts of untrusted text, durations, calls, reviews, pauses,
// children and usage, shared by the event lines and the reports.
#ifndef REIN_CLI_TEXT_H_
#define REIN_CLI_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "rein/v1/router.pb.h"
#include "rein/v1/types.pb.h"

namespace rein::cli {

// How much of a free-text field (a message, an observation, a summary) one line shows.
inline constexpr size_t kLineBytes = 160;

// `text` on one line: its first line, control characters replaced by spaces, cut (on a UTF-8
// boundary) to at most `max_bytes` with "..." appended when cut.
std::string OneLine(absl::string_view text, size_t max_bytes);

// absl::FormatDuration, but zero is "0s" rather than "0".
std::string FormatDurationWithUnit(absl::Duration d);
std::string FormatDurationProto(const google::protobuf::Duration& d);

// e.g. "read_file {"path":"a"}", each part cut to one line.
std::string CallText(const v1::ToolCall& call);
// e.g. "reject: too broad by alice".
std::string ReviewText(const v1::Review& review);
// e.g. "PAUSE_POINT AFTER_PLAN: plan of 2 subtasks ready for review".
std::string PauseText(const v1::Pause& pause);
// "  notes: <notes on one line>", or "" without notes.
std::string NotesSuffix(const std::string& notes);

// A group's children on one line: each subtask, its run id (or why it did not start) and,
// with `ends`, its outcome.
std::string ChildList(const google::protobuf::RepeatedPtrField<v1::ChildRun>& children, bool ends);

// A run's model usage on one line, e.g. "input 1200  output 300  cache read 5000  cache write
// 800  cost $0.008400" (the cost with its budget when `cost_budget_usd` > 0).
std::string UsageText(const v1::Usage& usage, double cost_usd, double cost_budget_usd = 0);

}  // namespace rein::cli

#endif  // REIN_CLI_TEXT_H_
