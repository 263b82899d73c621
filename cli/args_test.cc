// Tests of reinctl's argument parsing.
#include "cli/args.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein::cli {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<Command> Parse(std::vector<std::string> args) { return ParseArgs(args); }

void ExpectUsageError(std::vector<std::string> args, const std::string& mentions) {
  absl::StatusOr<Command> command = ParseArgs(args);
  ASSERT_FALSE(command.ok()) << "expected an error for " << ::testing::PrintToString(args);
  EXPECT_EQ(command.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(command.status().message()), HasSubstr(mentions));
}

TEST(ParseArgs, StartWithEveryFlagParsesAll) {
  absl::StatusOr<Command> command = Parse({"start",
                                           "--goal=fix the bug",
                                           "--workspace",
                                           "ws1",
                                           "--tools=read_file, list_files",
                                           "--tools=write_file",
                                           "--pause=after_plan,BEFORE_TOOL",
                                           "--max_iterations=7",
                                           "--deadline=90s",
                                           "--stage_timeout=500ms",
                                           "--retry_budget=-1",
                                           "--token_budget=1000",
                                           "--cost_budget_usd=0.75",
                                           "--on_stagnation=pause",
                                           "--no_pause_on_notes",
                                           "--no_combine_evaluate_decide",
                                           "--no_combine_plan_decide",
                                           "--label=team=infra",
                                           "--label=k=a=b",
                                           "--request_id=req-1",
                                           "--model=claude-x",
                                           "--watch",
                                           "--json"});
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->subcommand, Subcommand::kStart);
  EXPECT_EQ(command->router, "127.0.0.1:50051");
  const StartOptions& start = command->start;
  EXPECT_EQ(start.goal, "fix the bug");
  EXPECT_EQ(start.workspace, "ws1");
  EXPECT_EQ(start.tools, (std::vector<std::string>{"read_file", "list_files", "write_file"}));
  EXPECT_EQ(start.pause_points, (std::vector<v1::PausePoint>{v1::AFTER_PLAN, v1::BEFORE_TOOL}));
  EXPECT_EQ(start.max_iterations, 7);
  EXPECT_EQ(start.deadline, absl::Seconds(90));
  EXPECT_EQ(start.stage_timeout, absl::Milliseconds(500));
  EXPECT_EQ(start.retry_budget, -1);
  EXPECT_EQ(start.token_budget, 1000);
  EXPECT_EQ(start.cost_budget_usd, 0.75);
  EXPECT_EQ(start.on_stagnation, v1::PAUSE);
  EXPECT_TRUE(start.no_pause_on_notes);
  EXPECT_TRUE(start.no_combine_evaluate_decide);
  EXPECT_TRUE(start.no_combine_plan_decide);
  ASSERT_EQ(start.labels.size(), 2u);
  EXPECT_EQ(start.labels[0], std::make_pair(std::string("team"), std::string("infra")));
  EXPECT_EQ(start.labels[1], std::make_pair(std::string("k"), std::string("a=b")));
  EXPECT_EQ(start.request_id, "req-1");
  EXPECT_EQ(start.model, "claude-x");
  EXPECT_TRUE(command->watch);
  EXPECT_TRUE(command->json);
}

TEST(ParseArgs, RouterBeforeOrAfterSubcommandIsAccepted) {
  absl::StatusOr<Command> before = Parse({"--router=dns:///r:1", "start", "--goal=g"});
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->router, "dns:///r:1");
  absl::StatusOr<Command> spaced = Parse({"--router", "ipv4:1.2.3.4:5", "watch", "r1"});
  ASSERT_TRUE(spaced.ok()) << spaced.status();
  EXPECT_EQ(spaced->router, "ipv4:1.2.3.4:5");
  absl::StatusOr<Command> after = Parse({"start", "--goal=g", "--router=h:2"});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->router, "h:2");
}

TEST(ParseArgs, StartErrorsNameTheFlag) {
  ExpectUsageError({"start"}, "--goal");
  ExpectUsageError({"start", "--goal=a", "--goal_file=f"}, "--goal_file");
  ExpectUsageError({"start", "--goal=  "}, "--goal");
  ExpectUsageError({"start", "--goal=a", "--pause=AFTER_LUNCH"}, "--pause");
  ExpectUsageError({"start", "--goal=a", "--pause=PAUSE_POINT_UNSPECIFIED"}, "--pause");
  ExpectUsageError({"start", "--goal=a", "--max_iterations=abc"}, "--max_iterations");
  ExpectUsageError({"start", "--goal=a", "--max_iterations=0"}, "--max_iterations");
  ExpectUsageError({"start", "--goal=a", "--retry_budget=-2"}, "--retry_budget");
  ExpectUsageError({"start", "--goal=a", "--token_budget=-1"}, "--token_budget");
  ExpectUsageError({"start", "--goal=a", "--cost_budget_usd=-1"}, "--cost_budget_usd");
  ExpectUsageError({"start", "--goal=a", "--cost_budget_usd=nan"}, "--cost_budget_usd");
  ExpectUsageError({"start", "--goal=a", "--cost_budget_usd=$1"}, "--cost_budget_usd");
  ExpectUsageError({"start", "--goal=a", "--deadline=10"}, "--deadline");
  ExpectUsageError({"start", "--goal=a", "--deadline=-5s"}, "--deadline");
  ExpectUsageError({"start", "--goal=a", "--stage_timeout=inf"}, "--stage_timeout");
  ExpectUsageError({"start", "--goal=a", "--on_stagnation=sometimes"}, "--on_stagnation");
  ExpectUsageError({"start", "--goal=a", "--label=novalue"}, "--label");
  ExpectUsageError({"start", "--goal=a", "--label==v"}, "--label");
  ExpectUsageError({"start", "--goal=a", "--label=k=1", "--label=k=2"}, "--label");
  ExpectUsageError({"start", "--goal=a", "--bogus=1"}, "--bogus");
  ExpectUsageError({"start", "--goal=a", "--watch=maybe"}, "--watch");
  ExpectUsageError({"start", "--goal=a", "--goal=b"}, "--goal given twice");
  ExpectUsageError({"start", "--goal"}, "--goal needs a value");
  ExpectUsageError({"start", "--goal=a", "extra"}, "\"extra\"");
}

TEST(ParseArgs, StartWithSpecOnlyIsAccepted) {
  absl::StatusOr<Command> command = Parse({"start", "--spec=s.json"});
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->start.spec_file, "s.json");
  EXPECT_FALSE(command->start.goal.has_value());
}

TEST(ParseArgs, GlobalErrorsNameTheProblem) {
  ExpectUsageError({}, "missing subcommand");
  ExpectUsageError({"frobnicate"}, "unknown subcommand \"frobnicate\"");
  ExpectUsageError({"--goal=x", "start"}, "--goal");
  ExpectUsageError({"--router"}, "--router needs a value");
  ExpectUsageError({"--router=", "list"}, "--router");
  ExpectUsageError({"help", "nope"}, "\"nope\"");
}

TEST(ParseArgs, HelpFormsAreRecognized) {
  absl::StatusOr<Command> help = Parse({"help"});
  ASSERT_TRUE(help.ok());
  EXPECT_EQ(help->subcommand, Subcommand::kHelp);
  EXPECT_EQ(help->help_topic, "");
  absl::StatusOr<Command> dashed = Parse({"--help"});
  ASSERT_TRUE(dashed.ok());
  EXPECT_EQ(dashed->subcommand, Subcommand::kHelp);
  absl::StatusOr<Command> topic = Parse({"help", "export"});
  ASSERT_TRUE(topic.ok());
  EXPECT_EQ(topic->help_topic, "export");
  absl::StatusOr<Command> sub = Parse({"reject", "-h"});
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(sub->subcommand, Subcommand::kHelp);
  EXPECT_EQ(sub->help_topic, "reject");
}

TEST(Usage, MentionsEverySubcommand) {
  const std::string usage = Usage();
  for (const char* name :
       {"start", "watch", "approve", "reject", "answer", "edit-plan", "edit-call", "cancel", "list",
        "show", "export", "fork", "replay", "diff", "quota", "notifications", "help"}) {
    EXPECT_THAT(usage, HasSubstr(std::string("  ") + name)) << name;
  }
  EXPECT_THAT(Usage("cancel"), HasSubstr("cancel RUN_ID [--reason=TEXT]"));
  EXPECT_THAT(Usage("cancel"), ::testing::Not(HasSubstr("export")));
}

TEST(ParseArgs, NotificationsTakesOneStatusFilterAndABoundedPageSize) {
  absl::StatusOr<Command> command = Parse({"notifications", "--pending", "--page_size=1000"});
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->subcommand, Subcommand::kNotifications);
  EXPECT_EQ(command->notice_status, v1::NOTICE_PENDING);
  EXPECT_EQ(command->page_size, 1000);
  command = Parse({"notifications"});
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->notice_status, v1::NOTICE_STATUS_UNSPECIFIED);
  for (const auto& [args, problem] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"notifications", "--failed", "--pending"},
            "--failed and --pending exclude each other"},
           {{"notifications", "--page_size=1001"}, "--page_size: at most 1000"},
           {{"notifications", "--page_size=0"}, "page_size"},
           {{"notifications", "run-1"}, "unexpected argument"}}) {
    absl::StatusOr<Command> bad = Parse(args);
    ASSERT_FALSE(bad.ok()) << args.back();
    EXPECT_THAT(bad.status().message(), HasSubstr(problem));
  }
}

TEST(ParseArgs, WatchParsesRunIdAndAfterSeq) {
  absl::StatusOr<Command> command = Parse({"watch", "run-1", "--after_seq", "12", "--json"});
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->subcommand, Subcommand::kWatch);
  EXPECT_EQ(command->run_id, "run-1");
  EXPECT_EQ(command->after_seq, 12);
  EXPECT_TRUE(command->json);
  ExpectUsageError({"watch"}, "watch needs RUN_ID");
  ExpectUsageError({"watch", "a", "b"}, "\"b\"");
  ExpectUsageError({"watch", "a", "--after_seq=-1"}, "--after_seq");
  ExpectUsageError({"watch", "a", "--goal=x"}, "unknown flag --goal for watch");
}

TEST(ParseArgs, ReviewsParseTheirFlags) {
  absl::StatusOr<Command> approve = Parse({"approve", "r1", "--version=8", "--watch"});
  ASSERT_TRUE(approve.ok()) << approve.status();
  EXPECT_EQ(approve->subcommand, Subcommand::kApprove);
  EXPECT_EQ(approve->expected_version, 8);
  EXPECT_TRUE(approve->watch);

  absl::StatusOr<Command> unversioned = Parse({"approve", "r1"});
  ASSERT_TRUE(unversioned.ok());
  EXPECT_FALSE(unversioned->expected_version.has_value());

  absl::StatusOr<Command> reject = Parse({"reject", "r1", "--feedback=too risky", "--abort"});
  ASSERT_TRUE(reject.ok()) << reject.status();
  EXPECT_EQ(reject->feedback, "too risky");
  EXPECT_TRUE(reject->abort);

  absl::StatusOr<Command> answer = Parse({"answer", "r1", "--text", "yes, go"});
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->text, "yes, go");

  absl::StatusOr<Command> edit_plan = Parse({"edit-plan", "r1", "--plan_file=p.json"});
  ASSERT_TRUE(edit_plan.ok()) << edit_plan.status();
  EXPECT_EQ(edit_plan->plan_file, "p.json");

  absl::StatusOr<Command> edit_call =
      Parse({"edit-call", "r1", "--tool=read_file", R"(--args={"path":"x"})"});
  ASSERT_TRUE(edit_call.ok()) << edit_call.status();
  EXPECT_EQ(edit_call->tool, "read_file");
  EXPECT_EQ(edit_call->args_json, R"({"path":"x"})");
}

TEST(ParseArgs, ReviewErrorsNameTheFlag) {
  ExpectUsageError({"approve"}, "approve needs RUN_ID");
  ExpectUsageError({"approve", "r1", "--version=x"}, "--version");
  ExpectUsageError({"approve", "r1", "--version=-3"}, "--version");
  ExpectUsageError({"reject", "r1"}, "--feedback");
  ExpectUsageError({"reject", "r1", "--feedback="}, "--feedback");
  ExpectUsageError({"answer", "r1"}, "--text");
  ExpectUsageError({"edit-plan", "r1"}, "--plan_file");
  ExpectUsageError({"edit-call", "r1", "--args={}"}, "--tool");
  ExpectUsageError({"edit-call", "r1", "--tool=t"}, "--args");
  ExpectUsageError({"edit-call", "r1", "--tool=t", "--args={bad"}, "--args: not valid JSON");
  ExpectUsageError({"edit-call", "r1", "--tool=t", "--args=[1]"}, "--args: must be a JSON object");
}

TEST(ParseArgs, CancelListShowExportParse) {
  absl::StatusOr<Command> cancel = Parse({"cancel", "r1", "--reason=enough"});
  ASSERT_TRUE(cancel.ok()) << cancel.status();
  EXPECT_EQ(cancel->subcommand, Subcommand::kCancel);
  EXPECT_EQ(cancel->reason, "enough");

  absl::StatusOr<Command> list = Parse({"list", "--stage=paused", "--outcome=goal_achieved",
                                        "--page_size=20", "--page_token=t1", "--all", "--usage"});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->stage_filter, v1::PAUSED);
  EXPECT_EQ(list->outcome_filter, v1::GOAL_ACHIEVED);
  EXPECT_EQ(list->page_size, 20);
  EXPECT_EQ(list->page_token, "t1");
  EXPECT_TRUE(list->all_pages);
  EXPECT_TRUE(list->show_usage);

  absl::StatusOr<Command> show = Parse({"show", "r1", "--json"});
  ASSERT_TRUE(show.ok()) << show.status();
  EXPECT_EQ(show->subcommand, Subcommand::kShow);
  EXPECT_TRUE(show->json);

  absl::StatusOr<Command> exported = Parse({"export", "r1", "--out=/tmp/x"});
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->out_dir, "/tmp/x");
}

TEST(ParseArgs, CancelListShowExportErrorsNameTheFlag) {
  ExpectUsageError({"cancel"}, "cancel needs RUN_ID");
  ExpectUsageError({"list", "--stage=SLEEPING"}, "--stage");
  ExpectUsageError({"list", "--outcome=PAUSED"}, "--outcome");
  ExpectUsageError({"list", "--page_size=0"}, "--page_size");
  ExpectUsageError({"list", "extra"}, "\"extra\"");
  ExpectUsageError({"show"}, "show needs RUN_ID");
  ExpectUsageError({"export", "r1"}, "--out");
}

TEST(ParseArgs, DoubleDashEndsFlags) {
  absl::StatusOr<Command> command = Parse({"show", "--", "-odd-id"});
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->run_id, "-odd-id");
}

TEST(ParseArgs, ToolsAsksTheExecutor) {
  absl::StatusOr<Command> tools = Parse({"tools"});
  ASSERT_TRUE(tools.ok()) << tools.status();
  EXPECT_EQ(tools->subcommand, Subcommand::kTools);
  EXPECT_EQ(tools->executor, "127.0.0.1:50053");
  EXPECT_FALSE(tools->json);
  tools = Parse({"tools", "--executor=10.0.0.2:7000", "--json"});
  ASSERT_TRUE(tools.ok()) << tools.status();
  EXPECT_EQ(tools->executor, "10.0.0.2:7000");
  EXPECT_TRUE(tools->json);
  EXPECT_EQ(tools->namespace_name, "");
  tools = Parse({"tools", "--namespace=team-a"});
  ASSERT_TRUE(tools.ok()) << tools.status();
  EXPECT_EQ(tools->namespace_name, "team-a");
  ExpectUsageError({"tools", "--executor="}, "--executor: the value is empty");
  ExpectUsageError({"tools", "extra"}, "\"extra\"");
}

TEST(ParseArgs, ForkReplayAndDiffParseTheirFlags) {
  absl::StatusOr<Command> fork =
      Parse({"fork", "r1", "--at=3", "--plan_file=p.json", "--answer=yes", "--max_iterations=9",
             "--workspace_at_fork", "--request_id=f1"});
  ASSERT_TRUE(fork.ok()) << fork.status();
  EXPECT_EQ(fork->subcommand, Subcommand::kFork);
  EXPECT_EQ(fork->run_id, "r1");
  EXPECT_EQ(fork->fork.at_iteration, 3);
  EXPECT_FALSE(fork->fork.at_seq.has_value());
  EXPECT_EQ(fork->fork.plan_file, "p.json");
  EXPECT_EQ(fork->fork.answer, "yes");
  EXPECT_EQ(fork->fork.max_iterations, 9);
  EXPECT_TRUE(fork->fork.workspace_at_fork);
  EXPECT_EQ(fork->fork.request_id, "f1");

  absl::StatusOr<Command> call =
      Parse({"fork", "r1", "--at_seq=12", "--tool=write_file", R"(--args={"path":"a"})"});
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->fork.at_seq, 12);
  EXPECT_EQ(call->fork.tool, "write_file");
  EXPECT_EQ(call->fork.args_json, R"({"path":"a"})");

  absl::StatusOr<Command> budgets =
      Parse({"fork", "r1", "--at=2", "--token_budget=5000", "--cost_budget_usd=0.25"});
  ASSERT_TRUE(budgets.ok()) << budgets.status();
  EXPECT_EQ(budgets->fork.token_budget, 5000);
  EXPECT_EQ(budgets->fork.cost_budget_usd, 0.25);
  // A fork cannot remove a budget: 0 would silently keep the source's.
  ExpectUsageError({"fork", "r1", "--at=2", "--token_budget=0"}, "--token_budget: 0 is below");
  ExpectUsageError({"fork", "r1", "--at=2", "--cost_budget_usd=0"},
                   "--cost_budget_usd: the amount must be above 0");
  ExpectUsageError({"fork", "r1", "--at=2", "--cost_budget_usd=-1"}, "--cost_budget_usd");

  absl::StatusOr<Command> replay = Parse({"replay", "r1", "--save=out.jsonl"});
  ASSERT_TRUE(replay.ok()) << replay.status();
  EXPECT_EQ(replay->subcommand, Subcommand::kReplay);
  EXPECT_EQ(replay->out_dir, "out.jsonl");

  absl::StatusOr<Command> diff = Parse({"diff", "r1", "r2"});
  ASSERT_TRUE(diff.ok()) << diff.status();
  EXPECT_EQ(diff->run_id, "r1");
  EXPECT_EQ(diff->other_run_id, "r2");
}

TEST(ParseArgs, ForkAndDiffErrorsNameTheProblem) {
  ExpectUsageError({"fork", "r1"}, "--at=ITERATION and --at_seq=SEQ");
  ExpectUsageError({"fork", "r1", "--at=1", "--at_seq=2"}, "--at=ITERATION and --at_seq=SEQ");
  ExpectUsageError({"fork", "r1", "--at=x"}, "--at");
  ExpectUsageError({"fork", "r1", "--at_seq=0"}, "--at_seq");
  ExpectUsageError({"fork", "r1", "--at=1", "--tool=t"}, "--args");
  ExpectUsageError({"fork", "r1", "--at=1", "--tool=t", "--args=[1]"},
                   "--args: must be a JSON object");
  ExpectUsageError({"fork", "r1", "--at=1", "--plan_file=p", "--tool=t", "--args={}"},
                   "--plan_file and --tool/--args");
  ExpectUsageError({"fork", "r1", "--at=1", "--answer= "}, "--answer");
  ExpectUsageError({"diff", "r1"}, "diff needs RUN_A RUN_B");
  ExpectUsageError({"diff", "r1", "r2", "r3"}, "unexpected argument");
}

}  // namespace
}  // namespace rein::cli
