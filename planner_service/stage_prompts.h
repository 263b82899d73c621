// StagePrompts: the system prompt and user template of each planner stage, loaded from a
// folder, and the bounded views of a request that fill them.
#ifndef REIN_PLANNER_SERVICE_STAGE_PROMPTS_H_
#define REIN_PLANNER_SERVICE_STAGE_PROMPTS_H_

#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "planner_service/prompt_template.h"
#include "rein/v1/planner.pb.h"

namespace rein {

// How much of a run's history a prompt shows. The bounds keep the prompt at iteration 50
// about as long as at iteration 2 (docs/DESIGN.md, "Stages").
struct PromptBounds {
  size_t completed_shown = 3;           // plan: the newest ended subtasks shown
  size_t description_bytes = 100;       // a subtask description in a list of ended subtasks
  size_t summary_bytes = 160;           // an ended subtask's summary
  size_t older_description_bytes = 50;  // plan: the ended subtasks before the newest one
  size_t older_summary_bytes = 100;
  size_t human_inputs_shown = 2;   // plan and decide: the newest human inputs
  size_t human_input_bytes = 400;  // the newest one
  size_t older_human_input_bytes = 150;
  size_t plan_observation_bytes = 1500;
  size_t evaluate_observation_bytes = 6000;
  size_t actions_shown = 3;        // decide: the last actions only
  size_t action_args_bytes = 150;  // the newest action
  size_t action_error_bytes = 150;
  size_t action_observation_bytes = 600;
  size_t older_action_bytes = 100;          // args and error of the two before it (no observation)
  size_t subtask_description_bytes = 1000;  // decide, evaluate: the current subtask
  size_t tool_description_bytes = 300;
  size_t tool_schema_bytes = 1500;  // decide: a tool's argument schema
  size_t replan_reason_bytes = 300;
};

// One stage's prompt, ready to send. The request puts, in this order: the stage tools, a
// system prompt, then one user message of two blocks, `context` and `user`, with a cache
// breakpoint after the tools, after the system prompt and after the context. Everything up to
// the context's breakpoint is the same for every call of a stage in a run, so from the second
// call on it is read from the model's prompt cache. The backend chooses, from run-constant
// inputs only, one of two layouts (anthropic_backend.h):
//  - compact: the stage's own tool and `stage_system` (its own section): the least sent, for a
//    run whose stage prefix reaches the API's minimum cacheable size by itself;
//  - shared: the three stage tools and `system` (the three stages' sections under one heading
//    each), the same for every call of a run whatever its stage, so that even a short goal with
//    one tool makes a prefix the API caches (1,024 tokens for most models).
struct RenderedPrompt {
  std::string system;        // shared layout: every stage's section
  std::string stage_system;  // compact layout: this stage's section only
  std::string context;       // run-constant: the goal, the run's tools
  std::string user;          // what changes from call to call
};

// The nine templates, in `dir` as {plan,decide,evaluate}_{system,context,user}.txt. System
// prompts take no variables. Context templates take only what is constant for a run:
//   plan:     goal_text (required), tool_list (every tool of the run with its schema: the
//             plan may propose the first call)
//   decide:   goal_text, tool_list (every tool of the run with its schema) (both required)
//   evaluate: goal_text (required), tool_list (the run's tools and what they do, from
//             EvaluateRequest.run_tools: what a tool's output means)
// User templates take what changes per call:
//   plan:     done_list, observation_text, human_notes, replan_text, id_prefix (e.g. "p7-": ids
//             made with it cannot repeat an earlier plan's, and no list of used ids needs to
//             grow in the prompt), first_call_text (whether to propose the first call)
//   decide:   subtask_text, allowed_tool_names (the names the subtask may use) (both required),
//             action_lines, human_notes
//   evaluate: subtask_text, observation_text (both required), action_text, next_call_text (the
//             tools next_tool_call may use, or that it is not asked for)
// Immutable after loading; thread-safe.
class StagePrompts {
 public:
  // Loads and checks all nine files. Errors name the file: NOT_FOUND for a missing file,
  // INVALID_ARGUMENT for a template problem, for a variable the stage does not provide
  // ("unknown variable") and for a required one the template lacks ("missing variable").
  static absl::StatusOr<std::unique_ptr<StagePrompts>> Load(const std::string& dir,
                                                            PromptBounds bounds = {});
  // As Load, from texts keyed by file name (e.g. "plan_user.txt"); for tests and fuzzing.
  static absl::StatusOr<std::unique_ptr<StagePrompts>> FromTexts(
      const std::map<std::string, std::string>& texts, PromptBounds bounds = {});

  // The prompts for one request. INTERNAL when a rendered prompt holds a placeholder.
  absl::StatusOr<RenderedPrompt> RenderPlan(const rein::v1::PlanRequest& request) const;
  absl::StatusOr<RenderedPrompt> RenderDecide(const rein::v1::DecideRequest& request) const;
  absl::StatusOr<RenderedPrompt> RenderEvaluate(const rein::v1::EvaluateRequest& request) const;

 private:
  StagePrompts(PromptBounds bounds, std::map<std::string, PromptTemplate> templates,
               std::string system, std::map<std::string, std::string> stage_systems)
      : bounds_(bounds),
        templates_(std::move(templates)),
        system_(std::move(system)),
        stage_systems_(std::move(stage_systems)) {}

  absl::StatusOr<RenderedPrompt> Render(const std::string& stage,
                                        const std::map<std::string, std::string>& all) const;

  const PromptBounds bounds_;
  const std::map<std::string, PromptTemplate> templates_;  // by file name
  const std::string system_;  // the three system prompts, each under its heading
  const std::map<std::string, std::string> stage_systems_;  // by stage: its own system prompt
};

// `text` cut to at most `max_bytes` on a UTF-8 boundary, with " …[+N bytes]" appended when
// cut (N = the bytes left out).
std::string CapText(absl::string_view text, size_t max_bytes);

// Where the prompts are when --prompts_dir is not given: the first existing one of
// $RUNFILES_DIR/rein/planner_service/prompts, $TEST_SRCDIR/rein/planner_service/prompts,
// <this binary>.runfiles/rein/planner_service/prompts, <this binary's folder>/prompts and
// ./planner_service/prompts; that last one when none exists.
std::string DefaultPromptsDir();

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_STAGE_PROMPTS_H_
