#include "router_service/fairness/fair_calls.h"

#include <string>
#include <variant>
#include <vector>

#include "gtest/gtest.h"
#include "router_service/testing/fake_clients.h"

namespace rein {
namespace {

using rein::testing::FakeExecutorClient;
using rein::testing::FakePlannerClient;

FairCallsOptions Options(int planner, int executor) {
  FairCallsOptions options;
  options.max_planner_calls = planner;
  options.max_executor_calls = executor;
  return options;
}

Effect DecideEffect() {
  Effect effect;
  effect.kind = Effect::Kind::kDecide;
  return effect;
}

Effect ExecuteEffect() {
  Effect effect;
  effect.kind = Effect::Kind::kExecute;
  return effect;
}

class FairCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rein::testing::ScriptListFilesRun(&planner_, &executor_);
    planner_.hold = true;
    executor_.hold = true;
  }
  FakePlannerClient planner_;
  FakeExecutorClient executor_;
};

TEST_F(FairCallsTest, EachServiceHasItsOwnLimit) {
  FairCalls calls(&planner_, &executor_, Options(2, 3));
  int replies = 0;
  for (int i = 0; i < 5; ++i) {
    calls.Send("a", DecideEffect(), [&](StageReply) { ++replies; });
    calls.Send("a", ExecuteEffect(), [&](StageReply) { ++replies; });
  }
  EXPECT_EQ(planner_.calls.load(), 2);
  EXPECT_EQ(executor_.executions.load(), 3);
  EXPECT_EQ(calls.planner_gate().waiting(), 3);
  EXPECT_EQ(calls.executor_gate().waiting(), 2);
  // The held replies free their slots: the waiting calls are sent, each reply reaches its
  // caller once (held again: the fakes still hold).
  planner_.held.ReleaseAll();
  EXPECT_EQ(planner_.calls.load(), 4);
  EXPECT_EQ(replies, 2);
  calls.Stop();
  // Answered CANCELLED without being sent: 1 Decide and 2 Execute still waiting.
  EXPECT_EQ(replies, 5);
  EXPECT_EQ(planner_.calls.load(), 4);
  EXPECT_EQ(executor_.executions.load(), 3);
  planner_.held.ReleaseAll();
  executor_.held.ReleaseAll();
  EXPECT_EQ(replies, 10);
}

TEST_F(FairCallsTest, ACallCancelledWhileWaitingGetsItsStagesCancelledReply) {
  FairCalls calls(&planner_, &executor_, Options(1, 0));
  calls.Send("a", DecideEffect(), [](StageReply) {});
  std::vector<StageReply> got;
  std::shared_ptr<PendingCall> waiting =
      calls.Send("b", DecideEffect(), [&](StageReply reply) { got.push_back(std::move(reply)); });
  waiting->Cancel();
  ASSERT_EQ(got.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<Decided>(got[0]));
  EXPECT_TRUE(absl::IsCancelled(std::get<Decided>(got[0]).reply.status()));
  EXPECT_EQ(planner_.calls.load(), 1);
  planner_.held.ReleaseAll();
  EXPECT_EQ(planner_.calls.load(), 1);  // the cancelled call was never sent
}

TEST_F(FairCallsTest, WithoutLimitsEveryCallIsSent) {
  FairCalls calls(&planner_, &executor_, {});
  for (int i = 0; i < 50; ++i) calls.Send("a", DecideEffect(), [](StageReply) {});
  EXPECT_EQ(planner_.calls.load(), 50);
  planner_.held.ReleaseAll();
}

}  // namespace
}  // namespace rein
