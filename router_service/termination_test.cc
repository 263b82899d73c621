// Tests of the termination rules: each rule alone, and their order (docs/DESIGN.md, "The rules,
// in order").
#include "router_service/termination.h"

#include "absl/strings/str_cat.h"
#include "common/proto_time.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1700000000);

rein::v1::RunSpec Spec() {
  rein::v1::RunSpec spec;
  auto* limits = spec.mutable_limits();
  limits->set_max_iterations(10);
  *limits->mutable_deadline() = ToProtoDuration(absl::Minutes(10));
  limits->set_retry_budget(2);
  limits->set_max_consecutive_tool_failures(3);
  limits->set_token_budget(1000);
  limits->set_cost_budget_usd(0.25);
  limits->set_stagnation_window(4);
  return spec;
}

rein::v1::RunState Fresh() {
  rein::v1::RunState st;
  *st.mutable_deadline() = ToProtoTime(kNow + absl::Minutes(10));
  return st;
}

// A state where rules 1-6 all hold.
rein::v1::RunState Everything() {
  rein::v1::RunState st = Fresh();
  st.set_cancel_requested(true);
  st.set_iteration(10);
  *st.mutable_deadline() = ToProtoTime(kNow);
  st.set_retries_used(3);
  st.set_consecutive_tool_failures(3);
  st.set_tokens_used(1001);
  st.set_cost_used_usd(0.2500001);
  return st;
}

TEST(TerminationTest, NothingHoldsForAFreshRun) {
  EXPECT_FALSE(CheckLimits(Spec(), Fresh(), kNow, /*begins_iteration=*/true).has_value());
}

TEST(TerminationTest, RulesOneToSixApplyInOrder) {
  rein::v1::RunState st = Everything();
  const rein::v1::TerminationReason order[] = {
      rein::v1::CANCELLED_BY_USER,         rein::v1::MAX_ITERATIONS,
      rein::v1::DEADLINE_EXCEEDED,         rein::v1::RETRY_BUDGET_EXHAUSTED,
      rein::v1::CONSECUTIVE_TOOL_FAILURES, rein::v1::TOKEN_BUDGET_EXHAUSTED,
      rein::v1::COST_BUDGET_EXHAUSTED};
  for (rein::v1::TerminationReason expected : order) {
    std::optional<Verdict> verdict = CheckLimits(Spec(), st, kNow, /*begins_iteration=*/true);
    ASSERT_TRUE(verdict.has_value());
    EXPECT_EQ(verdict->reason, expected);
    // Clear the rule that fired; the next one must win.
    switch (expected) {
      case rein::v1::CANCELLED_BY_USER: st.set_cancel_requested(false); break;
      case rein::v1::MAX_ITERATIONS: st.set_iteration(0); break;
      case rein::v1::DEADLINE_EXCEEDED:
        *st.mutable_deadline() = ToProtoTime(kNow + absl::Minutes(1));
        break;
      case rein::v1::RETRY_BUDGET_EXHAUSTED: st.set_retries_used(2); break;
      case rein::v1::CONSECUTIVE_TOOL_FAILURES: st.set_consecutive_tool_failures(0); break;
      case rein::v1::TOKEN_BUDGET_EXHAUSTED: st.set_tokens_used(0); break;
      default: st.set_cost_used_usd(0); break;
    }
  }
  EXPECT_FALSE(CheckLimits(Spec(), st, kNow, /*begins_iteration=*/true).has_value());
}

TEST(TerminationTest, CostBudgetHoldsOnlyAboveTheBudgetAndOnlyWhenSet) {
  rein::v1::RunState st = Fresh();
  st.set_cost_used_usd(0.25);  // at the budget: not over it
  EXPECT_FALSE(CheckLimits(Spec(), st, kNow, /*begins_iteration=*/false).has_value());
  st.set_cost_used_usd(0.2501);
  std::optional<Verdict> verdict = CheckLimits(Spec(), st, kNow, /*begins_iteration=*/false);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->reason, rein::v1::COST_BUDGET_EXHAUSTED);
  EXPECT_EQ(verdict->message, "cost $0.250100, budget $0.250000");
  rein::v1::RunSpec no_budget = Spec();
  no_budget.mutable_limits()->set_cost_budget_usd(0);
  st.set_cost_used_usd(1e9);
  EXPECT_FALSE(CheckLimits(no_budget, st, kNow, /*begins_iteration=*/false).has_value());
}

TEST(TerminationTest, MaxIterationsAppliesOnlyWhenAnIterationBegins) {
  rein::v1::RunState st = Fresh();
  st.set_iteration(10);
  EXPECT_FALSE(CheckLimits(Spec(), st, kNow, /*begins_iteration=*/false).has_value());
  EXPECT_EQ(CheckLimits(Spec(), st, kNow, /*begins_iteration=*/true)->reason,
            rein::v1::MAX_ITERATIONS);
}

TEST(TerminationTest, DeadlineHoldsAtAndAfterItsInstant) {
  rein::v1::RunState st = Fresh();
  const absl::Time deadline = kNow + absl::Minutes(10);
  EXPECT_FALSE(PastDeadline(st, deadline - absl::Nanoseconds(1)));
  EXPECT_TRUE(PastDeadline(st, deadline));
  EXPECT_EQ(CheckLimits(Spec(), st, deadline, false)->message, "deadline of 10m passed");
  EXPECT_TRUE(CancelledOrPastDeadline(st, deadline));
  st.clear_deadline();
  EXPECT_FALSE(PastDeadline(st, absl::InfiniteFuture()));
}

TEST(TerminationTest, RetryBudgetIsExceededOnlyPastTheBudget) {
  rein::v1::RunState st = Fresh();
  st.set_retries_used(2);
  EXPECT_FALSE(CheckLimits(Spec(), st, kNow, false).has_value());
  st.set_retries_used(3);
  EXPECT_EQ(CheckLimits(Spec(), st, kNow, false)->reason, rein::v1::RETRY_BUDGET_EXHAUSTED);
}

TEST(TerminationTest, ZeroTokenBudgetMeansNone) {
  rein::v1::RunSpec spec = Spec();
  spec.mutable_limits()->set_token_budget(0);
  rein::v1::RunState st = Fresh();
  st.set_tokens_used(1 << 30);
  EXPECT_FALSE(CheckLimits(spec, st, kNow, false).has_value());
}

void AddAction(rein::v1::RunState& st, const std::string& tool, bool ok, const std::string& out) {
  rein::v1::Action* a = st.add_recent_actions();
  a->set_tool(tool);
  a->set_args_json("{}");
  a->set_ok(ok);
  a->set_observation(out);
  st.set_actions_total(st.actions_total() + 1);
}

TEST(TerminationTest, StagnationPatterns) {
  rein::v1::RunState same = Fresh();
  for (int i = 0; i < 4; ++i) AddAction(same, "a", true, "x");
  EXPECT_NE(DetectStagnation(Spec(), same)->find("repeated call"), std::string::npos);
  same.set_stagnation_mark(same.actions_total());  // nothing since the mark
  EXPECT_FALSE(DetectStagnation(Spec(), same).has_value());

  rein::v1::RunState failing = Fresh();
  for (int i = 0; i < 3; ++i) AddAction(failing, "a", false, absl::StrCat("e", i));
  EXPECT_NE(DetectStagnation(Spec(), failing)->find("repeated failure"), std::string::npos);

  rein::v1::RunState alternating = Fresh();
  for (int i = 0; i < 6; ++i) AddAction(alternating, i % 2 ? "b" : "a", true, absl::StrCat(i));
  EXPECT_NE(DetectStagnation(Spec(), alternating)->find("alternation"), std::string::npos);

  rein::v1::RunState varied = Fresh();
  for (int i = 0; i < 3; ++i) AddAction(varied, "a", true, absl::StrCat(i));
  EXPECT_FALSE(DetectStagnation(Spec(), varied).has_value());
}

TEST(TerminationTest, MayFinishNeedsGoalAndNoPendingSubtask) {
  rein::v1::RunState st = Fresh();
  EXPECT_FALSE(MayFinish(st));
  st.set_goal_achieved(true);
  EXPECT_TRUE(MayFinish(st));
  st.add_subtasks()->set_id("pending");
  EXPECT_FALSE(MayFinish(st));  // AND, never OR
}

TEST(TerminationTest, TerminalStageForCancelIsCancelled) {
  EXPECT_EQ(TerminalStageFor(rein::v1::CANCELLED_BY_USER), rein::v1::CANCELLED);
  EXPECT_EQ(TerminalStageFor(rein::v1::DEADLINE_EXCEEDED), rein::v1::FAILED);
}

}  // namespace
}  // namespace rein
