// token_bench: the model tokens of a 50-step task of small reads (and of the same task with
// reads of a few KB) through the real stage router and planner on the in-repo fake of the
// Messages API, with the prompt cache at the API's real 1,024-token minimum. Prints requests per
// stage, input, output, cache read and cache write tokens, and the input priced as the API
// prices it (cache writes 1.25x, reads 0.1x), in plain-token equivalents.
//
//   bazel run //bench:token_bench [-- --quick]
#include <cstdio>
#include <map>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "bench/token_run.h"
#include "planner_service/stage_prompts.h"

ABSL_FLAG(bool, quick, false, "a 10-step task instead of 50 (smoke test)");
ABSL_FLAG(std::string, prompts_dir, "", "the planner's prompts; empty = the built-in ones");
ABSL_FLAG(int64_t, min_cacheable_tokens, 1024, "the prompt cache's minimum prefix, in tokens");

namespace rein {
namespace {

void Bench(const std::string& key, const std::string& label, const TokenRunOptions& options) {
  absl::StatusOr<TokenRunResult> result = RunScriptedTask(options);
  if (!result.ok()) {
    std::fprintf(stderr, "token_bench: %s: %s\n", label.c_str(),
                 std::string(result.status().message()).c_str());
    std::exit(1);
  }
  std::map<std::string, int> requests;
  ModelRequest total;
  double priced = 0;
  for (const ModelRequest& r : result->requests) {
    ++requests[r.stage];
    total.input_tokens += r.input_tokens;
    total.cache_read_tokens += r.cache_read_tokens;
    total.cache_write_tokens += r.cache_write_tokens;
    total.output_tokens += r.output_tokens;
    priced += PricedInput(r);
  }
  const int64_t prompt = total.prompt_tokens();
  std::printf(
      "%s: %d steps, %zu requests (plan %d, decide %d, evaluate %d); prompt tokens %lld "
      "(uncached %lld, cache reads %lld = %.0f%%, cache writes %lld); output %lld; priced input "
      "%.0f plain-token equivalents (%.0f per step)\n",
      label.c_str(), result->tool_calls, result->requests.size(), requests["plan"],
      requests["decide"], requests["evaluate"], static_cast<long long>(prompt),
      static_cast<long long>(total.input_tokens), static_cast<long long>(total.cache_read_tokens),
      prompt > 0 ? 100.0 * static_cast<double>(total.cache_read_tokens) / prompt : 0.0,
      static_cast<long long>(total.cache_write_tokens), static_cast<long long>(total.output_tokens),
      priced, priced / result->tool_calls);
  auto line = [&](const std::string& name, double value, const char* unit) {
    std::printf("BENCH\ttokens.%s.%s\t%.0f\t%s\n", key.c_str(), name.c_str(), value, unit);
  };
  line("steps", result->tool_calls, "steps");
  line("requests", static_cast<double>(result->requests.size()), "requests");
  for (const char* stage : {"plan", "decide", "evaluate"}) {
    line(absl::StrCat("requests.", stage), requests[stage], "requests");
  }
  line("input", static_cast<double>(total.input_tokens), "tokens");
  line("output", static_cast<double>(total.output_tokens), "tokens");
  line("cache_read", static_cast<double>(total.cache_read_tokens), "tokens");
  line("cache_write", static_cast<double>(total.cache_write_tokens), "tokens");
  line("prompt", static_cast<double>(prompt), "tokens");
  line("priced_input", priced, "plain_tokens");
  line("priced_input_per_step", priced / result->tool_calls, "plain_tokens");
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
