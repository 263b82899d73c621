// The call journal and executor failover end to end: several real executors on one workspace
// root, a real router and the scripted planner; executors and the router SIGKILLed mid-call.
// Side effects are counted in the workspace, not by rein's own log.
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "rein/v1/executor.grpc.pb.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

// One mutating command, then the goal is achieved. The command appends to runs.log (the side
// effect counted) and, the first time only, sleeps SLEEP seconds.
constexpr char kCommandScript[] = R"({
  "plan": [{"when": {"completed_contains": "cmd"}, "reply": {"goalAchieved": true}},
           {"reply": {"subtasks": [{"id": "cmd", "description": "count", "allowedTools": ["run_command"]}]}}],
  "decide": [{"reply": {"toolCall": {"tool": "run_command",
              "args": {"shell": "echo ran >> runs.log; if [ $(wc -l < runs.log) -eq 1 ]; then sleep SLEEP; fi; echo done", "timeout_seconds": 60}}}}],
  "evaluate": [{"when": {"action_ok": true}, "reply": {"status": "COMPLETED", "summary": "${observation}"}},
               {"reply": {"status": "FAILED", "summary": "${observation}"}}]
})";

// Three read-only steps per run.
constexpr char kReadOnlyScript[] = R"({
  "plan": [
    {"when": {"completed_contains": "search"}, "reply": {"goalAchieved": true}},
    {"reply": {"subtasks": [
      {"id": "list", "description": "list files", "allowedTools": ["list_files"]},
      {"id": "read", "description": "read the readme", "allowedTools": ["read_file"]},
      {"id": "search", "description": "search for TODO", "allowedTools": ["search_text"]}]}}
  ],
  "decide": [
    {"when": {"subtask": "list"}, "delay_ms": 50, "reply": {"toolCall": {"tool": "list_files", "args": {"path": "."}}}},
    {"when": {"subtask": "read"}, "delay_ms": 50, "reply": {"toolCall": {"tool": "read_file", "args": {"path": "README.md"}}}},
    {"when": {"subtask": "search"}, "delay_ms": 50, "reply": {"toolCall": {"tool": "search_text", "args": {"pattern": "TODO"}}}}
  ],
  "evaluate": [
    {"when": {"action_ok": true}, "reply": {"status": "COMPLETED", "summary": "${subtask}: ok"}},
    {"reply": {"status": "NEEDS_MORE_WORK", "summary": "failed"}}
  ]
})";

std::string WithSleep(int seconds) {
  std::string out = kCommandScript;
  out.replace(out.find("SLEEP"), 5, std::to_string(seconds));
  return out;
}

// The parent pid of `pid` (0 when it is gone).
pid_t ParentOf(pid_t pid) {
  std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::vector<std::string> fields = absl::StrSplit(stat.substr(close + 2), ' ');
  int parent = 0;
  if (fields.size() < 2 || !absl::SimpleAtoi(fields[1], &parent)) return 0;
  return parent;
}

// Whether a `sleep` process runs beneath `ancestor`.
bool RunsSleep(pid_t ancestor) {
  bool found = false;
  DIR* proc = opendir("/proc");
  while (dirent* e = proc ? readdir(proc) : nullptr) {
    int pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
    if (ReadFile(absl::StrCat("/proc/", pid, "/comm")) != "sleep\n") continue;
    for (pid_t p = pid; p > 1 && !found; p = ParentOf(p)) found = p == ancestor;
  }
  if (proc) closedir(proc);
  return found;
}

class JournalEndToEndTest : public ::testing::Test {
 protected:
  void Boot(const std::string& script, int executors) {
    dir_ = absl::StrCat(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", "/journal-",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    mkdir(dir_.c_str(), 0755);
    mkdir((dir_ + "/workspaces").c_str(), 0755);
    ws_ = dir_ + "/workspaces/repo";
    mkdir(ws_.c_str(), 0755);
    std::ofstream(ws_ + "/README.md") << "# repo\nTODO: docs\n";
    Cluster::Options options;
    options.dir = dir_;
    options.script_json = script;
    options.executors = executors;
    options.executor_flags = {"--sandbox=none", "--allow_unsandboxed",
                              "--journal_liveness_timeout=3s"};
    cluster_ = std::make_unique<Cluster>(options);
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
  }

  rein::v1::RunSpec Spec(bool mutating) {
    rein::v1::RunSpec spec;
    spec.set_goal("work on the repo");
    spec.set_workspace("repo");
    if (mutating) spec.add_tools("run_command");
    spec.mutable_limits()->mutable_deadline()->set_seconds(120);
    return spec;
  }

  // Every event of a run until its end; checks the log has no gaps and one terminal event.
  std::vector<rein::v1::RunEvent> WatchAll(const std::string& run_id) {
    std::vector<rein::v1::RunEvent> events;
    grpc::Status status = cluster_->Watch(run_id, 0, absl::Seconds(90), &events);
    EXPECT_TRUE(status.ok()) << status.error_message();
    int finished = 0;
    for (size_t i = 0; i < events.size(); ++i) {
      EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
      finished += events[i].has_finished();
    }
    EXPECT_EQ(finished, 1) << cluster_->Logs();
    return events;
  }

  std::string RunsLog() const { return ReadFile(ws_ + "/runs.log"); }

  void WaitForRunsLog() {
    for (int i = 0; i < 1000 && RunsLog().empty(); ++i) absl::SleepFor(absl::Milliseconds(10));
  }

  std::string dir_, ws_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(JournalEndToEndTest, SameCallIdOnTwoExecutorsRunsOnceAndIsReplayed) {
  Boot(WithSleep(0), /*executors=*/2);
  rein::v1::ExecuteRequest request;
  request.set_call_id("e2e-call-1");
  request.set_run_id("e2e-run");
  request.set_workspace("repo");
  request.set_tool("run_command");
  request.set_args_json(R"({"shell": "echo ran >> runs.log; wc -l < runs.log"})");
  rein::v1::ExecuteResponse replies[2];
  for (int i = 0; i < 2; ++i) {
    auto channel =
        grpc::CreateChannel(cluster_->executor_target(i), grpc::InsecureChannelCredentials());
    auto stub = rein::v1::Executor::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    grpc::Status status = stub->Execute(&context, request, &replies[i]);
    ASSERT_TRUE(status.ok()) << status.error_message() << cluster_->Logs();
  }
  EXPECT_FALSE(replies[0].replayed());
  EXPECT_EQ(replies[0].executor_id(), "executor-0");
  EXPECT_TRUE(replies[1].replayed());
  EXPECT_EQ(replies[1].executor_id(), "executor-0");  // the one that ran it
  EXPECT_EQ(replies[1].output(), replies[0].output());
  EXPECT_EQ(RunsLog(), "ran\n");  // the side effect happened once
}

TEST_F(JournalEndToEndTest, ExecutorKilledMidCallPausesRecoveryAndApprovalRunsItAgain) {
  Boot(WithSleep(30), /*executors=*/2);
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(Spec(/*mutating=*/true));
  ASSERT_TRUE(run.ok()) << run.status();
  WaitForRunsLog();
  ASSERT_EQ(RunsLog(), "ran\n") << cluster_->Logs();
  int running = -1;
  for (int attempt = 0; attempt < 100 && running < 0; ++attempt) {
    for (int i = 0; i < 2; ++i) {
      if (RunsSleep(cluster_->executor(i)->pid())) running = i;
    }
    if (running < 0) absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_GE(running, 0) << "no executor runs the command";
  cluster_->executor(running)->Kill(SIGKILL);
  cluster_->executor(running)->Wait(absl::Seconds(10));
  absl::StatusOr<rein::v1::Run> paused =
      cluster_->WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(60));
  ASSERT_TRUE(paused.ok()) << paused.status();
  ASSERT_EQ(paused->state().stage(), rein::v1::PAUSED) << cluster_->Logs();
  EXPECT_EQ(paused->state().pause().reason(), rein::v1::RECOVERY);
  EXPECT_NE(paused->state().pause().detail().find("died mid-call"), std::string::npos)
      << paused->state().pause().detail();
  EXPECT_EQ(paused->state().pause().pending_call().tool(), "run_command");
  EXPECT_EQ(paused->state().retries_used(), 0);
  EXPECT_EQ(RunsLog(), "ran\n");  // not repeated on its own
  // A person approves: it runs again, as a new call, on the executor that is left.
  absl::StatusOr<rein::v1::Run> resumed = cluster_->Approve(*paused);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  std::vector<rein::v1::RunEvent> events = WatchAll(run->run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  EXPECT_EQ(RunsLog(), "ran\nran\n");
}

TEST_F(JournalEndToEndTest, RouterKilledAfterDispatchContinuesWithTheReplayedReply) {
  Boot(WithSleep(2), /*executors=*/2);
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(Spec(/*mutating=*/true));
  ASSERT_TRUE(run.ok()) << run.status();
  WaitForRunsLog();
  ASSERT_EQ(RunsLog(), "ran\n") << cluster_->Logs();
  EXPECT_NE(cluster_->KillRouter(SIGKILL), -1);
  absl::SleepFor(absl::Seconds(3));  // the command finishes while no router is there
  ASSERT_TRUE(cluster_->StartRouter()) << cluster_->Logs();
  std::vector<rein::v1::RunEvent> events = WatchAll(run->run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  int replayed = 0;
  for (const auto& e : events) {
    EXPECT_FALSE(e.has_paused()) << e.DebugString();  // 0 RECOVERY pauses
    replayed += e.has_call_replayed();
  }
  EXPECT_EQ(replayed, 1);
  EXPECT_EQ(RunsLog(), "ran\n");  // ran once
  absl::StatusOr<rein::v1::Run> done = cluster_->GetRun(run->run_id());
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state().retries_used(), 0);
  // The run ended: its journal goes (ForgetRun is sent after the end, best effort).
  const std::string journal = absl::StrCat(dir_, "/workspaces/.rein-journal/runs/", run->run_id());
  struct stat st;
  for (int i = 0; i < 200 && stat(journal.c_str(), &st) == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_NE(stat(journal.c_str(), &st), 0) << journal;
}

TEST_F(JournalEndToEndTest, ExecutorKilledAndRestartedMidRunCostsNoBudget) {
  Boot(kReadOnlyScript, /*executors=*/3);
  std::vector<std::string> ids;
  auto start = [&](int n) {
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(Spec(/*mutating=*/false));
      ASSERT_TRUE(run.ok()) << run.status();
      ids.push_back(run->run_id());
    }
  };
  start(12);
  absl::SleepFor(absl::Milliseconds(150));
  cluster_->executor(1)->Kill(SIGKILL);  // removed mid-run
  cluster_->executor(1)->Wait(absl::Seconds(10));
  start(12);
  ASSERT_TRUE(cluster_->RestartExecutor(1)) << cluster_->Logs();  // and added back
  start(12);
  for (const std::string& id : ids) {
    std::vector<rein::v1::RunEvent> events = WatchAll(id);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED) << id;
    absl::StatusOr<rein::v1::Run> done = cluster_->GetRun(id);
    ASSERT_TRUE(done.ok());
    EXPECT_EQ(done->state().retries_used(), 0) << id;
  }
}

}  // namespace
}  // namespace rein::testing
