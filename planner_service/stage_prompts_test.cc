// Tests of loading the stage prompts (the shipped files and broken ones) and of the bounded
// views they render.
#include "planner_service/stage_prompts.h"

#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ShippedDir() {
  return absl::StrCat(getenv("TEST_SRCDIR"), "/rein/planner_service/prompts");
}

std::map<std::string, std::string> MinimalTexts() {
  return {
      {"plan_system.txt", "vars:\n---\nplan"},
      {"plan_user.txt", "vars: goal_text\n---\n{{goal_text}}"},
      {"decide_system.txt", "vars:\n---\ndecide"},
      {"decide_user.txt",
       "vars: goal_text subtask_text tool_list\n---\n{{goal_text}}{{subtask_text}}{{tool_list}}"},
      {"evaluate_system.txt", "vars:\n---\nevaluate"},
      {"evaluate_user.txt",
       "vars: goal_text subtask_text observation_text\n---\n"
       "{{goal_text}}{{subtask_text}}{{observation_text}}"}};
}

TEST(StagePromptsTest, ShippedPromptsLoad) {
  absl::StatusOr<std::unique_ptr<StagePrompts>> prompts = StagePrompts::Load(ShippedDir());
  ASSERT_TRUE(prompts.ok()) << prompts.status();
  rein::v1::PlanRequest request;
  request.set_goal("the goal");
  request.set_iteration(7);
  absl::StatusOr<RenderedPrompt> plan = (*prompts)->RenderPlan(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->user, HasSubstr("the goal"));
  EXPECT_THAT(plan->user, HasSubstr("p7-"));
  EXPECT_THAT(plan->system, Not(HasSubstr("vars:")));
}

TEST(StagePromptsTest, MinimalTemplatesLoad) {
  EXPECT_TRUE(StagePrompts::FromTexts(MinimalTexts()).ok());
}

TEST(StagePromptsTest, MissingFolderIsNotFound) {
  absl::StatusOr<std::unique_ptr<StagePrompts>> prompts = StagePrompts::Load("/nonexistent/p");
  EXPECT_EQ(prompts.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(prompts.status().message(),
            "/nonexistent/p: no such prompts folder (see --prompts_dir)");
}

TEST(StagePromptsTest, MissingFileIsNotFound) {
  std::map<std::string, std::string> texts = MinimalTexts();
  texts.erase("decide_user.txt");
  EXPECT_EQ(StagePrompts::FromTexts(texts).status().message(), "decide_user.txt: missing");
}

TEST(StagePromptsTest, UnknownVariableIsALoadError) {
  std::map<std::string, std::string> texts = MinimalTexts();
  texts["plan_user.txt"] = "vars: goal_text run_secret\n---\n{{goal_text}}{{run_secret}}";
  absl::Status status = StagePrompts::FromTexts(texts).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("plan_user.txt: unknown variable \"run_secret\""));
}

TEST(StagePromptsTest, MissingRequiredVariableIsALoadError) {
  std::map<std::string, std::string> texts = MinimalTexts();
  texts["evaluate_user.txt"] = "vars: goal_text subtask_text\n---\n{{goal_text}}{{subtask_text}}";
  EXPECT_EQ(StagePrompts::FromTexts(texts).status().message(),
            "evaluate_user.txt: missing variable \"observation_text\" (required by the "
            "evaluate stage)");
}

TEST(StagePromptsTest, SystemPromptWithAVariableIsALoadError) {
  std::map<std::string, std::string> texts = MinimalTexts();
  texts["decide_system.txt"] = "vars: goal_text\n---\n{{goal_text}}";
  EXPECT_THAT(std::string(StagePrompts::FromTexts(texts).status().message()),
              HasSubstr("decide_system.txt: unknown variable \"goal_text\" (system prompts take "
                        "no variables"));
}

TEST(StagePromptsTest, BrokenTemplateNamesItsFile) {
  std::map<std::string, std::string> texts = MinimalTexts();
  texts["plan_user.txt"] = "vars: goal_text\n---\n{{goal_text}} {{goal}}";
  EXPECT_EQ(StagePrompts::FromTexts(texts).status().message(),
            "plan_user.txt: line 3: {{goal}} is not declared in vars:");
}

TEST(StagePromptsTest, PlanShowsOnlyTheNewestEndedSubtasks) {
  auto prompts = StagePrompts::FromTexts(
      {{"plan_system.txt", "vars:\n---\n"},
       {"plan_user.txt", "vars: goal_text done_list\n---\n{{goal_text}}\n{{done_list}}"},
       {"decide_system.txt", "vars:\n---\n"},
       {"decide_user.txt", MinimalTexts()["decide_user.txt"]},
       {"evaluate_system.txt", "vars:\n---\n"},
       {"evaluate_user.txt", MinimalTexts()["evaluate_user.txt"]}});
  ASSERT_TRUE(prompts.ok()) << prompts.status();
  rein::v1::PlanRequest request;
  request.set_goal("g");
  for (int i = 0; i < 10; ++i) {
    rein::v1::SubTask* t = request.add_completed();
    t->set_id(absl::StrCat("task", i));
    t->set_status(rein::v1::SubTask::COMPLETED);
    t->set_summary(std::string(1000, 's'));
  }
  absl::StatusOr<RenderedPrompt> out = (*prompts)->RenderPlan(request);
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(out->user, HasSubstr("(7 earlier subtasks not shown)"));
  EXPECT_THAT(out->user, Not(HasSubstr("[task6]")));
  EXPECT_THAT(out->user, HasSubstr("[task7]"));
  EXPECT_THAT(out->user, HasSubstr("[task9]"));
  EXPECT_THAT(out->user, HasSubstr(" …[+840 bytes]"));
}

TEST(StagePromptsTest, CapTextNeverSplitsACharacter) {
  EXPECT_EQ(CapText("abc", 3), "abc");
  EXPECT_EQ(CapText("abcdef", 3), "abc …[+3 bytes]");
  // "é" is two bytes; a cut inside it backs up to before it.
  EXPECT_EQ(CapText("aé", 2), "a …[+2 bytes]");
}

}  // namespace
}  // namespace rein
