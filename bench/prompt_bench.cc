// prompt_bench: how the prompt of each planner stage grows over a long run. One scripted run
// through the real stage router and planner on the in-repo fake of the Messages API, reads of
// 4 KB (realistic observations); for each stage, the request bytes and prompt tokens (cached or
// not) of its first request at or after iterations 2, 10, 50 and 200, and the growth from 2 to
// 50.
//
//   bazel run //bench:prompt_bench [-- --quick]
#include <cstdio>
#include <map>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/token_run.h"
#include "planner_service/stage_prompts.h"

ABSL_FLAG(bool, quick, false, "a shorter run, up to iteration 50 (smoke test)");
ABSL_FLAG(std::string, prompts_dir, "", "the planner's prompts; empty = the built-in ones");
ABSL_FLAG(int64_t, observation_bytes, 4096, "what each read returns");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const bool quick = absl::GetFlag(FLAGS_quick);
  rein::TokenRunOptions options;
  options.observation_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_observation_bytes));
  options.prompts_dir = absl::GetFlag(FLAGS_prompts_dir).empty() ? rein::DefaultPromptsDir()
                                                                 : absl::GetFlag(FLAGS_prompts_dir);
  const std::vector<int> points =
      quick ? std::vector<int>{2, 10, 50} : std::vector<int>{2, 10, 50, 200};
  // Every plan's first call asked of Decide (RunSpec.combine_plan_decide false), so that decide
  // requests are made all along the run and their prompts can be measured.
  options.combine_plan_decide = false;
  // Iterations advance by one per step (each tool call): enough steps to pass the last point.
  options.steps = points.back() + 10 + (points.back() % 2);
  absl::StatusOr<rein::TokenRunResult> result = rein::RunScriptedTask(options);
  if (!result.ok()) {
    std::fprintf(stderr, "prompt_bench: %s\n", std::string(result.status().message()).c_str());
    return 1;
  }
  std::printf("prompt_bench: %d steps, reads of %zu bytes\n", result->tool_calls,
              options.observation_bytes);
  for (const char* stage : {"plan", "decide", "evaluate"}) {
    std::map<int, const rein::ModelRequest*> at;
    for (int point : points) {
      for (const rein::ModelRequest& r : result->requests) {
        if (r.stage == stage && r.iteration >= point) {
          at[point] = &r;
          break;
        }
      }
    }
    for (int point : points) {
      const rein::ModelRequest* r = at[point];
      if (r == nullptr) continue;
      std::printf("%-8s it %3d (request at iteration %3d): %6lld bytes, %5lld tokens\n", stage,
                  point, r->iteration, static_cast<long long>(r->body_bytes),
                  static_cast<long long>(r->prompt_tokens()));
      std::printf("BENCH\tprompt.%s.it%d.bytes\t%lld\tbytes\n", stage, point,
                  static_cast<long long>(r->body_bytes));
      std::printf("BENCH\tprompt.%s.it%d.tokens\t%lld\ttokens\n", stage, point,
                  static_cast<long long>(r->prompt_tokens()));
    }
    if (at[2] != nullptr && at[50] != nullptr && at[2]->prompt_tokens() > 0) {
      std::printf("BENCH\tprompt.%s.growth_2_50\t%.3f\tratio\n", stage,
                  static_cast<double>(at[50]->prompt_tokens()) / at[2]->prompt_tokens());
    }
  }
  return 0;
}
