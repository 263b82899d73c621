// What token_bench measures: the ReAct loop sends the whole growing conversation and, once it
// passes the cache minimum, reads all of the previous request from the prompt cache and writes
// only what is new; rein's full-plan variant plans 50 reads in two replies (20 + 5 subtasks).
#include "bench/token_run.h"

#include <map>
#include <string>

#include "gtest/gtest.h"
#include "planner_service/stage_prompts.h"

namespace rein {
namespace {

TEST(TokenRunTest, ReactLoopReadsThePreviousConversationFromTheCache) {
  TokenRunOptions options;
  options.steps = 12;
  options.observation_bytes = 300;
  absl::StatusOr<TokenRunResult> run = RunReactLoop(options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->tool_calls, 12);
  ASSERT_EQ(run->requests.size(), 13u);  // one per read, then the answer
  int reads = 0;
  for (size_t i = 0; i < run->requests.size(); ++i) {
    const ModelRequest& r = run->requests[i];
    EXPECT_EQ(r.stage, "react");
    if (i == 0) continue;
    const ModelRequest& before = run->requests[i - 1];
    // Two messages more each time: the assistant's tool_use and the tool_result.
    EXPECT_GT(r.prompt_tokens(), before.prompt_tokens() + 75) << i;
    if (before.prompt_tokens() >= options.min_cacheable_tokens) {
      EXPECT_EQ(r.cache_read_tokens, before.prompt_tokens()) << i;
      EXPECT_EQ(r.cache_write_tokens, r.prompt_tokens() - before.prompt_tokens()) << i;
      EXPECT_EQ(r.input_tokens, 0) << i;
      ++reads;
    }
  }
  EXPECT_GE(reads, 10);
  EXPECT_GT(PricedInput(run->requests.back()), 0.1 * run->requests.back().prompt_tokens());
}

TEST(TokenRunTest, ReactObservationsOfFourKilobytesGrowTheConversationByAboutAThousandTokens) {
  TokenRunOptions options;
  options.steps = 4;
  options.observation_bytes = 4096;
  absl::StatusOr<TokenRunResult> run = RunReactLoop(options);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->requests.size(), 5u);
  for (size_t i = 1; i < run->requests.size(); ++i) {
    EXPECT_GE(run->requests[i].prompt_tokens() - run->requests[i - 1].prompt_tokens(), 1024) << i;
  }
}

std::map<std::string, int> RequestsPerStage(const TokenRunResult& run) {
  std::map<std::string, int> out;
  for (const ModelRequest& r : run.requests) ++out[r.stage];
  return out;
}

TEST(TokenRunTest, FullPlansListUpToTwentySubtasksPerReply) {
  TokenRunOptions options;
  options.steps = 50;
  options.prompts_dir = DefaultPromptsDir();
  options.subtasks_per_plan = kMaxSubtasksPerPlanReply;
  absl::StatusOr<TokenRunResult> run = RunScriptedTask(options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->tool_calls, 50);
  std::map<std::string, int> stages = RequestsPerStage(*run);
  EXPECT_EQ(stages["plan"], 2);  // 20 subtasks, then the last 5
  // One reply for two stages (the defaults): each plan proposes its top subtask's first read and
  // each subtask's first evaluation its second read, so only the first read of the subtasks
  // below a plan's top one needs a decide request.
  EXPECT_EQ(stages["decide"], 23);
  EXPECT_EQ(stages["evaluate"], 50);

  options.subtasks_per_plan = 1;
  run = RunScriptedTask(options);
  ASSERT_TRUE(run.ok()) << run.status();
  stages = RequestsPerStage(*run);
  EXPECT_EQ(stages["plan"], 25);
  EXPECT_EQ(stages["decide"], 0);  // every read proposed by a plan or an evaluation
  EXPECT_EQ(stages["evaluate"], 50);

  // Without plan+decide, each subtask's first read costs a decide request.
  options.combine_plan_decide = false;
  run = RunScriptedTask(options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->tool_calls, 50);
  EXPECT_EQ(RequestsPerStage(*run)["decide"], 25);

  // Without either, every read costs a decide and an evaluate request, and the reads are the
  // same.
  options.combine_evaluate_decide = false;
  run = RunScriptedTask(options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->tool_calls, 50);
  stages = RequestsPerStage(*run);
  EXPECT_EQ(stages["decide"], 50);
  EXPECT_EQ(stages["evaluate"], 50);
}

}  // namespace
}  // namespace rein
