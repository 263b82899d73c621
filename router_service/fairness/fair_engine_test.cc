// RunEngine with --max_planner_calls: the limit holds, a quiet namespace's run is served in
// its turn behind a flooding one, and a stop answers the calls still waiting.
#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "router_service/run_engine.h"
#include "router_service/store/sqlite_run_store.h"
#include "router_service/testing/fake_clients.h"

namespace rein {
namespace {

class FairEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rein::testing::ScriptListFilesRun(&planner_, &executor_);
    planner_.plan = [this](const rein::v1::PlanRequest& request) {
      {
        absl::MutexLock lock(&mu_);
        planned_.push_back(request.run_id());
      }
      rein::v1::PlanResponse reply;
      rein::v1::SubTask* task = reply.add_subtasks();
      task->set_id("s0");
      task->set_description("list");
      return absl::StatusOr<rein::v1::PlanResponse>(reply);
    };
    planner_.hold = true;
    const char* dir = getenv("TEST_TMPDIR");
    auto store = SqliteRunStore::Open(
        absl::StrCat(dir ? dir : "/tmp", "/fair-", getpid(), "-",
                     ::testing::UnitTest::GetInstance()->current_test_info()->name(), ".db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    RunEngineOptions options;
    options.workers = 2;
    options.calls.max_planner_calls = 2;
    engine_ =
        std::make_unique<RunEngine>(store_.get(), &planner_, &executor_, RealClock(), options);
    ASSERT_TRUE(engine_->Start().ok());
  }
  void TearDown() override {
    engine_->Shutdown(absl::ZeroDuration());
    planner_.held.ReleaseAll(/*cancelled=*/true);
  }

  std::string Start(const std::string& ns) {
    rein::v1::StartRunRequest request;
    request.mutable_spec()->set_goal("list");
    request.mutable_spec()->set_namespace_(ns);
    absl::StatusOr<rein::v1::Run> run = engine_->StartRun(request);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? run->run_id() : "";
  }
  // Waits until `n` planner calls wait for a slot in the router.
  void AwaitWaiting(int n) {
    while (engine_->fair_calls().planner_gate().waiting() != n)
      absl::SleepFor(absl::Milliseconds(1));
  }
  std::vector<std::string> Planned() {
    absl::MutexLock lock(&mu_);
    return planned_;
  }

  rein::testing::FakePlannerClient planner_;
  rein::testing::FakeExecutorClient executor_;
  std::unique_ptr<SqliteRunStore> store_;
  std::unique_ptr<RunEngine> engine_;
  absl::Mutex mu_;
  std::vector<std::string> planned_ ABSL_GUARDED_BY(mu_);
};

TEST_F(FairEngineTest, AQuietNamespaceIsServedInItsTurnBehindAFlood) {
  for (int i = 0; i < 8; ++i) Start("flood");
  AwaitWaiting(6);
  const std::string quiet = Start("quiet");
  AwaitWaiting(7);
  // Nine runs want the planner; two calls are in flight, seven wait in the router.
  EXPECT_EQ(planner_.calls.load(), 2);
  EXPECT_EQ(engine_->calls_in_flight(), 9);
  // The two replies free two slots: the flood's turn, then the quiet run's, not after the
  // six flood runs that asked before it.
  planner_.held.ReleaseAll();
  planner_.held.AwaitAtLeast(2);
  const std::vector<std::string> planned = Planned();
  ASSERT_GE(planned.size(), 4u);
  EXPECT_EQ(planned[3], quiet) << "quiet run planned as call " << planned.size();
  EXPECT_EQ(planner_.calls.load(), 4);
}

TEST_F(FairEngineTest, AStopAnswersTheWaitingCallsUnsent) {
  for (int i = 0; i < 5; ++i) Start("flood");
  AwaitWaiting(3);
  engine_->StopDispatching();
  // The three waiting calls are answered at once (CANCELLED, not the run's failure); the two
  // in flight are still the planner's.
  EXPECT_EQ(engine_->calls_in_flight(), 2);
  planner_.held.ReleaseAll();
  engine_->Shutdown(absl::Seconds(10));
  EXPECT_EQ(engine_->calls_in_flight(), 0);
  EXPECT_EQ(planner_.calls.load(), 2);
  absl::StatusOr<std::vector<std::string>> unfinished = store_->ListUnfinishedRunIds();
  ASSERT_TRUE(unfinished.ok());
  EXPECT_EQ(unfinished->size(), 5u);  // none failed: each goes on at the next start
}

}  // namespace
}  // namespace rein
