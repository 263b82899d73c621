// Script: a scripted planner's rules, read and validated from JSON (format in SCRIPT.md).
#ifndef REIN_PLANNER_SERVICE_SCRIPT_H_
#define REIN_PLANNER_SERVICE_SCRIPT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"

namespace rein {

enum class ScriptStage { kPlan, kDecide, kEvaluate };

// "plan", "decide" or "evaluate".
const char* ScriptStageName(ScriptStage stage);

// The conditions of a rule's `when`; an unset condition always holds. Only the conditions
// available in the rule's stage are ever set.
struct RuleConditions {
  std::optional<std::string> subtask;
  std::optional<bool> has_human_input;
  std::optional<std::string> human_input_contains;
  std::optional<std::string> observation_contains;
  std::optional<std::string> replan_reason_contains;
  std::optional<std::string> completed_contains;
  std::optional<int64_t> iteration_at_least;
  std::optional<std::string> tool;
  std::optional<bool> action_ok;
  // The request's goal contains it (a child run's goal is its subtask's description).
  std::optional<std::string> goal_contains;
};

// One validated rule: `reply` (the stage's response in proto3 JSON, possibly with
// `toolCall.args`; RenderReply turns it into the response), or an error status when
// `error_code` is not OK.
struct ScriptRule {
  std::string path;  // e.g. "decide[2]", for messages
  RuleConditions when;
  nlohmann::json reply;
  absl::StatusCode error_code = absl::StatusCode::kOk;
  std::string error_message;
  absl::Duration delay = absl::ZeroDuration();
};

// A validated script: each stage's rules in the order given (a missing stage has none).
struct Script {
  std::vector<ScriptRule> plan;
  std::vector<ScriptRule> decide;
  std::vector<ScriptRule> evaluate;
};

// Parses and validates the JSON script `text` (comments allowed). Every problem is
// INVALID_ARGUMENT reading "<source>: <json path>: <problem>", e.g.
// "script.json: decide[2].reply.toolCall: ...", or "<source>: not valid JSON: ..." with the
// line and column. Any input is handled: nothing here asserts on the text.
absl::StatusOr<Script> ParseScript(absl::string_view text, absl::string_view source = "script");

// Reads `path` and parses it with the path as source. A missing file is NOT_FOUND; one that
// cannot be read, is not a regular file or is over 16 MiB is FAILED_PRECONDITION; all name
// the path.
absl::StatusOr<Script> LoadScriptFile(const std::string& path);

// The values of a reply's placeholders `${iteration}`, `${subtask}` and `${observation}`.
struct PlaceholderValues {
  int64_t iteration = 0;
  absl::string_view subtask;
  absl::string_view observation;
};

// `text` with every placeholder replaced by its value.
std::string SubstitutePlaceholders(absl::string_view text, const PlaceholderValues& values);

// Renders a validated rule's `reply` into `response` (of the rule's stage): placeholders
// substituted in every string, `toolCall.args` turned into `argsJson`, then parsed as proto3
// JSON. A reply that does not parse is INVALID_ARGUMENT with the parser's message.
absl::Status RenderReply(const nlohmann::json& reply, const PlaceholderValues& values,
                         google::protobuf::Message* response);

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_SCRIPT_H_
