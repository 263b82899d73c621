// rein across several hosts: each host is a network namespace on one bridge. PostgreSQL on one,
// three routers, one scripted planner and three executors sharing one workspace root. Every
// scenario checks, for every run: a gap-free event log, exactly one terminal event (the last),
// no completed subtask lost, and no mutating call run twice, counted by the side effect each
// call leaves in the run's workspace (a line in calls.log), not by rein's own log.
//
// Needs root (network namespaces); run by ./dev test as the `fault` tier.
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "rein/v1/router.grpc.pb.h"
#include "tests/cluster.h"
#include "tests/host_fleet.h"

namespace rein::testing {
namespace {

using RunProto = ::rein::v1::Run;
using ::rein::v1::RunEvent;

constexpr int kRouters = 3;
constexpr absl::Duration kLeaseTtlDuration = absl::Seconds(2);

// Three subtasks, each one mutating command that appends the subtask's id to calls.log. With
// `read_first`, the first subtask is a read-only read_file instead.
std::string StormScript(double sleep_seconds, bool read_first) {
  const std::string command = absl::StrCat("echo ${subtask} >> calls.log; sleep ", sleep_seconds);
  const std::string read_rule =
      read_first ? R"({"when": {"subtask": "s1"}, "reply": {"toolCall": {"tool": "read_file",
                     "args": {"path": "input.txt"}}}},)"
                 : "";
  return absl::StrCat(R"({
    "plan": [{"reply": {"subtasks": [
      {"id": "s1", "description": "first", "allowedTools": ["run_command", "read_file"]},
      {"id": "s2", "description": "second", "allowedTools": ["run_command", "read_file"]},
      {"id": "s3", "description": "third", "allowedTools": ["run_command", "read_file"]}]}}],
    "decide": [)",
                      read_rule, R"(
      {"reply": {"toolCall": {"tool": "run_command",
                 "args": {"shell": ")",
                      command, R"(", "timeout_seconds": 60}}}}],
    "evaluate": [
      {"when": {"subtask": "s3", "action_ok": true},
       "reply": {"status": "COMPLETED", "summary": "${subtask} done", "goalAchieved": true}},
      {"when": {"action_ok": true}, "reply": {"status": "COMPLETED", "summary": "${subtask} done"}},
      {"reply": {"status": "NEEDS_MORE_WORK", "summary": "retry ${subtask}"}}]
  })");
}

rein::v1::RunSpec StormSpec(const std::string& workspace) {
  rein::v1::RunSpec spec;
  spec.set_goal("append s1, s2 and s3 to calls.log, each once");
  spec.set_workspace(workspace);
  spec.add_tools("run_command");
  spec.add_tools("read_file");
  spec.mutable_limits()->set_max_iterations(30);
  spec.mutable_limits()->mutable_deadline()->set_seconds(600);
  spec.mutable_limits()->mutable_stage_timeout()->set_seconds(10);
  spec.mutable_limits()->set_retry_budget(20);
  return spec;
}

// The checks every scenario makes of every run it started, from the store's point of view
// (read through `router`), and of the side effects in the workspace.
struct Tally {
  int finished = 0, recovery_pauses = 0, other = 0;
};

Tally CheckRuns(HostFleet& fleet, int router, const std::map<std::string, std::string>& workspaces,
                const std::map<std::string, RunProto>& settled, bool expect_all_finished) {
  Tally tally;
  for (const auto& [run_id, workspace] : workspaces) {
    SCOPED_TRACE(run_id);
    auto it = settled.find(run_id);
    if (it == settled.end()) {
      ADD_FAILURE() << "run did not settle";
      continue;
    }
    const RunProto& run = it->second;
    const bool finished = run.state().stage() == rein::v1::FINISHED;
    const bool paused = run.state().stage() == rein::v1::PAUSED;
    if (finished) ++tally.finished;
    if (paused && run.state().pause().reason() == rein::v1::RECOVERY) ++tally.recovery_pauses;
    if (!finished && !(paused && run.state().pause().reason() == rein::v1::RECOVERY)) {
      ++tally.other;
      ADD_FAILURE() << "ended as " << run.state().ShortDebugString();
    }
    if (expect_all_finished) {
      EXPECT_TRUE(finished) << run.state().ShortDebugString();
    }

    const std::vector<RunEvent> events =
        fleet.Events(router, run_id, finished ? absl::Seconds(20) : absl::Seconds(3));
    if (events.empty()) {
      ADD_FAILURE() << "no events";
      continue;
    }
    int terminal = 0;
    std::map<std::string, int> mutating_results;  // subtask -> tool results of run_command
    for (size_t i = 0; i < events.size(); ++i) {
      EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1)) << "gap or repeat in the log";
      if (i > 0) {
        EXPECT_GE(events[i].version(), events[i - 1].version()) << "history forked";
      }
      if (events[i].has_finished()) ++terminal;
      if (events[i].has_tool_result() && events[i].tool_result().action().tool() == "run_command" &&
          events[i].tool_result().action().ok()) {
        ++mutating_results[events[i].tool_result().action().subtask_id()];
      }
    }
    EXPECT_EQ(terminal, finished ? 1 : 0);
    if (finished) {
      EXPECT_TRUE(events.back().has_finished());
    }

    // The side effects: each subtask's line at most once, and exactly once when its command's
    // result was committed.
    std::map<std::string, int> lines;
    for (absl::string_view line :
         absl::StrSplit(ReadFile(fleet.workspace_root() + "/" + workspace + "/calls.log"), '\n',
                        absl::SkipEmpty())) {
      ++lines[std::string(line)];
    }
    for (const auto& [subtask, count] : lines) {
      EXPECT_EQ(count, 1) << "mutating call for " << subtask << " ran " << count << " times";
    }
    for (const auto& [subtask, results] : mutating_results) {
      EXPECT_EQ(results, 1) << subtask;
      EXPECT_EQ(lines[subtask], 1) << "committed result without its side effect: " << subtask;
    }
    if (finished) {
      std::set<std::string> completed;
      for (const auto& subtask : run.state().completed_subtasks()) {
        EXPECT_EQ(subtask.status(), rein::v1::SubTask::COMPLETED);
        completed.insert(subtask.id());
      }
      EXPECT_EQ(completed, (std::set<std::string>{"s1", "s2", "s3"})) << "completed subtask lost";
    }
  }
  return tally;
}

class MultiHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root for network namespaces";
  }

  // Starts `count` runs spread round-robin over the routers (skipping `skip_router`).
  std::map<std::string, std::string> StartStorm(int count, const std::string& prefix,
                                                std::map<std::string, int>* started_on = nullptr,
                                                int skip_router = -1) {
    std::map<std::string, std::string> workspaces;
    for (int i = 0; i < count; ++i) {
      int router = i % kRouters;
      if (router == skip_router) router = (router + 1) % kRouters;
      const std::string workspace = absl::StrCat(prefix, i);
      fleet_.MakeWorkspace(workspace);
      absl::StatusOr<RunProto> run =
          fleet_.StartRun(router, StormSpec(workspace), absl::StrCat(prefix, "-req-", i));
      EXPECT_TRUE(run.ok()) << run.status();
      if (!run.ok()) continue;
      workspaces[run->run_id()] = workspace;
      if (started_on != nullptr) (*started_on)[run->run_id()] = router;
    }
    return workspaces;
  }

  static std::vector<std::string> Ids(const std::map<std::string, std::string>& workspaces) {
    std::vector<std::string> ids;
    for (const auto& [id, workspace] : workspaces) ids.push_back(id);
    return ids;
  }

  HostFleet fleet_;
};

TEST_F(MultiHostTest, ThreeHundredRunsSpreadOverThreeRoutersAllFinish) {
  ASSERT_NO_FATAL_FAILURE(fleet_.Start(StormScript(0.05, false)));
  std::map<std::string, int> started_on;
  const auto workspaces = StartStorm(300, "a", &started_on);
  ASSERT_EQ(workspaces.size(), 300u);
  const auto settled = fleet_.WaitSettled(0, Ids(workspaces), absl::Minutes(3));
  const Tally tally = CheckRuns(fleet_, 1, workspaces, settled, /*expect_all_finished=*/true);
  EXPECT_EQ(tally.finished, 300) << fleet_.Logs();
  // Each run stays with the router that accepted it.
  for (const auto& [run_id, router] : started_on) {
    EXPECT_EQ(settled.at(run_id).owner(), absl::StrCat("router-", router)) << run_id;
  }
}

TEST_F(MultiHostTest, KilledRoutersRunsAreTakenOverSpreadAndFinishWithoutRecovery) {
  ASSERT_NO_FATAL_FAILURE(fleet_.Start(StormScript(0.5, false)));
  std::map<std::string, int> started_on;
  const auto workspaces = StartStorm(60, "b", &started_on);
  absl::SleepFor(absl::Milliseconds(700));  // mid-storm: calls in flight everywhere
  fleet_.KillRouter(0);
  // A COMMIT the server had received is still applied after its client died.
  absl::SleepFor(absl::Milliseconds(200));
  // Router 0's runs that had not ended when it died: those must be taken over. (Read after the
  // kill, and well inside the lease's ttl: a run read as unfinished just before the kill could
  // still have ended on router 0.)
  std::set<std::string> in_flight;
  for (const auto& [run_id, router] : started_on) {
    if (router != 0) continue;
    absl::StatusOr<RunProto> run = fleet_.GetRun(1, run_id);
    ASSERT_TRUE(run.ok()) << run.status();
    const rein::v1::Stage stage = run->state().stage();
    if (stage != rein::v1::FINISHED && stage != rein::v1::FAILED && stage != rein::v1::CANCELLED) {
      in_flight.insert(run_id);
    }
  }
  ASSERT_GE(in_flight.size(), 2u) << "the kill should land while router 0 drives runs";
  const auto settled = fleet_.WaitSettled(1, Ids(workspaces), absl::Minutes(2));
  const Tally tally = CheckRuns(fleet_, 2, workspaces, settled, /*expect_all_finished=*/true);
  EXPECT_EQ(tally.recovery_pauses, 0) << "every executor lived: no outcome was unknown";
  std::set<std::string> new_owners;
  for (const std::string& run_id : in_flight) {
    const RunProto& run = settled.at(run_id);
    new_owners.insert(run.owner());
    EXPECT_NE(run.owner(), "router-0") << run_id;
    EXPECT_GE(run.lease_epoch(), 2) << run_id;
  }
  EXPECT_EQ(new_owners.size(), 2u) << "takeover should be spread over both live routers";
  if (HasFailure()) std::cerr << fleet_.Logs();
}

TEST_F(MultiHostTest, RouterCutFromTheStoreIsFencedAndNothingIsCommittedTwice) {
  ASSERT_NO_FATAL_FAILURE(fleet_.Start(StormScript(0.3, false)));
  std::map<std::string, int> started_on;
  const auto workspaces = StartStorm(45, "c", &started_on);
  absl::SleepFor(absl::Milliseconds(800));
  ASSERT_TRUE(fleet_.SetLinkUp("router0", false).ok());
  absl::SleepFor(3 * kLeaseTtlDuration);
  ASSERT_TRUE(fleet_.SetLinkUp("router0", true).ok());
  const auto settled = fleet_.WaitSettled(1, Ids(workspaces), absl::Minutes(2));
  CheckRuns(fleet_, 2, workspaces, settled, /*expect_all_finished=*/true);
  int taken = 0;
  for (const auto& [run_id, router] : started_on) {
    if (router == 0 && settled.at(run_id).owner() != "router-0") ++taken;
  }
  EXPECT_GT(taken, 0) << "the cut router's runs should have been taken over";
  // The healed router rejoins and serves again.
  absl::StatusOr<RunProto> any = fleet_.GetRun(0, workspaces.begin()->first);
  EXPECT_TRUE(any.ok()) << any.status();
  if (HasFailure()) std::cerr << fleet_.Logs();
}

TEST_F(MultiHostTest, KilledExecutorPausesOnlyTrulyUnknownCallsAndReadsContinue) {
  ASSERT_NO_FATAL_FAILURE(fleet_.Start(StormScript(2.0, /*read_first=*/true)));
  const auto workspaces = StartStorm(30, "d");
  absl::SleepFor(absl::Seconds(1.5));  // reads done, the 2 s mutating calls in flight
  fleet_.KillExecutor(0);
  const auto settled = fleet_.WaitSettled(0, Ids(workspaces), absl::Minutes(2));
  const Tally tally = CheckRuns(fleet_, 0, workspaces, settled, /*expect_all_finished=*/false);
  EXPECT_EQ(tally.other, 0);
  EXPECT_GT(tally.recovery_pauses, 0) << "calls in flight on the killed executor are unknown";
  EXPECT_GT(tally.finished, 0) << "runs on the other executors go on";
  for (const auto& [run_id, run] : settled) {
    if (run.state().stage() != rein::v1::PAUSED) continue;
    // Paused for a call the killed executor started (its side effect may or may not exist).
    EXPECT_EQ(run.state().pause().pending_call().tool(), "run_command");
  }
  if (HasFailure()) std::cerr << fleet_.Logs();
}

TEST_F(MultiHostTest, ExecutorCutOffFailsOverWithoutSpendingBudgetOnCallsThatNeverReachedIt) {
  ASSERT_NO_FATAL_FAILURE(fleet_.Start(StormScript(0.2, /*read_first=*/true)));
  const auto workspaces = StartStorm(45, "e");
  absl::SleepFor(absl::Milliseconds(500));
  ASSERT_TRUE(fleet_.SetLinkUp("exec2", false).ok());
  const auto settled = fleet_.WaitSettled(0, Ids(workspaces), absl::Minutes(3));
  CheckRuns(fleet_, 0, workspaces, settled, /*expect_all_finished=*/true);
  for (const auto& [run_id, run] : settled) {
    for (const RunEvent& event : fleet_.Events(0, run_id, absl::Seconds(10))) {
      if (event.has_error() && event.error().code() == "UNAVAILABLE") {
        EXPECT_FALSE(event.error().retry_spent())
            << run_id << ": budget spent on a call that never reached an executor";
      }
    }
  }
  ASSERT_TRUE(fleet_.SetLinkUp("exec2", true).ok());
  if (HasFailure()) std::cerr << fleet_.Logs();
}

TEST_F(MultiHostTest, WatchOnOneRouterReviewOnAnotherWhileAThirdDrives) {
  ASSERT_NO_FATAL_FAILURE(fleet_.Start(StormScript(0.05, false)));
  fleet_.MakeWorkspace("f0");
  rein::v1::RunSpec spec = StormSpec("f0");
  spec.add_pause_points(rein::v1::BEFORE_MUTATING_TOOL);
  absl::StatusOr<RunProto> started = fleet_.StartRun(2, spec, "f-req");  // router 2 drives
  ASSERT_TRUE(started.ok()) << started.status();
  const std::string run_id = started->run_id();

  // Router 0 follows the run live.
  std::vector<std::pair<absl::Time, RunEvent>> seen;
  absl::Mutex mu;
  std::thread watcher([&] {
    rein::v1::WatchRunRequest request;
    request.set_run_id(run_id);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Minutes(2)));
    auto reader = fleet_.router(0)->WatchRun(&context, request);
    RunEvent event;
    while (reader->Read(&event)) {
      absl::MutexLock lock(&mu);
      seen.emplace_back(absl::Now(), event);
    }
  });
  // Three pauses (one per mutating call), each reviewed on router 1.
  for (int review = 0; review < 3; ++review) {
    absl::StatusOr<RunProto> paused;
    const absl::Time until = absl::Now() + absl::Seconds(30);
    do {
      paused = fleet_.GetRun(1, run_id);
      ASSERT_TRUE(paused.ok()) << paused.status();
      if (paused->state().stage() == rein::v1::PAUSED) break;
      absl::SleepFor(absl::Milliseconds(50));
    } while (absl::Now() < until);
    ASSERT_EQ(paused->state().stage(), rein::v1::PAUSED) << fleet_.Logs();
    rein::v1::ResumeRunRequest request;
    request.set_run_id(run_id);
    request.set_expected_version(paused->state().version());
    request.mutable_review()->mutable_approve();
    RunProto resumed;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    const absl::Time reviewed_at = absl::Now();
    grpc::Status status = fleet_.router(1)->ResumeRun(&context, request, &resumed);
    ASSERT_TRUE(status.ok()) << status.error_message();
    // The watcher on router 0 sees the review, then the run moving on (the owner, router 2,
    // was woken: its tool result follows).
    const absl::Time wait_until = absl::Now() + absl::Seconds(30);
    bool resumed_seen = false, moved_on = false;
    while (absl::Now() < wait_until && !moved_on) {
      {
        absl::MutexLock lock(&mu);
        for (const auto& [at, event] : seen) {
          if (event.version() <= paused->state().version()) continue;
          if (event.has_resumed()) {
            if (!resumed_seen) {
              std::cerr << "review " << review << ": resumed seen on router 0 after "
                        << absl::FormatDuration(at - reviewed_at) << "\n";
            }
            resumed_seen = true;
          }
          if (event.has_tool_result()) {
            if (!moved_on) {
              std::cerr << "review " << review << ": tool result seen after "
                        << absl::FormatDuration(at - reviewed_at) << "\n";
            }
            moved_on = true;
          }
        }
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    EXPECT_TRUE(resumed_seen);
    EXPECT_TRUE(moved_on);
  }
  watcher.join();
  absl::MutexLock lock(&mu);
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(seen.back().second.has_finished()) << "the watch ends with the terminal event";
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].second.seq(), int64_t(i + 1));
}

TEST_F(MultiHostTest, PostgresKilledAndRestartedLosesNothingAcknowledged) {
  ASSERT_NO_FATAL_FAILURE(fleet_.Start(StormScript(0.3, false)));
  const auto workspaces = StartStorm(30, "g");
  absl::SleepFor(absl::Seconds(1));
  // What the store acknowledged before the kill: each run's committed version.
  std::map<std::string, int64_t> acknowledged;
  for (const auto& [run_id, workspace] : workspaces) {
    absl::StatusOr<RunProto> run = fleet_.GetRun(0, run_id);
    ASSERT_TRUE(run.ok()) << run.status();
    acknowledged[run_id] = run->state().version();
  }
  fleet_.KillPostgres();
  absl::SleepFor(absl::Seconds(2));
  // Meanwhile the routers keep serving; what needs the store is UNAVAILABLE.
  absl::StatusOr<RunProto> during = fleet_.GetRun(1, workspaces.begin()->first);
  if (!during.ok()) {
    EXPECT_EQ(during.status().code(), absl::StatusCode::kUnavailable);
  }
  ASSERT_NO_FATAL_FAILURE(fleet_.StartPostgres());
  const auto settled = fleet_.WaitSettled(0, Ids(workspaces), absl::Minutes(2));
  CheckRuns(fleet_, 1, workspaces, settled, /*expect_all_finished=*/true);
  for (const auto& [run_id, version] : acknowledged) {
    EXPECT_GE(settled.at(run_id).state().version(), version) << run_id;
  }
  if (HasFailure()) std::cerr << fleet_.Logs();
}

}  // namespace
}  // namespace rein::testing
