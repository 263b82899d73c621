// The prompts of a long run stay flat: a scripted run through the real stage router and planner
// on the fake Messages API, with reads of 4 KB, checked at iterations 2 and 50 (what
// prompt_bench prints). Decide grows at most 1.2x, plan and evaluate at most 1.05x; and from
// the second request of each stage on, the stage's run-constant prefix is read from the prompt
// cache at the API's real 1,024-token minimum.
#include <set>
#include <string>

#include "bench/token_run.h"
#include "gtest/gtest.h"
#include "planner_service/stage_prompts.h"

namespace rein {
namespace {

const ModelRequest* FirstAtOrAfter(const TokenRunResult& run, const std::string& stage, int it) {
  for (const ModelRequest& r : run.requests) {
    if (r.stage == stage && r.iteration >= it) return &r;
  }
  return nullptr;
}

TEST(PromptGrowthTest, PromptsStayFlatFromIterationTwoToFiftyAndAreCached) {
  TokenRunOptions options;
  options.steps = 60;
  options.observation_bytes = 4096;
  options.prompts_dir = DefaultPromptsDir();
  options.combine_plan_decide = false;  // decide requests all along the run, to measure them
  absl::StatusOr<TokenRunResult> run = RunScriptedTask(options);
  ASSERT_TRUE(run.ok()) << run.status();
  for (const auto& [stage, limit] : std::vector<std::pair<std::string, double>>{
           {"plan", 1.05}, {"decide", 1.2}, {"evaluate", 1.05}}) {
    const ModelRequest* early = FirstAtOrAfter(*run, stage, 2);
    const ModelRequest* late = FirstAtOrAfter(*run, stage, 50);
    ASSERT_NE(early, nullptr) << stage;
    ASSERT_NE(late, nullptr) << stage;
    EXPECT_LE(static_cast<double>(late->prompt_tokens()), limit * early->prompt_tokens())
        << stage << ": " << early->prompt_tokens() << " -> " << late->prompt_tokens();
    EXPECT_LE(static_cast<double>(late->body_bytes), limit * early->body_bytes)
        << stage << ": " << early->body_bytes << " -> " << late->body_bytes << " bytes";
  }
  // Each stage's first request writes its prefix; every later one of the stage reads it.
  ASSERT_GT(run->requests.size(), 3u);
  std::set<std::string> seen;
  for (size_t i = 0; i < run->requests.size(); ++i) {
    const ModelRequest& r = run->requests[i];
    if (seen.insert(r.stage).second) {
      EXPECT_EQ(r.cache_read_tokens, 0) << "request " << i;
      EXPECT_GE(r.cache_write_tokens, 1024) << "request " << i;
    } else {
      EXPECT_GE(r.cache_read_tokens, 1024) << "request " << i << " (" << r.stage << ")";
    }
  }
}

}  // namespace
}  // namespace rein
