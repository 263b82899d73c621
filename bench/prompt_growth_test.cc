// The prompts of a long run stay flat: a scripted run through the real stage router and planner
// on the fake Messages API, with reads of 4 KB, checked at iterations 2 and 50 (what
// prompt_bench prints). Decide grows at most 1.2x, plan and evaluate at most 1.05x; and from
// the second request of a run on, the prefix shared by the stages is read from the prompt cache
// at the API's real 1,024-token minimum.
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
  ASSERT_GT(run->requests.size(), 3u);
  EXPECT_EQ(run->requests[0].cache_read_tokens, 0);
  EXPECT_GE(run->requests[0].cache_write_tokens, 1024);
  for (size_t i = 1; i < run->requests.size(); ++i) {
    EXPECT_GE(run->requests[i].cache_read_tokens, 1024) << "request " << i;
  }
}

}  // namespace
}  // namespace rein
