// Tests of the command gate: the deadline that waits for it, and rein-sandbox-gate, run as a
// real child, which executes its command only after the go-ahead and never at end-of-file.
#include "executor_service/process/command_gate.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "executor_service/process/child_process.h"
#include "executor_service/process/unique_fd.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

std::string GatePath() {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/rein/executor_service/rein-sandbox-gate");
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Limits a child may set without privilege (0 would be "unlimited").
ResourceLimits Limits() {
  ResourceLimits limits;
  limits.cpu_seconds = 60;
  limits.address_space_bytes = 1ull << 32;
  limits.file_size_bytes = 1 << 20;
  limits.open_files = 64;
  limits.processes = 1024;
  return limits;
}

std::unique_ptr<CommandGate> MakeGate(absl::Time cap = absl::InfiniteFuture()) {
  absl::StatusOr<std::unique_ptr<CommandGate>> gate = CommandGate::Create(cap);
  EXPECT_TRUE(gate.ok()) << gate.status();
  return gate.ok() ? *std::move(gate) : nullptr;
}

TEST(CommandGateTest, TheDeadlineWaitsWhilePendingAndMovesOnByTheWait) {
  std::unique_ptr<CommandGate> gate = MakeGate();
  ASSERT_NE(gate, nullptr);
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  EXPECT_EQ(gate->Deadline(deadline), absl::InfiniteFuture());
  absl::SleepFor(absl::Milliseconds(200));
  gate->Open();
  EXPECT_EQ(gate->state(), CommandGate::State::kOpen);
  EXPECT_GE(gate->Deadline(deadline), deadline + absl::Milliseconds(200));
  EXPECT_LE(gate->Deadline(deadline), absl::Now() + absl::Seconds(5));
  EXPECT_LE(gate->opened_at(), absl::Now());
  // Once open, it stays open.
  gate->Shut();
  EXPECT_EQ(gate->state(), CommandGate::State::kOpen);
  EXPECT_TRUE(gate->Wait());
}

TEST(CommandGateTest, NoDeadlinePassesTheCap) {
  const absl::Time cap = absl::Now() + absl::Seconds(1);
  std::unique_ptr<CommandGate> gate = MakeGate(cap);
  ASSERT_NE(gate, nullptr);
  absl::SleepFor(absl::Milliseconds(100));
  gate->Open();
  EXPECT_EQ(gate->Deadline(cap), cap);
  EXPECT_EQ(gate->Deadline(absl::InfiniteFuture()), cap);
}

TEST(CommandGateTest, AShutGateIsFinalAndWaitSaysSo) {
  std::unique_ptr<CommandGate> gate = MakeGate();
  ASSERT_NE(gate, nullptr);
  bool opened = true;
  std::thread waiter([&] { opened = gate->Wait(); });
  absl::SleepFor(absl::Milliseconds(50));
  gate->Shut();
  waiter.join();
  EXPECT_FALSE(opened);
  gate->Open();
  EXPECT_EQ(gate->state(), CommandGate::State::kShut);
  EXPECT_EQ(gate->opened_at(), absl::InfinitePast());
  const absl::Time deadline = absl::Now() + absl::Seconds(1);
  EXPECT_EQ(gate->Deadline(deadline), deadline);
}

// rein-sandbox-gate as a child of this test, in a temporary directory.
class GateProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/rein-gate-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    program_.Reset(open(GatePath().c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(program_.valid()) << GatePath();
    gate_ = MakeGate();
    ASSERT_NE(gate_, nullptr);
  }
  void TearDown() override { (void)!std::system(absl::StrCat("rm -rf ", dir_).c_str()); }

  // Runs `shell` behind the gate (the gate's end as descriptor 3, the program as 4), as
  // Sandbox does inside bubblewrap, on a thread: Join returns how it went.
  void Start(const std::string& shell, absl::Time deadline = absl::InfiniteFuture()) {
    runner_ = std::thread([this, shell, deadline] {
      ChildSpec spec;
      spec.path = GatePath();
      spec.limits = Limits();
      spec.limits = Limits();
      spec.argv = {"/proc/self/fd/4", "3", "4", "/bin/sh", "-c", shell};
      spec.env = {"PATH=/usr/bin:/bin"};
      spec.pass_fds = {gate_->command_end(), program_.get()};
      spec.gate = gate_.get();
      outcome_ = RunChild(spec, deadline, 1 << 16, [](int pid) { kill(-pid, SIGKILL); });
    });
  }
  ChildOutcome Join() {
    runner_.join();
    EXPECT_TRUE(outcome_.ok()) << outcome_.status();
    return outcome_.ok() ? *outcome_ : ChildOutcome();
  }

  std::string dir_;
  UniqueFd program_;
  std::unique_ptr<CommandGate> gate_;
  std::thread runner_;
  absl::StatusOr<ChildOutcome> outcome_ = absl::UnknownError("not run");
};

TEST_F(GateProgramTest, TheCommandRunsOnlyOnceTheGateOpensWithNothingOfTheGateOpen) {
  const std::string marker = dir_ + "/ran";
  Start(absl::StrCat("touch ", marker, "; echo ran; exec ls /proc/self/fd"));
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_FALSE(Exists(marker));
  gate_->Open();
  const ChildOutcome outcome = Join();
  EXPECT_TRUE(Exists(marker));
  EXPECT_EQ(outcome.exit_code, 0);
  // stdin, stdout, stderr and ls's own directory: neither the gate nor its program.
  EXPECT_EQ(outcome.output, "ran\n0\n1\n2\n3\n");
}

TEST_F(GateProgramTest, AShutGateRunsNothing) {
  const std::string marker = dir_ + "/ran";
  Start(absl::StrCat("touch ", marker));
  absl::SleepFor(absl::Milliseconds(100));
  gate_->Shut();
  const ChildOutcome outcome = Join();
  EXPECT_EQ(outcome.exit_code, kGateShutExitCode);
  EXPECT_FALSE(outcome.timed_out);
  EXPECT_FALSE(Exists(marker));
}

TEST_F(GateProgramTest, AGateDestroyedPendingRunsNothing) {
  // What the executor's death looks like from the sandbox: its end of the socket closes.
  const std::string marker = dir_ + "/ran";
  Start(absl::StrCat("touch ", marker));
  absl::SleepFor(absl::Milliseconds(100));
  gate_->Shut();  // as ~CommandGate does
  Join();
  gate_.reset();
  EXPECT_FALSE(Exists(marker));
}

TEST_F(GateProgramTest, TheTimeoutCountsFromTheOpening) {
  // A 1 s deadline, a gate held 1.5 s: the quick command is not timed out.
  Start("echo quick", absl::Now() + absl::Seconds(1));
  absl::SleepFor(absl::Milliseconds(1500));
  gate_->Open();
  const ChildOutcome outcome = Join();
  EXPECT_FALSE(outcome.timed_out);
  EXPECT_EQ(outcome.output, "quick\n");
  EXPECT_LT(outcome.elapsed, absl::Seconds(1));
}

TEST_F(GateProgramTest, TheTimeoutStillHoldsAfterTheOpening) {
  Start("sleep 30", absl::Now() + absl::Seconds(1));
  absl::SleepFor(absl::Milliseconds(500));
  gate_->Open();
  const ChildOutcome outcome = Join();
  EXPECT_TRUE(outcome.timed_out);
  EXPECT_GE(outcome.elapsed, absl::Milliseconds(900));
  EXPECT_LT(outcome.elapsed, absl::Seconds(10));
}

TEST_F(GateProgramTest, AMissingProgramIsSaidAsItsExecFailure) {
  runner_ = std::thread([this] {
    ChildSpec spec;
    spec.path = GatePath();
    spec.limits = Limits();
    spec.argv = {"rein-sandbox-gate", "3", "4", "no-such-program-here"};
    spec.env = {"PATH=/usr/bin:/bin"};
    spec.pass_fds = {gate_->command_end(), program_.get()};
    spec.gate = gate_.get();
    outcome_ = RunChild(spec, absl::InfiniteFuture(), 1 << 16, [](int) {});
  });
  gate_->Open();
  const ChildOutcome outcome = Join();
  EXPECT_EQ(outcome.exit_code, 127);
  EXPECT_EQ(outcome.output,
            "rein-sandbox-gate: execvp no-such-program-here: No such file or directory\n");
}

TEST_F(GateProgramTest, BadArgumentsAreAUsageError) {
  ChildSpec spec;
  spec.path = GatePath();
  spec.limits = Limits();
  spec.argv = {"rein-sandbox-gate", "x", "4", "true"};
  absl::StatusOr<ChildOutcome> outcome =
      RunChild(spec, absl::Now() + absl::Seconds(10), 4096, [](int) {});
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->exit_code, 2);
  EXPECT_NE(outcome->output.find("usage: rein-sandbox-gate"), std::string::npos);
}

}  // namespace
}  // namespace rein
