// Mutating tools end to end, with the real executor under bubblewrap: the BEFORE_MUTATING_TOOL
// pause, and a router killed while a mutating command runs (the call is asked again with the
// same call_id and the executor's call journal answers: it never runs twice).
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/cluster.h"
#ifdef REIN_HOSTILE_WORKSPACE
// The security suite's build of this file (//tests:sandbox_e2e_hostile_workspace_test): the
// workspace also holds a 10 GB sparse file with a hard link and a tree 30,000 directories
// deep, on a tmpfs (TEST_TMPDIR), with the executor's workspace snapshots on (the default).
#include "executor_service/testing/hostile_tree.h"
#endif

namespace rein::testing {
namespace {

class SandboxEndToEndTest : public ::testing::Test {
 protected:
  void Boot(const std::string& script) {
    dir_ = absl::StrCat(getenv("TEST_TMPDIR"), "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    mkdir(dir_.c_str(), 0755);
    mkdir((dir_ + "/workspaces").c_str(), 0755);
    ws_ = dir_ + "/workspaces/repo";
    mkdir(ws_.c_str(), 0755);
    std::ofstream(ws_ + "/README.md") << "# repo\n";
#ifdef REIN_HOSTILE_WORKSPACE
    ASSERT_TRUE(PlantHostileWorkspace(ws_).ok());
#endif
    Cluster::Options options;
    options.dir = dir_;
    options.script_json = script;
    options.executor_flags = {"--sandbox=bwrap"};
    cluster_ = std::make_unique<Cluster>(options);
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
  }

  rein::v1::RunSpec Spec() {
    rein::v1::RunSpec spec;
    spec.set_goal("change the repo");
    spec.set_workspace("repo");
    spec.add_tools("write_file");
    spec.add_tools("run_command");
    spec.add_tools("read_file");
    spec.mutable_limits()->mutable_deadline()->set_seconds(120);
    return spec;
  }

  std::string dir_, ws_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(SandboxEndToEndTest, HealthSaysTheExecutorIsSandboxed) {
  Boot(R"({"plan": [{"reply": {"goalAchieved": true}}]})");
  Process probe(
      "health",
      {RunfilePath("common/rein-health"), cluster_->executor_target(), "rein.v1.Executor.sandbox"},
      dir_ + "/probe.log");
  ASSERT_TRUE(probe.Start());
  EXPECT_EQ(probe.Wait(absl::Seconds(10)), 0) << ReadFile(dir_ + "/probe.log");
  EXPECT_NE(ReadFile(dir_ + "/probe.log").find(" SERVING"), std::string::npos);
}

TEST_F(SandboxEndToEndTest, BeforeMutatingToolPausesThenApprovedWriteLands) {
  Boot(R"({
    "plan": [{"when": {"completed_contains": "write"}, "reply": {"goalAchieved": true}},
             {"reply": {"subtasks": [{"id": "write", "description": "write the report", "allowedTools": ["write_file"]}]}}],
    "decide": [{"reply": {"toolCall": {"tool": "write_file", "args": {"path": "out/report.txt", "content": "hello from rein\n"}}}}],
    "evaluate": [{"when": {"action_ok": true}, "reply": {"status": "COMPLETED", "summary": "written"}},
                 {"reply": {"status": "FAILED", "summary": "${observation}"}}]
  })");
  rein::v1::RunSpec spec = Spec();
  spec.add_pause_points(rein::v1::BEFORE_MUTATING_TOOL);
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok()) << run.status();
  absl::StatusOr<rein::v1::Run> paused =
      cluster_->WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(30));
  ASSERT_TRUE(paused.ok());
  ASSERT_EQ(paused->state().stage(), rein::v1::PAUSED) << cluster_->Logs();
  EXPECT_EQ(paused->state().pause().point(), rein::v1::BEFORE_MUTATING_TOOL);
  EXPECT_EQ(paused->state().pause().pending_call().tool(), "write_file");
  struct stat st;
  EXPECT_NE(stat((ws_ + "/out/report.txt").c_str(), &st), 0);  // nothing written before review
  ASSERT_TRUE(cluster_->Approve(*paused).ok());
  std::vector<rein::v1::RunEvent> events;
  ASSERT_TRUE(cluster_->Watch(run->run_id(), 0, absl::Seconds(60), &events).ok());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED)
      << events.back().DebugString();
  EXPECT_EQ(ReadFile(ws_ + "/out/report.txt"), "hello from rein\n");
}

TEST_F(SandboxEndToEndTest, RouterKilledDuringMutatingCommandContinuesFromTheJournal) {
  Boot(R"({
    "plan": [{"when": {"completed_contains": "cmd"}, "reply": {"goalAchieved": true}},
             {"reply": {"subtasks": [{"id": "cmd", "description": "count", "allowedTools": ["run_command"]}]}}],
    "decide": [{"reply": {"toolCall": {"tool": "run_command",
                "args": {"shell": "echo ran >> runs.log; sleep 2; echo done", "timeout_seconds": 30}}}}],
    "evaluate": [{"when": {"action_ok": true}, "reply": {"status": "COMPLETED", "summary": "${observation}"}},
                 {"reply": {"status": "FAILED", "summary": "${observation}"}}]
  })");
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(Spec());
  ASSERT_TRUE(run.ok()) << run.status();
  // Wait until the command is running (its first line is on disk), then kill the router.
  for (int i = 0; i < 1000 && ReadFile(ws_ + "/runs.log").empty(); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_EQ(ReadFile(ws_ + "/runs.log"), "ran\n") << cluster_->Logs();
  EXPECT_NE(cluster_->KillRouter(SIGKILL), -1);
  ASSERT_TRUE(cluster_->StartRouter()) << cluster_->Logs();
  // The call is asked again with the same call_id: the executor's journal waits for the
  // command and answers with its reply; nothing runs twice and no person is asked.
  std::vector<rein::v1::RunEvent> events;
  ASSERT_TRUE(cluster_->Watch(run->run_id(), 0, absl::Seconds(60), &events).ok());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED)
      << cluster_->Logs();
  EXPECT_EQ(ReadFile(ws_ + "/runs.log"), "ran\n");  // once
  int pauses = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
    pauses += events[i].has_paused();
  }
  EXPECT_EQ(pauses, 0);
}

}  // namespace
}  // namespace rein::testing
