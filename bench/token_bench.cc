// token_bench: the model tokens of a 50-step task of small reads (and of the same task with
// reads of a few KB) through the real stage router and planner on the in-repo fake of the
// Messages API, with the prompt cache at the API's real 1,024-token minimum, side by side with
// a ReAct loop with prompt caching doing the same reads on the same fake (RunReactLoop). Each
// variant runs four ways: rein with one subtask per plan (tokens.<variant>.*), the same with
// decide and evaluate always separate requests (combine_evaluate_decide false;
// tokens.<variant>_separate.*), rein with plans listing as many subtasks as the plan schema
// allows (20; tokens.<variant>_full_plan.*) and the ReAct loop (tokens.react.<variant>.*). Prints
// requests (per stage for rein), input, output, cache read and cache write tokens, the input priced
// as the API prices it (cache writes 1.25x, reads 0.1x) in plain-token equivalents, and rein's
// priced input over ReAct's (tokens.<variant>[_full_plan].priced_vs_react).
//
//   bazel run //bench:token_bench [-- --quick]
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/token_run.h"
#include "planner_service/stage_prompts.h"

ABSL_FLAG(bool, quick, false, "a 10-step task instead of 50 (smoke test)");
ABSL_FLAG(std::string, prompts_dir, "", "the planner's prompts; empty = the built-in ones");
ABSL_FLAG(int64_t, min_cacheable_tokens, 1024, "the prompt cache's minimum prefix, in tokens");

namespace rein {
namespace {

struct Totals {
  ModelRequest tokens;
  double priced = 0;
};

// The run's result; exits with the error when it failed.
TokenRunResult Check(const std::string& label, absl::StatusOr<TokenRunResult> result) {
  if (!result.ok()) {
    std::fprintf(stderr, "token_bench: %s: %s\n", label.c_str(),
                 std::string(result.status().message()).c_str());
    std::exit(1);
  }
  return *std::move(result);
}

// Prints one run's figures as a line and as BENCH lines under tokens.<key>.
Totals Report(const std::string& key, const std::string& label, const TokenRunResult& result) {
  std::map<std::string, int> requests;
  Totals totals;
  ModelRequest& total = totals.tokens;
  for (const ModelRequest& r : result.requests) {
    ++requests[r.stage];
    total.input_tokens += r.input_tokens;
    total.cache_read_tokens += r.cache_read_tokens;
    total.cache_write_tokens += r.cache_write_tokens;
    total.output_tokens += r.output_tokens;
    totals.priced += PricedInput(r);
  }
  const bool react = requests.count("react") > 0;
  const int64_t prompt = total.prompt_tokens();
  const std::string split =
      react ? ""
            : absl::StrFormat(" (plan %d, decide %d, evaluate %d)", requests["plan"],
                              requests["decide"], requests["evaluate"]);
  std::printf(
      "%s: %d steps, %zu requests%s; prompt tokens %lld (uncached %lld, cache reads %lld = "
      "%.0f%%, cache writes %lld); output %lld; priced input %.0f plain-token equivalents (%.0f "
      "per step)\n",
      label.c_str(), result.tool_calls, result.requests.size(), split.c_str(),
      static_cast<long long>(prompt), static_cast<long long>(total.input_tokens),
      static_cast<long long>(total.cache_read_tokens),
      prompt > 0 ? 100.0 * static_cast<double>(total.cache_read_tokens) / prompt : 0.0,
      static_cast<long long>(total.cache_write_tokens), static_cast<long long>(total.output_tokens),
      totals.priced, totals.priced / result.tool_calls);
  auto line = [&](const std::string& name, double value, const char* unit) {
    std::printf("BENCH\ttokens.%s.%s\t%.0f\t%s\n", key.c_str(), name.c_str(), value, unit);
  };
  line("steps", result.tool_calls, "steps");
  line("requests", static_cast<double>(result.requests.size()), "requests");
  if (!react) {
    for (const char* stage : {"plan", "decide", "evaluate"}) {
      line(absl::StrCat("requests.", stage), requests[stage], "requests");
    }
  }
  line("input", static_cast<double>(total.input_tokens), "tokens");
  line("output", static_cast<double>(total.output_tokens), "tokens");
  line("cache_read", static_cast<double>(total.cache_read_tokens), "tokens");
  line("cache_write", static_cast<double>(total.cache_write_tokens), "tokens");
  line("prompt", static_cast<double>(prompt), "tokens");
  line("priced_input", totals.priced, "plain_tokens");
  line("priced_input_per_step", totals.priced / result.tool_calls, "plain_tokens");
  return totals;
}

// One variant of the task (its observation size): rein with one subtask per plan, rein with
// one plan of every subtask, and the ReAct loop, side by side, with rein / ReAct priced input.
void Bench(const std::string& key, const std::string& label, TokenRunOptions options) {
  options.subtasks_per_plan = 1;
  const Totals rein = Report(key, absl::StrCat("rein, one subtask per plan, ", label),
                             Check(label, RunScriptedTask(options)));
  {
    // The same task with the plan's first call asked of Decide (RunSpec.combine_plan_decide
    // false; the evaluations still propose the next read), for the saving of plan+decide.
    TokenRunOptions no_plan_decide = options;
    no_plan_decide.combine_plan_decide = false;
    Report(absl::StrCat(key, "_no_plan_decide"),
           absl::StrCat("rein, one subtask per plan, plan and decide separate, ", label),
           Check(label, RunScriptedTask(no_plan_decide)));
    // Every read costing its own decide request (both combine_* false): one request per stage.
    TokenRunOptions separate = no_plan_decide;
    separate.combine_evaluate_decide = false;
    Report(absl::StrCat(key, "_separate"),
           absl::StrCat("rein, one subtask per plan, every stage its own request, ", label),
           Check(label, RunScriptedTask(separate)));
  }
  options.subtasks_per_plan = kMaxSubtasksPerPlanReply;
  const Totals rein_full_plan =
      Report(absl::StrCat(key, "_full_plan"),
             absl::StrCat("rein, plans of up to ", kMaxSubtasksPerPlanReply, " subtasks, ", label),
             Check(label, RunScriptedTask(options)));
  const Totals react =
      Report(absl::StrCat("react.", key), absl::StrCat("ReAct loop with prompt caching, ", label),
             Check(label, RunReactLoop(options)));
  const double ratio = rein.priced / react.priced;
  const double ratio_full_plan = rein_full_plan.priced / react.priced;
  std::printf("%s: priced input rein / ReAct %.2f (one subtask per plan), %.2f (full plans)\n",
              label.c_str(), ratio, ratio_full_plan);
  std::printf("BENCH\ttokens.%s.priced_vs_react\t%.3f\tratio\n", key.c_str(), ratio);
  std::printf("BENCH\ttokens.%s_full_plan.priced_vs_react\t%.3f\tratio\n", key.c_str(),
              ratio_full_plan);
}

}  // namespace
}  // namespace rein

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  rein::TokenRunOptions options;
  options.steps = absl::GetFlag(FLAGS_quick) ? 10 : 50;
  options.min_cacheable_tokens = absl::GetFlag(FLAGS_min_cacheable_tokens);
  options.prompts_dir = absl::GetFlag(FLAGS_prompts_dir).empty() ? rein::DefaultPromptsDir()
                                                                 : absl::GetFlag(FLAGS_prompts_dir);
  std::printf(
      "token_bench: one task of reads through the stage router and the anthropic "
      "backend on the fake Messages API (cache minimum %lld tokens; tokens = bytes / 4 "
      "of each block, as the fake counts them)\n",
      static_cast<long long>(options.min_cacheable_tokens));
  options.observation_bytes = 300;
  rein::Bench("small_reads", "small reads (300 B)", options);
  options.observation_bytes = 4096;
  rein::Bench("4kb_reads", "reads of 4 KB", options);
  return 0;
}
