// Tests of building reinctl's requests from a parsed command.
#include "cli/requests.h"

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cli/args.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein::cli {
namespace {

using ::testing::HasSubstr;

// The command of `args`, which must parse.
Command Parsed(const std::vector<std::string>& args) {
  absl::StatusOr<Command> command = ParseArgs(args);
  EXPECT_TRUE(command.ok()) << command.status();
  return command.ok() ? *command : Command();
}

TEST(BuildRunSpec, FlagsOverrideTheSpecFile) {
  const std::string spec_json = R"({
    "goal": "from spec", "workspace": "spec-ws", "tools": ["a", "b"],
    "limits": {"maxIterations": 9, "retryBudget": 2, "deadline": "60s"},
    "pausePoints": ["AFTER_EVALUATE"], "labels": {"x": "1"}
  })";
  StartOptions options;
  options.workspace = "flag-ws";
  options.max_iterations = 3;
  options.stage_timeout = absl::Milliseconds(1500);
  options.on_stagnation = v1::FAIL;
  options.no_pause_on_notes = true;
  options.no_combine_evaluate_decide = true;
  options.no_combine_plan_decide = true;
  options.labels = {{"y", "2"}};
  options.model = "m1";
  absl::StatusOr<v1::RunSpec> spec = BuildRunSpec(options, spec_json, std::nullopt);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->goal(), "from spec");
  EXPECT_EQ(spec->workspace(), "flag-ws");
  EXPECT_EQ(spec->tools_size(), 2);
  EXPECT_EQ(spec->limits().max_iterations(), 3);
  EXPECT_EQ(spec->limits().retry_budget(), 2);
  EXPECT_EQ(spec->limits().deadline().seconds(), 60);
  EXPECT_EQ(spec->limits().stage_timeout().seconds(), 1);
  EXPECT_EQ(spec->limits().stage_timeout().nanos(), 500000000);
  EXPECT_EQ(spec->limits().on_stagnation(), v1::FAIL);
  EXPECT_TRUE(spec->has_combine_evaluate_decide());
  EXPECT_FALSE(spec->combine_evaluate_decide());
  EXPECT_TRUE(spec->has_combine_plan_decide());
  EXPECT_FALSE(spec->combine_plan_decide());
  ASSERT_EQ(spec->pause_points_size(), 1);
  EXPECT_EQ(spec->pause_points(0), v1::AFTER_EVALUATE);
  ASSERT_TRUE(spec->has_pause_on_notes());
  EXPECT_FALSE(spec->pause_on_notes());
  EXPECT_EQ(spec->labels().at("x"), "1");
  EXPECT_EQ(spec->labels().at("y"), "2");
  EXPECT_EQ(spec->model().model(), "m1");
}

TEST(BuildRunSpec, GoalFileAndEmptyToolsOverride) {
  StartOptions options;
  options.goal_file = "goal.txt";
  options.tools = std::vector<std::string>{};
  absl::StatusOr<v1::RunSpec> spec =
      BuildRunSpec(options, R"({"goal":"old","tools":["w"]})", std::string("new goal\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->goal(), "new goal\n");
  EXPECT_EQ(spec->tools_size(), 0);
  EXPECT_FALSE(spec->has_pause_on_notes());
}

TEST(BuildRunSpec, BadInputNamesTheFlag) {
  StartOptions options;
  absl::StatusOr<v1::RunSpec> bad_json = BuildRunSpec(options, "{not json", std::nullopt);
  EXPECT_EQ(bad_json.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_json.status().message()), HasSubstr("--spec"));

  absl::StatusOr<v1::RunSpec> unknown_field =
      BuildRunSpec(options, R"({"goal":"g","colour":"red"})", std::nullopt);
  EXPECT_THAT(std::string(unknown_field.status().message()), HasSubstr("--spec"));

  absl::StatusOr<v1::RunSpec> no_goal = BuildRunSpec(options, R"({"workspace":"w"})", std::nullopt);
  EXPECT_THAT(std::string(no_goal.status().message()), HasSubstr("no goal"));

  options.goal_file = "g.txt";
  absl::StatusOr<v1::RunSpec> empty_file = BuildRunSpec(options, "", std::string(" \n"));
  EXPECT_THAT(std::string(empty_file.status().message()), HasSubstr("--goal_file"));
}

TEST(ParsePlanJson, ArrayOfSubTasksParses) {
  absl::StatusOr<std::vector<v1::SubTask>> plan = ParsePlanJson(
      R"([{"id":"a","description":"first","allowedTools":["read_file"]},
          {"id":"b","description":"second","allowed_tools":["x"]}])");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 2u);
  EXPECT_EQ((*plan)[0].id(), "a");
  EXPECT_EQ((*plan)[0].allowed_tools(0), "read_file");
  EXPECT_EQ((*plan)[1].allowed_tools(0), "x");
}

TEST(ParsePlanJson, BadInputNamesTheElement) {
  EXPECT_THAT(std::string(ParsePlanJson("[").status().message()), HasSubstr("not valid JSON"));
  EXPECT_THAT(std::string(ParsePlanJson(R"({"id":"a"})").status().message()),
              HasSubstr("must be a JSON array"));
  EXPECT_THAT(std::string(ParsePlanJson(R"([{"id":"a"}, 3])").status().message()),
              HasSubstr("element 1"));
  EXPECT_THAT(std::string(ParsePlanJson(R"([{"idd":"a"}])").status().message()),
              HasSubstr("element 0 is not a SubTask"));
}

TEST(BuildReview, EachReviewKindIsBuilt) {
  Command command;
  command.subcommand = Subcommand::kReject;
  command.feedback = "no";
  command.abort = true;
  absl::StatusOr<v1::Review> reject = BuildReview(command, {});
  ASSERT_TRUE(reject.ok());
  EXPECT_EQ(reject->reject().feedback(), "no");
  EXPECT_TRUE(reject->reject().abort());

  command.subcommand = Subcommand::kEditPlan;
  absl::StatusOr<v1::Review> empty_plan = BuildReview(command, {});
  ASSERT_TRUE(empty_plan.ok());
  EXPECT_EQ(empty_plan->kind_case(), v1::Review::kEditPlan);

  command.subcommand = Subcommand::kEditCall;
  command.tool = "t";
  command.args_json = "{}";
  absl::StatusOr<v1::Review> edit_call = BuildReview(command, {});
  ASSERT_TRUE(edit_call.ok());
  EXPECT_EQ(edit_call->edit_tool_call().tool(), "t");

  command.subcommand = Subcommand::kAnswer;
  command.text = "42";
  EXPECT_EQ(BuildReview(command, {})->answer().text(), "42");

  command.subcommand = Subcommand::kApprove;
  EXPECT_EQ(BuildReview(command, {})->kind_case(), v1::Review::kApprove);

  command.subcommand = Subcommand::kList;
  EXPECT_EQ(BuildReview(command, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BuildStartRunRequest, SpecAndRequestIdComeFromTheStartFlags) {
  const Command command = Parsed(
      {"start", "--goal=fix it", "--request_id=req-9", "--max_iterations=4", "--label=team=infra"});
  absl::StatusOr<v1::StartRunRequest> request =
      BuildStartRunRequest(command.start, "", std::nullopt);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->request_id(), "req-9");
  EXPECT_EQ(request->spec().goal(), "fix it");
  EXPECT_EQ(request->spec().limits().max_iterations(), 4);
  EXPECT_EQ(request->spec().labels().at("team"), "infra");
}

TEST(BuildStartRunRequest, SpecFileAndGoalFileAreApplied) {
  const Command command = Parsed({"start", "--spec=s.json", "--goal_file=g.txt"});
  absl::StatusOr<v1::StartRunRequest> request = BuildStartRunRequest(
      command.start, R"({"goal":"old","workspace":"ws"})", std::string("new goal"));
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->spec().goal(), "new goal");
  EXPECT_EQ(request->spec().workspace(), "ws");
  EXPECT_EQ(request->request_id(), "");
}

TEST(BuildStartRunRequest, BadSpecIsInvalidArgumentNamingTheFlag) {
  const Command command = Parsed({"start", "--spec=s.json"});
  absl::StatusOr<v1::StartRunRequest> request =
      BuildStartRunRequest(command.start, "{not json", std::nullopt);
  EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(request.status().message()), HasSubstr("--spec"));
}

TEST(BuildResumeRunRequest, CarriesRunVersionAndReview) {
  const Command command = Parsed({"answer", "r1", "--text=yes"});
  absl::StatusOr<v1::Review> review = BuildReview(command, {});
  ASSERT_TRUE(review.ok()) << review.status();
  review->set_reviewer("ana");
  const v1::ResumeRunRequest request = BuildResumeRunRequest(command, 12, *review);
  EXPECT_EQ(request.run_id(), "r1");
  EXPECT_EQ(request.expected_version(), 12);
  EXPECT_EQ(request.review().answer().text(), "yes");
  EXPECT_EQ(request.review().reviewer(), "ana");
}

TEST(BuildCancelRunRequest, CarriesRunAndReason) {
  const v1::CancelRunRequest request =
      BuildCancelRunRequest(Parsed({"cancel", "r2", "--reason=enough"}));
  EXPECT_EQ(request.run_id(), "r2");
  EXPECT_EQ(request.reason(), "enough");
}

TEST(BuildListRunsRequest, CarriesFiltersPageSizeAndTheGivenToken) {
  const Command command = Parsed(
      {"list", "--stage=paused", "--outcome=goal_achieved", "--page_size=5", "--page_token=first"});
  const v1::ListRunsRequest request = BuildListRunsRequest(command, "next");
  EXPECT_EQ(request.stage(), v1::PAUSED);
  EXPECT_EQ(request.outcome(), v1::GOAL_ACHIEVED);
  EXPECT_EQ(request.page_size(), 5);
  EXPECT_EQ(request.page_token(), "next");
  const v1::ListRunsRequest unfiltered = BuildListRunsRequest(Parsed({"list"}), "");
  EXPECT_EQ(unfiltered.stage(), v1::STAGE_UNSPECIFIED);
  EXPECT_EQ(unfiltered.outcome(), v1::TERMINATION_REASON_UNSPECIFIED);
  EXPECT_EQ(unfiltered.page_size(), 0);
  EXPECT_EQ(unfiltered.page_token(), "");
}

TEST(BuildListRunsRequest, ParentListsOnlyThatRunsChildren) {
  EXPECT_EQ(BuildListRunsRequest(Parsed({"list", "--parent=p1"}), "").parent_run_id(), "p1");
  EXPECT_EQ(BuildListRunsRequest(Parsed({"list"}), "").parent_run_id(), "");
}

TEST(BuildForkRunRequest, CarriesThePointEditsAndFlags) {
  Command command;
  command.run_id = "r1";
  command.fork.at_seq = 12;
  command.fork.tool = "write_file";
  command.fork.args_json = R"({"path":"a"})";
  command.fork.answer = "yes";
  command.fork.max_iterations = 9;
  command.fork.deadline = absl::Milliseconds(90500);
  command.fork.token_budget = 7000;
  command.fork.cost_budget_usd = 1.5;
  command.fork.workspace_at_fork = true;
  command.fork.request_id = "f1";
  v1::ForkRunRequest request = BuildForkRunRequest(command, {});
  EXPECT_EQ(request.run_id(), "r1");
  EXPECT_EQ(request.at_case(), v1::ForkRunRequest::kSeq);
  EXPECT_EQ(request.seq(), 12);
  EXPECT_FALSE(request.edits().has_plan());
  EXPECT_EQ(request.edits().call().tool(), "write_file");
  EXPECT_EQ(request.edits().call().args_json(), R"({"path":"a"})");
  EXPECT_EQ(request.edits().human_input().text(), "yes");
  EXPECT_EQ(request.edits().limits().max_iterations(), 9);
  EXPECT_EQ(request.edits().limits().deadline().seconds(), 90);
  EXPECT_EQ(request.edits().limits().deadline().nanos(), 500000000);
  EXPECT_EQ(request.edits().limits().token_budget(), 7000);
  EXPECT_EQ(request.edits().limits().cost_budget_usd(), 1.5);
  EXPECT_TRUE(request.workspace_at_fork());
  EXPECT_EQ(request.request_id(), "f1");

  Command at_iteration;
  at_iteration.run_id = "r1";
  at_iteration.fork.at_iteration = 3;
  v1::SubTask task;
  task.set_id("t");
  task.set_description("d");
  v1::ForkRunRequest with_plan = BuildForkRunRequest(at_iteration, {task});
  EXPECT_EQ(with_plan.at_case(), v1::ForkRunRequest::kIteration);
  EXPECT_EQ(with_plan.iteration(), 3);
  ASSERT_EQ(with_plan.edits().plan().subtasks_size(), 1);
  EXPECT_EQ(with_plan.edits().plan().subtasks(0).id(), "t");
  EXPECT_FALSE(with_plan.edits().has_call());
  EXPECT_FALSE(with_plan.edits().has_limits());
}

}  // namespace
}  // namespace rein::cli
