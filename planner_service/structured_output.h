// The forced tool of each planner stage (submit_plan, submit_decision, submit_evaluation):
// its JSON schema, and the validation of a model's answer against the schema and the request.
#ifndef REIN_PLANNER_SERVICE_STRUCTURED_OUTPUT_H_
#define REIN_PLANNER_SERVICE_STRUCTURED_OUTPUT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "rein/v1/planner.pb.h"

namespace rein {

inline constexpr char kPlanToolName[] = "submit_plan";
inline constexpr char kDecideToolName[] = "submit_decision";
inline constexpr char kEvaluateToolName[] = "submit_evaluation";

// The tool definitions ({"name", "description", "input_schema"}) as the Messages API takes
// them. The request narrows the schema: allowed_tools items and tool_call.tool are enums of
// the tools the request offers (for decide: every tool of the run, request.run_tools, or the
// subtask's tools when it has none; the reply is then checked against the subtask's tools).
nlohmann::json PlanTool(const rein::v1::PlanRequest& request);
nlohmann::json DecideTool(const rein::v1::DecideRequest& request);
// `request.run_tools` name the tools next_tool_call may use (an optional member, in every
// evaluate tool so that the three stages share one cached prefix).
nlohmann::json EvaluateTool(const rein::v1::EvaluateRequest& request = {});

// The three stage tools in the order every request of a run sends them (submit_plan,
// submit_decision, submit_evaluation), their enums made from `run_tools` (every tool of the
// run): the same array for each call of the run, whatever its stage, so that it opens the
// prefix the three stages share in the model's prompt cache. The call names its stage's tool in
// tool_choice.
nlohmann::json StageTools(const google::protobuf::RepeatedPtrField<rein::v1::ToolSpec>& run_tools);

// Checks `value` against the subset of JSON Schema these tools use: type (object, array,
// string, boolean, integer, number), properties, required, items, enum, minLength/maxLength
// (in characters), minItems/maxItems. Properties the schema does not name are allowed and
// ignored. Walks no deeper than the schema. INTERNAL "invalid output: <path>: <problem>".
absl::Status ValidateAgainstSchema(const nlohmann::json& value, const nlohmann::json& schema,
                                   const std::string& path);

// The stage reply from the tool input (or the JSON object taken out of a text reply):
// validated against the stage's schema, then against the request. Every failure is INTERNAL
// "invalid output: <what>". Top-level null members count as absent. `output` must be nested
// no deeper than kMaxJsonNesting + 8 (the caller checks; see JsonNestingDepth). `usage`,
// `backend` and `refusal` are left for the caller.
//  - plan: subtask ids unique in the reply and not one of request.completed; allowed_tools
//    from request.tools, none listed twice. An optional first_tool_call {tool, args} becomes
//    first_call as given (a non-string tool or non-object args as their JSON text, args in a
//    string holding an object as the object): the router checks it, never an error here.
//  - decide: exactly one of tool_call and human_query; tool_call.tool one of request.tools;
//    tool_call.args a JSON object (a string holding one is accepted), kept as args_json.
//  - evaluate: status COMPLETED, FAILED or NEEDS_MORE_WORK. An optional next_tool_call {tool,
//    args} is checked like a decide tool_call for request.subtask (plus CheckProposedCall):
//    a bad one is dropped with next_call_dropped saying why, never an error.
absl::StatusOr<rein::v1::PlanResponse> PlanFromOutput(const nlohmann::json& output,
                                                      const rein::v1::PlanRequest& request);
absl::StatusOr<rein::v1::DecideResponse> DecideFromOutput(const nlohmann::json& output,
                                                          const rein::v1::DecideRequest& request);
absl::StatusOr<rein::v1::EvaluateResponse> EvaluateFromOutput(
    const nlohmann::json& output, const rein::v1::EvaluateRequest& request = {});

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_STRUCTURED_OUTPUT_H_
