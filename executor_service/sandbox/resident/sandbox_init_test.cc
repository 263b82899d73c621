// What a command must not be able to leave behind for the next command of its run in the
// resident sandbox (SANDBOX.md, "Resident sandbox"), beyond what the escape suite in
// run_command_tool_test covers: changes to rein-sandbox-init itself (its limits, priority,
// affinity, I/O priority, OOM score), a /dev/shm replaced by a symbolic link or a file, the
// environment's PATH, and a run forgotten while its command runs. Real bubblewrap.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/sandbox/resident/sandbox_init_limits.h"
#include "executor_service/sandbox/sandbox.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/tool_executor.h"
#include "executor_service/workspace/workspace.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::rein::testing::TempWorkspace;

std::string InitPath() {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/rein/executor_service/rein-sandbox-init");
}

constexpr const char* kWhichSandbox =
    "echo $(readlink /proc/self/ns/pid) $(cut -d' ' -f22 /proc/1/stat)";

class SandboxInitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ExecutorOptions options;
    options.workspace_root = temp_.root();
    options.executor_id = "test-executor";
    options.sandbox.resident = true;
    options.sandbox.init_binary = InitPath();
    absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = ToolExecutor::Create(options);
    ASSERT_TRUE(executor.ok()) << executor.status();
    executor_ = *std::move(executor);
    ASSERT_EQ(executor_->sandbox().state(), Sandbox::State::kBwrap)
        << executor_->SandboxDescription();
  }

  ToolResult Shell(const std::string& command, const std::string& run = "run-1") {
    ExecuteCall call;
    call.call_id = absl::StrCat("call-", ++calls_);
    call.run_id = run;
    call.workspace = TempWorkspace::kName;
    call.tool = "run_command";
    call.args_json = nlohmann::json{{"shell", command}, {"timeout_seconds", 30}}.dump();
    absl::StatusOr<ToolResult> result = executor_->Execute(call);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ToolResult::Failure(result.status());
  }

  // The sandbox the run's next command gets: its pid namespace and when its init started ("pid:[N]
  // T\n"). Namespace numbers alone can be reused once the previous sandbox is gone.
  std::string PidNamespace() {
    ToolResult result = Shell(kWhichSandbox);
    EXPECT_TRUE(result.ok) << result.error_code << " " << result.error_message << result.output;
    return result.output;
  }

  // The test workspace, for running commands through the Sandbox itself.
  std::unique_ptr<Workspace> OpenWorkspace() {
    absl::StatusOr<std::unique_ptr<WorkspaceRoot>> root = WorkspaceRoot::Open(temp_.root());
    EXPECT_TRUE(root.ok()) << root.status();
    if (!root.ok()) return nullptr;
    absl::StatusOr<std::unique_ptr<Workspace>> workspace =
        (*root)->OpenWorkspace(TempWorkspace::kName);
    EXPECT_TRUE(workspace.ok()) << workspace.status();
    return workspace.ok() ? *std::move(workspace) : nullptr;
  }

  // Runs `change` (which must print "changed") in the run's resident sandbox, then checks the
  // next command runs normally, in a fresh sandbox: the changed one was retired.
  void ExpectRetiredAfter(const std::string& change) {
    const std::string before = PidNamespace();
    ASSERT_EQ(before.rfind("pid:[", 0), 0u) << before;
    ToolResult changed = Shell(change);
    ASSERT_TRUE(changed.ok) << changed.error_message << changed.output;
    ASSERT_TRUE(absl::StrContains(changed.output, "changed")) << changed.output;
    ToolResult next = Shell(absl::StrCat("echo ok; ", kWhichSandbox));
    EXPECT_TRUE(next.ok) << next.error_code << " " << next.error_message << next.output;
    EXPECT_EQ(next.output.rfind("ok\npid:[", 0), 0u) << next.output;
    EXPECT_NE(next.output, absl::StrCat("ok\n", before)) << change;
    // And the fresh one serves commands as usual.
    ToolResult again = Shell("echo ok");
    EXPECT_EQ(again.output, "ok\n") << again.error_message;
  }

  TempWorkspace temp_;
  std::atomic<int> calls_{0};
  std::unique_ptr<ToolExecutor> executor_;
};

TEST_F(SandboxInitTest, AnUnchangedSandboxIsReused) {
  EXPECT_EQ(PidNamespace(), PidNamespace());
  ASSERT_TRUE(Shell("prlimit --pid $$ --nofile=64:64 && renice -n 5 -p $$ >/dev/null").ok);
  EXPECT_EQ(PidNamespace(), PidNamespace());  // the command's own changes die with it
}

TEST_F(SandboxInitTest, LoweringInitsProcessLimitRetiresTheSandbox) {
  // Init could then fork no command of the run: every later one would exit 127.
  ExpectRetiredAfter("prlimit --pid 1 --nproc=1:1 && echo changed");
}

TEST_F(SandboxInitTest, LoweringInitsDescriptorLimitRetiresTheSandbox) {
  // Init could then receive no command (its descriptors would be cut off).
  ExpectRetiredAfter("prlimit --pid 1 --nofile=6:6 && echo changed");
}

TEST_F(SandboxInitTest, LoweringInitsCpuLimitRetiresTheSandbox) {
  ExpectRetiredAfter("prlimit --pid 1 --cpu=100:200 && echo changed");
}

TEST_F(SandboxInitTest, RenicingInitRetiresTheSandbox) {
  ExpectRetiredAfter("renice -n 10 -p 1 >/dev/null && echo changed");
}

TEST_F(SandboxInitTest, RenicingTheWholeUidRetiresTheSandbox) {
  // PRIO_USER reaches init too (same uid) without naming pid 1.
  ExpectRetiredAfter("renice -n 7 -u $(id -u) >/dev/null && echo changed");
}

TEST_F(SandboxInitTest, PinningInitToOneCpuRetiresTheSandbox) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one CPU: nothing to pin";
  ExpectRetiredAfter("taskset -p 1 1 >/dev/null && echo changed");
}

TEST_F(SandboxInitTest, ChangingInitsIoPriorityRetiresTheSandbox) {
  ExpectRetiredAfter("ionice -c 3 -p 1 && echo changed");
}

TEST_F(SandboxInitTest, ChangingInitsOomScoreRetiresTheSandbox) {
  ToolResult writable = Shell("test -w /proc/1/oom_score_adj && echo yes");
  if (writable.output != "yes\n") GTEST_SKIP() << "init's oom_score_adj is not writable here";
  ExpectRetiredAfter("echo 500 > /proc/1/oom_score_adj && echo changed");
}

TEST_F(SandboxInitTest, DevShmReplacedByALinkIsADirectoryAgainAndItsTargetUntouched) {
  const std::string before = PidNamespace();
  const std::string shm = Shell("stat -c %F:%a /dev/shm").output;
  ASSERT_EQ(shm.rfind("directory:", 0), 0u) << shm;
  ToolResult change = Shell(
      "mkdir sd && mv /dev/shm /dev/shm.old && ln -s \"$PWD/sd\" /dev/shm && "
      "echo kept > /dev/shm/f && echo changed");
  ASSERT_TRUE(change.ok) << change.output;
  ASSERT_EQ(change.output, "changed\n");
  ToolResult next = Shell("stat -c %F:%a /dev/shm; ls -A /dev/shm; ls -d /dev/shm.old 2>&1");
  EXPECT_EQ(next.output, absl::StrCat(shm,
                                      "ls: cannot access '/dev/shm.old': No such file or "
                                      "directory\n[exit status 2]\n"));
  // The link was removed, not followed: the workspace file it pointed at is still there.
  std::ifstream kept(temp_.Path("sd/f"));
  std::stringstream text;
  text << kept.rdbuf();
  EXPECT_EQ(text.str(), "kept\n");
  EXPECT_EQ(PidNamespace(), before);  // put right, so still the same sandbox
}

TEST_F(SandboxInitTest, DevShmReplacedByAFileIsADirectoryAgain) {
  const std::string shm = Shell("stat -c %F:%a /dev/shm").output;
  ASSERT_EQ(shm.rfind("directory:", 0), 0u) << shm;
  ToolResult change = Shell("rmdir /dev/shm && echo x > /dev/shm && echo changed");
  ASSERT_EQ(change.output, "changed\n") << change.error_message;
  ToolResult next = Shell("stat -c %F:%a /dev/shm && echo y > /dev/shm/y && cat /dev/shm/y");
  EXPECT_EQ(next.output, absl::StrCat(shm, "y\n")) << next.error_message;
}

TEST_F(SandboxInitTest, TmpItselfCannotBeReplaced) {
  // A mount point: neither removed, renamed nor shadowed (the root is read-only).
  ToolResult tries = Shell(
      "rmdir /tmp 2>/dev/null; mv /tmp /tmp.old 2>/dev/null; ln -s /dev /tmp/x; "
      "stat -c %F /tmp");
  EXPECT_EQ(tries.output, "directory\n");
  EXPECT_EQ(Shell("stat -c %F /tmp; ls -A /tmp").output, "directory\n");
}

TEST_F(SandboxInitTest, FirstPathOfTheEnvironmentIsUsedAsOnTheColdPath) {
  // A later PATH= (e.g. a declared tool's) does not replace the sandbox's own, which comes
  // first, for finding the program: getenv and so the cold path's execvp take the first.
  std::unique_ptr<Workspace> workspace = OpenWorkspace();
  ASSERT_NE(workspace, nullptr);
  for (const std::string run : {"run-path", ""}) {  // resident, then cold
    CommandRequest request;
    request.argv = {"sh", "-c", "echo ran"};
    request.env = {"PATH=/nonexistent"};
    request.run_id = run;
    request.deadline = absl::Now() + absl::Seconds(30);
    absl::StatusOr<CommandOutcome> outcome = executor_->sandbox().Run(*workspace, request);
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    EXPECT_EQ(outcome->child.output, "ran\n") << (run.empty() ? "cold" : "resident");
  }
  EXPECT_EQ(executor_->sandbox().ResidentCount(), 1u);
}

TEST_F(SandboxInitTest, CommandsAtAndPastInitsStringCountRunOnce) {
  // Init takes at most 32768 argv and environment strings together (in 128 KiB); one string
  // more goes the cold path instead of being handed to init, which would refuse it and exit.
  const std::string ns = PidNamespace();
  std::unique_ptr<Workspace> workspace = OpenWorkspace();
  ASSERT_NE(workspace, nullptr);
  // How many environment strings a command gets (as init started the shell).
  CommandRequest env;
  env.argv = {"sh", "-c", "tr '\\0' '\\n' < /proc/$$/environ | wc -l"};
  env.run_id = "run-1";
  env.deadline = absl::Now() + absl::Seconds(30);
  absl::StatusOr<CommandOutcome> environ = executor_->sandbox().Run(*workspace, env);
  ASSERT_TRUE(environ.ok()) << environ.status();
  const int env_count = std::atoi(environ->child.output.c_str());
  ASSERT_GT(env_count, 0) << environ->child.output;
  constexpr int kMax = static_cast<int>(kSandboxInitMaxStrings);
  for (int total : {kMax, kMax + 1}) {
    std::vector<std::string> argv = {"sh", "-c", absl::StrCat("echo $# $(", kWhichSandbox, ")"),
                                     "sh"};
    const int extra = total - env_count - static_cast<int>(argv.size());
    argv.resize(argv.size() + static_cast<size_t>(extra), "x");
    // Past run_command's 4096 items: straight to the sandbox, as a declared tool's could.
    CommandRequest request;
    request.argv = std::move(argv);
    request.run_id = "run-1";
    request.deadline = absl::Now() + absl::Seconds(30);
    absl::StatusOr<CommandOutcome> outcome = executor_->sandbox().Run(*workspace, request);
    if (total == kMax) {
      ASSERT_TRUE(outcome.ok()) << outcome.status();
      EXPECT_EQ(outcome->child.output, absl::StrCat(extra, " ", ns));  // in the resident
    } else {
      // Not handed to init (which would have refused it and exited, leaving the outcome
      // unknown): the cold path takes it, and bubblewrap itself refuses that many arguments.
      ASSERT_FALSE(outcome.ok()) << outcome->error;
      EXPECT_EQ(outcome.status().code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_TRUE(absl::StrContains(outcome.status().message(),
                                    "could not be set up: bwrap: Exceeded maximum number of "
                                    "arguments"))
          << outcome.status();
    }
  }
  EXPECT_EQ(PidNamespace(), ns);  // and the resident is still there
}

TEST_F(SandboxInitTest, RunForgottenWhileItsCommandRunsKeepsNoResident) {
  std::random_device random;
  const std::string marker = absl::StrCat("2.", random() % 1000000 + 1000000);
  std::thread command([&] { EXPECT_TRUE(Shell(absl::StrCat("sleep ", marker)).ok); });
  // Once the command runs, the run ends (ForgetRun) while its resident is busy.
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (executor_->sandbox().ResidentCount() == 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_TRUE(executor_->ForgetRun("run-1").ok());
  command.join();
  // Removed when the command ended, not parked for the idle time (60 s).
  const absl::Time gone = absl::Now() + absl::Seconds(10);
  while (executor_->sandbox().ResidentCount() > 0 && absl::Now() < gone) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(executor_->sandbox().ResidentCount(), 0u);
  // The run may still send a command: it gets a new sandbox.
  EXPECT_EQ(Shell("echo ok").output, "ok\n");
}

}  // namespace
}  // namespace rein
