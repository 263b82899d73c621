// Answers planner requests from a validated Script: rule matching, delays, usage.
#include "planner_service/scripted_backend.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "planner_service/proposal.h"

namespace rein {
namespace {

// What a request offers to `when` conditions. Views into the request.
struct Facts {
  absl::string_view subtask;  // empty for plan
  int64_t iteration = 0;
  std::vector<absl::string_view> human_inputs;
  std::vector<absl::string_view> observations;
  absl::string_view replan_reason;
  std::vector<absl::string_view> completed;
  absl::string_view tool;
  bool action_ok = false;
  absl::string_view goal;
};

// The values of the reply's placeholders: ${observation} is the first observation.
PlaceholderValues PlaceholdersOf(const Facts& facts) {
  PlaceholderValues values;
  values.iteration = facts.iteration;
  values.subtask = facts.subtask;
  if (!facts.observations.empty()) values.observation = facts.observations[0];
  return values;
}

bool AnyContains(const std::vector<absl::string_view>& texts, absl::string_view needle) {
  return std::any_of(texts.begin(), texts.end(),
                     [needle](absl::string_view text) { return absl::StrContains(text, needle); });
}

bool Matches(const RuleConditions& m, const Facts& f) {
  if (m.subtask && *m.subtask != f.subtask) return false;
  if (m.has_human_input && *m.has_human_input == f.human_inputs.empty()) return false;
  if (m.human_input_contains && !AnyContains(f.human_inputs, *m.human_input_contains)) return false;
  if (m.observation_contains && !AnyContains(f.observations, *m.observation_contains)) return false;
  if (m.replan_reason_contains && !absl::StrContains(f.replan_reason, *m.replan_reason_contains)) {
    return false;
  }
  if (m.completed_contains && std::find(f.completed.begin(), f.completed.end(),
                                        *m.completed_contains) == f.completed.end()) {
    return false;
  }
  if (m.iteration_at_least && f.iteration < *m.iteration_at_least) return false;
  if (m.tool && *m.tool != f.tool) return false;
  if (m.action_ok && *m.action_ok != f.action_ok) return false;
  if (m.goal_contains && !absl::StrContains(f.goal, *m.goal_contains)) return false;
  return true;
}

int64_t Tokens(size_t bytes) { return static_cast<int64_t>((bytes + 3) / 4); }

// Picks the first matching rule, waits its delay (never past `deadline`), and returns its
// reply (labelled "scripted", with usage) or its error.
template <typename Response>
absl::StatusOr<Response> Respond(const std::vector<ScriptRule>& rules, ScriptStage stage,
                                 const Facts& facts, size_t request_bytes, absl::Time deadline,
                                 Clock* clock) {
  if (clock->Now() >= deadline) {
    return absl::DeadlineExceededError("scripted planner: the RPC deadline has passed");
  }
  const ScriptRule* rule = nullptr;
  for (const ScriptRule& candidate : rules) {
    if (Matches(candidate.when, facts)) {
      rule = &candidate;
      break;
    }
  }
  if (rule == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "scripted planner: no ", ScriptStageName(stage), " rule matches (subtask=",
        facts.subtask.empty() ? "(none)" : facts.subtask, ", iteration=", facts.iteration, ")"));
  }
  if (rule->delay > absl::ZeroDuration()) {
    const absl::Time wake = clock->Now() + rule->delay;
    if (wake >= deadline) {
      clock->SleepUntil(deadline);
      return absl::DeadlineExceededError(absl::StrCat("scripted planner: ", rule->path, " waits ",
                                                      absl::ToInt64Milliseconds(rule->delay),
                                                      "ms, past the RPC deadline"));
    }
    clock->SleepUntil(wake);
  }
  if (rule->error_code != absl::StatusCode::kOk) {
    return absl::Status(rule->error_code,
                        SubstitutePlaceholders(rule->error_message, PlaceholdersOf(facts)));
  }
  Response response;
  absl::Status rendered = RenderReply(rule->reply, PlaceholdersOf(facts), &response);
  if (!rendered.ok()) {
    return absl::InternalError(
        absl::StrCat("scripted planner: ", rule->path, ".reply: ", rendered.message()));
  }
  response.set_backend("scripted");
  if (!response.has_usage()) {
    const int64_t output_tokens = Tokens(response.ByteSizeLong());
    response.mutable_usage()->set_input_tokens(Tokens(request_bytes));
    response.mutable_usage()->set_output_tokens(output_tokens);
  }
  return response;
}

void AddHumanInputs(const google::protobuf::RepeatedPtrField<rein::v1::HumanInput>& inputs,
                    Facts* facts) {
  for (const rein::v1::HumanInput& input : inputs) facts->human_inputs.push_back(input.text());
}

}  // namespace

ScriptedBackend::ScriptedBackend(Script script, Clock* clock)
    : script_(std::move(script)), clock_(clock) {}

absl::StatusOr<std::unique_ptr<ScriptedBackend>> ScriptedBackend::FromJson(absl::string_view text,
                                                                           absl::string_view source,
                                                                           Clock* clock) {
  absl::StatusOr<Script> script = ParseScript(text, source);
  if (!script.ok()) return script.status();
  return std::make_unique<ScriptedBackend>(*std::move(script), clock);
}

absl::StatusOr<std::unique_ptr<ScriptedBackend>> ScriptedBackend::FromFile(const std::string& path,
                                                                           Clock* clock) {
  absl::StatusOr<Script> script = LoadScriptFile(path);
  if (!script.ok()) return script.status();
  return std::make_unique<ScriptedBackend>(*std::move(script), clock);
}

absl::StatusOr<rein::v1::PlanResponse> ScriptedBackend::Plan(const rein::v1::PlanRequest& request,
                                                             absl::Time deadline) {
  Facts facts;
  facts.goal = request.goal();
  facts.iteration = request.iteration();
  AddHumanInputs(request.human_inputs(), &facts);
  facts.observations.push_back(request.latest_observation());
  facts.replan_reason = request.replan_reason();
  for (const rein::v1::SubTask& done : request.completed()) facts.completed.push_back(done.id());
  return Respond<rein::v1::PlanResponse>(script_.plan, ScriptStage::kPlan, facts,
                                         request.ByteSizeLong(), deadline, clock_);
}

absl::StatusOr<rein::v1::DecideResponse> ScriptedBackend::Decide(
    const rein::v1::DecideRequest& request, absl::Time deadline) {
  Facts facts;
  facts.goal = request.goal();
  facts.subtask = request.subtask().id();
  facts.iteration = request.iteration();
  AddHumanInputs(request.human_inputs(), &facts);
  return Respond<rein::v1::DecideResponse>(script_.decide, ScriptStage::kDecide, facts,
                                           request.ByteSizeLong(), deadline, clock_);
}

absl::StatusOr<rein::v1::EvaluateResponse> ScriptedBackend::Evaluate(
    const rein::v1::EvaluateRequest& request, absl::Time deadline) {
  Facts facts;
  facts.goal = request.goal();
  facts.subtask = request.subtask().id();
  facts.iteration = request.iteration();
  facts.observations.push_back(request.observation());
  facts.observations.push_back(request.action().observation());
  facts.tool = request.action().tool();
  facts.action_ok = request.action().ok();
  absl::StatusOr<rein::v1::EvaluateResponse> reply = Respond<rein::v1::EvaluateResponse>(
      script_.evaluate, ScriptStage::kEvaluate, facts, request.ByteSizeLong(), deadline, clock_);
  if (reply.ok()) CheckProposedCall(request, &*reply);
  return reply;
}

}  // namespace rein
