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
  return {{"plan_system.txt", "vars:\n---\nplan"},
          {"plan_context.txt", "vars: goal_text\n---\n{{goal_text}}"},
          {"plan_user.txt", "vars:\n---\nplan now"},
          {"decide_system.txt", "vars:\n---\ndecide"},
          {"decide_context.txt", "vars: goal_text tool_list\n---\n{{goal_text}}{{tool_list}}"},
          {"decide_user.txt",
           "vars: subtask_text allowed_tool_names\n---\n{{subtask_text}}{{allowed_tool_names}}"},
          {"evaluate_system.txt", "vars:\n---\nevaluate"},
          {"evaluate_context.txt", "vars: goal_text\n---\n{{goal_text}}"},
          {"evaluate_user.txt",
           "vars: subtask_text observation_text\n---\n{{subtask_text}}{{observation_text}}"}};
}

TEST(StagePromptsTest, ShippedPromptsLoad) {
  absl::StatusOr<std::unique_ptr<StagePrompts>> prompts = StagePrompts::Load(ShippedDir());
  ASSERT_TRUE(prompts.ok()) << prompts.status();
  rein::v1::PlanRequest request;
  request.set_goal("the goal");
  request.set_iteration(7);
  absl::StatusOr<RenderedPrompt> plan = (*prompts)->RenderPlan(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->context, HasSubstr("the goal"));
  EXPECT_THAT(plan->user, Not(HasSubstr("the goal")));
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
  texts["plan_user.txt"] = "vars: run_secret\n---\n{{run_secret}}";
  absl::Status status = StagePrompts::FromTexts(texts).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("plan_user.txt: unknown variable \"run_secret\""));
}

TEST(StagePromptsTest, MissingRequiredVariableIsALoadError) {
  std::map<std::string, std::string> texts = MinimalTexts();
  texts["evaluate_user.txt"] = "vars: subtask_text\n---\n{{subtask_text}}";
  EXPECT_EQ(StagePrompts::FromTexts(texts).status().message(),
            "evaluate_user.txt: missing variable \"observation_text\" (required by the "
            "evaluate stage)");
}

TEST(StagePromptsTest, ContextWithAPerCallVariableIsALoadError) {
  // The context block is cached for the whole run: what changes per call cannot go there.
  std::map<std::string, std::string> texts = MinimalTexts();
  texts["evaluate_context.txt"] =
      "vars: goal_text observation_text\n---\n{{goal_text}}{{observation_text}}";
  absl::Status status = StagePrompts::FromTexts(texts).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("evaluate_context.txt: unknown variable \"observation_text\""));
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("it holds only what is the same for every call of a run"));
}

TEST(StagePromptsTest, DecideContextListsEveryToolOfTheRunAndUserOnlyTheSubtasksNames) {
  auto prompts = StagePrompts::Load(ShippedDir());
  ASSERT_TRUE(prompts.ok()) << prompts.status();
  rein::v1::DecideRequest request;
  request.set_goal("g");
  request.mutable_subtask()->set_id("s");
  for (const char* name : {"read_file", "write_file"}) {
    rein::v1::ToolSpec* tool = request.add_run_tools();
    tool->set_name(name);
    tool->set_input_schema_json(absl::StrCat(R"({"type":"object","title":")", name, "\"}"));
  }
  *request.add_tools() = request.run_tools(0);
  absl::StatusOr<RenderedPrompt> out = (*prompts)->RenderDecide(request);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->context, HasSubstr(R"("title":"write_file")"));
  EXPECT_THAT(out->context, HasSubstr(R"("title":"read_file")"));
  EXPECT_THAT(out->user, HasSubstr("read_file"));
  EXPECT_THAT(out->user, Not(HasSubstr("write_file")));
  // The same context for a later call of the run, whatever the subtask and actions.
  rein::v1::DecideRequest later = request;
  later.mutable_subtask()->set_id("t");
  later.add_recent_actions()->set_tool("read_file");
  absl::StatusOr<RenderedPrompt> again = (*prompts)->RenderDecide(later);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->context, out->context);
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
  texts["plan_user.txt"] = "vars: done_list\n---\n{{done_list}} {{goal}}";
  EXPECT_EQ(StagePrompts::FromTexts(texts).status().message(),
            "plan_user.txt: line 3: {{goal}} is not declared in vars:");
}

// Delegation is explained only to a run that may start child runs.
TEST(StagePromptsTest, PlanExplainsDelegationOnlyWhenAllowed) {
  absl::StatusOr<std::unique_ptr<StagePrompts>> prompts = StagePrompts::Load(ShippedDir());
  ASSERT_TRUE(prompts.ok()) << prompts.status();
  rein::v1::PlanRequest request;
  request.set_goal("the goal");
  absl::StatusOr<RenderedPrompt> plain = (*prompts)->RenderPlan(request);
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (const std::string* part : {&plain->system, &plain->context, &plain->user}) {
    EXPECT_THAT(*part, Not(HasSubstr("delegate")));
    EXPECT_THAT(*part, Not(HasSubstr("child run")));
  }
  request.set_allow_delegation(true);
  request.set_max_parallel_children(3);
  request.set_children_left(5);
  absl::StatusOr<RenderedPrompt> allowed = (*prompts)->RenderPlan(request);
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_THAT(allowed->user, HasSubstr("mark them delegate"));
  EXPECT_THAT(allowed->user, HasSubstr("at most 3 in a row, 5 children left in all"));
  EXPECT_EQ(allowed->context, plain->context);  // the cached block does not change
  EXPECT_EQ(allowed->system, plain->system);
}

TEST(StagePromptsTest, PlanShowsOnlyTheNewestEndedSubtasks) {
  std::map<std::string, std::string> texts = MinimalTexts();
  texts["plan_user.txt"] = "vars: done_list\n---\n{{done_list}}";
  auto prompts = StagePrompts::FromTexts(texts);
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
  EXPECT_THAT(out->user, HasSubstr(" …[+840 bytes]"));  // the newest: 160 bytes
  EXPECT_THAT(out->user, HasSubstr(" …[+900 bytes]"));  // the two before it: 100 bytes
}

// After a subtask ended COMPLETED, its evaluation's summary stands for the latest observation,
// which the plan does not repeat; after a failure or with a reason to plan again it is shown.
TEST(StagePromptsTest, PlanShowsTheObservationOnlyWhenNoSummaryStandsForIt) {
  std::map<std::string, std::string> texts = MinimalTexts();
  texts["plan_user.txt"] = "vars: observation_text\n---\n{{observation_text}}";
  auto prompts = StagePrompts::FromTexts(texts);
  ASSERT_TRUE(prompts.ok()) << prompts.status();
  rein::v1::PlanRequest request;
  request.set_goal("g");
  request.set_latest_observation("the file's lines");
  absl::StatusOr<RenderedPrompt> first = (*prompts)->RenderPlan(request);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->user, "the file's lines");  // nothing ended yet
  rein::v1::SubTask* ended = request.add_completed();
  ended->set_id("read");
  ended->set_status(rein::v1::SubTask::COMPLETED);
  ended->set_summary("3 lines mention a fox");
  absl::StatusOr<RenderedPrompt> after_success = (*prompts)->RenderPlan(request);
  ASSERT_TRUE(after_success.ok());
  EXPECT_THAT(after_success->user, Not(HasSubstr("the file's lines")));
  EXPECT_THAT(after_success->user, HasSubstr("summarized"));
  request.set_replan_reason("stagnation");
  EXPECT_EQ((*prompts)->RenderPlan(request)->user, "the file's lines");
  request.clear_replan_reason();
  ended->set_status(rein::v1::SubTask::FAILED);
  EXPECT_EQ((*prompts)->RenderPlan(request)->user, "the file's lines");
}

// The compact layout's system prompt is the stage's own section; the shared one holds all three.
TEST(StagePromptsTest, EachStageHasItsOwnSystemPromptBesideTheSharedOne) {
  auto prompts = StagePrompts::FromTexts(MinimalTexts());
  ASSERT_TRUE(prompts.ok()) << prompts.status();
  rein::v1::PlanRequest request;
  request.set_goal("g");
  absl::StatusOr<RenderedPrompt> out = (*prompts)->RenderPlan(request);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->stage_system, "plan");
  EXPECT_THAT(out->system, HasSubstr("plan"));
  EXPECT_THAT(out->system, HasSubstr("decide"));
  EXPECT_THAT(out->system, HasSubstr("evaluate"));
}

TEST(StagePromptsTest, CapTextNeverSplitsACharacter) {
  EXPECT_EQ(CapText("abc", 3), "abc");
  EXPECT_EQ(CapText("abcdef", 3), "abc …[+3 bytes]");
  // "é" is two bytes; a cut inside it backs up to before it.
  EXPECT_EQ(CapText("aé", 2), "a …[+2 bytes]");
}

}  // namespace
}  // namespace rein
