// Unit tests of RunEngine with fake clients, a SQLite store and a FakeClock: deadlines, retry
// backoff, pause deadlines, cancel and shutdown with calls in flight. No test sleeps: each one
// synchronizes on the engine's own waits (WaitEvents), on held calls, or on the clock's waiters.
#include "router_service/run_engine.h"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/proto_time.h"
#include "common/status_reason.h"
#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"
#include "router_service/store/sqlite_run_store.h"
#include "router_service/store/testing/held_store.h"
#include "router_service/testing/fake_clients.h"

namespace rein {
namespace {

using rein::testing::FakeExecutorClient;
using rein::testing::FakePlannerClient;
using rein::v1::RunEvent;

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  static int counter = 0;
  return absl::StrCat(dir ? dir : "/tmp", "/", name, "-", getpid(), "-", ++counter, ".db");
}

absl::StatusOr<rein::v1::PlanResponse> OneSubtaskPlan(const rein::v1::PlanRequest&) {
  rein::v1::PlanResponse reply;
  auto* task = reply.add_subtasks();
  task->set_id("s0");
  task->set_description("list");
  return reply;
}

class RunEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TempPath("engine");
    rein::v1::ToolSpec list;
    list.set_name("list_files");
    executor_.tools = {list};
    executor_.execute = [](const rein::v1::ExecuteRequest&) {
      rein::v1::ExecuteResponse reply;
      reply.set_ok(true);
      reply.set_output("a b c");
      return absl::StatusOr<rein::v1::ExecuteResponse>(reply);
    };
    planner_.plan = OneSubtaskPlan;
    planner_.decide = [](const rein::v1::DecideRequest&) {
      rein::v1::DecideResponse reply;
      reply.mutable_tool_call()->set_tool("list_files");
      reply.mutable_tool_call()->set_args_json("{}");
      return absl::StatusOr<rein::v1::DecideResponse>(reply);
    };
    planner_.evaluate = [](const rein::v1::EvaluateRequest&) {
      rein::v1::EvaluateResponse reply;
      reply.set_status(rein::v1::RunEvent::Evaluation::COMPLETED);
      reply.set_goal_achieved(true);
      return absl::StatusOr<rein::v1::EvaluateResponse>(reply);
    };
    options_.workers = 2;
    options_.retry_backoff = absl::Seconds(1);
    options_.max_retry_backoff = absl::Seconds(4);
    OpenEngine();
  }

  void TearDown() override {
    if (engine_) engine_->Shutdown(absl::ZeroDuration());
    ExpectEveryWriteWentThroughTheCommitPath();
    engine_.reset();
    store_.reset();
  }

  void OpenEngine() {
    auto store = SqliteRunStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    held_ = std::make_unique<rein::testing::HeldStore>(store_.get());
    engine_ = std::make_unique<RunEngine>(held_.get(), &planner_, &executor_, &clock_, options_);
    ASSERT_TRUE(engine_->Start().ok());
  }

  // Replaces the engine (and its store connection) with a new one built from options_.
  void Reopen() {
    engine_->Shutdown(absl::ZeroDuration());
    ExpectEveryWriteWentThroughTheCommitPath();
    engine_.reset();
    store_.reset();
    OpenEngine();
  }

  // Every write the store saw came through the engine's one commit path (RunWriter), less
  // those a deadline withdrew before the store took them.
  void ExpectEveryWriteWentThroughTheCommitPath() {
    if (engine_ == nullptr || held_ == nullptr) return;
    EXPECT_EQ(held_->writes(), engine_->writes() - withdrawn_);
  }

  rein::v1::RunSpec Spec() {
    rein::v1::RunSpec spec;
    spec.set_goal("list things");
    spec.mutable_limits()->mutable_deadline()->set_seconds(60);
    return spec;
  }

  std::string StartRun(const rein::v1::RunSpec& spec) {
    rein::v1::StartRunRequest request;
    *request.mutable_spec() = spec;
    absl::StatusOr<rein::v1::Run> run = engine_->StartRun(request);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? run->run_id() : "";
  }

  // Reads the run's events (waiting on the engine, which waits on the fake clock that no one
  // moves meanwhile) until one matches `match`; returns it. Fails when the run ends first.
  RunEvent AwaitEvent(const std::string& run_id,
                      const std::function<bool(const RunEvent&)>& match) {
    while (true) {
      bool ended = false;
      absl::StatusOr<std::vector<RunEvent>> events =
          engine_->WaitEvents(run_id, seen_, absl::Hours(24), &ended);
      if (!events.ok()) {
        ADD_FAILURE() << events.status();
        return RunEvent();
      }
      for (const RunEvent& event : *events) {
        seen_ = event.seq();
        all_.push_back(event);
        if (match(event)) return event;
      }
      if (ended) {
        ADD_FAILURE() << "the run ended before the awaited event";
        return RunEvent();
      }
    }
  }

  RunEvent AwaitFinished(const std::string& run_id) {
    return AwaitEvent(run_id, [](const RunEvent& e) { return e.has_finished(); });
  }

  RunEvent AwaitError(const std::string& run_id) {
    return AwaitEvent(run_id, [](const RunEvent& e) { return e.has_error(); });
  }

  RunEvent AwaitStage(const std::string& run_id, rein::v1::Stage stage) {
    return AwaitEvent(run_id, [stage](const RunEvent& e) {
      return e.has_stage_changed() && e.stage_changed().to() == stage;
    });
  }

  int Finished() {
    int n = 0;
    for (const RunEvent& e : all_) n += e.has_finished();
    return n;
  }

  std::string path_;
  FakeClock clock_;
  FakePlannerClient planner_;
  FakeExecutorClient executor_;
  RunEngineOptions options_;
  std::unique_ptr<SqliteRunStore> store_;
  std::unique_ptr<rein::testing::HeldStore> held_;
  std::unique_ptr<RunEngine> engine_;
  int64_t withdrawn_ = 0;  // commits withdrawn at a deadline, never sent to the store
  int64_t seen_ = 0;
  std::vector<RunEvent> all_;
};

TEST_F(RunEngineTest, RunFinishesWithoutTimeMoving) {
  const std::string id = StartRun(Spec());
  RunEvent finished = AwaitFinished(id);
  EXPECT_EQ(finished.finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  EXPECT_EQ(engine_->GetRun(id)->state().stage(), rein::v1::FINISHED);
}

TEST_F(RunEngineTest, DeadlinePassingDuringACallFailsTheRunWithDeadlineExceeded) {
  planner_.hold = true;
  planner_.plan = [](const rein::v1::PlanRequest&) {
    return absl::StatusOr<rein::v1::PlanResponse>(absl::DeadlineExceededError("too slow"));
  };
  const std::string id = StartRun(Spec());
  planner_.held.AwaitAtLeast(1);
  clock_.Advance(absl::Seconds(60));
  planner_.held.ReleaseAll();
  RunEvent error = AwaitError(id);
  EXPECT_FALSE(error.error().retry_spent());  // a call cut short by the deadline costs nothing
  RunEvent finished = AwaitFinished(id);
  EXPECT_EQ(finished.finished().outcome().status(), rein::v1::FAILED);
  EXPECT_EQ(finished.finished().outcome().reason(), rein::v1::DEADLINE_EXCEEDED);
  absl::StatusOr<rein::v1::Run> run = engine_->GetRun(id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->state().stage(), rein::v1::FAILED);
  EXPECT_EQ(run->state().retries_used(), 0);
}

TEST_F(RunEngineTest, FailedCallIsRetriedOnlyAfterADoublingBackoffUntilTheBudgetIsSpent) {
  planner_.plan = [](const rein::v1::PlanRequest&) {
    return absl::StatusOr<rein::v1::PlanResponse>(absl::UnavailableError("planner down"));
  };
  rein::v1::RunSpec spec = Spec();
  spec.mutable_limits()->set_retry_budget(2);
  const absl::Time start = clock_.Now();
  const std::string id = StartRun(spec);

  EXPECT_TRUE(AwaitError(id).error().retry_spent());
  EXPECT_EQ(planner_.calls.load(), 1);
  // The run sleeps on the scheduler until exactly one backoff (1s) has passed.
  EXPECT_EQ(clock_.BlockUntilWaiterBy(start + absl::Seconds(1)), start + absl::Seconds(1));
  clock_.Advance(absl::Milliseconds(999));
  EXPECT_EQ(planner_.calls.load(), 1);  // nothing woke: the deadline is still ahead
  clock_.Advance(absl::Milliseconds(1));

  AwaitError(id);
  EXPECT_EQ(planner_.calls.load(), 2);
  const absl::Time second = start + absl::Seconds(1);
  // Doubled: 2s after the second failure.
  EXPECT_EQ(clock_.BlockUntilWaiterBy(second + absl::Seconds(2)), second + absl::Seconds(2));
  clock_.Advance(absl::Seconds(2));

  RunEvent finished = AwaitFinished(id);
  EXPECT_EQ(planner_.calls.load(), 3);
  EXPECT_EQ(finished.finished().outcome().reason(), rein::v1::RETRY_BUDGET_EXHAUSTED);
  EXPECT_EQ(Finished(), 1);
}

TEST_F(RunEngineTest, DeadlineDuringABackoffEndsTheRunAtTheDeadline) {
  options_.retry_backoff = absl::Minutes(5);
  options_.max_retry_backoff = absl::Minutes(5);
  Reopen();
  planner_.plan = [](const rein::v1::PlanRequest&) {
    return absl::StatusOr<rein::v1::PlanResponse>(absl::UnavailableError("planner down"));
  };
  const absl::Time start = clock_.Now();
  const std::string id = StartRun(Spec());  // deadline: 60s
  AwaitError(id);
  // The run wakes at its deadline, not at the end of the 5 minute backoff.
  EXPECT_EQ(clock_.BlockUntilWaiterBy(start + absl::Minutes(5)), start + absl::Seconds(60));
  clock_.Advance(absl::Seconds(60));
  RunEvent finished = AwaitFinished(id);
  EXPECT_EQ(finished.finished().outcome().reason(), rein::v1::DEADLINE_EXCEEDED);
  EXPECT_EQ(FromProtoTime(finished.time()), start + absl::Seconds(60));
  EXPECT_EQ(planner_.calls.load(), 1);
}

TEST_F(RunEngineTest, PausedRunEndsWhenItsDeadlinePasses) {
  rein::v1::RunSpec spec = Spec();
  spec.add_pause_points(rein::v1::AFTER_PLAN);
  const absl::Time start = clock_.Now();
  const std::string id = StartRun(spec);
  AwaitStage(id, rein::v1::PAUSED);
  // The paused run waits for its deadline on the clock and nothing else.
  EXPECT_EQ(clock_.BlockUntilWaiterBy(start + absl::Seconds(60)), start + absl::Seconds(60));
  clock_.Advance(absl::Seconds(59));
  EXPECT_EQ(engine_->GetRun(id)->state().stage(), rein::v1::PAUSED);
  clock_.Advance(absl::Seconds(1));
  RunEvent finished = AwaitFinished(id);
  EXPECT_EQ(finished.finished().outcome().status(), rein::v1::FAILED);
  EXPECT_EQ(finished.finished().outcome().reason(), rein::v1::DEADLINE_EXCEEDED);
  EXPECT_EQ(planner_.calls.load(), 1);
}

TEST_F(RunEngineTest, CancelWhileACallIsInFlightCancelsTheCallAndEndsTheRunOnce) {
  planner_.hold = true;
  const std::string id = StartRun(Spec());
  planner_.held.AwaitAtLeast(1);
  EXPECT_GE(engine_->calls_in_flight(), 1);  // the ListTools call may still be finishing
  absl::StatusOr<rein::v1::Run> run = engine_->CancelRun(id, "enough", "bo");
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->state().stage(), rein::v1::CANCELLED);
  EXPECT_EQ(run->state().outcome().reason(), rein::v1::CANCELLED_BY_USER);
  EXPECT_EQ(planner_.held.cancels(), 1);
  AwaitFinished(id);
  // The log says who asked and why, though the cancel could not end the run at once.
  bool over = false;
  absl::StatusOr<std::vector<RunEvent>> log = engine_->WaitEvents(id, 0, absl::Seconds(0), &over);
  ASSERT_TRUE(log.ok()) << log.status();
  int requests = 0;
  for (const RunEvent& e : *log) {
    if (!e.has_cancel_requested()) continue;
    ++requests;
    EXPECT_EQ(e.cancel_requested().reason(), "enough");
    EXPECT_EQ(e.principal(), "bo");
  }
  EXPECT_EQ(requests, 1);
  bool ended = false;
  absl::StatusOr<std::vector<RunEvent>> rest =
      engine_->WaitEvents(id, seen_, absl::Hours(1), &ended);
  ASSERT_TRUE(rest.ok());
  EXPECT_TRUE(rest->empty());
  EXPECT_TRUE(ended);
  EXPECT_EQ(Finished(), 1);
  EXPECT_EQ(run->state().retries_used(), 0);
}

TEST_F(RunEngineTest, ShutdownAbandonsCallsInFlightAndANewEngineContinuesTheRun) {
  planner_.hold = true;
  const absl::Time start = clock_.Now();
  const std::string id = StartRun(Spec());
  planner_.held.AwaitAtLeast(1);
  const int64_t version = engine_->GetRun(id)->state().version();

  std::thread shutdown([this] { engine_->Shutdown(absl::Seconds(5)); });
  // Shutdown waits out its grace on the clock, then cancels the call.
  EXPECT_EQ(clock_.BlockUntilWaiterBy(start + absl::Seconds(5)), start + absl::Seconds(5));
  clock_.Advance(absl::Seconds(5));
  shutdown.join();
  EXPECT_EQ(planner_.held.cancels(), 1);
  EXPECT_EQ(engine_->calls_in_flight(), 0);

  // Nothing was committed for the cancelled call.
  absl::StatusOr<rein::v1::Run> stored = store_->GetRun(id);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->state().version(), version);
  EXPECT_EQ(stored->state().stage(), rein::v1::PLANNING);
  EXPECT_EQ(stored->state().retries_used(), 0);

  engine_.reset();
  store_.reset();
  planner_.hold = false;
  OpenEngine();
  RunEvent finished = AwaitFinished(id);
  EXPECT_EQ(finished.finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  for (const RunEvent& e : all_) EXPECT_FALSE(e.has_error()) << e.DebugString();
}

class RunEngineWorkspaceTest : public RunEngineTest {
 protected:
  void SetUp() override {
    RunEngineTest::SetUp();
    rein::v1::ToolSpec file_info;
    file_info.set_name("file_info");
    executor_.tools.push_back(file_info);
  }

  static absl::StatusOr<rein::v1::ExecuteResponse> Missing(const rein::v1::ExecuteRequest& r) {
    rein::v1::ExecuteResponse reply;
    reply.set_ok(false);
    reply.mutable_error()->set_code("NOT_FOUND");
    reply.mutable_error()->set_reason(reason::kWorkspaceNotFound);
    reply.mutable_error()->set_message(
        absl::StrCat("workspace \"", r.workspace(), "\" does not exist or is not a directory"));
    return reply;
  }
};

TEST_F(RunEngineWorkspaceTest, MissingWorkspaceIsFailedPreconditionAtStartRun) {
  executor_.execute = Missing;
  rein::v1::StartRunRequest request;
  *request.mutable_spec() = Spec();
  request.mutable_spec()->set_workspace("nope");
  absl::StatusOr<rein::v1::Run> run = engine_->StartRun(request);
  EXPECT_EQ(run.status().code(), absl::StatusCode::kFailedPrecondition) << run.status();
  EXPECT_NE(run.status().message().find("spec.workspace"), std::string::npos) << run.status();
  EXPECT_NE(run.status().message().find("\"nope\""), std::string::npos) << run.status();
  EXPECT_EQ(engine_->active_runs(), 0);
}

TEST_F(RunEngineWorkspaceTest, WorkspaceGoneAfterStartRunFailsTheRunSayingSo) {
  auto checks = std::make_shared<std::atomic<int>>(0);
  executor_.execute = [checks](const rein::v1::ExecuteRequest& r) {
    if (++*checks == 1) {  // StartRun's check passes; the workspace is gone right after
      rein::v1::ExecuteResponse reply;
      reply.set_ok(true);
      return absl::StatusOr<rein::v1::ExecuteResponse>(reply);
    }
    return Missing(r);
  };
  const std::string id = StartRun(Spec());
  RunEvent finished = AwaitFinished(id);
  EXPECT_EQ(finished.finished().outcome().status(), rein::v1::FAILED);
  EXPECT_NE(finished.finished().outcome().reason(), rein::v1::INTERNAL);
  EXPECT_EQ(finished.finished().outcome().reason(), rein::v1::CONSECUTIVE_TOOL_FAILURES);
  EXPECT_NE(finished.finished().outcome().message().find("workspace \"default\" no longer exists"),
            std::string::npos)
      << finished.finished().outcome().message();
}

TEST_F(RunEngineTest, NonFiniteTemperatureIsInvalidArgumentNamingTheField) {
  rein::v1::StartRunRequest request;
  *request.mutable_spec() = Spec();
  request.mutable_spec()->mutable_model()->set_temperature(std::nan(""));
  absl::StatusOr<rein::v1::Run> run = engine_->StartRun(request);
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(run.status().message().find("spec.model.temperature"), std::string::npos)
      << run.status();
}

TEST_F(RunEngineTest, ForkWithBadLimitEditsNamesTheEditsField) {
  const std::string id = StartRun(Spec());
  AwaitFinished(id);
  rein::v1::ForkRunRequest request;
  request.set_run_id(id);
  request.set_iteration(1);
  request.mutable_edits()->mutable_limits()->set_max_iterations(-1);
  absl::StatusOr<rein::v1::Run> fork = engine_->ForkRun(request);
  EXPECT_EQ(fork.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(fork.status().message(), "edits.limits.max_iterations: "))
      << fork.status();
  request.mutable_edits()->mutable_limits()->set_max_iterations(0);
  request.mutable_edits()->mutable_limits()->set_cost_budget_usd(1);  // no price table
  fork = engine_->ForkRun(request);
  EXPECT_EQ(fork.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(fork.status().message(), "edits.limits.cost_budget_usd: "))
      << fork.status();
}

// A fork keeps its source's RunSpec.notify, so ForkRun checks it against the allow-list as it
// is now (a router restarted with a narrower --webhook_allow must not send there for a fork).
TEST_F(RunEngineTest, ForkRechecksTheSourcesNotifyAgainstTheAllowListNow) {
  auto allowed = std::make_shared<std::atomic<bool>>(true);
  options_.check_notify = [allowed](const rein::v1::RunSpec& spec) {
    if (allowed->load() || spec.notify_size() == 0) return absl::OkStatus();
    return absl::InvalidArgumentError(
        "spec.notify[0]: not under a prefix this router allows (--webhook_allow)");
  };
  Reopen();
  rein::v1::RunSpec spec = Spec();
  spec.add_notify("https://hooks.example/team-a");
  const std::string id = StartRun(spec);
  AwaitFinished(id);
  allowed->store(false);
  rein::v1::ForkRunRequest request;
  request.set_run_id(id);
  request.set_iteration(1);
  absl::StatusOr<rein::v1::Run> fork = engine_->ForkRun(request);
  EXPECT_EQ(fork.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StartsWith(fork.status().message(),
                               "the source run's spec.notify[0]: not under a prefix"))
      << fork.status();
  rein::v1::ListRunsRequest all;
  absl::StatusOr<RunPage> listed = engine_->ListRuns(all);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->runs.size(), 1u) << "a refused fork leaves no run";
  // Allowed again, the fork passes the check and goes on to copy the workspace (which this
  // fake executor cannot do).
  allowed->store(true);
  fork = engine_->ForkRun(request);
  EXPECT_FALSE(fork.ok());
  EXPECT_EQ(fork.status().message().find("notify"), std::string::npos) << fork.status();
}

// Waits (on the engine) until the run has paused.
void AwaitPaused(RunEngine& engine, const std::string& run_id) {
  int64_t after = 0;
  while (true) {
    bool ended = false;
    absl::StatusOr<std::vector<RunEvent>> events =
        engine.WaitEvents(run_id, after, absl::Hours(24), &ended);
    ASSERT_TRUE(events.ok()) << events.status();
    ASSERT_FALSE(ended) << "the run ended before it paused";
    for (const RunEvent& event : *events) {
      if (event.has_paused()) return;
      after = event.seq();
    }
  }
}

rein::v1::ResumeRunRequest Approve(const rein::v1::Run& run) {
  rein::v1::ResumeRunRequest request;
  request.set_run_id(run.run_id());
  request.set_expected_version(run.state().version());
  request.mutable_review()->mutable_approve();
  return request;
}

TEST_F(RunEngineTest, CallsWithADeadlineDoNotWaitForAHeldStoreAndChangeNothing) {
  rein::v1::RunSpec spec = Spec();
  spec.add_pause_points(rein::v1::BEFORE_TOOL);
  const std::string a = StartRun(spec);
  const std::string b = StartRun(spec);
  AwaitPaused(*engine_, a);
  AwaitPaused(*engine_, b);
  const rein::v1::Run a_paused = *engine_->GetRun(a);
  const rein::v1::Run b_paused = *engine_->GetRun(b);

  // A cancel with no deadline leads a commit of run a, which the store holds.
  held_->Hold();
  absl::StatusOr<rein::v1::Run> cancelled;
  std::thread cancel([&] { cancelled = engine_->CancelRun(a, "enough"); });
  held_->AwaitHeld(1);

  // A reader of run a is not held up by its commit: it sees the state last committed.
  absl::StatusOr<rein::v1::Run> read = engine_->GetRun(a);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->state().version(), a_paused.state().version());

  // A review of run a waits for a's commit, on the clock, until its deadline only.
  absl::Time deadline = clock_.Now() + absl::Seconds(1);
  absl::StatusOr<rein::v1::Run> resumed;
  std::thread resume_a([&] { resumed = engine_->ResumeRun(Approve(a_paused), "", deadline); });
  EXPECT_EQ(clock_.BlockUntilWaiterBy(deadline), deadline);
  clock_.Advance(absl::Seconds(1));
  resume_a.join();
  EXPECT_EQ(resumed.status().code(), absl::StatusCode::kDeadlineExceeded) << resumed.status();

  // A review of run b waits for its turn behind the held commit, until its deadline only; its
  // commit is withdrawn unwritten.
  deadline = clock_.Now() + absl::Seconds(1);
  std::thread resume_b([&] { resumed = engine_->ResumeRun(Approve(b_paused), "", deadline); });
  EXPECT_EQ(clock_.BlockUntilWaiterBy(deadline), deadline);
  clock_.Advance(absl::Seconds(1));
  resume_b.join();
  EXPECT_EQ(resumed.status().code(), absl::StatusCode::kDeadlineExceeded) << resumed.status();
  withdrawn_ = 1;

  held_->Release();
  cancel.join();
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state().stage(), rein::v1::CANCELLED);
  // Run b is as it was, in memory and in the store, and a review without a deadline goes on.
  EXPECT_EQ(engine_->GetRun(b)->state().version(), b_paused.state().version());
  EXPECT_EQ(engine_->GetRun(b)->state().stage(), rein::v1::PAUSED);
  EXPECT_EQ(store_->GetRun(b)->state().version(), b_paused.state().version());
  resumed = engine_->ResumeRun(Approve(b_paused));
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  RunEvent finished = AwaitFinished(b);
  EXPECT_EQ(finished.finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
}

}  // namespace
}  // namespace rein
