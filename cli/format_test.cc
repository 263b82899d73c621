// Tests of reinctl's output formatting.
#include "cli/format.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace rein::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::Run RunFrom(const std::string& text) {
  v1::Run run;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &run)) << text;
  return run;
}

TEST(ProgressLine, ShowsCountersAndLimits) {
  Progress progress;
  progress.stage = v1::PLANNING;
  progress.iteration = 3;
  progress.max_iterations = 50;
  progress.elapsed = absl::Milliseconds(12700);
  progress.deadline = absl::Minutes(10);
  progress.retries_used = 1;
  progress.retry_budget = 5;
  progress.tokens_used = 1234;
  EXPECT_EQ(ProgressLine(progress),
            "stage PLANNING     iter 3/50  elapsed 12s/10m  retries 1/5  tokens 1234");
  progress.token_budget = 5000;
  EXPECT_THAT(ProgressLine(progress), HasSubstr("tokens 1234/5000"));
}

TEST(ProgressOf, DefaultsApplyAndElapsedRunsFromStart) {
  v1::Run run = RunFrom(R"(spec { limits { retry_budget: -1 } }
      state { stage: DECIDING iteration: 4 retries_used: 0 tokens_used: 77
              started_at { seconds: 1000 } })");
  Progress progress = ProgressOf(run, absl::FromUnixSeconds(1065));
  EXPECT_EQ(progress.stage, v1::DECIDING);
  EXPECT_EQ(progress.max_iterations, 50);
  EXPECT_EQ(progress.deadline, absl::Minutes(10));
  EXPECT_EQ(progress.retry_budget, 0);
  EXPECT_EQ(progress.elapsed, absl::Seconds(65));
  EXPECT_EQ(progress.tokens_used, 77);
}

TEST(FinalReport, ListsOutcomeCountersAndCompletedSubtasks) {
  v1::Run run = RunFrom(R"(run_id: "r1" spec { limits { max_iterations: 20 } }
      state { stage: FINISHED iteration: 7 retries_used: 1 tokens_used: 900
        outcome { status: FINISHED reason: GOAL_ACHIEVED message: "all done" }
        completed_subtasks { id: "scan" status: COMPLETED summary: "3 files" }
        completed_subtasks { id: "fix" status: FAILED summary: "no access" } })");
  EXPECT_EQ(FinalReport(run),
            "run r1: FINISHED (GOAL_ACHIEVED)\n"
            "message: all done\n"
            "iterations 7/20  retries 1/5  tokens 900\n"
            "completed subtasks:\n"
            "  [COMPLETED] scan: 3 files\n"
            "  [FAILED] fix: no access\n");
  run.mutable_spec()->mutable_limits()->set_cost_budget_usd(0.5);
  run.mutable_state()->mutable_usage()->set_input_tokens(700);
  run.mutable_state()->mutable_usage()->set_output_tokens(200);
  run.mutable_state()->set_cost_used_usd(0.0034);
  EXPECT_THAT(FinalReport(run), HasSubstr("iterations 7/20  retries 1/5  tokens 900\n"
                                          "usage: input 700  output 200  cache read 0  cache "
                                          "write 0  cost $0.003400/$0.500000\n"));
}

TEST(ReviewHint, OffersCommandsThatFitThePause) {
  v1::Run run = RunFrom(R"(run_id: "r1" state { stage: PAUSED version: 8
      pause { reason: NEED_HUMAN question: "Which branch?" } })");
  const std::string hint = ReviewHint(run, " --router=h:1");
  EXPECT_THAT(hint, HasSubstr("run r1 is paused (NEED_HUMAN: Which branch?) at version 8."));
  EXPECT_THAT(hint, HasSubstr("reinctl --router=h:1 answer r1 --version=8 --text=TEXT"));
  EXPECT_THAT(hint, HasSubstr("reinctl --router=h:1 approve r1 --version=8"));
  EXPECT_THAT(hint, Not(HasSubstr("edit-call")));

  v1::Run call = RunFrom(R"(run_id: "r2" state { stage: PAUSED version: 3
      pause { reason: PAUSE_POINT point: BEFORE_TOOL pending_call { tool: "rm" args_json: "{}" } } })");
  const std::string call_hint = ReviewHint(call, "");
  EXPECT_THAT(call_hint, HasSubstr("reinctl edit-call r2 --version=3 --tool=NAME --args=JSON"));
  EXPECT_THAT(call_hint, HasSubstr("pending call: rm {}"));
  EXPECT_THAT(call_hint, Not(HasSubstr("answer")));
}

TEST(RunTable, AlignsColumnsAndCutsGoals) {
  std::vector<v1::Run> runs = {
      RunFrom(R"(run_id: "r-1" created_at { seconds: 0 }
          spec { goal: "0123456789012345678901234567890123456789012345678901234567890" }
          state { stage: FINISHED iteration: 12 outcome { reason: GOAL_ACHIEVED } })"),
      RunFrom(R"(run_id: "r-22" spec { goal: "short" } state { stage: PAUSED iteration: 3 })"),
  };
  EXPECT_EQ(RunTable(runs, absl::UTCTimeZone()),
            "RUN ID  STAGE     REASON         ITER  CREATED  GOAL\n"
            "r-1     FINISHED  GOAL_ACHIEVED  12    -        "
            "01234567890123456789012345678901234567890123456789...\n"
            "r-22    PAUSED    -              3     -        short\n");
  runs[0].mutable_created_at()->set_seconds(86400);
  EXPECT_THAT(RunTable(runs, absl::UTCTimeZone()), HasSubstr("1970-01-02 00:00:00"));
}

TEST(RunTable, UsageAddsTokenAndCostColumns) {
  std::vector<v1::Run> runs = {
      RunFrom(R"(run_id: "r-1" spec { goal: "g" }
          state { stage: FAILED iteration: 2 outcome { reason: COST_BUDGET_EXHAUSTED }
                  usage { input_tokens: 1200 output_tokens: 300 cache_read_input_tokens: 5000
                          cache_creation_input_tokens: 800 } cost_used_usd: 0.0124 })"),
  };
  EXPECT_EQ(RunTable(runs, absl::UTCTimeZone(), /*usage=*/true),
            "RUN ID  STAGE   REASON                 ITER  CREATED  INPUT  OUTPUT  CACHE READ  "
            "CACHE WRITE  COST USD  GOAL\n"
            "r-1     FAILED  COST_BUDGET_EXHAUSTED  2     -        1200   300     5000        "
            "800          0.012400  g\n");
}

TEST(RunSummary, ShowsAParentsChildrenAndAChildsParent) {
  v1::Run parent = RunFrom(R"(run_id: "p" spec { goal: "fan out" }
      state { stage: WAITING version: 4 }
      children { subtask_id: "a" group: 1 run_id: "c1" stage: DECIDING }
      children { subtask_id: "b" group: 1 run_id: "c2" stage: FINISHED
                 outcome { status: FINISHED reason: GOAL_ACHIEVED } }
      children { subtask_id: "c" group: 1 start_error: "the store is down" })");
  const std::string summary = RunSummary(parent, absl::UTCTimeZone());
  EXPECT_THAT(summary, HasSubstr("stage: WAITING"));
  EXPECT_THAT(summary, HasSubstr("children:\n  group 1  a -> c1  DECIDING\n"
                                 "  group 1  b -> c2  FINISHED (GOAL_ACHIEVED)\n"
                                 "  group 1  c -> (not started)  STAGE_UNSPECIFIED  not started: "
                                 "the store is down\n"));
  v1::Run child = RunFrom(R"(run_id: "c1" spec { goal: "a" parent { run_id: "p" group: 1
      subtask_id: "a" } } state { stage: DECIDING })");
  EXPECT_THAT(RunSummary(child, absl::UTCTimeZone()),
              HasSubstr("parent: p  (group 1, subtask a)\n"));
}

TEST(RunSummary, ShowsPauseSubtasksActionsAndCounters) {
  v1::Run run = RunFrom(R"(run_id: "r1" spec { goal: "tidy up" tools: "read_file"
        pause_points: AFTER_PLAN labels { key: "team" value: "infra" } }
      state { stage: PAUSED version: 9 iteration: 2 tokens_used: 55
        pause { reason: PAUSE_POINT point: BEFORE_TOOL resume_stage: EXECUTING
                pending_call { tool: "write_file" args_json: "{\"path\":\"a\"}" } }
        subtasks { id: "s2" description: "write it" status: IN_PROGRESS allowed_tools: "write_file" }
        completed_subtasks { id: "s1" status: COMPLETED summary: "read it" }
        recent_actions { iteration: 1 subtask_id: "s1" tool: "read_file" args_json: "{}"
                         ok: true observation: "hello" duration { nanos: 2000000 } } })");
  const std::string summary = RunSummary(run, absl::UTCTimeZone());
  EXPECT_THAT(summary, HasSubstr("goal:\n  tidy up\n"));
  EXPECT_THAT(summary, HasSubstr("tools: read_file\n"));
  EXPECT_THAT(summary, HasSubstr("pause points: AFTER_PLAN  pause on notes: yes\n"));
  EXPECT_THAT(summary, HasSubstr("labels: team=infra\n"));
  EXPECT_THAT(summary, HasSubstr("stage: PAUSED  (version 9)\n"));
  EXPECT_THAT(summary, HasSubstr("pause: PAUSE_POINT BEFORE_TOOL\n"));
  EXPECT_THAT(summary, HasSubstr("  pending call: write_file {\"path\":\"a\"}\n"));
  EXPECT_THAT(summary, HasSubstr("  resumes at: EXECUTING\n"));
  EXPECT_THAT(summary, HasSubstr("  s2 [IN_PROGRESS] write it  (tools: write_file)\n"));
  EXPECT_THAT(summary, HasSubstr("  [COMPLETED] s1: read it\n"));
  EXPECT_THAT(summary, HasSubstr("token_budget none  cost_budget_usd none"));
  EXPECT_THAT(summary, HasSubstr("usage: input 0  output 0  cache read 0  cache write 0  "
                                 "cost $0.000000\n"));
  EXPECT_THAT(summary, HasSubstr("  iter 1 s1 read_file {} ok 2ms: hello\n"));
  EXPECT_THAT(summary, HasSubstr("counters: iteration 2/50  retries 0/5"));
  EXPECT_THAT(summary, Not(HasSubstr("outcome:")));
}

TEST(SnapshotFileName, PadsIterationAndSanitizesRunId) {
  v1::RunSnapshot snapshot;
  snapshot.set_run_id("r-1");
  snapshot.set_iteration(7);
  snapshot.set_version(31);
  EXPECT_EQ(SnapshotFileName(snapshot), "r-1-0007-v31.json");
  snapshot.set_run_id("../etc/passwd");
  EXPECT_EQ(SnapshotFileName(snapshot), ".._etc_passwd-0007-v31.json");
}

TEST(PrettyJson, IndentsValidJsonAndKeepsInvalid) {
  EXPECT_EQ(PrettyJson(R"({"a":[1]})"), "{\n  \"a\": [\n    1\n  ]\n}\n");
  EXPECT_EQ(PrettyJson("{oops"), "{oops");
}

TEST(ToolTable, ShowsOriginMutatingTimeoutAndSchema) {
  v1::ListToolsResponse response;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(tools {
             name: "append_note"
             description: "Append a line.\nSecond line."
             input_schema_json: "{\"type\": \"object\"}"
             mutating: true
             default_timeout { seconds: 10 }
             origin: "declared:append_note.json"
           }
           tools { name: "read_file" description: "Read." input_schema_json: "{}" }
           executor_id: "host:1"
           sandbox: "bwrap")pb",
      &response));
  EXPECT_EQ(ToolTable(response),
            "append_note  declared:append_note.json  mutating  timeout 10s\n"
            "  Append a line.\n"
            "  Second line.\n"
            "  schema: {\"type\":\"object\"}\n\n"
            "read_file  builtin  read-only\n"
            "  Read.\n"
            "  schema: {}\n\n"
            "2 tools from executor host:1 (sandbox: bwrap)\n");
}

}  // namespace
}  // namespace rein::cli
