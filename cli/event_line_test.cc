// Tests of EventLine: one line per run event.
#include "cli/event_line.h"

#include <string>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace rein::cli {
namespace {

v1::RunEvent Event(const std::string& text) {
  v1::RunEvent event;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &event)) << text;
  return event;
}

TEST(EventLine, StageChangedShowsFromAndTo) {
  EXPECT_EQ(EventLine(Event("seq: 12 stage_changed { from: PLANNING to: DECIDING }")),
            "#12 PLANNING -> DECIDING");
}

TEST(EventLine, FirstStageChangeSaysTheRunStarted) {
  EXPECT_EQ(EventLine(Event("seq: 1 stage_changed { to: INITIALIZING }")),
            "#1 run started: INITIALIZING");
}

TEST(EventLine, PlanListsSubtaskIds) {
  EXPECT_EQ(EventLine(Event(R"(seq: 3 plan { subtasks { id: "scan" } subtasks { id: "fix" }
                                         notes: "check\nme" })")),
            "#3 plan: 2 subtasks [scan, fix]  notes: check...");
  EXPECT_EQ(EventLine(Event("seq: 4 plan { goal_achieved: true }")),
            "#4 plan: 0 subtasks  goal achieved");
}

TEST(EventLine, DecisionShowsCallAndSubtask) {
  EXPECT_EQ(EventLine(Event(R"(seq: 13 decision { subtask_id: "scan"
      tool_call { tool: "list_files" args_json: "{\"path\":\".\"}" } })")),
            R"(#13 decision: list_files {"path":"."}  (subtask scan))");
  EXPECT_EQ(EventLine(Event(R"(seq: 14 decision { subtask_id: "s" human_query: "Which file?" })")),
            "#14 decision: ask a person: Which file?  (subtask s)");
  EXPECT_EQ(EventLine(Event(R"(seq: 17 decision { subtask_id: "scan" from_evaluation: true
      tool_call { tool: "read_file" args_json: "{}" } })")),
            "#17 decision: read_file {}  (subtask scan)  proposed by the evaluation");
  EXPECT_EQ(EventLine(Event(R"(seq: 4 decision { subtask_id: "p1-read" from_plan: true
      tool_call { tool: "read_file" args_json: "{}" } })")),
            "#4 decision: read_file {}  (subtask p1-read)  proposed by the plan");
}

TEST(EventLine, PlanShowsWhyItsFirstCallWasDropped) {
  EXPECT_EQ(
      EventLine(Event(R"(seq: 3 plan { subtasks { id: "p1-read" } first_call_dropped:
      "first_call.tool: \"rm\" is not allowed" first_call { tool: "rm" } })")),
      R"(#3 plan: 1 subtask [p1-read]  (first call dropped: first_call.tool: "rm" is not allowed))");
}

TEST(EventLine, ToolResultShowsFirstLineOfObservationOrError) {
  EXPECT_EQ(EventLine(Event(R"(seq: 14 tool_result { action { tool: "list_files" ok: true
      observation: "a.txt\nb.txt\n" duration { nanos: 3000000 } } })")),
            "#14 tool_result ok list_files 3ms: a.txt...");
  EXPECT_EQ(EventLine(Event(R"(seq: 15 tool_result { truncated: true action { tool: "run"
      ok: false error: "exit 2" duration { seconds: 1 nanos: 500000000 } } })")),
            "#15 tool_result FAILED run 1.5s: exit 2 (output truncated)");
}

TEST(EventLine, EvaluationShowsStatusAndSummary) {
  EXPECT_EQ(EventLine(Event(R"(seq: 15 evaluation { subtask_id: "scan" status: COMPLETED
      summary: "found 3 files" })")),
            "#15 evaluation scan COMPLETED: found 3 files");
  EXPECT_EQ(EventLine(Event(R"(seq: 16 evaluation { subtask_id: "x" status: NEEDS_MORE_WORK
      goal_achieved: true })")),
            "#16 evaluation x NEEDS_MORE_WORK  goal achieved");
  EXPECT_EQ(EventLine(Event(R"(seq: 17 evaluation { subtask_id: "x" status: NEEDS_MORE_WORK
      next_call_dropped: "the run went on to PAUSED (NOTES), not DECIDING" })")),
            "#17 evaluation x NEEDS_MORE_WORK  (the run went on to PAUSED (NOTES), not DECIDING)");
}

TEST(EventLine, PausedShowsReasonPointDetailAndPendingCall) {
  EXPECT_EQ(EventLine(Event(R"(seq: 16 paused { pause { reason: PAUSE_POINT point: AFTER_PLAN
      detail: "3 subtasks planned" } })")),
            "#16 paused PAUSE_POINT AFTER_PLAN: 3 subtasks planned");
  EXPECT_EQ(EventLine(Event(R"(seq: 17 paused { pause { reason: PAUSE_POINT point: BEFORE_TOOL
      pending_call { tool: "write_file" args_json: "{}" } } })")),
            "#17 paused PAUSE_POINT BEFORE_TOOL  [pending call: write_file {}]");
  EXPECT_EQ(EventLine(Event(R"(seq: 18 paused { pause { reason: NEED_HUMAN question: "Why?"
      detail: "the model asked" } })")),
            "#18 paused NEED_HUMAN: Why?");
}

TEST(EventLine, ResumedShowsReviewAndTarget) {
  EXPECT_EQ(EventLine(Event(R"(seq: 19 resumed { to: DECIDING
      review { approve {} reviewer: "ann" } })")),
            "#19 resumed approve by ann -> DECIDING");
  EXPECT_EQ(EventLine(Event(R"(seq: 20 resumed { to: FAILED
      review { reject { feedback: "no" abort: true } } })")),
            "#20 resumed reject (abort): no -> FAILED");
}

TEST(EventLine, ErrorShowsStageCodeAndRetry) {
  EXPECT_EQ(EventLine(Event(R"(seq: 21 error { stage: PLANNING code: "UNAVAILABLE"
      message: "planner down" retry_spent: true })")),
            "#21 error in PLANNING UNAVAILABLE: planner down  (retry spent)");
}

TEST(EventLine, FinishedShowsOutcome) {
  EXPECT_EQ(EventLine(Event(R"(seq: 22 finished { outcome { status: FINISHED
      reason: GOAL_ACHIEVED message: "done" } })")),
            "#22 finished FINISHED GOAL_ACHIEVED: done");
  EXPECT_EQ(EventLine(Event(R"(seq: 23 finished { outcome { status: FAILED
      reason: COST_BUDGET_EXHAUSTED message: "cost $0.012000, budget $0.010000"
      usage { input_tokens: 1200 output_tokens: 300 cache_read_input_tokens: 5000
              cache_creation_input_tokens: 800 } cost_usd: 0.012 } })")),
            "#23 finished FAILED COST_BUDGET_EXHAUSTED: cost $0.012000, budget $0.010000  "
            "(input 1200  output 300  cache read 5000  cache write 800  cost $0.012000)");
}

TEST(EventLine, EmptyBodyIsNamed) {
  EXPECT_EQ(EventLine(Event("seq: 5")), "#5 (event without a body)");
}

TEST(EventLine, ShowsAGroupItsChildrenAndTheirJoin) {
  v1::RunEvent group = Event(R"(seq: 5 child_group { group: 1
      children { subtask_id: "a" } children { subtask_id: "b" } })");
  EXPECT_EQ(EventLine(group), "#5 group 1: a, b");
  v1::RunEvent started = Event(R"(seq: 6 children_started { group: 1
      children { subtask_id: "a" run_id: "c1" } children { subtask_id: "b" start_error: "down" } })");
  EXPECT_EQ(EventLine(started), "#6 children started: a -> c1, b (not started: down)");
  v1::RunEvent joined = Event(R"(seq: 9 children_joined { group: 1
      children { subtask_id: "a" run_id: "c1" outcome { status: FINISHED reason: GOAL_ACHIEVED } } })");
  EXPECT_EQ(EventLine(joined), "#9 group 1 joined: a -> c1 FINISHED (GOAL_ACHIEVED)");
}

}  // namespace
}  // namespace rein::cli
