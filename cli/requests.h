// reinctl's requests: the rein.v1 request messages built from a parsed Command (pure).
#ifndef REIN_CLI_REQUESTS_H_
#define REIN_CLI_REQUESTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/args.h"
#include "rein/v1/router.pb.h"
#include "rein/v1/types.pb.h"

namespace rein::cli {

// Builds the RunSpec of `start`: the --spec file's RunSpec (`spec_json`, proto3 JSON; empty
// when no --spec) with every given flag applied over it. `goal_file_text` is the content of
// --goal_file when given. Errors are INVALID_ARGUMENT naming the flag.
absl::StatusOr<v1::RunSpec> BuildRunSpec(const StartOptions& options, absl::string_view spec_json,
                                         std::optional<std::string> goal_file_text);

// The StartRunRequest of `start`: BuildRunSpec's spec and --request_id. Errors are
// BuildRunSpec's.
absl::StatusOr<v1::StartRunRequest> BuildStartRunRequest(const StartOptions& options,
                                                         absl::string_view spec_json,
                                                         std::optional<std::string> goal_file_text);

// Parses an edit-plan file: a JSON array of SubTask in proto3 JSON.
absl::StatusOr<std::vector<v1::SubTask>> ParsePlanJson(absl::string_view json);

// Builds the Review of a review subcommand (approve, reject, answer, edit-plan, edit-call).
// `plan` is the parsed --plan_file for edit-plan. Another subcommand is INVALID_ARGUMENT.
absl::StatusOr<v1::Review> BuildReview(const Command& command,
                                       const std::vector<v1::SubTask>& plan);

// The ResumeRunRequest sending `review` for the command's run, expected at `expected_version`
// (the --version given, else the run's current version).
v1::ResumeRunRequest BuildResumeRunRequest(const Command& command, int64_t expected_version,
                                           v1::Review review);

// The ForkRunRequest of `fork`: the point (--at / --at_seq), the edits (`plan` is the parsed
// --plan_file; --tool/--args; --answer; changed limits) and --workspace_at_fork, --request_id.
v1::ForkRunRequest BuildForkRunRequest(const Command& command,
                                       const std::vector<v1::SubTask>& plan);
// The CancelRunRequest of `cancel`: the run and --reason.
v1::CancelRunRequest BuildCancelRunRequest(const Command& command);

// The ListRunsRequest of `list` for the page at `page_token` ("" = the first): the --stage
// and --outcome filters and --page_size.
v1::ListRunsRequest BuildListRunsRequest(const Command& command, absl::string_view page_token);

}  // namespace rein::cli

#endif  // REIN_CLI_REQUESTS_H_
