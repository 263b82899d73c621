// Tests of WorkspaceHistory: snapshots are real copies, retention, copies of forks.
#include "executor_service/workspace/workspace_history.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_reason.h"
#include "executor_service/testing/small_tmpfs.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/workspace/workspace.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// Rewrites `path` in place (same inode), as a tool writing through an open file would.
void RewriteInPlace(const std::string& path, const std::string& content) {
  int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  close(fd);
}

TEST(WorkspaceHistoryTest, SnapshotStaysAsItWasAfterTheRunRewritesAFileInPlace) {
  testing::TempWorkspace ws;
  ws.WriteFile("notes/a.txt", "before");
  ws.Symlink("notes/a.txt", "link");
  WorkspaceHistory history(ws.root(), /*retention=*/4);
  ASSERT_TRUE(history.SnapshotBeforeCall("run-1", "ws", "run-1-1").ok());
  RewriteInPlace(ws.Path("notes/a.txt"), "after!");
  ws.WriteFile("new.txt", "new");

  absl::StatusOr<CopyStats> copy = history.Copy("ws", "run-1", "run-1-1", "ws-fork");
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->files, 2);  // a.txt and the link
  EXPECT_EQ(Read(ws.root() + "/ws-fork/notes/a.txt"), "before");
  EXPECT_FALSE(Exists(ws.root() + "/ws-fork/new.txt"));
  char target[64] = {};
  ASSERT_GT(readlink((ws.root() + "/ws-fork/link").c_str(), target, sizeof(target) - 1), 0);
  EXPECT_STREQ(target, "notes/a.txt");
  // The copy is not linked to the workspace either.
  RewriteInPlace(ws.Path("notes/a.txt"), "third");
  EXPECT_EQ(Read(ws.root() + "/ws-fork/notes/a.txt"), "before");
}

TEST(WorkspaceHistoryTest, CopyOfTheWorkspaceAsItIsNow) {
  testing::TempWorkspace ws;
  ws.WriteFile("a.txt", "now");
  WorkspaceHistory history(ws.root(), /*retention=*/0);
  ASSERT_TRUE(history.Copy("ws", "", "", "copy").ok());
  EXPECT_EQ(Read(ws.root() + "/copy/a.txt"), "now");
  EXPECT_EQ(history.Copy("ws", "", "", "copy").status().code(), absl::StatusCode::kAlreadyExists);
  const absl::Status missing = history.Copy("missing", "", "", "copy2").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReasonOf(missing), reason::kWorkspaceNotFound);
  EXPECT_FALSE(Exists(ws.root() + "/copy2"));
  const absl::Status reserved = history.Copy("ws", "", "", ".rein-history").status();
  EXPECT_EQ(reserved.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(reserved.message(), "target: ")) << reserved;
}

TEST(WorkspaceHistoryTest, RetentionDropsTheOldestSnapshotsAndSaysSo) {
  testing::TempWorkspace ws;
  WorkspaceHistory history(ws.root(), /*retention=*/2);
  for (int n = 1; n <= 11; ++n) {
    ws.WriteFile("count.txt", absl::StrCat(n));
    ASSERT_TRUE(history.SnapshotBeforeCall("run-1", "ws", absl::StrCat("run-1-", n)).ok());
  }
  EXPECT_EQ(history.Copy("ws", "run-1", "run-1-11", "t11").status().code(), absl::StatusCode::kOk);
  EXPECT_EQ(Read(ws.root() + "/t11/count.txt"), "11");
  EXPECT_TRUE(history.Copy("ws", "run-1", "run-1-10", "t10").ok());
  absl::Status gone = history.Copy("ws", "run-1", "run-1-9", "t9").status();
  EXPECT_EQ(gone.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(gone.message().find("before_call"), std::string::npos) << gone;
  EXPECT_EQ(ReasonOf(gone), reason::kSnapshotMissing);
  EXPECT_FALSE(Exists(ws.root() + "/t9"));
}

TEST(WorkspaceHistoryTest, RepeatedCallKeepsTheFirstSnapshot) {
  testing::TempWorkspace ws;
  ws.WriteFile("a.txt", "first");
  WorkspaceHistory history(ws.root(), /*retention=*/4);
  ASSERT_TRUE(history.SnapshotBeforeCall("run-1", "ws", "run-1-1").ok());
  ws.WriteFile("a.txt", "second");
  ASSERT_TRUE(history.SnapshotBeforeCall("run-1", "ws", "run-1-1").ok());
  ASSERT_TRUE(history.Copy("ws", "run-1", "run-1-1", "t").ok());
  EXPECT_EQ(Read(ws.root() + "/t/a.txt"), "first");
}

TEST(WorkspaceHistoryTest, DeleteRemovesOnlyCopies) {
  testing::TempWorkspace ws;
  WorkspaceHistory history(ws.root(), /*retention=*/0);
  ASSERT_TRUE(history.Copy("ws", "", "", "copy").ok());
  EXPECT_EQ(history.Delete("ws").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Exists(ws.Path("")));
  EXPECT_TRUE(history.Delete("copy").ok());
  EXPECT_FALSE(Exists(ws.root() + "/copy"));
  EXPECT_TRUE(history.Delete("copy").ok());
}

TEST(WorkspaceHistoryTest, BadNamesAreInvalidArgument) {
  testing::TempWorkspace ws;
  WorkspaceHistory history(ws.root(), /*retention=*/4);
  EXPECT_EQ(history.SnapshotBeforeCall("../x", "ws", "c").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(history.Copy("ws", "run-1", "../../etc", "t").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(history.Copy("ws", "", "", ".rein-history").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateWorkspaceName(kWorkspaceHistoryDir).code(), absl::StatusCode::kInvalidArgument);
}

WorkspaceHistoryOptions Bounded(int64_t max_bytes, int64_t max_files) {
  WorkspaceHistoryOptions options;
  options.retention = 16;
  options.max_bytes = max_bytes;
  options.max_files = max_files;
  return options;
}

bool HasLeftovers(const std::string& root) {
  const std::string tmp = root + "/" + kWorkspaceHistoryDir + "/tmp";
  DIR* dir = opendir(tmp.c_str());
  if (dir == nullptr) return false;
  int names = 0;
  while (struct dirent* entry = readdir(dir)) names += entry->d_name[0] != '.';
  closedir(dir);
  return names > 0;
}

TEST(WorkspaceHistoryBoundsTest, SnapshotPastTheBytesBoundIsSkippedAndForkFromItRefused) {
  testing::TempWorkspace ws;
  ws.WriteFile("big.bin", std::string(256 * 1024, 'x'));
  WorkspaceHistory history(ws.root(), Bounded(/*max_bytes=*/64 * 1024, /*max_files=*/100));
  absl::StatusOr<CopyStats> snapshot = history.SnapshotBeforeCall("run-1", "ws", "run-1-1");
  EXPECT_EQ(snapshot.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(snapshot.status().message().find(kMaxBytesBound), std::string::npos)
      << snapshot.status();
  EXPECT_FALSE(HasLeftovers(ws.root()));
  const absl::Status fork = history.Copy("ws", "run-1", "run-1-1", "fork").status();
  EXPECT_EQ(fork.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReasonOf(fork), reason::kSnapshotMissing);
  EXPECT_NE(fork.message().find(kMaxBytesBound), std::string::npos) << fork;
  EXPECT_FALSE(Exists(ws.root() + "/fork"));
}

TEST(WorkspaceHistoryBoundsTest, WorkspaceCopyPastABoundIsRefusedNamingIt) {
  testing::TempWorkspace ws;
  for (int i = 0; i < 20; ++i) ws.WriteFile(absl::StrCat("f", i), "x");
  WorkspaceHistory history(ws.root(), Bounded(/*max_bytes=*/int64_t{1} << 30, /*max_files=*/10));
  const absl::Status copy = history.Copy("ws", "", "", "copy").status();
  EXPECT_EQ(copy.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(copy.message().find(kMaxFilesBound), std::string::npos) << copy;
  EXPECT_FALSE(Exists(ws.root() + "/copy"));
  EXPECT_FALSE(HasLeftovers(ws.root()));
  EXPECT_FALSE(Exists(ws.root() + "/" + kWorkspaceHistoryDir + "/forks/copy"));
}

TEST(WorkspaceHistoryBoundsTest, RunFileBoundDropsTheOldestSnapshotsToMakeRoom) {
  testing::TempWorkspace ws;
  for (int i = 0; i < 4; ++i) ws.WriteFile(absl::StrCat("f", i), "x");
  WorkspaceHistory history(ws.root(), Bounded(/*max_bytes=*/int64_t{1} << 30, /*max_files=*/10));
  for (int n = 1; n <= 3; ++n) {
    absl::StatusOr<CopyStats> taken =
        history.SnapshotBeforeCall("run-1", "ws", absl::StrCat("run-1-", n));
    ASSERT_TRUE(taken.ok()) << taken.status();
    EXPECT_EQ(taken->entries, 4);
  }
  // 3 snapshots of 4 entries pass 10: the first made room for the third.
  EXPECT_EQ(history.Copy("ws", "run-1", "run-1-1", "t1").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(history.Copy("ws", "run-1", "run-1-2", "t2").ok());
  EXPECT_TRUE(history.Copy("ws", "run-1", "run-1-3", "t3").ok());
  // A workspace that passes the bound alone is not snapshotted.
  for (int i = 4; i < 12; ++i) ws.WriteFile(absl::StrCat("f", i), "x");
  const absl::Status skipped = history.SnapshotBeforeCall("run-1", "ws", "run-1-4").status();
  EXPECT_EQ(skipped.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(skipped.message().find(kMaxFilesBound), std::string::npos) << skipped;
  EXPECT_TRUE(history.Copy("ws", "run-1", "run-1-3", "t3b").ok());
}

TEST(WorkspaceHistoryBoundsTest, SnapshotPastTheDeadlineIsSkipped) {
  testing::TempWorkspace ws;
  for (int i = 0; i < 200; ++i) ws.WriteFile(absl::StrCat("f", i), "x");
  WorkspaceHistory history(ws.root(), /*retention=*/4);
  const absl::Status late =
      history.SnapshotBeforeCall("run-1", "ws", "run-1-1", absl::Now() - absl::Seconds(1)).status();
  EXPECT_EQ(late.code(), absl::StatusCode::kDeadlineExceeded) << late;
  EXPECT_EQ(history.Copy("ws", "run-1", "run-1-1", "t").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(WorkspaceHistoryBoundsTest, SparseFileAndHardLinkSnapshotAllocatesWhatTheWorkspaceDoes) {
  testing::SmallTmpfs fs(/*size_bytes=*/64 << 20);
  if (!fs.mounted()) GTEST_SKIP() << "needs a small tmpfs (" << fs.error() << ")";
  const std::string ws = fs.path() + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0700), 0);
  int fd = open((ws + "/sparse").c_str(), O_WRONLY | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, int64_t{10} << 30), 0);  // 10 GiB apparent, 0 bytes allocated
  close(fd);
  ASSERT_EQ(link((ws + "/sparse").c_str(), (ws + "/again").c_str()), 0);
  WorkspaceHistory history(fs.path(), /*retention=*/4);
  for (int n = 1; n <= 3; ++n) {
    absl::StatusOr<CopyStats> taken =
        history.SnapshotBeforeCall("run-1", "ws", absl::StrCat("run-1-", n));
    ASSERT_TRUE(taken.ok()) << taken.status();
    EXPECT_EQ(taken->allocated_bytes, 0);
  }
  absl::StatusOr<CopyStats> fork = history.Copy("ws", "run-1", "run-1-2", "fork");
  ASSERT_TRUE(fork.ok()) << fork.status();
  struct stat original, copy, link_copy;
  ASSERT_EQ(lstat((ws + "/sparse").c_str(), &original), 0);
  ASSERT_EQ(lstat((fs.path() + "/fork/sparse").c_str(), &copy), 0);
  ASSERT_EQ(lstat((fs.path() + "/fork/again").c_str(), &link_copy), 0);
  EXPECT_EQ(copy.st_blocks, original.st_blocks);
  EXPECT_EQ(copy.st_size, int64_t{10} << 30);
  EXPECT_EQ(copy.st_ino, link_copy.st_ino);
  absl::StatusOr<CopyStats> all = MeasureTree(fs.path());
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_LT(all->allocated_bytes, 1 << 20);
}

TEST(WorkspaceHistoryBoundsTest, EndedRunsHistoryIsPrunedAfterTheRetention) {
  testing::TempWorkspace ws;
  ws.WriteFile("a.txt", "a");
  WorkspaceHistoryOptions options;
  options.retention = 4;
  options.ended_retention = absl::Hours(2);
  WorkspaceHistory history(ws.root(), options);
  ASSERT_TRUE(history.SnapshotBeforeCall("run-1", "ws", "run-1-1").ok());
  ASSERT_TRUE(history.SnapshotBeforeCall("run-2", "ws", "run-2-1").ok());
  history.MarkEnded("run-1");
  EXPECT_EQ(history.PruneEnded(absl::Now() + absl::Hours(1)), 0);
  EXPECT_TRUE(history.Copy("ws", "run-1", "run-1-1", "t1").ok());
  // Touched later: run-2 stays while run-1 is past the retention.
  const std::string run2 = ws.root() + "/" + kWorkspaceHistoryDir + "/runs/run-2";
  const struct timespec later[2] = {{0, UTIME_OMIT},
                                    absl::ToTimespec(absl::Now() + absl::Hours(2))};
  ASSERT_EQ(utimensat(AT_FDCWD, run2.c_str(), later, 0), 0);
  EXPECT_EQ(history.PruneEnded(absl::Now() + absl::Hours(3)), 1);
  EXPECT_FALSE(Exists(ws.root() + "/" + kWorkspaceHistoryDir + "/runs/run-1"));
  EXPECT_FALSE(Exists(ws.root() + "/" + kWorkspaceHistoryDir + "/sizes/run-1"));
  EXPECT_EQ(history.Copy("ws", "run-1", "run-1-1", "t1b").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(history.Copy("ws", "run-2", "run-2-1", "t2").ok());
}

}  // namespace
}  // namespace rein
