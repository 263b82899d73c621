// Issue 25's attacks on workspace copies, against the real rein-executor under bubblewrap with
// snapshots on (the default), as the router calls it, on a small tmpfs the test mounts: sparse
// files and hard links cost what they allocate, a 30,000-deep tree and FIFOs swapped in harm
// no one, the sandbox's placeholders never reach a snapshot or a fork, copies wait their turn
// under --max_concurrent, and a fork from a point without a snapshot is refused naming the
// bound (docs/SECURITY.md, "The security suite").
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/testing/hostile_tree.h"
#include "executor_service/testing/small_tmpfs.h"
#include "gtest/gtest.h"
#include "rein/v1/executor.grpc.pb.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

constexpr int64_t kMiB = 1 << 20;
// The workspaces' tmpfs, and the history bound the executor gets: far below what the attacks
// would write without the bounds (10 GB and more).
constexpr int64_t kTmpfsBytes = 256 * kMiB;
constexpr int64_t kHistoryMaxBytes = 32 * kMiB;

// One write_file, then done: a run whose only mutating call is snapshotted first.
constexpr char kOneWriteScript[] = R"({
  "plan": [{"when": {"completed_contains": "write"}, "reply": {"goalAchieved": true}},
           {"reply": {"subtasks": [{"id": "write", "description": "write", "allowedTools": ["write_file"]}]}}],
  "decide": [{"reply": {"toolCall": {"tool": "write_file", "args": {"path": "a.txt", "content": "v1"}}}}],
  "evaluate": [{"reply": {"status": "COMPLETED", "summary": "written"}}]
})";

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

class WorkspaceAttackTest : public ::testing::Test {
 protected:
  // Mounts the tmpfs, makes `workspaces` there, and starts the three services with the
  // executor under bubblewrap, its workspace root on the tmpfs.
  void Boot(std::vector<std::string> executor_flags = {}) {
    fs_ = std::make_unique<SmallTmpfs>(kTmpfsBytes);
    ASSERT_TRUE(fs_->mounted()) << "the suite mounts a tmpfs (needs root): " << fs_->error();
    root_ = fs_->path() + "/workspaces";
    ASSERT_EQ(mkdir(root_.c_str(), 0755), 0);
    dir_ = absl::StrCat(getenv("TEST_TMPDIR"), "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    mkdir(dir_.c_str(), 0755);
    Cluster::Options options;
    options.dir = dir_;
    options.workspace_root = root_;
    options.script_json = kOneWriteScript;
    options.executor_flags = {"--sandbox=bwrap",
                              absl::StrCat("--workspace_history_max_bytes=", kHistoryMaxBytes)};
    for (std::string& flag : executor_flags) options.executor_flags.push_back(std::move(flag));
    cluster_ = std::make_unique<Cluster>(options);
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
    executor_ = rein::v1::Executor::NewStub(
        grpc::CreateChannel(cluster_->executor_target(), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    cluster_.reset();  // the services stop before the tmpfs goes
    fs_.reset();
  }

  std::string Workspace(const std::string& name) {
    const std::string path = root_ + "/" + name;
    mkdir(path.c_str(), 0755);
    return path;
  }

  // Execute as the router sends it; the RPC status, the reply in `response`.
  grpc::Status Execute(const std::string& run_id, const std::string& call_id,
                       const std::string& workspace, const std::string& tool,
                       const std::string& args, rein::v1::ExecuteResponse* response,
                       int deadline_seconds = 30) {
    rein::v1::ExecuteRequest request;
    request.set_call_id(call_id);
    request.set_run_id(run_id);
    request.set_workspace(workspace);
    request.set_tool(tool);
    request.set_args_json(args);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(deadline_seconds));
    return executor_->Execute(&context, request, response);
  }

  // A write_file of `path` that must succeed; returns its reply.
  rein::v1::ExecuteResponse Write(const std::string& run_id, const std::string& call_id,
                                  const std::string& workspace, const std::string& path) {
    rein::v1::ExecuteResponse response;
    const grpc::Status status = Execute(
        run_id, call_id, workspace, "write_file",
        absl::StrCat(R"({"path": ")", path, R"(", "content": ")", call_id, R"("})"), &response);
    EXPECT_TRUE(status.ok()) << call_id << ": " << status.error_message();
    EXPECT_TRUE(response.ok()) << call_id << ": " << response.error().message();
    return response;
  }

  grpc::Status Copy(const std::string& workspace, const std::string& run_id,
                    const std::string& before_call, const std::string& target) {
    rein::v1::CopyWorkspaceRequest request;
    request.set_workspace(workspace);
    request.set_run_id(run_id);
    request.set_before_call(before_call);
    request.set_target(target);
    rein::v1::CopyWorkspaceResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return executor_->CopyWorkspace(&context, request, &response);
  }

  // Bytes in use on the tmpfs.
  int64_t UsedBytes() const {
    struct statvfs vfs;
    if (statvfs(fs_->path().c_str(), &vfs) != 0) return -1;
    return static_cast<int64_t>(vfs.f_blocks - vfs.f_bfree) * static_cast<int64_t>(vfs.f_frsize);
  }

  // The executor process is alive and answers health checks.
  bool ExecutorServing() {
    return kill(cluster_->executor(0)->pid(), 0) == 0 &&
           cluster_->WaitServing(cluster_->executor_target(), absl::Seconds(5));
  }

  std::unique_ptr<SmallTmpfs> fs_;
  std::string root_, dir_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<rein::v1::Executor::Stub> executor_;
};

TEST_F(WorkspaceAttackTest, SparseFilesAndHardLinksCostWhatTheyAllocate) {
  Boot();
  const std::string ws = Workspace("inflate");
  // Two 10 GB sparse files and three more names of one of them: 40 GB apparent, a few KiB on
  // disk. Copied naively, each snapshot would write 50 GB.
  ASSERT_TRUE(MakeSparseFile(ws + "/a.img", int64_t{10} * 1000 * 1000 * 1000).ok());
  ASSERT_TRUE(MakeSparseFile(ws + "/b.img", int64_t{10} * 1000 * 1000 * 1000).ok());
  for (const char* name : {"/a.link1", "/a.link2", "/a.link3"}) {
    ASSERT_EQ(link((ws + "/a.img").c_str(), (ws + name).c_str()), 0);
  }
  const int64_t before = UsedBytes();
  for (int i = 1; i <= 5; ++i) {
    const absl::Time start = absl::Now();
    rein::v1::ExecuteResponse reply =
        Write("inflate-run", absl::StrCat("inflate-run-", i), "inflate", "note.txt");
    EXPECT_EQ(reply.snapshot_skipped(), "");  // taken, since it costs next to nothing
    EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  }
  ASSERT_TRUE(Copy("inflate", "inflate-run", "inflate-run-3", "inflate-fork").ok());
  ASSERT_TRUE(Copy("inflate", "", "", "inflate-now").ok());
  // Five snapshots and two copies of the workspace took well under a MiB each.
  EXPECT_LT(UsedBytes() - before, 8 * kMiB) << before << " -> " << UsedBytes();
  struct stat fork_a, fork_link;
  ASSERT_EQ(lstat((root_ + "/inflate-fork/a.img").c_str(), &fork_a), 0);
  ASSERT_EQ(lstat((root_ + "/inflate-fork/a.link3").c_str(), &fork_link), 0);
  EXPECT_EQ(fork_a.st_size, int64_t{10} * 1000 * 1000 * 1000);
  EXPECT_EQ(fork_a.st_ino, fork_link.st_ino);  // still one file with four names
  EXPECT_EQ(fork_a.st_nlink, 4u);
  EXPECT_LT(fork_a.st_blocks * 512, 1 * kMiB);
}

TEST_F(WorkspaceAttackTest, RealBytesPastTheBoundSkipTheSnapshotNotTheCall) {
  Boot();
  const std::string ws = Workspace("heavy");
  {
    std::ofstream out(ws + "/data.bin", std::ios::binary);
    const std::string mib(kMiB, 'x');
    for (int i = 0; i < 40; ++i) out << mib;  // 40 MiB really written, the bound is 32 MiB
  }
  const int64_t before = UsedBytes();
  rein::v1::ExecuteResponse reply = Write("heavy-run", "heavy-run-1", "heavy", "note.txt");
  EXPECT_TRUE(absl::StrContains(reply.snapshot_skipped(), "--workspace_history_max_bytes"))
      << reply.snapshot_skipped();
  EXPECT_LT(UsedBytes() - before, 1 * kMiB);  // nothing of the snapshot is left
  const grpc::Status fork = Copy("heavy", "heavy-run", "heavy-run-1", "heavy-fork");
  EXPECT_EQ(fork.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(absl::StrContains(fork.error_message(), "--workspace_history_max_bytes"))
      << fork.error_message();
  const grpc::Status copy = Copy("heavy", "", "", "heavy-copy");
  EXPECT_EQ(copy.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(absl::StrContains(copy.error_message(), "--workspace_history_max_bytes"))
      << copy.error_message();
  EXPECT_FALSE(Exists(root_ + "/heavy-fork"));
  EXPECT_FALSE(Exists(root_ + "/heavy-copy"));
}

TEST_F(WorkspaceAttackTest, ForkRunFromAPointWithoutASnapshotIsRefusedNamingTheBound) {
  Boot();
  const std::string ws = Workspace("heavy");
  {
    std::ofstream out(ws + "/data.bin", std::ios::binary);
    const std::string mib(kMiB, 'x');
    for (int i = 0; i < 40; ++i) out << mib;
  }
  rein::v1::RunSpec spec;
  spec.set_goal("write once");
  spec.set_workspace("heavy");
  spec.add_tools("write_file");
  absl::StatusOr<rein::v1::Run> source = cluster_->StartRun(spec);
  ASSERT_TRUE(source.ok()) << source.status();
  absl::StatusOr<rein::v1::Run> done =
      cluster_->WaitForStage(source->run_id(), rein::v1::FINISHED, absl::Seconds(60));
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->state().stage(), rein::v1::FINISHED) << cluster_->Logs();
  EXPECT_EQ(ReadFile(ws + "/a.txt"), "v1");  // the call ran although its snapshot was skipped
  // Iteration 2 began before the write, whose snapshot the bound stopped.
  rein::v1::ForkRunRequest request;
  request.set_run_id(source->run_id());
  request.set_iteration(2);
  request.set_workspace_at_fork(true);
  rein::v1::Run out;
  grpc::ClientContext context;
  cluster_->Authorize(&context);
  const grpc::Status status = cluster_->router()->ForkRun(&context, request, &out);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << status.error_message();
  EXPECT_TRUE(absl::StrContains(status.error_message(), "--workspace_history_max_bytes"))
      << status.error_message();
}

TEST_F(WorkspaceAttackTest, ADeepTreeHarmsNoOtherRunAndNotTheExecutor) {
  Boot();
  const std::string deep = Workspace("deep");
  ASSERT_TRUE(MakeDeepTree(deep, 30000).ok());
  Workspace("other");
  // Three other runs call while the deep run's snapshots walk its tree.
  std::atomic<int> failed{0};
  std::vector<std::thread> others;
  for (int r = 0; r < 3; ++r) {
    others.emplace_back([&, r] {
      const std::string run = absl::StrCat("other-", r);
      for (int i = 1; i <= 10; ++i) {
        rein::v1::ExecuteResponse response;
        const std::string call = absl::StrCat(run, "-", i);
        const grpc::Status status =
            Execute(run, call, "other", "write_file",
                    absl::StrCat(R"({"path": ")", run, R"(.txt", "content": "x"})"), &response);
        if (!status.ok() || !response.ok()) ++failed;
      }
    });
  }
  for (int i = 1; i <= 5; ++i) {
    rein::v1::ExecuteResponse reply = Write("deep-run", absl::StrCat("deep-run-", i), "deep", "n");
    EXPECT_TRUE(absl::StrContains(reply.snapshot_skipped(), "workspace depth"))
        << reply.snapshot_skipped();
  }
  for (std::thread& t : others) t.join();
  EXPECT_EQ(failed.load(), 0);
  const grpc::Status copy = Copy("deep", "", "", "deep-copy");
  EXPECT_EQ(copy.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << copy.error_message();
  EXPECT_TRUE(absl::StrContains(copy.error_message(), "workspace depth")) << copy.error_message();
  EXPECT_TRUE(ExecutorServing()) << cluster_->Logs();
}

TEST_F(WorkspaceAttackTest, FifosSwappedInForFilesBlockNoCall) {
  Boot();
  const std::string ws = Workspace("fifo");
  ASSERT_EQ(mkfifo((ws + "/standing.fifo").c_str(), 0644), 0);
  for (int i = 0; i < 8; ++i) std::ofstream(absl::StrCat(ws, "/f", i)) << "file " << i;
  // A host process keeps swapping FIFOs and files under the same names.
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    for (int n = 0; !stop.load(); ++n) {
      const std::string name = absl::StrCat(ws, "/f", n % 8);
      const std::string tmp = name + ".tmp";
      if (n % 2 == 0) {
        mkfifo(tmp.c_str(), 0644);
      } else {
        std::ofstream(tmp) << "file again";
      }
      rename(tmp.c_str(), name.c_str());
    }
  });
  int answered = 0;
  for (int i = 1; i <= 30; ++i) {
    rein::v1::ExecuteResponse response;
    const grpc::Status status =
        Execute("fifo-run", absl::StrCat("fifo-run-", i), "fifo", "write_file",
                R"({"path": "note.txt", "content": "x"})", &response, /*deadline_seconds=*/20);
    EXPECT_TRUE(status.ok()) << status.error_message();
    answered += status.ok();
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(answered, 30);
  EXPECT_TRUE(ExecutorServing()) << cluster_->Logs();
}

TEST_F(WorkspaceAttackTest, SandboxPlaceholdersReachNoSnapshotAndNoFork) {
  Boot();
  const std::string ws = Workspace("nogit");
  std::ofstream(ws + "/a.txt") << "a";
  // A command of one run holds the workspace's `.git` placeholder...
  std::thread command([&] {
    rein::v1::ExecuteResponse response;
    const grpc::Status status =
        Execute("cmd-run", "cmd-run-1", "nogit", "run_command",
                R"({"shell": "touch started; sleep 3", "timeout_seconds": 30})", &response);
    EXPECT_TRUE(status.ok() && response.ok()) << status.error_message() << response.output();
  });
  for (int i = 0; i < 1000 && !Exists(ws + "/started"); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(Exists(ws + "/.git")) << "no placeholder while the command runs";
  // ...while another run's snapshot, a fork from it and a copy of the live workspace are made.
  Write("snap-run", "snap-run-1", "nogit", "b.txt");
  EXPECT_TRUE(Copy("nogit", "snap-run", "snap-run-1", "nogit-fork").ok());
  EXPECT_TRUE(Copy("nogit", "", "", "nogit-now").ok());
  command.join();
  EXPECT_FALSE(Exists(ws + "/.git"));  // gone with the command
  EXPECT_TRUE(Exists(root_ + "/nogit-fork/a.txt"));
  EXPECT_FALSE(Exists(root_ + "/nogit-fork/.git"));
  EXPECT_TRUE(Exists(root_ + "/nogit-now/a.txt"));
  EXPECT_FALSE(Exists(root_ + "/nogit-now/.git"));
  EXPECT_FALSE(Exists(root_ + "/.rein-history/runs/snap-run/snap-run-1/.git"));
}

TEST_F(WorkspaceAttackTest, SnapshotsAndCopiesTakeAnAdmissionSlot) {
  Boot({"--max_concurrent=1"});
  Workspace("busy");
  Workspace("idle");
  std::thread command([&] {
    rein::v1::ExecuteResponse response;
    const grpc::Status status =
        Execute("cmd-run", "cmd-run-1", "busy", "run_command",
                R"({"shell": "touch started; sleep 3", "timeout_seconds": 30})", &response);
    EXPECT_TRUE(status.ok() && response.ok()) << status.error_message() << response.output();
  });
  for (int i = 0; i < 1000 && !Exists(root_ + "/busy/started"); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(Exists(root_ + "/busy/started"));
  // The one slot is the command's: a mutating call (its snapshot first) and a fork's copy
  // wait their turn; a read-only call, which copies nothing, runs.
  rein::v1::ExecuteResponse response;
  grpc::Status status = Execute("w-run", "w-run-1", "idle", "write_file",
                                R"({"path": "a.txt", "content": "x"})", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_TRUE(absl::StrContains(status.error_message(), "--max_concurrent"));
  status = Copy("idle", "", "", "idle-copy");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_FALSE(Exists(root_ + "/idle-copy"));
  status = Execute("r-run", "r-run-1", "idle", "list_files", "{}", &response);
  EXPECT_TRUE(status.ok() && response.ok()) << status.error_message();
  command.join();
  // The same call, asked again once the slot is free, runs.
  Write("w-run", "w-run-1", "idle", "a.txt");
  EXPECT_TRUE(Copy("idle", "", "", "idle-copy").ok());
}

}  // namespace
}  // namespace rein::testing
