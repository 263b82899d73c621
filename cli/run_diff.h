// reinctl diff: two runs side by side (plans, calls, observations, outcomes), pure.
#ifndef REIN_CLI_RUN_DIFF_H_
#define REIN_CLI_RUN_DIFF_H_

#include <string>
#include <vector>

#include "rein/v1/types.pb.h"

namespace rein::cli {

// The steps of a run, one line each, from its log: "plan: [a, b]", "call: write_file {...}",
// "  -> ok: <observation, first line>", "eval: a COMPLETED", "paused: ...", "resumed: ...",
// "forked: ...", "error: ...", "end: FINISHED GOAL_ACHIEVED".
std::vector<std::string> RunSteps(const std::vector<rein::v1::RunEvent>& events);

// Both runs' steps in two columns of `width` characters each, aligned line by line, with a
// marker between the columns: ' ' where both sides say the same, '|' where they differ, '<'
// or '>' where only one side has a line. Begins with a header naming both runs and ends with
// "same steps: N, first difference at step K" (or "the runs took the same steps"). When one
// run is a fork of the other, the fork's column starts with the source's steps up to the fork
// point, so the columns part where the runs did.
std::string FormatRunDiff(const rein::v1::Run& a, const std::vector<rein::v1::RunEvent>& a_events,
                          const rein::v1::Run& b, const std::vector<rein::v1::RunEvent>& b_events,
                          int width = 60);

}  // namespace rein::cli

#endif  // REIN_CLI_RUN_DIFF_H_
