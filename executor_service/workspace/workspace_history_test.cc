// Tests of WorkspaceHistory: snapshots are real copies, retention, copies of forks.
#include "executor_service/workspace/workspace_history.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_reason.h"
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

}  // namespace
}  // namespace rein
