// Tests of ToolExecutor: request checks, argument validation, workspaces and limits.
#include "executor_service/tool_executor.h"

#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_reason.h"
#include "executor_service/sandbox/sandbox_mode.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/workspace/workspace_history.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::rein::testing::TempWorkspace;

class ToolExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    temp_.WriteFile("three.txt", "one\ntwo\nthree\n");
    ExecutorOptions options;
    options.workspace_root = temp_.root();
    options.executor_id = "exec-1";
    auto executor = ToolExecutor::Create(options);
    ASSERT_TRUE(executor.ok()) << executor.status();
    executor_ = *std::move(executor);
  }

  ExecuteCall Call(const std::string& tool, const std::string& args) {
    ExecuteCall call;
    call.call_id = "run-1-1";
    call.run_id = "run-1";
    call.workspace = TempWorkspace::kName;
    call.tool = tool;
    call.args_json = args;
    return call;
  }

  // Runs a read_file call whose arguments must be refused.
  ToolResult Refused(const std::string& args) {
    absl::StatusOr<ToolResult> result = executor_->Execute(Call("read_file", args));
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return ToolResult::Failure(result.status());
    EXPECT_FALSE(result->ok) << args;
    EXPECT_EQ(result->error_code, "INVALID_ARGUMENT") << args;
    EXPECT_EQ(result->output, "");
    return *result;
  }

  TempWorkspace temp_;
  std::unique_ptr<ToolExecutor> executor_;
};

TEST_F(ToolExecutorTest, CreateWithMissingRootFails) {
  ExecutorOptions options;
  options.workspace_root = temp_.root() + "/missing";
  EXPECT_EQ(ToolExecutor::Create(options).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ToolExecutorTest, ListToolsReturnsEveryToolSorted) {
  std::vector<ToolSpec> tools = executor_->ListTools();
  ASSERT_EQ(tools.size(), 6u);
  EXPECT_EQ(tools[0].name, "file_info");
  EXPECT_EQ(tools[1].name, "list_files");
  EXPECT_EQ(tools[2].name, "read_file");
  EXPECT_EQ(tools[3].name, "run_command");
  EXPECT_EQ(tools[4].name, "search_text");
  EXPECT_EQ(tools[5].name, "write_file");
  for (const ToolSpec& spec : tools) {
    const bool mutating = spec.name == "run_command" || spec.name == "write_file";
    EXPECT_EQ(spec.mutating, mutating) << spec.name;
    EXPECT_EQ(spec.spawns_process, spec.name == "run_command") << spec.name;
    EXPECT_EQ(spec.input_schema["type"], "object") << spec.name;
    EXPECT_EQ(spec.input_schema["additionalProperties"], false) << spec.name;
    EXPECT_GT(spec.default_timeout, absl::ZeroDuration());
  }
  EXPECT_EQ(executor_->SandboxDescription().rfind("bwrap: ", 0), 0u)
      << executor_->SandboxDescription();
}

TEST_F(ToolExecutorTest, SuccessfulCallReturnsOutput) {
  absl::StatusOr<ToolResult> result =
      executor_->Execute(Call("read_file", R"({"path": "three.txt", "limit": 1})"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->ok);
  EXPECT_EQ(result->output, "1: one\n[more lines after line 1; continue with offset=1]\n");
}

TEST_F(ToolExecutorTest, BadRequestsAreInvalidArgumentNamingTheField) {
  struct Case {
    std::function<void(ExecuteCall*)> edit;
    std::string message_prefix;
  };
  const std::vector<Case> cases = {
      {[](ExecuteCall* c) { c->call_id = ""; }, "call_id: must not be empty"},
      {[](ExecuteCall* c) { c->call_id = std::string(300, 'x'); }, "call_id: must be at most"},
      {[](ExecuteCall* c) { c->run_id = std::string(300, 'x'); }, "run_id: must be at most"},
      {[](ExecuteCall* c) { c->tool = ""; }, "tool: must not be empty"},
      {[](ExecuteCall* c) { c->tool = "rm_rf"; },
       "tool: unknown tool \"rm_rf\" (available: file_info, list_files, read_file, run_command, "
       "search_text, write_file)"},
      {[](ExecuteCall* c) { c->workspace = ""; }, "workspace: must not be empty"},
      {[](ExecuteCall* c) { c->workspace = "../ws"; }, "workspace: must be a single name"},
      {[](ExecuteCall* c) { c->workspace = ".."; }, "workspace: must not be"},
      {[](ExecuteCall* c) { c->workspace = std::string(256, 'w'); }, "workspace: must be at most"},
      {[](ExecuteCall* c) { c->workspace = std::string("w\0s", 3); },
       "workspace: must not contain"},
      {[](ExecuteCall* c) { c->timeout = absl::Seconds(-1); },
       "limits.timeout: must not be negative"},
      {[](ExecuteCall* c) { c->max_output_bytes = -5; },
       "limits.max_output_bytes: must not be negative"},
  };
  for (const Case& c : cases) {
    ExecuteCall call = Call("read_file", R"({"path": "three.txt"})");
    c.edit(&call);
    absl::StatusOr<ToolResult> result = executor_->Execute(call);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << c.message_prefix;
    EXPECT_EQ(result.status().message().rfind(c.message_prefix, 0), 0u) << result.status();
  }
}

TEST_F(ToolExecutorTest, ArgsThatAreNotJsonAreRefused) {
  EXPECT_EQ(Refused("{path: 1}").error_message.rfind("args_json: not valid JSON", 0), 0u);
  EXPECT_EQ(Refused("\xff\xfe").error_message.rfind("args_json: not valid JSON", 0), 0u);
}

TEST_F(ToolExecutorTest, ArgsThatAreNotAnObjectAreRefused) {
  EXPECT_EQ(Refused(R"(["three.txt"])").error_message, "args: must be a JSON object, got array");
  EXPECT_EQ(Refused("42").error_message, "args: must be a JSON object, got integer 42");
}

TEST_F(ToolExecutorTest, UnknownFieldIsRefused) {
  EXPECT_EQ(Refused(R"({"path": "three.txt", "lines": 3})").error_message,
            "args.lines: unknown field (allowed: limit, offset, path)");
}

TEST_F(ToolExecutorTest, MissingRequiredFieldIsRefused) {
  EXPECT_EQ(Refused("{}").error_message, "args.path: is required");
  EXPECT_EQ(Refused("").error_message, "args.path: is required");  // empty args_json = {}
}

TEST_F(ToolExecutorTest, WrongTypesAreRefused) {
  EXPECT_EQ(Refused(R"({"path": 7})").error_message,
            "args.path: must be a string of 1 to 4096 characters, got integer 7");
  EXPECT_EQ(Refused(R"({"path": "three.txt", "limit": "10"})").error_message,
            "args.limit: must be an integer between 1 and 20000, got string \"10\"");
  EXPECT_EQ(Refused(R"({"path": "three.txt", "offset": true})").error_message,
            "args.offset: must be an integer between 0 and 1000000000, got boolean true");
}

TEST_F(ToolExecutorTest, OutOfRangeNumbersAreRefused) {
  EXPECT_EQ(Refused(R"({"path": "three.txt", "offset": -1})").error_message,
            "args.offset: must be an integer between 0 and 1000000000, got integer -1");
  EXPECT_EQ(Refused(R"({"path": "three.txt", "limit": 1000000000000})").error_message,
            "args.limit: must be an integer between 1 and 20000, got integer 1000000000000");
  EXPECT_EQ(Refused(R"({"path": "three.txt", "limit": 0})").error_message,
            "args.limit: must be an integer between 1 and 20000, got integer 0");
}

TEST_F(ToolExecutorTest, ArgumentsAreCheckedBeforeTheWorkspaceIsOpened) {
  ExecuteCall call = Call("read_file", R"({"bogus": 1})");
  call.workspace = "no_such_workspace";
  absl::StatusOr<ToolResult> result = executor_->Execute(call);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->error_code, "INVALID_ARGUMENT");
}

TEST_F(ToolExecutorTest, MissingWorkspaceIsNotFoundToolError) {
  ExecuteCall call = Call("read_file", R"({"path": "three.txt"})");
  call.workspace = "no_such_workspace";
  absl::StatusOr<ToolResult> result = executor_->Execute(call);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->ok);
  EXPECT_EQ(result->error_code, "NOT_FOUND");
  EXPECT_EQ(result->error_message,
            "workspace \"no_such_workspace\" does not exist or is not a directory");
  EXPECT_EQ(result->error_reason, reason::kWorkspaceNotFound);
}

// An executor of `temp` that snapshots into `history`.
absl::StatusOr<std::unique_ptr<ToolExecutor>> SnapshottingExecutor(
    const TempWorkspace& temp, const WorkspaceHistory* history, int max_concurrent = 8,
    std::function<void()> flushed = {}) {
  ExecutorOptions options;
  options.workspace_root = temp.root();
  options.executor_id = "exec-1";
  options.history = history;
  options.sandbox.max_concurrent = max_concurrent;
  options.journal.after_claim_flush = std::move(flushed);
  return ToolExecutor::Create(options);
}

// A write_file of a.txt by call run-1-1 of run-1 in `temp`.
ExecuteCall WriteCall(const std::string& content) {
  ExecuteCall call;
  call.call_id = "run-1-1";
  call.run_id = "run-1";
  call.workspace = TempWorkspace::kName;
  call.tool = "write_file";
  call.args_json = absl::StrCat(R"({"path": "a.txt", "content": ")", content, R"("})");
  return call;
}

TEST(ToolExecutorSnapshotTest, AMutatingCallIsSnapshottedAfterItsClaimAndOnlyThen) {
  TempWorkspace temp;
  temp.WriteFile("a.txt", "before");
  WorkspaceHistory history(temp.root(), /*retention=*/4);
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = SnapshottingExecutor(temp, &history);
  ASSERT_TRUE(executor.ok()) << executor.status();
  if ((*executor)->sandbox().state() != Sandbox::State::kBwrap) {
    GTEST_SKIP() << "no sandbox here: " << (*executor)->SandboxDescription();
  }
  const std::string runs = absl::StrCat(temp.root(), "/", kWorkspaceHistoryDir, "/runs/run-1/");
  ExecuteCall call;
  call.call_id = "run-1-1";
  call.run_id = "run-1";
  call.workspace = TempWorkspace::kName;
  call.tool = "write_file";
  // Refused before any claim: no snapshot.
  call.args_json = R"({"path": "a.txt"})";
  absl::StatusOr<ExecuteOutcome> refused = (*executor)->ExecuteOnce(call);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->result.error_code, "INVALID_ARGUMENT");
  struct stat st;
  EXPECT_NE(stat((runs + "run-1-1").c_str(), &st), 0);
  // Claimed and run: the workspace as it was before the call.
  call.call_id = "run-1-2";
  call.args_json = R"({"path": "a.txt", "content": "after"})";
  absl::StatusOr<ExecuteOutcome> ran = (*executor)->ExecuteOnce(call);
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(ran->result.ok) << ran->result.error_message;
  std::ifstream snapshot(runs + "run-1-2/a.txt");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(snapshot), {}), "before");
  // Answered from the journal: nothing runs, so no snapshot is taken again.
  ASSERT_EQ(std::system(absl::StrCat("rm -rf '", runs, "run-1-2'").c_str()), 0);
  absl::StatusOr<ExecuteOutcome> again = (*executor)->ExecuteOnce(call);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->replayed);
  EXPECT_NE(stat((runs + "run-1-2").c_str(), &st), 0);
}

// The claim's flush runs beside the snapshot, but the call runs only once it returned: a
// flush held for 300 ms ends before the tool writes.
TEST(ToolExecutorSnapshotTest, TheCallRunsOnlyOnceItsClaimIsFlushed) {
  TempWorkspace temp;
  temp.WriteFile("a.txt", "before");
  WorkspaceHistory history(temp.root(), /*retention=*/4);
  std::atomic<int> flushes{0};
  std::atomic<int64_t> flushed_ns{0};
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor =
      SnapshottingExecutor(temp, &history, /*max_concurrent=*/8, [&] {
        absl::SleepFor(absl::Milliseconds(300));
        flushed_ns = absl::ToUnixNanos(absl::Now());
        ++flushes;
      });
  ASSERT_TRUE(executor.ok()) << executor.status();
  if ((*executor)->sandbox().state() != Sandbox::State::kBwrap) {
    GTEST_SKIP() << "no sandbox here: " << (*executor)->SandboxDescription();
  }
  absl::StatusOr<ExecuteOutcome> ran = (*executor)->ExecuteOnce(WriteCall("after"));
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(ran->result.ok) << ran->result.error_message;
  EXPECT_EQ(flushes.load(), 1);
  struct stat st;
  ASSERT_EQ(stat(temp.Path("a.txt").c_str(), &st), 0);
  // File times come from a coarse clock (a few ms); 50 ms of slack, against a 300 ms flush.
  EXPECT_GE(absl::ToUnixNanos(absl::TimeFromTimespec(st.st_mtim)),
            flushed_ns.load() - absl::ToInt64Nanoseconds(absl::Milliseconds(50)));
  const std::string snapshot =
      absl::StrCat(temp.root(), "/", kWorkspaceHistoryDir, "/runs/run-1/run-1-1/a.txt");
  std::ifstream before(snapshot);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(before), {}), "before");
}

TEST(ToolExecutorSnapshotTest, ASnapshotPastABoundIsSkippedTheCallRunsAndTheReplySaysWhy) {
  TempWorkspace temp;
  temp.WriteFile("big.txt", std::string(64 * 1024, 'x'));
  WorkspaceHistoryOptions bounds;
  bounds.retention = 4;
  bounds.max_bytes = 4096;
  WorkspaceHistory history(temp.root(), bounds);
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = SnapshottingExecutor(temp, &history);
  ASSERT_TRUE(executor.ok()) << executor.status();
  if ((*executor)->sandbox().state() != Sandbox::State::kBwrap) {
    GTEST_SKIP() << "no sandbox here: " << (*executor)->SandboxDescription();
  }
  absl::StatusOr<ExecuteOutcome> ran = (*executor)->ExecuteOnce(WriteCall("after"));
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_TRUE(ran->result.ok) << ran->result.error_message;
  EXPECT_NE(ran->snapshot_skipped.find(kMaxBytesBound), std::string::npos) << ran->snapshot_skipped;
  const absl::Status fork = history.Copy(TempWorkspace::kName, "run-1", "run-1-1", "f").status();
  EXPECT_EQ(fork.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(fork.message().find(kMaxBytesBound), std::string::npos) << fork;
}

TEST(ToolExecutorSnapshotTest, SnapshotsAndCopiesTakeASlotOfMaxConcurrent) {
  TempWorkspace temp;
  temp.WriteFile("a.txt", "before");
  WorkspaceHistory history(temp.root(), /*retention=*/4);
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor =
      SnapshottingExecutor(temp, &history, /*max_concurrent=*/1);
  ASSERT_TRUE(executor.ok()) << executor.status();
  if ((*executor)->sandbox().state() != Sandbox::State::kBwrap) {
    GTEST_SKIP() << "no sandbox here: " << (*executor)->SandboxDescription();
  }
  // The one slot is taken (by a fork's copy, say).
  std::optional<SandboxSlot> held;
  absl::StatusOr<SandboxSlot> first = (*executor)->AdmitWorkspaceCopy();
  ASSERT_TRUE(first.ok()) << first.status();
  held.emplace(*std::move(first));
  EXPECT_EQ((*executor)->AdmitWorkspaceCopy().status().code(),
            absl::StatusCode::kResourceExhausted);
  // A mutating call, whose snapshot would copy the workspace, is refused before anything is
  // copied or written; a read-only call still runs.
  const ExecuteCall call = WriteCall("after");
  absl::StatusOr<ExecuteOutcome> refused = (*executor)->ExecuteOnce(call);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_NE(refused.status().message().find("--max_concurrent"), std::string::npos);
  const std::string snapshot =
      absl::StrCat(temp.root(), "/", kWorkspaceHistoryDir, "/runs/run-1/run-1-1");
  struct stat st;
  EXPECT_NE(stat(snapshot.c_str(), &st), 0);
  std::ifstream unchanged(temp.Path("a.txt"));
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(unchanged), {}), "before");
  ExecuteCall read = call;
  read.call_id = "run-1-2";
  read.tool = "read_file";
  read.args_json = R"({"path": "a.txt"})";
  absl::StatusOr<ExecuteOutcome> reads = (*executor)->ExecuteOnce(read);
  ASSERT_TRUE(reads.ok()) << reads.status();
  EXPECT_TRUE(reads->result.ok) << reads->result.error_message;
  // Once the slot is free the same call (its claim was given back) runs, snapshot first.
  held.reset();
  absl::StatusOr<ExecuteOutcome> ran = (*executor)->ExecuteOnce(call);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_TRUE(ran->result.ok) << ran->result.error_message;
  EXPECT_FALSE(ran->replayed);
  EXPECT_EQ(stat(snapshot.c_str(), &st), 0);
  // The slot went back after the call.
  EXPECT_TRUE((*executor)->AdmitWorkspaceCopy().ok());
}

TEST_F(ToolExecutorTest, DefaultOutputCapIsOneMebibyteAndTheHardCapEight) {
  // 20,000 lines of 600 bytes: about 12 MB of output.
  std::string text;
  for (int i = 0; i < 20000; ++i) absl::StrAppend(&text, std::string(599, 'x'), "\n");
  temp_.WriteFile("big.txt", text);
  ExecuteCall call = Call("read_file", R"({"path": "big.txt", "limit": 20000})");
  absl::StatusOr<ToolResult> result = executor_->Execute(call);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->truncated);
  const size_t marker = result->output.find("\n[output truncated: ");
  EXPECT_EQ(marker, size_t{1} << 20);

  call.max_output_bytes = int64_t{100} << 20;  // asks for 100 MiB, gets 8 MiB
  result = executor_->Execute(call);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->truncated);
  EXPECT_EQ(result->output.find("\n[output truncated: "), size_t{8} << 20);
}

TEST_F(ToolExecutorTest, CallerDeadlineIsPassedOn) {
  ExecuteCall call = Call("list_files", R"({"recursive": true})");
  call.deadline = absl::InfinitePast();
  absl::StatusOr<ToolResult> result = executor_->Execute(call);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->error_code, "TIMEOUT");
  EXPECT_TRUE(result->timed_out);
}

// Two executors on one workspace root, as in a fleet: mutating calls run once per call_id.
class JournaledExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* id : {"exec-a", "exec-b"}) {
      ExecutorOptions options;
      options.workspace_root = temp_.root();
      options.executor_id = id;
      options.sandbox.mode = SandboxMode::kNone;
      options.sandbox.allow_unsandboxed = true;
      auto executor = ToolExecutor::Create(options);
      ASSERT_TRUE(executor.ok()) << executor.status();
      executors_.push_back(*std::move(executor));
    }
  }

  static ExecuteCall Command(const std::string& call_id, const std::string& shell) {
    ExecuteCall call;
    call.call_id = call_id;
    call.run_id = "run-1";
    call.workspace = TempWorkspace::kName;
    call.tool = "run_command";
    call.args_json = absl::StrCat(R"({"shell":")", shell, R"("})");
    return call;
  }

  // The side effect's counter file, as the commands left it.
  std::string Count() const {
    std::ifstream in(temp_.Path("count"));
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  TempWorkspace temp_;
  std::vector<std::unique_ptr<ToolExecutor>> executors_;
};

TEST_F(JournaledExecutorTest, SameCallIdOnAnotherExecutorIsReplayed) {
  const ExecuteCall call = Command("run-1-1", "echo ran >> count; cat count");
  absl::StatusOr<ExecuteOutcome> first = executors_[0]->ExecuteOnce(call);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->result.ok) << first->result.error_message;
  EXPECT_FALSE(first->replayed);
  absl::StatusOr<ExecuteOutcome> second = executors_[1]->ExecuteOnce(call);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->replayed);
  EXPECT_EQ(second->executor_id, "exec-a");
  EXPECT_EQ(second->result.output, first->result.output);
  EXPECT_EQ(Count(), "ran\n");  // the side effect happened once
  // A new call_id runs again.
  ASSERT_TRUE(executors_[1]->ExecuteOnce(Command("run-1-2", "echo ran >> count")).ok());
  EXPECT_EQ(Count(), "ran\nran\n");
}

TEST_F(JournaledExecutorTest, ReadOnlyCallsAreNotJournaled) {
  ExecuteCall read = Command("run-1-1", "");
  read.tool = "list_files";
  read.args_json = "{}";
  absl::StatusOr<ExecuteOutcome> first = executors_[0]->ExecuteOnce(read);
  absl::StatusOr<ExecuteOutcome> second = executors_[1]->ExecuteOnce(read);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_FALSE(second->replayed);
  EXPECT_EQ(second->executor_id, "exec-b");
}

TEST_F(JournaledExecutorTest, CallRunningElsewhereAnswersInProgressAtTheDeadline) {
  ExecuteCall slow = Command("run-1-1", "sleep 2; echo ran >> count");
  std::thread runner([&] { ASSERT_TRUE(executors_[0]->ExecuteOnce(slow).ok()); });
  absl::SleepFor(absl::Milliseconds(300));
  ExecuteCall again = slow;
  again.deadline = absl::Now() + absl::Milliseconds(500);
  absl::StatusOr<ExecuteOutcome> busy = executors_[1]->ExecuteOnce(again);
  EXPECT_EQ(busy.status().code(), absl::StatusCode::kAborted) << busy.status();
  again.deadline = absl::Now() + absl::Seconds(30);
  absl::StatusOr<ExecuteOutcome> waited = executors_[1]->ExecuteOnce(again);
  runner.join();
  ASSERT_TRUE(waited.ok()) << waited.status();
  EXPECT_TRUE(waited->replayed);
  EXPECT_EQ(Count(), "ran\n");
}

TEST_F(JournaledExecutorTest, CorruptJournalEntryIsOutcomeUnknownAndNothingRuns) {
  const ExecuteCall call = Command("run-1-1", "echo ran >> count");
  const std::string run_dir = absl::StrCat(temp_.root(), "/", kJournalDirName, "/runs/run-1");
  mkdir(run_dir.c_str(), 0700);
  std::ofstream(run_dir + "/run-1-1.started") << "{\"format\": 1, \"rec";  // torn
  absl::StatusOr<ExecuteOutcome> outcome = executors_[0]->ExecuteOnce(call);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->outcome_unknown);
  EXPECT_FALSE(outcome->result.ok);
  EXPECT_EQ(outcome->result.error_code, "OUTCOME_UNKNOWN");
  EXPECT_EQ(Count(), "");  // never guessed: nothing ran
}

TEST_F(JournaledExecutorTest, ForgetRunEndsTheJournalOfARun) {
  ASSERT_TRUE(executors_[0]->ExecuteOnce(Command("run-1-1", "true")).ok());
  absl::StatusOr<int> forgotten = executors_[1]->ForgetRun("run-1");
  ASSERT_TRUE(forgotten.ok()) << forgotten.status();
  EXPECT_EQ(*forgotten, 1);
  EXPECT_EQ(executors_[1]->ForgetRun("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(JournaledExecutorTest, JournalDirectoryIsNotAWorkspace) {
  ExecuteCall call = Command("run-1-1", "ls");
  call.workspace = kJournalDirName;
  EXPECT_EQ(executors_[0]->ExecuteOnce(call).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rein
