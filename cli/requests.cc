// reinctl's requests: the rein.v1 request messages built from a parsed Command (pure).
#include "cli/requests.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/proto_time.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"

namespace rein::cli {
namespace {

absl::Status UsageError(absl::string_view message) { return absl::InvalidArgumentError(message); }

void SetDuration(absl::Duration duration, google::protobuf::Duration* out) {
  *out = ToProtoDuration(duration);
}

}  // namespace

absl::StatusOr<v1::RunSpec> BuildRunSpec(const StartOptions& options, absl::string_view spec_json,
                                         std::optional<std::string> goal_file_text) {
  v1::RunSpec spec;
  if (!spec_json.empty()) {
    google::protobuf::util::JsonParseOptions parse_options;
    auto status = google::protobuf::util::JsonStringToMessage(
        google::protobuf::StringPiece(spec_json.data(), spec_json.size()), &spec, parse_options);
    if (!status.ok()) {
      return UsageError(
          absl::StrCat("--spec: not a RunSpec in proto3 JSON: ", std::string(status.message())));
    }
  }
  if (options.goal.has_value()) {
    spec.set_goal(*options.goal);
  } else if (goal_file_text.has_value()) {
    if (absl::StripAsciiWhitespace(*goal_file_text).empty()) {
      return UsageError("--goal_file: the file is empty");
    }
    spec.set_goal(*goal_file_text);
  }
  if (absl::StripAsciiWhitespace(spec.goal()).empty()) {
    return UsageError("--spec: the spec has no goal; give --goal or --goal_file");
  }
  if (options.workspace.has_value()) spec.set_workspace(*options.workspace);
  if (options.tools.has_value()) {
    spec.clear_tools();
    for (const std::string& tool : *options.tools) spec.add_tools(tool);
  }
  if (options.pause_points.has_value()) {
    spec.clear_pause_points();
    for (v1::PausePoint point : *options.pause_points) spec.add_pause_points(point);
  }
  v1::Limits* limits = spec.mutable_limits();
  if (options.max_iterations.has_value()) limits->set_max_iterations(*options.max_iterations);
  if (options.deadline.has_value()) SetDuration(*options.deadline, limits->mutable_deadline());
  if (options.stage_timeout.has_value()) {
    SetDuration(*options.stage_timeout, limits->mutable_stage_timeout());
  }
  if (options.retry_budget.has_value()) limits->set_retry_budget(*options.retry_budget);
  if (options.token_budget.has_value()) limits->set_token_budget(*options.token_budget);
  if (options.cost_budget_usd.has_value()) limits->set_cost_budget_usd(*options.cost_budget_usd);
  if (options.on_stagnation.has_value()) limits->set_on_stagnation(*options.on_stagnation);
  if (options.no_pause_on_notes) spec.set_pause_on_notes(false);
  if (options.no_combine_evaluate_decide) spec.set_combine_evaluate_decide(false);
  if (options.no_combine_plan_decide) spec.set_combine_plan_decide(false);
  for (const auto& [key, value] : options.labels) (*spec.mutable_labels())[key] = value;
  if (options.model.has_value()) spec.mutable_model()->set_model(*options.model);
  return spec;
}

absl::StatusOr<v1::StartRunRequest> BuildStartRunRequest(
    const StartOptions& options, absl::string_view spec_json,
    std::optional<std::string> goal_file_text) {
  absl::StatusOr<v1::RunSpec> spec = BuildRunSpec(options, spec_json, std::move(goal_file_text));
  if (!spec.ok()) return spec.status();
  v1::StartRunRequest request;
  *request.mutable_spec() = *std::move(spec);
  request.set_request_id(options.request_id);
  return request;
}

absl::StatusOr<std::vector<v1::SubTask>> ParsePlanJson(absl::string_view json) {
  nlohmann::json parsed = nlohmann::json::parse(json.begin(), json.end(), /*cb=*/nullptr,
                                                /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return UsageError("--plan_file: not valid JSON");
  if (!parsed.is_array()) return UsageError("--plan_file: must be a JSON array of SubTask");
  std::vector<v1::SubTask> subtasks;
  for (size_t i = 0; i < parsed.size(); ++i) {
    if (!parsed[i].is_object()) {
      return UsageError(absl::StrCat("--plan_file: element ", i, " is not a JSON object"));
    }
    std::string text = parsed[i].dump();
    v1::SubTask subtask;
    auto status = google::protobuf::util::JsonStringToMessage(text, &subtask);
    if (!status.ok()) {
      return UsageError(absl::StrCat("--plan_file: element ", i,
                                     " is not a SubTask: ", std::string(status.message())));
    }
    subtasks.push_back(std::move(subtask));
  }
  return subtasks;
}

absl::StatusOr<v1::Review> BuildReview(const Command& command,
                                       const std::vector<v1::SubTask>& plan) {
  v1::Review review;
  switch (command.subcommand) {
    case Subcommand::kApprove: review.mutable_approve(); return review;
    case Subcommand::kReject:
      review.mutable_reject()->set_feedback(command.feedback);
      review.mutable_reject()->set_abort(command.abort);
      return review;
    case Subcommand::kAnswer: review.mutable_answer()->set_text(command.text); return review;
    case Subcommand::kEditPlan:
      for (const v1::SubTask& subtask : plan) *review.mutable_edit_plan()->add_subtasks() = subtask;
      review.mutable_edit_plan();
      return review;
    case Subcommand::kEditCall:
      review.mutable_edit_tool_call()->set_tool(command.tool);
      review.mutable_edit_tool_call()->set_args_json(command.args_json);
      return review;
    default: return absl::InvalidArgumentError("not a review subcommand");
  }
}

v1::ResumeRunRequest BuildResumeRunRequest(const Command& command, int64_t expected_version,
                                           v1::Review review) {
  v1::ResumeRunRequest request;
  request.set_run_id(command.run_id);
  request.set_expected_version(expected_version);
  *request.mutable_review() = std::move(review);
  return request;
}

v1::ForkRunRequest BuildForkRunRequest(const Command& command,
                                       const std::vector<v1::SubTask>& plan) {
  const ForkOptions& fork = command.fork;
  v1::ForkRunRequest request;
  request.set_run_id(command.run_id);
  if (fork.at_seq.has_value()) {
    request.set_seq(*fork.at_seq);
  } else {
    request.set_iteration(fork.at_iteration.value_or(0));
  }
  v1::ForkEdits& edits = *request.mutable_edits();
  if (!plan.empty()) {
    for (const v1::SubTask& task : plan) *edits.mutable_plan()->add_subtasks() = task;
  }
  if (!fork.tool.empty()) {
    edits.mutable_call()->set_tool(fork.tool);
    edits.mutable_call()->set_args_json(fork.args_json);
  }
  if (fork.answer.has_value()) edits.mutable_human_input()->set_text(*fork.answer);
  if (fork.max_iterations || fork.deadline || fork.retry_budget || fork.token_budget ||
      fork.cost_budget_usd) {
    v1::Limits& limits = *edits.mutable_limits();
    if (fork.max_iterations) limits.set_max_iterations(*fork.max_iterations);
    if (fork.retry_budget) limits.set_retry_budget(*fork.retry_budget);
    if (fork.token_budget) limits.set_token_budget(*fork.token_budget);
    if (fork.cost_budget_usd) limits.set_cost_budget_usd(*fork.cost_budget_usd);
    if (fork.deadline) {
      limits.mutable_deadline()->set_seconds(absl::ToInt64Seconds(*fork.deadline));
      limits.mutable_deadline()->set_nanos(static_cast<int32_t>(
          absl::ToInt64Nanoseconds(*fork.deadline - absl::Seconds(limits.deadline().seconds()))));
    }
  }
  request.set_workspace_at_fork(fork.workspace_at_fork);
  request.set_request_id(fork.request_id);
  return request;
}

v1::CancelRunRequest BuildCancelRunRequest(const Command& command) {
  v1::CancelRunRequest request;
  request.set_run_id(command.run_id);
  request.set_reason(command.reason);
  return request;
}

v1::ListRunsRequest BuildListRunsRequest(const Command& command, absl::string_view page_token) {
  v1::ListRunsRequest request;
  request.set_stage(command.stage_filter);
  request.set_outcome(command.outcome_filter);
  request.set_page_size(command.page_size);
  request.set_page_token(std::string(page_token));
  request.set_parent_run_id(command.parent_run_id);
  return request;
}

}  // namespace rein::cli
