// Tests of StageRouter: transitions, termination order, pauses, reviews, stagnation.
#include "router_service/stage_router.h"

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_reason.h"
#include "common/usage_payload.h"
#include "gtest/gtest.h"
#include "router_service/spec.h"

namespace rein {
namespace {

using rein::v1::Run;
using rein::v1::RunEvent;
using rein::v1::Stage;
using rein::v1::SubTask;
using Eval = rein::v1::RunEvent::Evaluation;

const absl::Time kStart = absl::FromUnixSeconds(1700000000);

std::vector<rein::v1::ToolSpec> KnownTools() {
  std::vector<rein::v1::ToolSpec> tools(3);
  tools[0].set_name("list_files");
  tools[0].set_schema_hash("sha256:list-files-schema");
  tools[1].set_name("read_file");
  tools[2].set_name("write_file");
  tools[2].set_mutating(true);
  return tools;
}

rein::v1::ListToolsResponse ToolsReply() {
  rein::v1::ListToolsResponse reply;
  for (const auto& tool : KnownTools()) *reply.add_tools() = tool;
  return reply;
}

rein::v1::PlanResponse PlanReply(std::vector<std::string> ids, bool goal_achieved = false) {
  rein::v1::PlanResponse reply;
  for (const std::string& id : ids) {
    SubTask* task = reply.add_subtasks();
    task->set_id(id);
    task->set_description("do " + id);
  }
  reply.set_goal_achieved(goal_achieved);
  reply.set_backend("scripted");
  reply.mutable_usage()->set_input_tokens(10);
  reply.mutable_usage()->set_output_tokens(5);
  return reply;
}

rein::v1::DecideResponse CallReply(const std::string& tool, const std::string& args = "{}") {
  rein::v1::DecideResponse reply;
  reply.mutable_tool_call()->set_tool(tool);
  reply.mutable_tool_call()->set_args_json(args);
  return reply;
}

rein::v1::ExecuteResponse ExecReply(bool ok, const std::string& output = "out") {
  rein::v1::ExecuteResponse reply;
  reply.set_ok(ok);
  reply.set_output(output);
  if (!ok) {
    reply.mutable_error()->set_code("NOT_FOUND");
    reply.mutable_error()->set_message("no such file");
  }
  return reply;
}

rein::v1::EvaluateResponse EvalReply(Eval::Status status, bool goal_achieved = false) {
  rein::v1::EvaluateResponse reply;
  reply.set_status(status);
  reply.set_summary("summary");
  reply.set_goal_achieved(goal_achieved);
  return reply;
}

// A run under test: applies transitions and keeps the whole event log.
class Harness {
 public:
  explicit Harness(std::function<void(rein::v1::RunSpec&)> edit = nullptr) {
    rein::v1::RunSpec spec;
    spec.set_goal("audit the repo");
    spec.add_tools("list_files");
    spec.add_tools("read_file");
    spec.add_tools("write_file");
    spec.set_pause_on_notes(true);
    if (edit) edit(spec);
    auto normalized = NormalizeSpec(spec, KnownTools());
    EXPECT_TRUE(normalized.ok()) << normalized.status();
    Apply(router.NewRun("r1", "", *normalized, now, &run));
  }

  void Apply(const Transition& t) {
    EXPECT_EQ(t.state.version(), run.state().version() + (log.empty() ? 0 : 1));
    run.mutable_state()->CopyFrom(t.state);
    for (const RunEvent& e : t.events) log.push_back(e);
  }

  Stage stage() const { return run.state().stage(); }
  const rein::v1::RunState& state() const { return run.state(); }

  void Tools() { Apply(router.OnTools(run, ToolsReply(), std::nullopt, now)); }
  void Plan(const absl::StatusOr<rein::v1::PlanResponse>& r) { Apply(router.OnPlan(run, r, now)); }
  void Decide(const absl::StatusOr<rein::v1::DecideResponse>& r) {
    Apply(router.OnDecide(run, r, now));
  }
  void Execute(const absl::StatusOr<rein::v1::ExecuteResponse>& r) {
    Apply(router.OnExecute(run, r, now));
  }
  void Evaluate(const absl::StatusOr<rein::v1::EvaluateResponse>& r) {
    Apply(router.OnEvaluate(run, r, now));
  }
  absl::Status Review(const rein::v1::Review& review) {
    auto t = router.OnReview(run, review, run.state().version(), now);
    if (!t.ok()) return t.status();
    Apply(*t);
    return absl::OkStatus();
  }
  // One DECIDING..EVALUATING cycle.
  void Cycle(const std::string& tool, const std::string& args, bool ok, const std::string& out,
             Eval::Status status, bool goal = false) {
    Decide(CallReply(tool, args));
    Execute(ExecReply(ok, out));
    Evaluate(EvalReply(status, goal));
  }

  int CountFinished() const {
    int n = 0;
    for (const auto& e : log) n += e.has_finished();
    return n;
  }
  rein::v1::TerminationReason reason() const { return run.state().outcome().reason(); }

  StageRouter router;
  absl::Time now = kStart;
  Run run;
  std::vector<RunEvent> log;
};

rein::v1::Review Approve() {
  rein::v1::Review r;
  r.mutable_approve();
  return r;
}

TEST(StageRouterTest, NewRunStartsInitializingWithOneEvent) {
  Harness h;
  EXPECT_EQ(h.stage(), rein::v1::INITIALIZING);
  EXPECT_EQ(h.state().version(), 1);
  ASSERT_EQ(h.log.size(), 1u);
  EXPECT_EQ(h.log[0].stage_changed().to(), rein::v1::INITIALIZING);
  EXPECT_EQ(h.router.NextEffect(h.run, h.now).kind, Effect::Kind::kListTools);
}

TEST(StageRouterTest, FullRunFinishesWithGoalAchieved) {
  Harness h;
  h.Tools();
  EXPECT_EQ(h.stage(), rein::v1::PLANNING);
  EXPECT_EQ(h.state().iteration(), 1);
  Effect plan = h.router.NextEffect(h.run, h.now);
  ASSERT_EQ(plan.kind, Effect::Kind::kPlan);
  EXPECT_EQ(plan.plan.goal(), "audit the repo");
  EXPECT_EQ(plan.plan.tools_size(), 3);
  h.Plan(PlanReply({"a", "b"}));
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
  EXPECT_EQ(h.state().subtasks(0).id(), "a");
  EXPECT_EQ(h.state().subtasks(0).allowed_tools_size(), 3);
  Effect decide = h.router.NextEffect(h.run, h.now);
  ASSERT_EQ(decide.kind, Effect::Kind::kDecide);
  EXPECT_EQ(decide.decide.subtask().id(), "a");
  h.Decide(CallReply("list_files", R"({"path":"."})"));
  EXPECT_EQ(h.stage(), rein::v1::EXECUTING);
  Effect exec = h.router.NextEffect(h.run, h.now);
  ASSERT_EQ(exec.kind, Effect::Kind::kExecute);
  EXPECT_EQ(exec.execute.call_id(), "r1-1");
  EXPECT_EQ(exec.execute.tool(), "list_files");
  // The schema hash the run pinned at INITIALIZING goes with every call.
  EXPECT_EQ(exec.execute.tool_schema_hash(), "sha256:list-files-schema");
  h.Execute(ExecReply(true, "a.txt"));
  EXPECT_EQ(h.stage(), rein::v1::EVALUATING);
  EXPECT_EQ(h.state().latest_observation(), "a.txt");
  h.Evaluate(EvalReply(Eval::COMPLETED));
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
  EXPECT_EQ(h.state().subtasks(0).id(), "b");
  h.Cycle("read_file", R"({"path":"a.txt"})", true, "x", Eval::COMPLETED, /*goal=*/true);
  EXPECT_EQ(h.stage(), rein::v1::FINISHED);
  EXPECT_EQ(h.reason(), rein::v1::GOAL_ACHIEVED);
  EXPECT_EQ(h.state().completed_subtasks_size(), 2);
  EXPECT_EQ(h.CountFinished(), 1);
  EXPECT_EQ(h.state().iteration(), 3);
  EXPECT_EQ(h.state().tokens_used(), 15);
  EXPECT_EQ(h.router.NextEffect(h.run, h.now).kind, Effect::Kind::kNone);
}

// A state handed back with Recycle is only storage: the next transition on the thread is what
// it would have been without it, though the recycled state held more than the run's (actions
// with long observations, completed subtasks, an outcome).
TEST(StageRouterTest, ARecycledStateLeavesNothingOfItsOwnInTheNextTransition) {
  Harness ended;
  ended.Tools();
  ended.Plan(PlanReply({"a", "b"}));
  for (int i = 0; i < 4; ++i) {
    ended.Cycle("read_file", absl::StrCat(R"({"path":"f)", i, R"("})"), i % 2 == 0,
                std::string(3000, 'o'), Eval::NEEDS_MORE_WORK);
  }
  ended.Cycle("read_file", "{}", true, "x", Eval::COMPLETED);
  ended.Cycle("read_file", "{}", true, "x", Eval::COMPLETED, /*goal=*/true);
  ASSERT_EQ(ended.stage(), rein::v1::FINISHED);

  Harness fresh;
  fresh.Tools();
  fresh.Plan(PlanReply({"a"}));
  Transition expected;  // on a thread with nothing recycled
  std::thread([&] {
    expected = fresh.router.OnDecide(fresh.run, CallReply("list_files"), fresh.now);
  }).join();
  StageRouter::Recycle(rein::v1::RunState(ended.state()));
  Transition got = fresh.router.OnDecide(fresh.run, CallReply("list_files"), fresh.now);
  EXPECT_EQ(got.state.DebugString(), expected.state.DebugString());
  EXPECT_EQ(got.state.recent_actions_size(), 0);
}

TEST(StageRouterTest, EmptyStackWithoutGoalGoesBackToPlanning) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Cycle("list_files", "{}", true, "x", Eval::COMPLETED, /*goal=*/false);
  EXPECT_EQ(h.stage(), rein::v1::PLANNING);
  Effect plan = h.router.NextEffect(h.run, h.now);
  ASSERT_EQ(plan.plan.completed_size(), 1);
  EXPECT_EQ(plan.plan.completed(0).summary(), "summary");
  EXPECT_EQ(plan.plan.latest_observation(), "x");
}

TEST(StageRouterTest, NeedsMoreWorkKeepsSubtask) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Cycle("list_files", R"({"path":"1"})", true, "x", Eval::NEEDS_MORE_WORK);
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
  EXPECT_EQ(h.state().subtasks(0).id(), "a");
  EXPECT_EQ(h.state().subtasks(0).status(), SubTask::IN_PROGRESS);
}

TEST(StageRouterTest, FailedEvaluationPopsSubtaskAsFailed) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a", "b"}));
  h.Cycle("list_files", "{}", true, "x", Eval::FAILED);
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
  ASSERT_EQ(h.state().completed_subtasks_size(), 1);
  EXPECT_EQ(h.state().completed_subtasks(0).status(), SubTask::FAILED);
}

TEST(StageRouterTest, PlanGoalAchievedWithEmptyStackFinishes) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({}, /*goal_achieved=*/true));
  EXPECT_EQ(h.stage(), rein::v1::FINISHED);
  EXPECT_EQ(h.reason(), rein::v1::GOAL_ACHIEVED);
}

TEST(StageRouterTest, FinishedRefusedWhileSubtaskPending) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a", "b"}));
  // The evaluator claims the goal while "b" is still pending: the claim is ignored.
  h.Cycle("list_files", "{}", true, "x", Eval::COMPLETED, /*goal=*/true);
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
  EXPECT_EQ(h.state().subtasks(0).id(), "b");
  EXPECT_EQ(h.CountFinished(), 0);
  // The planner claims success while the stack is non-empty: it pushes and continues.
  Harness p;
  p.Tools();
  p.Plan(PlanReply({"a"}, /*goal_achieved=*/true));
  EXPECT_EQ(p.stage(), rein::v1::DECIDING);
}

TEST(StageRouterTest, PlanWithoutSubtasksSpendsRetry) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({}));
  EXPECT_EQ(h.stage(), rein::v1::PLANNING);
  EXPECT_EQ(h.state().retries_used(), 1);
  EXPECT_TRUE(h.log.back().has_error());
  EXPECT_TRUE(h.log.back().error().retry_spent());
}

TEST(StageRouterTest, InvalidPlansSpendRetry) {
  Harness h;
  h.Tools();
  auto dup = PlanReply({"a", "a"});
  h.Plan(dup);
  EXPECT_EQ(h.state().retries_used(), 1);
  EXPECT_NE(h.log.back().error().message().find("not unique"), std::string::npos);
  auto bad_tool = PlanReply({"a"});
  bad_tool.mutable_subtasks(0)->add_allowed_tools("rm_rf");
  h.Plan(bad_tool);
  EXPECT_EQ(h.state().retries_used(), 2);
  EXPECT_NE(h.log.back().error().message().find("rm_rf"), std::string::npos);
  EXPECT_EQ(h.stage(), rein::v1::PLANNING);
}

TEST(StageRouterTest, DecisionOutsideAllowedToolsSpendsRetry) {
  Harness h;
  h.Tools();
  auto plan = PlanReply({"a"});
  plan.mutable_subtasks(0)->add_allowed_tools("list_files");
  h.Plan(plan);
  Effect decide = h.router.NextEffect(h.run, h.now);
  ASSERT_EQ(decide.decide.tools_size(), 1);
  EXPECT_EQ(decide.decide.tools(0).name(), "list_files");
  h.Decide(CallReply("write_file", R"({"path":"x"})"));
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
  EXPECT_EQ(h.state().retries_used(), 1);
  EXPECT_EQ(h.log.back().error().code(), "INVALID_OUTPUT");
  EXPECT_NE(h.log.back().error().message().find("not allowed for subtask"), std::string::npos);
  h.Decide(CallReply("list_files", "[1,2]"));
  EXPECT_EQ(h.state().retries_used(), 2);
  EXPECT_NE(h.log.back().error().message().find("args_json"), std::string::npos);
  rein::v1::DecideResponse empty;
  h.Decide(empty);
  EXPECT_EQ(h.state().retries_used(), 3);
}

TEST(StageRouterTest, FailedToolCallIsAnObservation) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("read_file", R"({"path":"nope"})"));
  h.Execute(ExecReply(false, ""));
  EXPECT_EQ(h.stage(), rein::v1::EVALUATING);
  EXPECT_EQ(h.state().consecutive_tool_failures(), 1);
  EXPECT_FALSE(h.state().recent_actions(0).ok());
  EXPECT_NE(h.state().latest_observation().find("NOT_FOUND"), std::string::npos);
}

TEST(StageRouterTest, ExecutorUnreachableSpendsRetryAndRepeatsSameCall) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("list_files", "{}"));
  h.Execute(absl::UnavailableError("connection refused"));
  EXPECT_EQ(h.stage(), rein::v1::EXECUTING);
  EXPECT_EQ(h.state().retries_used(), 1);
  EXPECT_EQ(h.router.NextEffect(h.run, h.now).execute.call_id(), "r1-1");
}

TEST(StageRouterTest, ObservationIsCappedWithMarker) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("list_files", "{}"));
  h.Execute(ExecReply(true, std::string(100000, 'x')));
  EXPECT_LT(h.state().latest_observation().size(), 9000u);
  EXPECT_NE(h.state().latest_observation().find("[observation truncated"), std::string::npos);
}

// --- Termination rules -------------------------------------------------------------------

TEST(StageRouterTest, MaxIterationsFails) {
  Harness h([](rein::v1::RunSpec& s) { s.mutable_limits()->set_max_iterations(3); });
  h.Tools();
  h.Plan(PlanReply({"a"}));                                                    // iteration 2 begins
  h.Cycle("list_files", R"({"path":"1"})", true, "1", Eval::NEEDS_MORE_WORK);  // 3 begins
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
  h.Cycle("list_files", R"({"path":"2"})", true, "2", Eval::NEEDS_MORE_WORK);
  EXPECT_EQ(h.stage(), rein::v1::FAILED);
  EXPECT_EQ(h.reason(), rein::v1::MAX_ITERATIONS);
  EXPECT_EQ(h.state().iteration(), 3);
  EXPECT_EQ(h.CountFinished(), 1);
}

TEST(StageRouterTest, DeadlineExceededKeepsState) {
  Harness h([](rein::v1::RunSpec& s) { s.mutable_limits()->mutable_deadline()->set_seconds(60); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("list_files", "{}"));
  h.now += absl::Seconds(61);
  h.Execute(ExecReply(true, "late"));
  EXPECT_EQ(h.stage(), rein::v1::FAILED);
  EXPECT_EQ(h.reason(), rein::v1::DEADLINE_EXCEEDED);
  // The state at that moment is kept: the action was recorded.
  EXPECT_EQ(h.state().recent_actions_size(), 1);
  EXPECT_EQ(h.state().subtasks_size(), 1);
}

TEST(StageRouterTest, DeadlineWhilePausedFailsOnTick) {
  Harness h([](rein::v1::RunSpec& s) {
    s.mutable_limits()->mutable_deadline()->set_seconds(60);
    s.add_pause_points(rein::v1::AFTER_PLAN);
  });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  EXPECT_FALSE(h.router.OnTick(h.run, h.now + absl::Seconds(59)).has_value());
  auto t = h.router.OnTick(h.run, h.now + absl::Seconds(60));
  ASSERT_TRUE(t.has_value());
  h.Apply(*t);
  EXPECT_EQ(h.reason(), rein::v1::DEADLINE_EXCEEDED);
  EXPECT_EQ(h.CountFinished(), 1);
}

TEST(StageRouterTest, RetryBudgetIsGlobalAcrossRounds) {
  Harness h([](rein::v1::RunSpec& s) { s.mutable_limits()->set_retry_budget(2); });
  h.Tools();
  h.Plan(absl::UnavailableError("planner down"));  // 1 (PLANNING)
  EXPECT_EQ(h.stage(), rein::v1::PLANNING);
  h.Plan(PlanReply({"a", "b"}));
  h.Decide(absl::InternalError("invalid output: bad json"));  // 2 (DECIDING)
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
  h.Cycle("list_files", "{}", true, "x", Eval::COMPLETED);  // success resets nothing
  EXPECT_EQ(h.state().retries_used(), 2);
  h.Decide(CallReply("list_files", R"({"path":"b"})"));
  h.Execute(absl::UnavailableError("executor down"));  // 3 > 2
  EXPECT_EQ(h.stage(), rein::v1::FAILED);
  EXPECT_EQ(h.reason(), rein::v1::RETRY_BUDGET_EXHAUSTED);
}

TEST(StageRouterTest, InvalidOutputTokensCountAgainstTheBudget) {
  Harness h([](rein::v1::RunSpec& s) { s.mutable_limits()->set_token_budget(100); });
  h.Tools();
  rein::v1::Usage usage;
  usage.set_input_tokens(80);
  usage.set_output_tokens(30);
  h.Plan(WithUsage(absl::InternalError("invalid output: not JSON"), usage));
  EXPECT_EQ(h.state().tokens_used(), 110);
  EXPECT_EQ(h.stage(), rein::v1::FAILED);
  EXPECT_EQ(h.reason(), rein::v1::TOKEN_BUDGET_EXHAUSTED);
}

TEST(StageRouterTest, FatalPlannerErrorFailsAtOnceWithoutSpending) {
  Harness h;
  h.Tools();
  h.Plan(absl::UnauthenticatedError("invalid x-api-key"));
  EXPECT_EQ(h.stage(), rein::v1::FAILED);
  EXPECT_EQ(h.reason(), rein::v1::PLANNER_ERROR);
  EXPECT_NE(h.state().outcome().message().find("invalid x-api-key"), std::string::npos);
  EXPECT_EQ(h.state().retries_used(), 0);
}

TEST(StageRouterTest, ConsecutiveToolFailuresFail) {
  Harness h([](rein::v1::RunSpec& s) {
    s.mutable_limits()->set_max_consecutive_tool_failures(2);
    s.mutable_limits()->set_on_stagnation(rein::v1::PAUSE);
  });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Cycle("read_file", R"({"path":"1"})", false, "", Eval::NEEDS_MORE_WORK);
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
  h.Decide(CallReply("read_file", R"({"path":"2"})"));
  h.Execute(ExecReply(false, ""));
  EXPECT_EQ(h.stage(), rein::v1::FAILED);
  EXPECT_EQ(h.reason(), rein::v1::CONSECUTIVE_TOOL_FAILURES);
}

TEST(StageRouterTest, SuccessResetsConsecutiveToolFailures) {
  Harness h([](rein::v1::RunSpec& s) { s.mutable_limits()->set_max_consecutive_tool_failures(2); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Cycle("read_file", R"({"path":"1"})", false, "", Eval::NEEDS_MORE_WORK);
  h.Cycle("read_file", R"({"path":"2"})", true, "ok", Eval::NEEDS_MORE_WORK);
  EXPECT_EQ(h.state().consecutive_tool_failures(), 0);
  h.Cycle("read_file", R"({"path":"3"})", false, "", Eval::NEEDS_MORE_WORK);
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
}

TEST(StageRouterTest, TokenBudgetExhaustedFails) {
  Harness h([](rein::v1::RunSpec& s) { s.mutable_limits()->set_token_budget(20); });
  h.Tools();
  h.Plan(PlanReply({"a"}));  // 15 tokens
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
  auto call = CallReply("list_files", "{}");
  call.mutable_usage()->set_input_tokens(6);
  h.Decide(call);
  EXPECT_EQ(h.stage(), rein::v1::FAILED);
  EXPECT_EQ(h.reason(), rein::v1::TOKEN_BUDGET_EXHAUSTED);
}

// A router pricing claude-sonnet-5 at $2 / $10 / $0.20 / $2.50 per million tokens.
StageRouter PricedRouter() {
  StageRouterOptions options;
  absl::StatusOr<PriceTable> prices =
      PriceTable::Parse("claude-sonnet-5 2 10 0.20 2.50\n", "prices.txt");
  EXPECT_TRUE(prices.ok()) << prices.status();
  options.prices = std::make_shared<const PriceTable>(*std::move(prices));
  return StageRouter(options);
}

rein::v1::Usage MakeUsage(int64_t input, int64_t output, int64_t read, int64_t write) {
  rein::v1::Usage usage;
  usage.set_input_tokens(input);
  usage.set_output_tokens(output);
  usage.set_cache_read_input_tokens(read);
  usage.set_cache_creation_input_tokens(write);
  return usage;
}

TEST(StageRouterTest, UsageAndCostAddUpOverEveryReplyAndEndInTheTerminalEvent) {
  Harness h;
  h.router = PricedRouter();
  h.Tools();
  rein::v1::PlanResponse plan = PlanReply({"a"});
  plan.set_backend("anthropic:claude-sonnet-5");
  *plan.mutable_usage() = MakeUsage(1000, 200, 0, 3000);  // 0.002 + 0.002 + 0.0075
  h.Plan(plan);
  rein::v1::DecideResponse call = CallReply("list_files");
  call.set_backend("anthropic:claude-sonnet-5");
  *call.mutable_usage() = MakeUsage(100, 50, 3000, 0);  // 0.0002 + 0.0005 + 0.0006
  h.Decide(call);
  h.Execute(ExecReply(true));
  // A failed evaluation that carried usage, priced at the run's model.
  h.Evaluate(WithUsage(absl::InternalError("invalid output: not JSON"), MakeUsage(10, 0, 0, 0)));
  rein::v1::EvaluateResponse eval = EvalReply(Eval::COMPLETED, /*goal_achieved=*/true);
  eval.set_backend("scripted");  // costs nothing, its tokens still count
  *eval.mutable_usage() = MakeUsage(7, 3, 0, 0);
  h.Evaluate(eval);
  ASSERT_EQ(h.stage(), rein::v1::FINISHED);
  const rein::v1::Usage& usage = h.state().usage();
  EXPECT_EQ(usage.input_tokens(), 1117);
  EXPECT_EQ(usage.output_tokens(), 253);
  EXPECT_EQ(usage.cache_read_input_tokens(), 3000);
  EXPECT_EQ(usage.cache_creation_input_tokens(), 3000);
  EXPECT_EQ(h.state().tokens_used(), 1117 + 253 + 3000 + 3000);
  const double cost = 0.0115 + 0.0013 + 0.00002;
  EXPECT_NEAR(h.state().cost_used_usd(), cost, 1e-12);
  ASSERT_TRUE(h.log.back().has_finished());
  const rein::v1::Outcome& outcome = h.log.back().finished().outcome();
  EXPECT_EQ(outcome.reason(), rein::v1::GOAL_ACHIEVED);
  EXPECT_EQ(outcome.usage().SerializeAsString(), usage.SerializeAsString());
  EXPECT_NEAR(outcome.cost_usd(), cost, 1e-12);
}

TEST(StageRouterTest, CostBudgetExhaustedEndsTheRunAtTheReplyThatPassesIt) {
  Harness h([](rein::v1::RunSpec& s) { s.mutable_limits()->set_cost_budget_usd(0.001); });
  h.router = PricedRouter();
  h.Tools();
  rein::v1::PlanResponse plan = PlanReply({"a"});
  plan.set_backend("anthropic:claude-sonnet-5");
  *plan.mutable_usage() = MakeUsage(250, 50, 0, 0);  // $0.001: at the budget, not over it
  h.Plan(plan);
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
  rein::v1::DecideResponse call = CallReply("list_files");
  call.set_backend("anthropic:claude-sonnet-5");
  *call.mutable_usage() = MakeUsage(0, 0, 5, 0);  // $0.000001 more
  h.Decide(call);
  EXPECT_EQ(h.stage(), rein::v1::FAILED);
  EXPECT_EQ(h.reason(), rein::v1::COST_BUDGET_EXHAUSTED);
  EXPECT_EQ(h.state().outcome().message(), "cost $0.001001, budget $0.001000");
  EXPECT_EQ(h.CountFinished(), 1);
  EXPECT_EQ(h.log.back().finished().outcome().usage().cache_read_input_tokens(), 5);
}

TEST(StageRouterTest, TokenBudgetWinsOverCostBudget) {
  Harness h([](rein::v1::RunSpec& s) {
    s.mutable_limits()->set_token_budget(100);
    s.mutable_limits()->set_cost_budget_usd(0.000001);
  });
  h.router = PricedRouter();
  h.Tools();
  rein::v1::PlanResponse plan = PlanReply({"a"});
  plan.set_backend("anthropic:claude-sonnet-5");
  *plan.mutable_usage() = MakeUsage(1000, 0, 0, 0);
  h.Plan(plan);
  EXPECT_EQ(h.reason(), rein::v1::TOKEN_BUDGET_EXHAUSTED);
}

TEST(StageRouterTest, AReplyThatCannotBePricedEndsARunWithACostBudgetOnly) {
  rein::v1::PlanResponse plan = PlanReply({"a"});
  plan.set_backend("anthropic:claude-opus-5");  // not in the table, and no default row
  Harness budget([](rein::v1::RunSpec& s) { s.mutable_limits()->set_cost_budget_usd(5); });
  budget.router = PricedRouter();
  budget.Tools();
  budget.Plan(plan);
  EXPECT_EQ(budget.stage(), rein::v1::FAILED);
  EXPECT_EQ(budget.reason(), rein::v1::COST_BUDGET_EXHAUSTED);
  EXPECT_NE(budget.state().outcome().message().find("\"claude-opus-5\""), std::string::npos)
      << budget.state().outcome().message();
  EXPECT_EQ(budget.state().usage().input_tokens(), 10);  // its tokens are still counted

  Harness free;
  free.router = PricedRouter();
  free.Tools();
  free.Plan(plan);
  EXPECT_EQ(free.stage(), rein::v1::DECIDING);
  EXPECT_EQ(free.state().cost_used_usd(), 0);
  EXPECT_EQ(free.state().usage().input_tokens(), 10);
}

TEST(StageRouterTest, CancelWinsOverEveryOtherRule) {
  Harness h([](rein::v1::RunSpec& s) {
    s.mutable_limits()->set_retry_budget(-1);
    s.mutable_limits()->mutable_deadline()->set_seconds(10);
  });
  h.Tools();
  auto t = h.router.OnCancel(h.run, /*call_in_flight=*/true, "", h.now);
  ASSERT_TRUE(t.has_value());
  h.Apply(*t);
  EXPECT_EQ(h.stage(), rein::v1::PLANNING);
  EXPECT_TRUE(h.state().cancel_requested());
  h.now += absl::Seconds(11);              // deadline passed too
  h.Plan(absl::UnavailableError("down"));  // and the retry budget is exceeded
  EXPECT_EQ(h.stage(), rein::v1::CANCELLED);
  EXPECT_EQ(h.reason(), rein::v1::CANCELLED_BY_USER);
  EXPECT_EQ(h.CountFinished(), 1);
}

TEST(StageRouterTest, DeadlineWinsOverRetryBudget) {
  Harness h([](rein::v1::RunSpec& s) {
    s.mutable_limits()->set_retry_budget(-1);
    s.mutable_limits()->mutable_deadline()->set_seconds(10);
  });
  h.Tools();
  h.now += absl::Seconds(11);
  h.Plan(absl::UnavailableError("down"));
  EXPECT_EQ(h.reason(), rein::v1::DEADLINE_EXCEEDED);
}

TEST(StageRouterTest, MaxIterationsWinsOverDeadline) {
  Harness h([](rein::v1::RunSpec& s) {
    s.mutable_limits()->set_max_iterations(2);
    s.mutable_limits()->mutable_deadline()->set_seconds(10);
  });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("list_files", "{}"));
  h.Execute(ExecReply(true));
  h.now += absl::Seconds(11);
  h.Evaluate(EvalReply(Eval::NEEDS_MORE_WORK));
  EXPECT_EQ(h.reason(), rein::v1::MAX_ITERATIONS);
}

TEST(StageRouterTest, RetryBudgetWinsOverToolFailures) {
  Harness h([](rein::v1::RunSpec& s) {
    s.mutable_limits()->set_retry_budget(-1);
    s.mutable_limits()->set_max_consecutive_tool_failures(1);
  });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("list_files", "{}"));
  h.Execute(ExecReply(false, ""));
  ASSERT_EQ(h.reason(), rein::v1::CONSECUTIVE_TOOL_FAILURES);
  // Both at once: retries exceeded and tool failures at the limit.
  Harness g([](rein::v1::RunSpec& s) {
    s.mutable_limits()->set_retry_budget(-1);
    s.mutable_limits()->set_max_consecutive_tool_failures(1);
  });
  g.Tools();
  g.Plan(PlanReply({"a"}));
  g.run.mutable_state()->set_consecutive_tool_failures(1);
  g.Decide(absl::UnavailableError("down"));
  EXPECT_EQ(g.reason(), rein::v1::RETRY_BUDGET_EXHAUSTED);
}

TEST(StageRouterTest, ToolFailuresWinOverTokenBudget) {
  Harness h([](rein::v1::RunSpec& s) {
    s.mutable_limits()->set_max_consecutive_tool_failures(1);
    s.mutable_limits()->set_token_budget(16);
  });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  auto call = CallReply("list_files", "{}");
  h.Decide(call);
  h.run.mutable_state()->set_tokens_used(100);
  h.Execute(ExecReply(false, ""));
  EXPECT_EQ(h.reason(), rein::v1::CONSECUTIVE_TOOL_FAILURES);
}

TEST(StageRouterTest, TokenBudgetWinsOverStagnation) {
  Harness h([](rein::v1::RunSpec& s) {
    s.mutable_limits()->set_token_budget(1000);
    s.mutable_limits()->set_on_stagnation(rein::v1::FAIL);
  });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  for (int i = 0; i < 3; ++i) h.Cycle("list_files", "{}", true, "same", Eval::NEEDS_MORE_WORK);
  h.Decide(CallReply("list_files", "{}"));
  h.Execute(ExecReply(true, "same"));
  h.run.mutable_state()->set_tokens_used(5000);
  h.Evaluate(EvalReply(Eval::NEEDS_MORE_WORK));
  EXPECT_EQ(h.reason(), rein::v1::TOKEN_BUDGET_EXHAUSTED);
}

// --- Stagnation ----------------------------------------------------------------------------

void RepeatCall(Harness& h, int n) {
  for (int i = 0; i < n && h.stage() == rein::v1::DECIDING; ++i) {
    h.Cycle("list_files", R"({"path":"."})", true, "same", Eval::NEEDS_MORE_WORK);
  }
}

void RepeatFailure(Harness& h, int n) {
  for (int i = 0; i < n && h.stage() == rein::v1::DECIDING; ++i) {
    h.Cycle("read_file", R"({"path":"x"})", false, "", Eval::NEEDS_MORE_WORK);
  }
}

void Alternate(Harness& h, int n) {
  for (int i = 0; i < n && h.stage() == rein::v1::DECIDING; ++i) {
    h.Cycle("list_files", i % 2 ? R"({"path":"b"})" : R"({"path":"a"})", true,
            absl::StrCat("obs", i), Eval::NEEDS_MORE_WORK);
  }
}

struct StagnationCase {
  std::string name;
  std::function<void(Harness&, int)> pattern;
  int calls;
  std::string words;
};

class StagnationTest
    : public ::testing::TestWithParam<std::tuple<StagnationCase, rein::v1::OnStagnation>> {};

TEST_P(StagnationTest, PatternHandledByMode) {
  const auto& [pattern, mode] = GetParam();
  Harness h([mode = mode](rein::v1::RunSpec& s) {
    s.mutable_limits()->set_on_stagnation(mode);
    s.mutable_limits()->set_max_consecutive_tool_failures(100);
  });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  pattern.pattern(h, pattern.calls);
  if (mode == rein::v1::FAIL) {
    EXPECT_EQ(h.stage(), rein::v1::FAILED);
    EXPECT_EQ(h.reason(), rein::v1::STAGNATION);
    EXPECT_NE(h.state().outcome().message().find(pattern.words), std::string::npos)
        << h.state().outcome().message();
    EXPECT_EQ(h.CountFinished(), 1);
    return;
  }
  if (mode == rein::v1::PAUSE) {
    ASSERT_EQ(h.stage(), rein::v1::PAUSED);
    EXPECT_EQ(h.state().pause().reason(), rein::v1::STAGNATED);
    EXPECT_NE(h.state().pause().detail().find(pattern.words), std::string::npos);
    // Approving continues, and the old actions no longer count.
    ASSERT_TRUE(h.Review(Approve()).ok());
    EXPECT_EQ(h.stage(), rein::v1::DECIDING);
    h.Cycle("list_files", R"({"path":"new"})", true, "new", Eval::NEEDS_MORE_WORK);
    EXPECT_EQ(h.stage(), rein::v1::DECIDING);
    return;
  }
  // REPLAN_THEN_PAUSE: first time back to PLANNING with the pattern named.
  ASSERT_EQ(h.stage(), rein::v1::PLANNING);
  Effect plan = h.router.NextEffect(h.run, h.now);
  EXPECT_NE(plan.plan.replan_reason().find(pattern.words), std::string::npos);
  EXPECT_EQ(h.state().completed_subtasks(0).status(), SubTask::FAILED);
  h.Plan(PlanReply({"b"}));
  EXPECT_TRUE(h.state().replan_reason().empty());
  pattern.pattern(h, pattern.calls);
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  EXPECT_EQ(h.state().pause().reason(), rein::v1::STAGNATED);
}

INSTANTIATE_TEST_SUITE_P(
    AllPatternsAllModes, StagnationTest,
    ::testing::Combine(
        ::testing::Values(StagnationCase{"RepeatedCall", RepeatCall, 4, "repeated call"},
                          StagnationCase{"RepeatedFailure", RepeatFailure, 3, "repeated failure"},
                          StagnationCase{"Alternation", Alternate, 6, "alternation"}),
        ::testing::Values(rein::v1::REPLAN_THEN_PAUSE, rein::v1::PAUSE, rein::v1::FAIL)),
    [](const auto& info) {
      return std::get<0>(info.param).name + rein::v1::OnStagnation_Name(std::get<1>(info.param));
    });

TEST(StageRouterTest, ThreeRepeatedCallsWithDifferentObservationsAreNotStagnation) {
  Harness h([](rein::v1::RunSpec& s) { s.mutable_limits()->set_on_stagnation(rein::v1::FAIL); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  for (int i = 0; i < 5; ++i) {
    h.Cycle("list_files", "{}", true, absl::StrCat("changing ", i), Eval::NEEDS_MORE_WORK);
  }
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
}

// --- Pause points and reasons --------------------------------------------------------------

TEST(StageRouterTest, AfterPlanPausesThenApproveDecides) {
  Harness h([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::AFTER_PLAN); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  EXPECT_EQ(h.state().pause().reason(), rein::v1::PAUSE_POINT);
  EXPECT_EQ(h.state().pause().point(), rein::v1::AFTER_PLAN);
  EXPECT_TRUE(h.log.back().has_paused());
  EXPECT_EQ(h.router.NextEffect(h.run, h.now).kind, Effect::Kind::kNone);
  ASSERT_TRUE(h.Review(Approve()).ok());
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
  EXPECT_EQ(h.state().iteration(), 2);
}

TEST(StageRouterTest, BeforeToolPausesEveryCall) {
  Harness h([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::BEFORE_TOOL); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("list_files", "{}"));
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  EXPECT_EQ(h.state().pause().point(), rein::v1::BEFORE_TOOL);
  EXPECT_EQ(h.state().pause().pending_call().tool(), "list_files");
  ASSERT_TRUE(h.Review(Approve()).ok());
  EXPECT_EQ(h.stage(), rein::v1::EXECUTING);
  EXPECT_EQ(h.router.NextEffect(h.run, h.now).execute.call_id(), "r1-1");
}

TEST(StageRouterTest, BeforeMutatingToolPausesOnlyMutatingCalls) {
  Harness h([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::BEFORE_MUTATING_TOOL); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("list_files", "{}"));
  EXPECT_EQ(h.stage(), rein::v1::EXECUTING);
  h.Execute(ExecReply(true));
  h.Evaluate(EvalReply(Eval::NEEDS_MORE_WORK));
  h.Decide(CallReply("write_file", R"({"path":"a","content":"b"})"));
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  EXPECT_EQ(h.state().pause().point(), rein::v1::BEFORE_MUTATING_TOOL);
  EXPECT_TRUE(h.state().pause().pending_call().mutating());
}

TEST(StageRouterTest, AfterEvaluatePausesThenContinues) {
  Harness h([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::AFTER_EVALUATE); });
  h.Tools();
  h.Plan(PlanReply({"a", "b"}));
  h.Cycle("list_files", "{}", true, "x", Eval::COMPLETED);
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  EXPECT_EQ(h.state().pause().point(), rein::v1::AFTER_EVALUATE);
  EXPECT_EQ(h.state().pause().resume_stage(), rein::v1::DECIDING);
  ASSERT_TRUE(h.Review(Approve()).ok());
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
}

TEST(StageRouterTest, NeedHumanThenAnswer) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  rein::v1::DecideResponse ask;
  ask.set_human_query("which branch?");
  h.Decide(ask);
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  EXPECT_EQ(h.state().pause().reason(), rein::v1::NEED_HUMAN);
  EXPECT_EQ(h.state().pause().question(), "which branch?");
  EXPECT_EQ(h.Review(Approve()).code(), absl::StatusCode::kFailedPrecondition);
  rein::v1::Review empty_answer;
  empty_answer.mutable_answer();
  EXPECT_EQ(h.Review(empty_answer).code(), absl::StatusCode::kInvalidArgument);
  rein::v1::Review answer;
  answer.mutable_answer()->set_text("main");
  ASSERT_TRUE(h.Review(answer).ok());
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
  Effect decide = h.router.NextEffect(h.run, h.now);
  ASSERT_EQ(decide.decide.human_inputs_size(), 1);
  EXPECT_EQ(decide.decide.human_inputs(0).text(), "main");
  EXPECT_EQ(decide.decide.human_inputs(0).question(), "which branch?");
}

TEST(StageRouterTest, RefusalPausesNeedHuman) {
  Harness h;
  h.Tools();
  rein::v1::PlanResponse refused;
  refused.set_refusal("I cannot help with that");
  h.Plan(refused);
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  EXPECT_EQ(h.state().pause().reason(), rein::v1::NEED_HUMAN);
  EXPECT_EQ(h.state().pause().resume_stage(), rein::v1::PLANNING);
}

TEST(StageRouterTest, NotesPauseWhenOnAndNotWhenOff) {
  Harness h;
  h.Tools();
  auto plan = PlanReply({"a"});
  plan.set_notes("the repo looks unusual");
  h.Plan(plan);
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  EXPECT_EQ(h.state().pause().reason(), rein::v1::NOTES);
  EXPECT_EQ(h.state().pause().detail(), "the repo looks unusual");
  EXPECT_EQ(h.state().notes(0), "the repo looks unusual");
  Harness off([](rein::v1::RunSpec& s) { s.set_pause_on_notes(false); });
  off.Tools();
  off.Plan(plan);
  EXPECT_EQ(off.stage(), rein::v1::DECIDING);
}

TEST(StageRouterTest, ToolResultRecordsThatNoWorkspaceSnapshotWasTaken) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("write_file", R"({"path":"a","content":"b"})"));
  rein::v1::ExecuteResponse reply = ExecReply(true, "written");
  reply.set_snapshot_skipped("--workspace_history_max_bytes (4096 bytes per run): too big");
  const size_t before = h.log.size();
  h.Execute(reply);
  ASSERT_GT(h.log.size(), before);
  ASSERT_TRUE(h.log[before].has_tool_result());
  EXPECT_EQ(h.log[before].tool_result().snapshot_skipped(),
            "--workspace_history_max_bytes (4096 bytes per run): too big");
}

TEST(StageRouterTest, RecoveryAsksDispatchedMutatingCallAgainWithSameCallId) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("write_file", R"({"path":"a","content":"b"})"));
  h.Apply(h.router.MarkDispatched(h.run, h.now));
  NextStep next = h.router.Next(h.run, h.now);
  ASSERT_EQ(next.kind, NextStep::Kind::kCall);
  EXPECT_EQ(next.effect.execute.call_id(), "r1-1");
  // The journal says it already ran: its recorded reply goes on like any reply.
  rein::v1::ExecuteResponse replayed = ExecReply(true, "written");
  replayed.set_replayed(true);
  replayed.set_executor_id("exec-a");
  const size_t before = h.log.size();
  h.Execute(replayed);
  EXPECT_EQ(h.stage(), rein::v1::EVALUATING);
  ASSERT_GE(h.log.size(), before + 2);
  EXPECT_EQ(h.log[before].call_replayed().call_id(), "r1-1");
  EXPECT_EQ(h.log[before].call_replayed().executor_id(), "exec-a");
  EXPECT_EQ(h.log[before + 1].tool_result().action().observation(), "written");
  EXPECT_EQ(h.state().retries_used(), 0);
}

TEST(StageRouterTest, OutcomeUnknownPausesForRecoveryAndApprovalIsANewCall) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("write_file", R"({"path":"a","content":"b"})"));
  h.Apply(h.router.MarkDispatched(h.run, h.now));
  rein::v1::ExecuteResponse unknown;
  unknown.set_ok(false);
  unknown.set_outcome_unknown(true);
  unknown.set_executor_id("exec-dead");
  unknown.mutable_error()->set_code("OUTCOME_UNKNOWN");
  unknown.mutable_error()->set_message("its heartbeat stopped 6s ago");
  h.Execute(unknown);
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  EXPECT_EQ(h.state().pause().reason(), rein::v1::RECOVERY);
  EXPECT_EQ(h.state().pause().pending_call().call_id(), "r1-1");
  EXPECT_NE(h.state().pause().detail().find("exec-dead died mid-call"), std::string::npos)
      << h.state().pause().detail();
  EXPECT_EQ(h.state().retries_used(), 0);
  EXPECT_EQ(h.state().consecutive_tool_failures(), 0);
  const size_t before = h.log.size();
  ASSERT_TRUE(h.Review(Approve()).ok());
  EXPECT_EQ(h.stage(), rein::v1::EXECUTING);
  EXPECT_FALSE(h.state().call_dispatched());
  // Run again as a new call: the journal would answer the old call_id "unknown" for ever.
  EXPECT_EQ(h.router.NextEffect(h.run, h.now).execute.call_id(), "r1-2");
  // The log ties the new call to the approved one, right after the review.
  ASSERT_GE(h.log.size(), before + 2);
  EXPECT_TRUE(h.log[before].has_resumed());
  EXPECT_EQ(h.log[before + 1].call_reissued().from_call_id(), "r1-1");
  EXPECT_EQ(h.log[before + 1].call_reissued().call_id(), "r1-2");
  // And the tool_result that follows names the call the log introduced.
  h.Apply(h.router.MarkDispatched(h.run, h.now));
  h.Execute(ExecReply(true, "written"));
  bool traced = false;
  for (size_t i = before; i < h.log.size(); ++i) {
    if (h.log[i].has_tool_result()) traced = h.log[i].tool_result().action().call_id() == "r1-2";
  }
  EXPECT_TRUE(traced);
}

TEST(StageRouterTest, CallInProgressIsAskedAgainWithoutSpendingBudget) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("write_file", R"({"path":"a","content":"b"})"));
  h.Apply(h.router.MarkDispatched(h.run, h.now));
  h.Execute(absl::AbortedError("in progress: call r1-1 is still running on executor exec-a"));
  EXPECT_EQ(h.stage(), rein::v1::EXECUTING);
  EXPECT_EQ(h.state().retries_used(), 0);
  EXPECT_FALSE(h.log.back().error().retry_spent());
  EXPECT_EQ(h.router.NextEffect(h.run, h.now).execute.call_id(), "r1-1");
}

TEST(StageRouterTest, ReadOnlyCallIsRepeatedOnRecovery) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("list_files", "{}"));
  EXPECT_EQ(h.router.NextEffect(h.run, h.now).execute.call_id(), "r1-1");
}

// --- Reviews -------------------------------------------------------------------------------

TEST(StageRouterTest, RejectWithFeedbackReplans) {
  Harness h([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::AFTER_PLAN); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  rein::v1::Review reject;
  reject.mutable_reject()->set_feedback("also scan config files");
  ASSERT_TRUE(h.Review(reject).ok());
  EXPECT_EQ(h.stage(), rein::v1::PLANNING);
  Effect plan = h.router.NextEffect(h.run, h.now);
  ASSERT_EQ(plan.plan.human_inputs_size(), 1);
  EXPECT_EQ(plan.plan.human_inputs(0).text(), "also scan config files");
  EXPECT_NE(plan.plan.replan_reason().find("also scan config files"), std::string::npos);
  EXPECT_EQ(h.state().subtasks_size(), 0);
  EXPECT_EQ(h.state().completed_subtasks(0).status(), SubTask::FAILED);
}

TEST(StageRouterTest, RejectWithAbortFails) {
  Harness h([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::AFTER_PLAN); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  rein::v1::Review reject;
  reject.mutable_reject()->set_abort(true);
  reject.mutable_reject()->set_feedback("wrong goal");
  ASSERT_TRUE(h.Review(reject).ok());
  EXPECT_EQ(h.stage(), rein::v1::FAILED);
  EXPECT_EQ(h.reason(), rein::v1::REJECTED_BY_REVIEWER);
  EXPECT_EQ(h.CountFinished(), 1);
}

TEST(StageRouterTest, EditPlanReplacesStack) {
  Harness h([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::AFTER_PLAN); });
  h.Tools();
  h.Plan(PlanReply({"a", "b"}));
  rein::v1::Review edit;
  SubTask* task = edit.mutable_edit_plan()->add_subtasks();
  task->set_id("c");
  task->set_description("only this");
  task->add_allowed_tools("read_file");
  ASSERT_TRUE(h.Review(edit).ok());
  EXPECT_EQ(h.stage(), rein::v1::DECIDING);
  ASSERT_EQ(h.state().subtasks_size(), 1);
  EXPECT_EQ(h.state().subtasks(0).id(), "c");
  EXPECT_EQ(h.state().subtasks(0).status(), SubTask::PENDING);
}

TEST(StageRouterTest, EditPlanRejectsBadSubtasks) {
  Harness h([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::AFTER_PLAN); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  rein::v1::Review edit;
  edit.mutable_edit_plan();
  EXPECT_EQ(h.Review(edit).code(), absl::StatusCode::kInvalidArgument);
  SubTask* task = edit.mutable_edit_plan()->add_subtasks();
  task->set_id("c");
  task->set_description("x");
  task->add_allowed_tools("rm_rf");
  absl::Status status = h.Review(edit);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("review.edit_plan.subtasks[0].allowed_tools[0]"),
            std::string::npos);
  EXPECT_EQ(h.stage(), rein::v1::PAUSED);
}

TEST(StageRouterTest, EditToolCallRunsEditedCall) {
  Harness h([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::BEFORE_TOOL); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("read_file", R"({"path":"secret"})"));
  rein::v1::Review edit;
  edit.mutable_edit_tool_call()->set_tool("read_file");
  edit.mutable_edit_tool_call()->set_args_json(R"({"path":"public"})");
  ASSERT_TRUE(h.Review(edit).ok());
  EXPECT_EQ(h.stage(), rein::v1::EXECUTING);
  Effect exec = h.router.NextEffect(h.run, h.now);
  EXPECT_EQ(exec.execute.args_json(), R"({"path":"public"})");
  EXPECT_EQ(exec.execute.call_id(), "r1-2");
}

TEST(StageRouterTest, EditToolCallWithoutPendingCallIsRefused) {
  Harness h([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::AFTER_PLAN); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  rein::v1::Review edit;
  edit.mutable_edit_tool_call()->set_tool("read_file");
  edit.mutable_edit_tool_call()->set_args_json("{}");
  EXPECT_EQ(h.Review(edit).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(StageRouterTest, StaleVersionIsFailedPrecondition) {
  Harness h([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::AFTER_PLAN); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  auto t = h.router.OnReview(h.run, Approve(), h.state().version() - 1, h.now);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(t.status().message().find("stale version"), std::string::npos);
}

TEST(StageRouterTest, ReviewOfRunningRunIsFailedPrecondition) {
  Harness h;
  h.Tools();
  auto t = h.router.OnReview(h.run, Approve(), h.state().version(), h.now);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  rein::v1::Review none;
  Harness p([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::AFTER_PLAN); });
  p.Tools();
  p.Plan(PlanReply({"a"}));
  EXPECT_EQ(p.Review(none).code(), absl::StatusCode::kInvalidArgument);
}

TEST(StageRouterTest, CancelPausedRunEndsAtOnce) {
  Harness h([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::AFTER_PLAN); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  auto t = h.router.OnCancel(h.run, /*call_in_flight=*/false, "not needed", h.now);
  ASSERT_TRUE(t.has_value());
  h.Apply(*t);
  EXPECT_EQ(h.stage(), rein::v1::CANCELLED);
  EXPECT_EQ(h.reason(), rein::v1::CANCELLED_BY_USER);
  EXPECT_FALSE(h.router.OnCancel(h.run, false, "", h.now).has_value());
  EXPECT_EQ(h.CountFinished(), 1);
}

// --- Context restraint and specs -----------------------------------------------------------

TEST(StageRouterTest, DecideSeesOnlyLastThreeActions) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  for (int i = 0; i < 8; ++i) {
    h.Cycle("list_files", absl::StrCat(R"({"path":")", i, R"("})"), true, absl::StrCat(i),
            Eval::NEEDS_MORE_WORK);
  }
  Effect decide = h.router.NextEffect(h.run, h.now);
  ASSERT_EQ(decide.decide.recent_actions_size(), 3);
  EXPECT_EQ(decide.decide.recent_actions(2).observation(), "7");
}

TEST(StageRouterTest, EveryEndedRunHasExactlyOneTerminalEvent) {
  // Drive many small runs to each end and count finished events.
  std::vector<std::function<void(Harness&)>> endings = {
      [](Harness& h) { h.Plan(PlanReply({}, true)); },
      [](Harness& h) { h.Plan(absl::PermissionDeniedError("no")); },
      [](Harness& h) { h.Apply(*h.router.OnCancel(h.run, false, "", h.now)); },
      [](Harness& h) {
        for (int i = 0; i < 10 && h.stage() != rein::v1::FAILED; ++i)
          h.Plan(absl::UnavailableError("x"));
      },
  };
  for (auto& end : endings) {
    Harness h;
    h.Tools();
    end(h);
    EXPECT_TRUE(StageRouter::IsTerminal(h.stage()));
    EXPECT_EQ(h.CountFinished(), 1);
    EXPECT_TRUE(h.log.back().has_finished());
    EXPECT_NE(h.log.back().finished().outcome().reason(), rein::v1::TERMINATION_REASON_UNSPECIFIED);
  }
}

TEST(StageRouterTest, MissingWorkspaceFailsAtInitializing) {
  Harness h;
  rein::v1::ExecuteResponse missing;
  missing.set_ok(false);
  missing.mutable_error()->set_code("NOT_FOUND");
  missing.mutable_error()->set_reason(reason::kWorkspaceNotFound);
  missing.mutable_error()->set_message(
      "workspace \"default\" does not exist or is not a directory");
  h.Apply(h.router.OnTools(h.run, ToolsReply(), missing, h.now));
  EXPECT_EQ(h.stage(), rein::v1::FAILED);
  // Not INTERNAL: the workspace went away after StartRun checked it, and the message says so.
  EXPECT_EQ(h.reason(), rein::v1::CONSECUTIVE_TOOL_FAILURES);
  EXPECT_NE(h.state().outcome().message().find("workspace \"default\" no longer exists"),
            std::string::npos)
      << h.state().outcome().message();
  Harness ok;
  rein::v1::ExecuteResponse present;
  present.set_ok(true);
  ok.Apply(ok.router.OnTools(ok.run, ToolsReply(), present, ok.now));
  EXPECT_EQ(ok.stage(), rein::v1::PLANNING);
  Harness down;
  down.Apply(down.router.OnTools(
      down.run, ToolsReply(),
      absl::StatusOr<rein::v1::ExecuteResponse>(absl::UnavailableError("executor down")),
      down.now));
  EXPECT_EQ(down.stage(), rein::v1::INITIALIZING);
  EXPECT_EQ(down.state().retries_used(), 1);
}

// --- Rule order on every path (review findings) --------------------------------------------

TEST(StageRouterTest, ToolFailingBecauseTheWorkspaceIsGoneEndsTheRun) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("list_files"));
  rein::v1::ExecuteResponse gone;
  gone.set_ok(false);
  gone.mutable_error()->set_code("NOT_FOUND");
  gone.mutable_error()->set_reason(reason::kWorkspaceNotFound);
  gone.mutable_error()->set_message("workspace \"default\" does not exist or is not a directory");
  h.Execute(gone);
  EXPECT_EQ(h.stage(), rein::v1::FAILED);
  EXPECT_EQ(h.reason(), rein::v1::CONSECUTIVE_TOOL_FAILURES);
  EXPECT_NE(h.state().outcome().message().find("workspace \"default\" no longer exists"),
            std::string::npos)
      << h.state().outcome().message();
  EXPECT_EQ(h.CountFinished(), 1);
  // Any other failed call is an observation as before.
  Harness other;
  other.Tools();
  other.Plan(PlanReply({"a"}));
  other.Decide(CallReply("list_files"));
  rein::v1::ExecuteResponse missing_path = gone;
  missing_path.mutable_error()->set_message("path \"x\" does not exist");
  missing_path.mutable_error()->clear_reason();
  other.Execute(missing_path);
  EXPECT_EQ(other.stage(), rein::v1::EVALUATING);
}

TEST(StageRouterTest, CancelWinsOverFatalPlannerError) {
  Harness h;
  h.Tools();
  h.Apply(*h.router.OnCancel(h.run, /*call_in_flight=*/true, "", h.now));
  h.Plan(absl::InvalidArgumentError("bad request"));
  EXPECT_EQ(h.reason(), rein::v1::CANCELLED_BY_USER);
  EXPECT_EQ(h.state().retries_used(), 0);
}

TEST(StageRouterTest, DeadlineWinsOverFatalPlannerError) {
  Harness h([](rein::v1::RunSpec& s) { s.mutable_limits()->mutable_deadline()->set_seconds(5); });
  h.Tools();
  h.now += absl::Seconds(6);
  h.Plan(absl::PermissionDeniedError("no"));
  EXPECT_EQ(h.reason(), rein::v1::DEADLINE_EXCEEDED);
}

TEST(StageRouterTest, CallCutByCancelSpendsNoRetry) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Apply(*h.router.OnCancel(h.run, /*call_in_flight=*/true, "", h.now));
  h.Decide(absl::CancelledError("cancelled"));
  EXPECT_EQ(h.reason(), rein::v1::CANCELLED_BY_USER);
  EXPECT_EQ(h.state().retries_used(), 0);
  bool saw_error = false;
  for (const auto& e : h.log) {
    if (e.has_error()) {
      saw_error = true;
      EXPECT_FALSE(e.error().retry_spent());
    }
  }
  EXPECT_TRUE(saw_error);
}

TEST(StageRouterTest, CallCutByDeadlineSpendsNoRetry) {
  Harness h([](rein::v1::RunSpec& s) { s.mutable_limits()->mutable_deadline()->set_seconds(5); });
  h.Tools();
  h.now += absl::Seconds(5);
  h.Plan(absl::DeadlineExceededError("deadline"));
  EXPECT_EQ(h.reason(), rein::v1::DEADLINE_EXCEEDED);
  EXPECT_EQ(h.state().retries_used(), 0);
}

TEST(StageRouterTest, MutatingCallWithoutReplyIsAskedAgainWithSameCallId) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("write_file", R"({"path":"a","content":"b"})"));
  h.Apply(h.router.MarkDispatched(h.run, h.now));
  h.Execute(absl::DeadlineExceededError("no reply in time"));
  EXPECT_EQ(h.stage(), rein::v1::EXECUTING);
  EXPECT_EQ(h.state().retries_used(), 1);
  EXPECT_TRUE(h.state().call_dispatched());
  EXPECT_EQ(h.router.NextEffect(h.run, h.now).execute.call_id(), "r1-1");
}

TEST(StageRouterTest, MutatingCallRefusedAsBusyIsRetried) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("write_file", R"({"path":"a","content":"b"})"));
  h.Apply(h.router.MarkDispatched(h.run, h.now));
  h.Execute(absl::ResourceExhaustedError("executor full"));
  EXPECT_EQ(h.stage(), rein::v1::EXECUTING);
  EXPECT_EQ(h.state().retries_used(), 0);  // backpressure is not the run's failure
  EXPECT_FALSE(h.log.back().error().retry_spent());
  EXPECT_EQ(h.router.NextEffect(h.run, h.now).execute.call_id(), "r1-1");
}

TEST(StageRouterTest, StagnationWinsOverFinish) {
  Harness h([](rein::v1::RunSpec& s) { s.mutable_limits()->set_on_stagnation(rein::v1::FAIL); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  for (int i = 0; i < 3; ++i) h.Cycle("list_files", "{}", true, "same", Eval::NEEDS_MORE_WORK);
  h.Cycle("list_files", "{}", true, "same", Eval::COMPLETED, /*goal=*/true);
  EXPECT_EQ(h.reason(), rein::v1::STAGNATION);
}

TEST(StageRouterTest, NotesOnTheLastEvaluationPauseBeforeFinishing) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("list_files", "{}"));
  h.Execute(ExecReply(true));
  auto last = EvalReply(Eval::COMPLETED, /*goal_achieved=*/true);
  last.set_notes("one key may be real");
  h.Evaluate(last);
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  EXPECT_EQ(h.state().pause().reason(), rein::v1::NOTES);
  EXPECT_EQ(h.state().pause().resume_stage(), rein::v1::FINISHED);
  ASSERT_TRUE(h.Review(Approve()).ok());
  EXPECT_EQ(h.reason(), rein::v1::GOAL_ACHIEVED);
  EXPECT_EQ(h.CountFinished(), 1);
}

TEST(StageRouterTest, OversizedPlansAreInvalidOutput) {
  Harness h;
  h.Tools();
  std::vector<std::string> ids;
  for (int i = 0; i < 65; ++i) ids.push_back(absl::StrCat("t", i));
  h.Plan(PlanReply(ids));
  EXPECT_EQ(h.state().retries_used(), 1);
  EXPECT_NE(h.log.back().error().message().find("at most 64"), std::string::npos);
  auto long_description = PlanReply({"a"});
  long_description.mutable_subtasks(0)->set_description(std::string(5000, 'd'));
  h.Plan(long_description);
  EXPECT_EQ(h.state().retries_used(), 2);
  EXPECT_EQ(h.stage(), rein::v1::PLANNING);
}

TEST(StageRouterTest, TickEndsRecoveredRunWhoseCancelWasRequested) {
  Harness h;
  h.Tools();
  h.Apply(*h.router.OnCancel(h.run, /*call_in_flight=*/true, "", h.now));
  auto t = h.router.OnTick(h.run, h.now);
  ASSERT_TRUE(t.has_value());
  h.Apply(*t);
  EXPECT_EQ(h.reason(), rein::v1::CANCELLED_BY_USER);
}

TEST(StageRouterTest, SnapshotsAtIterationBoundaries) {
  Harness h;
  Transition t = h.router.OnTools(h.run, ToolsReply(), std::nullopt, h.now);
  ASSERT_TRUE(t.snapshot.has_value());
  EXPECT_EQ(t.snapshot->iteration, 1);
  rein::v1::RunState state;
  ASSERT_TRUE(state.ParseFromString(t.snapshot->state));
  EXPECT_EQ(state.stage(), rein::v1::PLANNING);
  EXPECT_EQ(state.version(), t.state.version());
}

// --- Next: the one question the driver asks ---------------------------------------------------

TEST(StageRouterNextTest, TerminalRunIsEnded) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({}, true));
  ASSERT_EQ(h.stage(), rein::v1::FINISHED);
  EXPECT_EQ(h.router.Next(h.run, h.now).kind, NextStep::Kind::kEnded);
}

TEST(StageRouterNextTest, CancelRequestedWithNoCallIsCommittedAsTheEnd) {
  Harness h;
  h.Tools();
  h.run.mutable_state()->set_cancel_requested(true);  // e.g. recovered after a restart
  NextStep next = h.router.Next(h.run, h.now);
  ASSERT_EQ(next.kind, NextStep::Kind::kCommit);
  ASSERT_TRUE(next.transition.has_value());
  EXPECT_EQ(next.transition->state.stage(), rein::v1::CANCELLED);
  EXPECT_EQ(next.transition->state.outcome().reason(), rein::v1::CANCELLED_BY_USER);
}

TEST(StageRouterNextTest, PassedDeadlineIsCommittedAsTheEndEvenWhileBackingOff) {
  Harness h;
  h.Tools();
  const absl::Time later = h.now + absl::Minutes(10);
  NextStep next = h.router.Next(h.run, later, /*not_before=*/later + absl::Seconds(5));
  ASSERT_EQ(next.kind, NextStep::Kind::kCommit);
  EXPECT_EQ(next.transition->state.stage(), rein::v1::FAILED);
  EXPECT_EQ(next.transition->state.outcome().reason(), rein::v1::DEADLINE_EXCEEDED);
}

TEST(StageRouterNextTest, PausedRunWaitsForItsDeadline) {
  Harness h([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::AFTER_PLAN); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  NextStep next = h.router.Next(h.run, h.now);
  EXPECT_EQ(next.kind, NextStep::Kind::kWaitUntil);
  EXPECT_EQ(next.until, kStart + absl::Minutes(10));
  h.run.mutable_state()->clear_deadline();
  EXPECT_EQ(h.router.Next(h.run, h.now).kind, NextStep::Kind::kIdle);
}

TEST(StageRouterNextTest, BackoffWaitsUntilItEndsOrTheDeadlineIfSooner) {
  Harness h;
  h.Tools();
  NextStep next = h.router.Next(h.run, h.now, /*not_before=*/h.now + absl::Seconds(2));
  EXPECT_EQ(next.kind, NextStep::Kind::kWaitUntil);
  EXPECT_EQ(next.until, h.now + absl::Seconds(2));
  next = h.router.Next(h.run, h.now, /*not_before=*/h.now + absl::Hours(1));
  EXPECT_EQ(next.kind, NextStep::Kind::kWaitUntil);
  EXPECT_EQ(next.until, kStart + absl::Minutes(10));
  // Once the backoff is over, the call is made.
  EXPECT_EQ(h.router.Next(h.run, h.now + absl::Seconds(2), h.now + absl::Seconds(2)).kind,
            NextStep::Kind::kCall);
}

TEST(StageRouterNextTest, WorkingStageWithNothingToCallFailsInternal) {
  Harness h;
  h.Tools();
  h.run.mutable_state()->set_stage(rein::v1::DECIDING);  // DECIDING needs a subtask: none
  NextStep next = h.router.Next(h.run, h.now);
  ASSERT_EQ(next.kind, NextStep::Kind::kCommit);
  EXPECT_EQ(next.transition->state.stage(), rein::v1::FAILED);
  EXPECT_EQ(next.transition->state.outcome().reason(), rein::v1::INTERNAL);
}

TEST(StageRouterNextTest, MutatingCallIsMarkedDispatchedBeforeItIsMade) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("write_file", R"({"path":"x","content":"y"})"));
  ASSERT_EQ(h.stage(), rein::v1::EXECUTING);
  NextStep next = h.router.Next(h.run, h.now);
  ASSERT_EQ(next.kind, NextStep::Kind::kCommit);
  EXPECT_TRUE(next.transition->state.call_dispatched());
  EXPECT_TRUE(next.transition->events.empty());
  h.Apply(*next.transition);
  next = h.router.Next(h.run, h.now);
  ASSERT_EQ(next.kind, NextStep::Kind::kCall);
  EXPECT_EQ(next.effect.kind, Effect::Kind::kExecute);
  EXPECT_EQ(next.effect.execute.tool(), "write_file");
}

TEST(StageRouterNextTest, ReadOnlyCallIsMadeAtOnceWithTheStageDeadline) {
  Harness h;
  h.Tools();
  NextStep next = h.router.Next(h.run, h.now);
  ASSERT_EQ(next.kind, NextStep::Kind::kCall);
  EXPECT_EQ(next.effect.kind, Effect::Kind::kPlan);
  EXPECT_EQ(next.effect.deadline, h.now + absl::Seconds(120));  // stage_timeout < run deadline
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("list_files"));
  next = h.router.Next(h.run, kStart + absl::Minutes(9));
  ASSERT_EQ(next.kind, NextStep::Kind::kCall);
  EXPECT_EQ(next.effect.kind, Effect::Kind::kExecute);
  EXPECT_EQ(next.effect.deadline, kStart + absl::Minutes(10));  // the run's deadline is sooner
}

// --- One Evaluate reply carrying the next call (RunSpec.combine_evaluate_decide) ---

rein::v1::EvaluateResponse EvalWithNext(Eval::Status status, const std::string& tool,
                                        const std::string& args = "{}", bool goal = false) {
  rein::v1::EvaluateResponse reply = EvalReply(status, goal);
  reply.set_backend("scripted");
  reply.mutable_usage()->set_input_tokens(100);
  reply.mutable_usage()->set_output_tokens(20);
  reply.mutable_next_call()->set_tool(tool);
  reply.mutable_next_call()->set_args_json(args);
  return reply;
}

// Runs Next until it asks for a call (committing what it commits); returns that step.
NextStep CommitUntilCall(Harness& h) {
  NextStep next = h.router.Next(h.run, h.now);
  while (next.kind == NextStep::Kind::kCommit) {
    h.Apply(*next.transition);
    next = h.router.Next(h.run, h.now);
  }
  return next;
}

// Plans "a", decides list_files, runs it: the run is EVALUATING.
void ToFirstEvaluation(Harness& h) {
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("list_files", "{}"));
  h.Execute(ExecReply(true, "a.txt"));
  ASSERT_EQ(h.stage(), rein::v1::EVALUATING);
}

const Eval* LastEvaluation(const Harness& h) {
  for (auto it = h.log.rbegin(); it != h.log.rend(); ++it) {
    if (it->has_evaluation()) return &it->evaluation();
  }
  return nullptr;
}

TEST(StageRouterCombinedTest, EvaluateAsksForANextCallUnlessTheRunOptsOut) {
  Harness on;
  ToFirstEvaluation(on);
  Effect effect = on.router.NextEffect(on.run, on.now);
  ASSERT_EQ(effect.kind, Effect::Kind::kEvaluate);
  EXPECT_TRUE(effect.evaluate.propose_next());
  Harness off([](rein::v1::RunSpec& s) { s.set_combine_evaluate_decide(false); });
  ToFirstEvaluation(off);
  EXPECT_FALSE(off.router.NextEffect(off.run, off.now).evaluate.propose_next());
}

TEST(StageRouterCombinedTest, ProposedCallIsAppliedAsTwoTransitionsWithoutADecideRequest) {
  Harness h;
  ToFirstEvaluation(h);
  const int iteration = h.state().iteration();
  const int64_t tokens = h.state().tokens_used();
  h.Evaluate(EvalWithNext(Eval::NEEDS_MORE_WORK, "read_file", R"({"path":"a.txt"})"));
  // First transition: the evaluation, into DECIDING, a new iteration, the call kept.
  ASSERT_EQ(h.stage(), rein::v1::DECIDING);
  EXPECT_EQ(h.state().iteration(), iteration + 1);
  EXPECT_EQ(h.state().pending_call().tool(), "read_file");
  const Eval* eval = LastEvaluation(h);
  ASSERT_NE(eval, nullptr);
  EXPECT_EQ(eval->next_call().tool(), "read_file");
  EXPECT_EQ(eval->next_call_dropped(), "");
  EXPECT_EQ(eval->usage().input_tokens(), 100);
  // Second transition: committed by Next as the decision, then the tool call is made.
  NextStep next = h.router.Next(h.run, h.now);
  ASSERT_EQ(next.kind, NextStep::Kind::kCommit);
  EXPECT_EQ(next.transition->state.version(), h.state().version() + 1);
  h.Apply(*next.transition);
  ASSERT_EQ(h.stage(), rein::v1::EXECUTING);
  const RunEvent& decision = h.log[h.log.size() - 2];
  ASSERT_TRUE(decision.has_decision());
  EXPECT_TRUE(decision.decision().from_evaluation());
  EXPECT_EQ(decision.decision().tool_call().tool(), "read_file");
  EXPECT_EQ(decision.decision().tool_call().call_id(), "r1-2");
  EXPECT_EQ(decision.decision().usage().input_tokens(), 0);
  EXPECT_EQ(decision.decision().subtask_id(), "a");
  // The reply's usage counted once; the iteration is the one the evaluation began.
  EXPECT_EQ(h.state().tokens_used(), tokens + 120);
  EXPECT_EQ(h.state().iteration(), iteration + 1);
  next = h.router.Next(h.run, h.now);
  ASSERT_EQ(next.kind, NextStep::Kind::kCall);
  EXPECT_EQ(next.effect.kind, Effect::Kind::kExecute);
  EXPECT_EQ(next.effect.execute.tool(), "read_file");
  EXPECT_EQ(next.effect.execute.args_json(), R"({"path":"a.txt"})");
  EXPECT_EQ(next.effect.execute.call_id(), "r1-2");
}

TEST(StageRouterCombinedTest, SuccessClaimsAndFailuresNeverCarryANextCall) {
  for (auto [status, goal] : {std::pair{Eval::COMPLETED, false}, std::pair{Eval::FAILED, false},
                              std::pair{Eval::NEEDS_MORE_WORK, true}}) {
    Harness h;
    h.Tools();
    h.Plan(PlanReply({"a", "b"}));
    h.Decide(CallReply("list_files", "{}"));
    h.Execute(ExecReply(true));
    h.Evaluate(EvalWithNext(status, "read_file", "{}", goal));
    EXPECT_FALSE(h.state().has_pending_call()) << Eval::Status_Name(status);
    EXPECT_NE(LastEvaluation(h)->next_call_dropped(), "");
    if (h.stage() == rein::v1::DECIDING) {
      NextStep next = CommitUntilCall(h);
      EXPECT_EQ(next.effect.kind, Effect::Kind::kDecide);
    }
  }
}

TEST(StageRouterCombinedTest, InvalidProposalIsDroppedAndDecideIsAsked) {
  for (auto [tool, args] : {std::pair<std::string, std::string>{"delete_all", "{}"},
                            std::pair<std::string, std::string>{"read_file", "[1]"}}) {
    Harness h;
    h.Tools();
    rein::v1::PlanResponse plan = PlanReply({"a"});
    plan.mutable_subtasks(0)->add_allowed_tools("list_files");
    plan.mutable_subtasks(0)->add_allowed_tools("read_file");
    h.Plan(plan);
    h.Decide(CallReply("list_files", "{}"));
    h.Execute(ExecReply(true));
    const int retries = h.state().retries_used();
    h.Evaluate(EvalWithNext(Eval::NEEDS_MORE_WORK, tool, args));
    ASSERT_EQ(h.stage(), rein::v1::DECIDING);
    EXPECT_FALSE(h.state().has_pending_call());
    EXPECT_NE(LastEvaluation(h)->next_call_dropped(), "") << tool;
    EXPECT_EQ(h.state().retries_used(), retries);  // the evaluation stands
    EXPECT_EQ(CommitUntilCall(h).effect.kind, Effect::Kind::kDecide);
  }
  // A tool of the run that the subtask may not use.
  Harness h;
  h.Tools();
  rein::v1::PlanResponse plan = PlanReply({"a"});
  plan.mutable_subtasks(0)->add_allowed_tools("list_files");
  h.Plan(plan);
  h.Decide(CallReply("list_files", "{}"));
  h.Execute(ExecReply(true));
  h.Evaluate(EvalWithNext(Eval::NEEDS_MORE_WORK, "write_file", "{}"));
  EXPECT_FALSE(h.state().has_pending_call());
  EXPECT_NE(LastEvaluation(h)->next_call_dropped().find("not allowed"), std::string::npos);
}

TEST(StageRouterCombinedTest, PauseAfterEvaluateDropsTheProposal) {
  Harness h([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::AFTER_EVALUATE); });
  ToFirstEvaluation(h);
  h.Evaluate(EvalWithNext(Eval::NEEDS_MORE_WORK, "read_file"));
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  EXPECT_FALSE(h.state().has_pending_call());
  EXPECT_FALSE(h.state().pause().has_pending_call());
  EXPECT_NE(LastEvaluation(h)->next_call_dropped().find("PAUSED"), std::string::npos);
  ASSERT_TRUE(h.Review(Approve()).ok());
  EXPECT_EQ(CommitUntilCall(h).effect.kind, Effect::Kind::kDecide);
}

TEST(StageRouterCombinedTest, NotesPauseDropsTheProposal) {
  Harness h;
  ToFirstEvaluation(h);
  rein::v1::EvaluateResponse reply = EvalWithNext(Eval::NEEDS_MORE_WORK, "read_file");
  reply.set_notes("look at this");
  h.Evaluate(reply);
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  EXPECT_EQ(h.state().pause().reason(), rein::v1::NOTES);
  EXPECT_FALSE(h.state().has_pending_call());
}

TEST(StageRouterCombinedTest, PausePointBeforeToolStillPausesTheProposedCall) {
  for (auto point : {rein::v1::BEFORE_TOOL, rein::v1::BEFORE_MUTATING_TOOL}) {
    Harness h([point](rein::v1::RunSpec& s) { s.add_pause_points(point); });
    ToFirstEvaluation(h);
    h.Evaluate(EvalWithNext(Eval::NEEDS_MORE_WORK, "write_file", R"({"path":"a","content":"b"})"));
    ASSERT_EQ(h.stage(), rein::v1::DECIDING);
    CommitUntilCall(h);
    ASSERT_EQ(h.stage(), rein::v1::PAUSED);
    EXPECT_EQ(h.state().pause().point(), point);
    EXPECT_EQ(h.state().pause().pending_call().tool(), "write_file");
    EXPECT_TRUE(h.state().pause().pending_call().mutating());
  }
}

TEST(StageRouterCombinedTest, TerminationBeforeDecidingDropsTheProposal) {
  // max_iterations: the evaluation would begin iteration 3 of 2.
  Harness h([](rein::v1::RunSpec& s) { s.mutable_limits()->set_max_iterations(2); });
  ToFirstEvaluation(h);
  h.Evaluate(EvalWithNext(Eval::NEEDS_MORE_WORK, "read_file"));
  EXPECT_EQ(h.stage(), rein::v1::FAILED);
  EXPECT_EQ(h.reason(), rein::v1::MAX_ITERATIONS);
  EXPECT_FALSE(h.state().has_pending_call());
  EXPECT_EQ(h.CountFinished(), 1);
}

TEST(StageRouterCombinedTest, CancelBetweenTheTwoTransitionsEndsTheRun) {
  Harness h;
  ToFirstEvaluation(h);
  h.Evaluate(EvalWithNext(Eval::NEEDS_MORE_WORK, "read_file"));
  ASSERT_EQ(h.stage(), rein::v1::DECIDING);
  std::optional<Transition> cancel =
      h.router.OnCancel(h.run, /*call_in_flight=*/false, "stop", h.now);
  ASSERT_TRUE(cancel.has_value());
  h.Apply(*cancel);
  EXPECT_EQ(h.stage(), rein::v1::CANCELLED);
  EXPECT_FALSE(h.state().has_pending_call());
  EXPECT_EQ(h.router.Next(h.run, h.now).kind, NextStep::Kind::kEnded);
}

TEST(StageRouterCombinedTest, StagnationIsCheckedBeforeTheProposedCall) {
  Harness h([](rein::v1::RunSpec& s) { s.mutable_limits()->set_on_stagnation(rein::v1::FAIL); });
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("list_files", "{}"));
  for (int i = 0; i < 4; ++i) {
    h.Execute(ExecReply(true, "same"));
    h.Evaluate(EvalWithNext(Eval::NEEDS_MORE_WORK, "list_files", "{}"));
    if (h.stage() != rein::v1::DECIDING) break;
    CommitUntilCall(h);
  }
  EXPECT_EQ(h.stage(), rein::v1::FAILED);
  EXPECT_EQ(h.reason(), rein::v1::STAGNATION);
  EXPECT_EQ(h.state().actions_total(), 4);
}

TEST(StageRouterCombinedTest, OptedOutRunDropsAProposal) {
  Harness h([](rein::v1::RunSpec& s) { s.set_combine_evaluate_decide(false); });
  ToFirstEvaluation(h);
  h.Evaluate(EvalWithNext(Eval::NEEDS_MORE_WORK, "read_file"));
  ASSERT_EQ(h.stage(), rein::v1::DECIDING);
  EXPECT_FALSE(h.state().has_pending_call());
  EXPECT_EQ(CommitUntilCall(h).effect.kind, Effect::Kind::kDecide);
}

// --- One Plan reply carrying the first call (RunSpec.combine_plan_decide) ---

rein::v1::PlanResponse PlanWithFirst(std::vector<std::string> ids, const std::string& tool,
                                     const std::string& args = "{}") {
  rein::v1::PlanResponse reply = PlanReply(std::move(ids));
  reply.mutable_first_call()->set_tool(tool);
  reply.mutable_first_call()->set_args_json(args);
  return reply;
}

const RunEvent::Plan* LastPlan(const Harness& h) {
  for (auto it = h.log.rbegin(); it != h.log.rend(); ++it) {
    if (it->has_plan()) return &it->plan();
  }
  return nullptr;
}

TEST(StageRouterPlanDecideTest, PlanAsksForAFirstCallUnlessTheRunOptsOut) {
  Harness on;
  on.Tools();
  Effect effect = on.router.NextEffect(on.run, on.now);
  ASSERT_EQ(effect.kind, Effect::Kind::kPlan);
  EXPECT_TRUE(effect.plan.propose_first_call());
  Harness off([](rein::v1::RunSpec& s) { s.set_combine_plan_decide(false); });
  off.Tools();
  EXPECT_FALSE(off.router.NextEffect(off.run, off.now).plan.propose_first_call());
}

TEST(StageRouterPlanDecideTest, FirstCallIsAppliedAsTwoTransitionsWithoutADecideRequest) {
  Harness h;
  h.Tools();
  const int64_t tokens = h.state().tokens_used();
  h.Plan(PlanWithFirst({"a", "b"}, "read_file", R"({"path":"a.txt"})"));
  // First transition: the plan, into DECIDING, the call kept.
  ASSERT_EQ(h.stage(), rein::v1::DECIDING);
  const int iteration = h.state().iteration();
  EXPECT_EQ(h.state().pending_call().tool(), "read_file");
  ASSERT_NE(LastPlan(h), nullptr);
  EXPECT_EQ(LastPlan(h)->first_call().tool(), "read_file");
  EXPECT_EQ(LastPlan(h)->first_call_dropped(), "");
  // Second transition: committed by Next as the decision for the plan's top subtask.
  NextStep next = h.router.Next(h.run, h.now);
  ASSERT_EQ(next.kind, NextStep::Kind::kCommit);
  h.Apply(*next.transition);
  ASSERT_EQ(h.stage(), rein::v1::EXECUTING);
  const RunEvent& decision = h.log[h.log.size() - 2];
  ASSERT_TRUE(decision.has_decision());
  EXPECT_TRUE(decision.decision().from_plan());
  EXPECT_FALSE(decision.decision().from_evaluation());
  EXPECT_EQ(decision.decision().subtask_id(), "a");
  EXPECT_EQ(decision.decision().tool_call().call_id(), "r1-1");
  EXPECT_EQ(decision.decision().usage().input_tokens(), 0);
  EXPECT_EQ(h.state().subtasks(0).status(), SubTask::IN_PROGRESS);
  EXPECT_EQ(h.state().tokens_used(), tokens + 15);  // the plan's usage, counted once
  EXPECT_EQ(h.state().iteration(), iteration);
  next = h.router.Next(h.run, h.now);
  ASSERT_EQ(next.kind, NextStep::Kind::kCall);
  EXPECT_EQ(next.effect.kind, Effect::Kind::kExecute);
  EXPECT_EQ(next.effect.execute.args_json(), R"({"path":"a.txt"})");
  // The evaluation's proposal after it is still from_evaluation.
  h.Execute(ExecReply(true, "a.txt"));
  h.Evaluate(EvalWithNext(Eval::NEEDS_MORE_WORK, "read_file", R"({"path":"b.txt"})"));
  CommitUntilCall(h);
  ASSERT_EQ(h.stage(), rein::v1::EXECUTING);
  EXPECT_TRUE(h.log[h.log.size() - 2].decision().from_evaluation());
  EXPECT_FALSE(h.log[h.log.size() - 2].decision().from_plan());
}

TEST(StageRouterPlanDecideTest, InvalidFirstCallIsDroppedWithItsReasonAndDecideIsAsked) {
  struct Bad {
    std::string tool, args, why;
  };
  for (const Bad& bad : {Bad{"delete_all", "{}", "not allowed"}, Bad{"read_file", "[1]", "object"},
                         Bad{"read_file", "not json", "object"}, Bad{"", "{}", "missing"},
                         Bad{"write_file", "{}", "not allowed"}}) {
    Harness h;
    h.Tools();
    rein::v1::PlanResponse plan = PlanWithFirst({"a"}, bad.tool, bad.args);
    plan.mutable_subtasks(0)->add_allowed_tools("read_file");
    const int retries = h.state().retries_used();
    h.Plan(plan);
    ASSERT_EQ(h.stage(), rein::v1::DECIDING) << bad.tool;
    EXPECT_FALSE(h.state().has_pending_call());
    EXPECT_NE(LastPlan(h)->first_call_dropped().find(bad.why), std::string::npos)
        << LastPlan(h)->first_call_dropped();
    EXPECT_EQ(LastPlan(h)->subtasks_size(), 1);  // the plan stands
    EXPECT_EQ(h.state().retries_used(), retries);
    EXPECT_EQ(CommitUntilCall(h).effect.kind, Effect::Kind::kDecide);
  }
}

TEST(StageRouterPlanDecideTest, PausesAndOptingOutDropTheFirstCall) {
  Harness after_plan([](rein::v1::RunSpec& s) { s.add_pause_points(rein::v1::AFTER_PLAN); });
  after_plan.Tools();
  after_plan.Plan(PlanWithFirst({"a"}, "read_file"));
  ASSERT_EQ(after_plan.stage(), rein::v1::PAUSED);
  EXPECT_FALSE(after_plan.state().has_pending_call());
  EXPECT_NE(LastPlan(after_plan)->first_call_dropped().find("PAUSED (PAUSE_POINT)"),
            std::string::npos);
  ASSERT_TRUE(after_plan.Review(Approve()).ok());
  EXPECT_EQ(CommitUntilCall(after_plan).effect.kind, Effect::Kind::kDecide);

  Harness notes;
  notes.Tools();
  rein::v1::PlanResponse plan = PlanWithFirst({"a"}, "read_file");
  plan.set_notes("look at this");
  notes.Plan(plan);
  ASSERT_EQ(notes.stage(), rein::v1::PAUSED);
  EXPECT_NE(LastPlan(notes)->first_call_dropped().find("NOTES"), std::string::npos);

  Harness off([](rein::v1::RunSpec& s) { s.set_combine_plan_decide(false); });
  off.Tools();
  off.Plan(PlanWithFirst({"a"}, "read_file"));
  ASSERT_EQ(off.stage(), rein::v1::DECIDING);
  EXPECT_FALSE(off.state().has_pending_call());
  EXPECT_NE(LastPlan(off)->first_call_dropped().find("combine_plan_decide"), std::string::npos);

  Harness done;
  done.Tools();
  rein::v1::PlanResponse finished = PlanReply({}, /*goal_achieved=*/true);
  finished.mutable_first_call()->set_tool("read_file");
  done.Plan(finished);
  EXPECT_EQ(done.stage(), rein::v1::FINISHED);
  EXPECT_EQ(LastPlan(done)->first_call_dropped(), "the plan has no subtasks");
}

TEST(StageRouterPlanDecideTest, TerminationBeforeDecidingDropsTheFirstCall) {
  Harness h([](rein::v1::RunSpec& s) { s.mutable_limits()->set_max_iterations(1); });
  h.Tools();
  h.Plan(PlanWithFirst({"a"}, "read_file"));
  EXPECT_EQ(h.stage(), rein::v1::FAILED);
  EXPECT_EQ(h.reason(), rein::v1::MAX_ITERATIONS);
  EXPECT_FALSE(h.state().has_pending_call());
  EXPECT_NE(LastPlan(h)->first_call_dropped().find("FAILED"), std::string::npos);
  EXPECT_EQ(h.CountFinished(), 1);
}

TEST(StageRouterTest, ApplyListedToolsWithFileInfoAsksForTheWorkspaceCheckFirst) {
  Harness h;
  rein::v1::ListToolsResponse tools = ToolsReply();
  tools.add_tools()->set_name("file_info");
  Applied listed = h.router.Apply(h.run, ToolsListed{tools}, h.now);
  EXPECT_FALSE(listed.transition.has_value());
  ASSERT_TRUE(listed.call.has_value());
  EXPECT_EQ(listed.call->kind, Effect::Kind::kCheckWorkspace);
  EXPECT_EQ(listed.call->execute.tool(), "file_info");
  EXPECT_EQ(listed.call->execute.workspace(), h.run.spec().workspace());
  EXPECT_EQ(listed.call->tools.tools_size(), 4);

  rein::v1::ExecuteResponse missing;
  missing.mutable_error()->set_code("NOT_FOUND");
  missing.mutable_error()->set_reason(reason::kWorkspaceNotFound);
  missing.mutable_error()->set_message("no workspace");
  Applied checked = h.router.Apply(h.run, WorkspaceChecked{tools, missing}, h.now);
  ASSERT_TRUE(checked.transition.has_value());
  EXPECT_FALSE(checked.call.has_value());
  EXPECT_EQ(checked.transition->state.stage(), rein::v1::FAILED);
  ASSERT_TRUE(checked.transition->forget_run.has_value());
  EXPECT_EQ(checked.transition->forget_run->run_id(), "r1");
}

TEST(StageRouterTest, ApplyListedToolsWithoutFileInfoEntersPlanning) {
  Harness h;
  Applied applied = h.router.Apply(h.run, ToolsListed{ToolsReply()}, h.now);
  ASSERT_TRUE(applied.transition.has_value());
  EXPECT_FALSE(applied.call.has_value());
  EXPECT_EQ(applied.transition->state.stage(), rein::v1::PLANNING);
  EXPECT_FALSE(applied.transition->attempt_failed);
  EXPECT_FALSE(applied.transition->forget_run.has_value());
}

TEST(StageRouterTest, ApplyFailedCallSaysTheAttemptFailed) {
  Harness h;
  h.Tools();
  Applied failed = h.router.Apply(h.run, Planned{absl::UnavailableError("down")}, h.now);
  ASSERT_TRUE(failed.transition.has_value());
  EXPECT_TRUE(failed.transition->attempt_failed);
  EXPECT_TRUE(failed.transition->void_when_stopping);
  // With a cancel requested, the failed attempt is the run's end, stopping or not.
  h.Apply(*h.router.OnCancel(h.run, /*call_in_flight=*/true, "", h.now));
  Applied cancelled = h.router.Apply(h.run, Planned{absl::UnavailableError("down")}, h.now);
  ASSERT_TRUE(cancelled.transition.has_value());
  EXPECT_FALSE(cancelled.transition->void_when_stopping);
}

TEST(StageRouterTest, MarkDispatchedSaysItDispatchesAMutatingCall) {
  Harness h;
  h.Tools();
  h.Plan(PlanReply({"a"}));
  h.Decide(CallReply("write_file", R"({"path":"a","content":"b"})"));
  NextStep next = h.router.Next(h.run, h.now);
  ASSERT_EQ(next.kind, NextStep::Kind::kCommit);
  EXPECT_TRUE(next.transition->dispatches_mutating_call);
  h.Apply(*next.transition);
  next = h.router.Next(h.run, h.now);
  ASSERT_EQ(next.kind, NextStep::Kind::kCall);
  EXPECT_TRUE(next.effect.mutating);
  Applied done = h.router.Apply(h.run, Executed{ExecReply(true)}, h.now);
  ASSERT_TRUE(done.transition.has_value());
  EXPECT_FALSE(done.transition->dispatches_mutating_call);
}

TEST(StageRouterTest, RemoteCancelEndsAPausedRunAndRecordsOtherwise) {
  Harness h;
  h.Tools();
  std::optional<Transition> busy = h.router.OnRemoteCancel(h.run, "stop", h.now);
  ASSERT_TRUE(busy.has_value());
  EXPECT_EQ(busy->state.stage(), rein::v1::PLANNING);
  EXPECT_TRUE(busy->state.cancel_requested());
  // The request is an event of its own, so the log says who asked (the principal) and why.
  ASSERT_EQ(busy->events.size(), 1u);
  EXPECT_EQ(busy->events[0].cancel_requested().reason(), "stop");
  h.Plan(PlanReply({"a"}));
  h.Decide(rein::v1::DecideResponse());  // neither call nor query: a retry, still DECIDING
  rein::v1::DecideResponse ask;
  ask.set_human_query("which file?");
  h.Decide(ask);
  ASSERT_EQ(h.stage(), rein::v1::PAUSED);
  std::optional<Transition> paused = h.router.OnRemoteCancel(h.run, "stop", h.now);
  ASSERT_TRUE(paused.has_value());
  EXPECT_EQ(paused->state.stage(), rein::v1::CANCELLED);
}

}  // namespace
}  // namespace rein
