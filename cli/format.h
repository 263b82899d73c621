// reinctl's output: the live progress line, reports, tables and file names (pure).
#ifndef REIN_CLI_FORMAT_H_
#define REIN_CLI_FORMAT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "rein/v1/executor.pb.h"
#include "rein/v1/router.pb.h"
#include "rein/v1/types.pb.h"

namespace rein::cli {

// What the live progress line shows. Limits are the effective ones (defaults applied).
struct Progress {
  v1::Stage stage = v1::STAGE_UNSPECIFIED;
  int32_t iteration = 0;
  int32_t max_iterations = 0;
  absl::Duration elapsed;
  absl::Duration deadline;
  int32_t retries_used = 0;
  int32_t retry_budget = 0;
  int64_t tokens_used = 0;
  int64_t token_budget = 0;  // 0 = none
};

// The effective limits of a spec: unset fields take the defaults of docs/DESIGN.md, "The rules,
// in order".
int32_t EffectiveMaxIterations(const v1::RunSpec& spec);
absl::Duration EffectiveDeadline(const v1::RunSpec& spec);
int32_t EffectiveRetryBudget(const v1::RunSpec& spec);

// Progress of `run` at `now`; elapsed runs from state.started_at (else created_at) to now,
// or to updated_at once the run has ended.
Progress ProgressOf(const v1::Run& run, absl::Time now);

// e.g. "stage PLANNING  iter 3/50  elapsed 12s/10m  retries 1/5  tokens 1234".
std::string ProgressLine(const Progress& progress);

// `reinctl tools`: one block per tool (name, origin, mutating or read-only, timeout,
// description, input schema as one line of JSON), then the executor and its sandbox.
std::string ToolTable(const v1::ListToolsResponse& response);

// A message as one line of proto3 JSON (no trailing newline).
std::string JsonLine(const google::protobuf::Message& message);
// A message as indented proto3 JSON.
std::string PrettyMessageJson(const google::protobuf::Message& message);
// `json` re-indented; returned unchanged when it does not parse.
std::string PrettyJson(absl::string_view json);

// The report printed when a run has ended: outcome, counters, completed subtasks.
std::string FinalReport(const v1::Run& run);

// How to review a paused run: the pause and the reinctl commands that fit it.
// `router_flag` is appended to each command (e.g. " --router=host:1" or "").
std::string ReviewHint(const v1::Run& run, absl::string_view router_flag);

// "YYYY-MM-DD HH:MM:SS" in `zone`; "-" when unset.
std::string FormatTime(const google::protobuf::Timestamp& t, absl::TimeZone zone);

// Rows as columns two spaces apart, each as wide as its widest cell (the last one as is).
std::string AlignedTable(const std::vector<std::vector<std::string>>& rows);

// The `list` table: run id, stage, reason, iteration, created, goal (cut to 50 characters);
// with `usage`, also the run's input, output, cache read and cache write tokens and its cost.
std::string RunTable(const std::vector<v1::Run>& runs, absl::TimeZone zone, bool usage = false);

// The readable `show` summary of a run. `descendants` (by run id) are the child runs read for
// the children's tree (their progress and their own children); empty prints the children only.
std::string RunSummary(const v1::Run& run, absl::TimeZone zone,
                       const std::map<std::string, v1::Run>& descendants = {});

// "<run_id>-<iteration, 4 digits>-v<version>.json", with characters unsafe in a file name
// (anything but letters, digits, '.', '_' and '-') in the run id replaced by '_'.
std::string SnapshotFileName(const v1::RunSnapshot& snapshot);

}  // namespace rein::cli

#endif  // REIN_CLI_FORMAT_H_
