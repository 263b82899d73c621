// Tests of a command behind its gate, through the tool executor: its sandbox is set up while
// the claim is flushed and the workspace snapshotted, and the command runs only after both.
// Real bubblewrap and rein-sandbox-gate; skipped where there is no sandbox.
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/testing/host_processes.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/tool_executor.h"
#include "executor_service/workspace/workspace_history.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::rein::testing::HostProcessWithCmdline;
using ::rein::testing::TempWorkspace;

std::string GatePath() {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/rein/executor_service/rein-sandbox-gate");
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string Token() {
  std::random_device random;
  return absl::StrCat("gate-", random() % 1000000000);
}

class GatedExecutorTest : public ::testing::Test {
 protected:
  // An executor with rein-sandbox-gate (unless `gate` is empty) and snapshots, whose claim
  // flushes call `flushed` first.
  void Make(std::function<void()> flushed, std::string gate = GatePath()) {
    WorkspaceHistoryOptions history;
    history.retention = 4;
    history.placeholders = &placeholders_;
    history_ = std::make_unique<WorkspaceHistory>(temp_.root(), history);
    ExecutorOptions options;
    options.workspace_root = temp_.root();
    options.executor_id = "exec-1";
    options.history = history_.get();
    options.sandbox.gate_binary = std::move(gate);
    options.sandbox.placeholders = &placeholders_;
    options.journal.after_claim_flush = std::move(flushed);
    absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = ToolExecutor::Create(options);
    ASSERT_TRUE(executor.ok()) << executor.status();
    executor_ = *std::move(executor);
  }

  bool Sandboxed() const { return executor_->sandbox().state() == Sandbox::State::kBwrap; }

  absl::StatusOr<ExecuteOutcome> RunCommand(const std::string& shell, int timeout_seconds = 30) {
    ExecuteCall call;
    call.call_id = absl::StrCat("run-1-", ++calls_);
    call.run_id = "run-1";
    call.workspace = TempWorkspace::kName;
    call.tool = "run_command";
    call.args_json = nlohmann::json{{"shell", shell}, {"timeout_seconds", timeout_seconds}}.dump();
    return executor_->ExecuteOnce(call);
  }

  TempWorkspace temp_;
  SandboxPlaceholders placeholders_;
  std::unique_ptr<WorkspaceHistory> history_;
  std::unique_ptr<ToolExecutor> executor_;
  int calls_ = 0;
};

TEST_F(GatedExecutorTest, TheSandboxIsSetUpDuringTheFlushAndTheCommandRunsAfterIt) {
  const std::string token = Token();
  const std::string marker = temp_.Path(token);
  std::atomic<bool> set_up_during_flush{false};
  std::atomic<bool> ran_during_flush{false};
  std::atomic<int64_t> flushed_ns{0};
  Make([&] {
    // The flush is held until the command's sandbox is seen on the host (at most 5 s).
    const absl::Time until = absl::Now() + absl::Seconds(5);
    while (!set_up_during_flush && absl::Now() < until) {
      set_up_during_flush = HostProcessWithCmdline(token);
      if (!set_up_during_flush) absl::SleepFor(absl::Milliseconds(5));
    }
    absl::SleepFor(absl::Milliseconds(200));
    ran_during_flush = Exists(marker);
    flushed_ns = absl::ToUnixNanos(absl::Now());
  });
  if (!Sandboxed()) GTEST_SKIP() << "no sandbox here: " << executor_->SandboxDescription();
  ASSERT_TRUE(executor_->sandbox().StartsBehindGate()) << executor_->SandboxDescription();
  EXPECT_TRUE(absl::StrContains(executor_->SandboxDescription(),
                                "set up while the call's claim is made durable"));

  absl::StatusOr<ExecuteOutcome> ran = RunCommand(absl::StrCat("touch ", token, " && echo done"));
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(ran->result.ok) << ran->result.error_message;
  EXPECT_EQ(ran->result.output, "done\n");
  EXPECT_TRUE(set_up_during_flush);
  EXPECT_FALSE(ran_during_flush);
  struct stat st;
  ASSERT_EQ(stat(marker.c_str(), &st), 0);
  // File times come from a coarse clock (a few ms); 50 ms of slack.
  EXPECT_GE(absl::ToUnixNanos(absl::TimeFromTimespec(st.st_mtim)),
            flushed_ns.load() - absl::ToInt64Nanoseconds(absl::Milliseconds(50)));
  // The snapshot taken while the sandbox was set up holds neither the command's file nor the
  // placeholder the set-up put in the workspace for .git.
  const std::string snapshot =
      absl::StrCat(temp_.root(), "/", kWorkspaceHistoryDir, "/runs/run-1/run-1-1");
  ASSERT_TRUE(Exists(snapshot));
  EXPECT_FALSE(Exists(absl::StrCat(snapshot, "/", token)));
  EXPECT_FALSE(Exists(absl::StrCat(snapshot, "/.git")));
  EXPECT_FALSE(Exists(temp_.Path(".git")));  // the placeholder went with the sandbox

  // Asked again, the call is answered from the journal: no sandbox, nothing run.
  ASSERT_EQ(unlink(marker.c_str()), 0);
  --calls_;
  absl::StatusOr<ExecuteOutcome> again = RunCommand(absl::StrCat("touch ", token, " && echo done"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->replayed);
  EXPECT_FALSE(Exists(marker));
}

TEST_F(GatedExecutorTest, TheTimeoutCountsFromTheGatesOpening) {
  // A flush of 1.5 s and a command of 0.5 s with a 1 s timeout: not timed out.
  Make([] { absl::SleepFor(absl::Milliseconds(1500)); });
  if (!Sandboxed()) GTEST_SKIP() << "no sandbox here: " << executor_->SandboxDescription();
  absl::StatusOr<ExecuteOutcome> ran = RunCommand("sleep 0.5; echo slept", /*timeout_seconds=*/1);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_TRUE(ran->result.ok) << ran->result.error_message;
  EXPECT_EQ(ran->result.output, "slept\n");
  // And still holds after it.
  absl::StatusOr<ExecuteOutcome> slow = RunCommand("sleep 30", /*timeout_seconds=*/1);
  ASSERT_TRUE(slow.ok()) << slow.status();
  EXPECT_TRUE(slow->result.timed_out);
}

TEST_F(GatedExecutorTest, AGateProgramThatDoesNotWorkLeavesCommandsAfterTheClaim) {
  // /bin/false is no gate: the probe through it fails, commands are set up after the claim.
  std::atomic<bool> ran_during_flush{false};
  const std::string marker = temp_.Path("ran");
  Make(
      [&] {
        absl::SleepFor(absl::Milliseconds(200));
        ran_during_flush = Exists(marker);
      },
      "/bin/false");
  if (!Sandboxed()) GTEST_SKIP() << "no sandbox here: " << executor_->SandboxDescription();
  EXPECT_FALSE(executor_->sandbox().StartsBehindGate());
  EXPECT_TRUE(absl::StrContains(executor_->SandboxDescription(), "set up after the claim (gate:"))
      << executor_->SandboxDescription();
  absl::StatusOr<ExecuteOutcome> ran = RunCommand("touch ran && echo done");
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->result.output, "done\n");
  EXPECT_FALSE(ran_during_flush);
  EXPECT_TRUE(Exists(marker));
}

TEST(GatedExecutorOptionsTest, AGateThatIsNotAnExecutableIsRefusedByName) {
  TempWorkspace temp;
  ExecutorOptions options;
  options.workspace_root = temp.root();
  options.executor_id = "exec-1";
  options.sandbox.gate_binary = "/nonexistent/rein-sandbox-gate";
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = ToolExecutor::Create(options);
  if (executor.ok()) {
    // Only a working sandbox looks at the gate.
    ASSERT_NE((*executor)->sandbox().state(), Sandbox::State::kBwrap);
    GTEST_SKIP() << "no sandbox here";
  }
  EXPECT_EQ(executor.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      absl::StrContains(executor.status().message(),
                        "sandbox_gate: /nonexistent/rein-sandbox-gate is not an executable"))
      << executor.status();
}

}  // namespace
}  // namespace rein
