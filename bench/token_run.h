// TokenRun: one scripted run of the real stage router and the real planner (AnthropicBackend
// with the stage prompts) against the in-repo fake of the Messages API with its prompt cache
// simulated, recording what every model request cost. Shared by token_bench and prompt_bench.
#ifndef REIN_BENCH_TOKEN_RUN_H_
#define REIN_BENCH_TOKEN_RUN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace rein {

// The plan tool's maxItems for subtasks (planner_service/structured_output.cc).
inline constexpr int kMaxSubtasksPerPlanReply = 20;

struct TokenRunOptions {
  int steps = 50;                       // read_file calls; two per subtask, one plan per subtask
  size_t observation_bytes = 300;       // what each read returns
  int64_t min_cacheable_tokens = 1024;  // the API's minimum for most models
  std::string prompts_dir;              // the planner's prompts
  absl::Duration deadline = absl::Seconds(120);  // for the whole run
  // RunScriptedTask: subtasks (of two reads each) per plan reply. 1 plans one subtask at a
  // time; kMaxSubtasksPerPlanReply lists as many as the plan schema allows at once, as a model
  // typically plans "read these 50 files" (50 reads: a plan of 20 subtasks, then one of 5).
  int subtasks_per_plan = 1;
  // RunSpec.combine_evaluate_decide: the first evaluation of a subtask also gives the next read.
  bool combine_evaluate_decide = true;
  // RunSpec.combine_plan_decide: each plan reply also gives the first read of its top subtask.
  bool combine_plan_decide = true;
};

// One model request as the fake answered it.
struct ModelRequest {
  std::string stage;  // "plan", "decide", "evaluate" or (RunReactLoop) "react"
  int iteration = 0;  // the planner request's iteration
  int64_t body_bytes = 0;
  int64_t input_tokens = 0;  // neither read from nor written to the cache
  int64_t cache_read_tokens = 0;
  int64_t cache_write_tokens = 0;
  int64_t output_tokens = 0;
  int64_t prompt_tokens() const { return input_tokens + cache_read_tokens + cache_write_tokens; }
};

struct TokenRunResult {
  std::vector<ModelRequest> requests;
  int tool_calls = 0;
  std::string end;  // the run's terminal stage and reason
};

// The input cost in plain-token equivalents, priced as the API prices cache writes (1.25x) and
// reads (0.1x) of the input price.
double PricedInput(const ModelRequest& r);

// Drives one run to its end. The model's answers are scripted: each plan gives one subtask of
// two reads (and, when asked, proposes the first), each decide reads the next file, the first
// evaluation of a subtask needs more work (and, when asked, proposes the next read), the second
// completes it (and, at the last step, the goal). Error when the run does not
// end as scripted or the deadline passes.
absl::StatusOr<TokenRunResult> RunScriptedTask(const TokenRunOptions& options);

// The same task as a ReAct loop with prompt caching on the same fake and the same tools: one
// conversation (the goal, then an assistant tool_use and a user tool_result per read, then the
// final answer), each request sending the whole conversation so far with cache breakpoints on
// the tools, the system prompt (a few sentences) and the last message. `steps` reads of
// `observation_bytes` each, then one request for the answer: steps + 1 requests.
absl::StatusOr<TokenRunResult> RunReactLoop(const TokenRunOptions& options);

}  // namespace rein

#endif  // REIN_BENCH_TOKEN_RUN_H_
