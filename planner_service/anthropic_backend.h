// AnthropicBackend: the PlannerBackend that asks Claude over the Messages API, one forced tool
// call per stage, with bounded prompts and validated structured output.
#ifndef REIN_PLANNER_SERVICE_ANTHROPIC_BACKEND_H_
#define REIN_PLANNER_SERVICE_ANTHROPIC_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "planner_service/anthropic_client.h"
#include "planner_service/planner_backend.h"
#include "planner_service/stage_prompts.h"
#include "rein/v1/planner.pb.h"

namespace rein {

// The smallest prefix, in tokens, the Messages API caches for `model` (Anthropic's prompt
// caching documentation): 4,096 for Claude Opus 4.5 and 4.6 and Haiku 4.5, 2,048 for Sonnet 4.6
// and the Haiku 3 models, 1,024 for the others. The one place the planner knows it.
int64_t MinCacheableTokens(absl::string_view model);

// How a stage's requests of a run are laid out (stage_prompts.h, RenderedPrompt).
enum class PromptLayout { kCompact, kShared };

// The layout of a stage's requests: kCompact when its own prefix (`stage_tool`, `stage_system`
// and `context`, estimated at 4 bytes a token) is at least 1.25 times `min_cacheable_tokens`
// (a margin for tokenizers that count fewer tokens than the estimate), else kShared. Every
// input is run-constant, so every call of a stage in a run gets the same layout.
PromptLayout ChooseLayout(const nlohmann::json& stage_tool, const std::string& stage_system,
                          const std::string& context, int64_t min_cacheable_tokens);

struct AnthropicBackendOptions {
  std::string model = "claude-sonnet-5";  // when ModelOptions.model is empty
  // The model's cache minimum in tokens; 0 = MinCacheableTokens(model used).
  int64_t min_cacheable_tokens = 0;
  // max_tokens per stage reply when ModelOptions.max_tokens is 0.
  int plan_max_tokens = 4096;
  int decide_max_tokens = 2048;
  int evaluate_max_tokens = 2048;
};

// Each stage is one Messages request: the stage tools and system prompt in the stage's layout
// (ChooseLayout), the run-constant context, all cached, then the rendered user template; the
// model is forced to call the stage's tool. The reply is taken from
// that tool call, or else from the first JSON object in the reply's text, and validated
// (structured_output.h). Stop reasons: `max_tokens` and `model_context_window_exceeded` are
// invalid output; `refusal` is a reply with `refusal` set to the model's words; `pause_turn`
// sends the paused content back once more within the same deadline. `usage` sums every
// request of the call; `backend` is "anthropic:<model used>".
//
// Errors: INVALID_ARGUMENT for bad ModelOptions (negative max_tokens, temperature outside
// [0, 1], a model name with control characters); the client's errors (anthropic_client.h);
// INTERNAL "invalid output: ..." for replies that fail validation; INTERNAL for a prompt
// that would still hold a placeholder. Stateless and thread-safe.
class AnthropicBackend final : public PlannerBackend {
 public:
  AnthropicBackend(AnthropicBackendOptions options, std::unique_ptr<AnthropicClient> client,
                   std::unique_ptr<StagePrompts> prompts);

  absl::StatusOr<rein::v1::PlanResponse> Plan(const rein::v1::PlanRequest& request,
                                              absl::Time deadline) override;
  absl::StatusOr<rein::v1::DecideResponse> Decide(const rein::v1::DecideRequest& request,
                                                  absl::Time deadline) override;
  absl::StatusOr<rein::v1::EvaluateResponse> Evaluate(const rein::v1::EvaluateRequest& request,
                                                      absl::Time deadline) override;

  std::string name() const override { return "anthropic:" + options_.model; }

 private:
  // What one stage call got back from the model.
  struct StageAnswer {
    nlohmann::json output;  // the tool input or the object from the text; null when refused
    std::string refusal;
    rein::v1::Usage usage;
    std::string model;
  };

  // One request: the stage tools (`run_tools` make their enums) and the system prompt in the
  // stage's layout (ChooseLayout), then the stage's context, each ending at a cache breakpoint,
  // then the stage's user text; tool_choice forces `tool_name`.
  absl::StatusOr<StageAnswer> Ask(
      const rein::v1::ModelOptions& model_options, int default_max_tokens,
      const RenderedPrompt& prompt,
      const google::protobuf::RepeatedPtrField<rein::v1::ToolSpec>& run_tools,
      const std::string& tool_name, absl::Time deadline);

  const AnthropicBackendOptions options_;
  const std::unique_ptr<AnthropicClient> client_;
  const std::unique_ptr<StagePrompts> prompts_;
};

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_ANTHROPIC_BACKEND_H_
