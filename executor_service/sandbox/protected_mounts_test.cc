// Tests of the protected mounts and their placeholders, without bubblewrap.
#include "executor_service/sandbox/protected_mounts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "executor_service/testing/temp_workspace.h"
#include "executor_service/workspace/sandbox_placeholders.h"
#include "executor_service/workspace/workspace_history.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::rein::testing::TempWorkspace;

class ProtectedMountsTest : public ::testing::Test {
 protected:
  Workspace Open() {
    return Workspace(TempWorkspace::kName,
                     UniqueFd(open(temp_.Path("").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)));
  }

  bool Exists(const std::string& rel) {
    struct stat st;
    return lstat(temp_.Path(rel).c_str(), &st) == 0;
  }

  std::string Read(const std::string& rel) {
    std::ifstream in(temp_.Path(rel));
    std::stringstream content;
    content << in.rdbuf();
    return content.str();
  }

  // "kind path" for each mount, in order.
  static std::vector<std::string> Describe(const ProtectedMountLease& lease) {
    std::vector<std::string> out;
    for (const ProtectedMount& mount : lease.mounts()) {
      const char* kind = mount.kind == ProtectedMount::kPin           ? "pin"
                         : mount.kind == ProtectedMount::kReadOnly    ? "ro"
                         : mount.kind == ProtectedMount::kPlaceholder ? "placeholder"
                                                                      : "file";
      out.push_back(std::string(kind) + " " + mount.path);
      EXPECT_EQ(mount.fd.valid(), mount.kind != ProtectedMount::kPlaceholder) << mount.path;
    }
    return out;
  }

  TempWorkspace temp_;
};

TEST_F(ProtectedMountsTest, WithoutGitTheFirstMissingComponentIsThePlaceholder) {
  Workspace workspace = Open();
  ProtectedMounts mounts(*ProtectedPaths::Create({}));
  absl::StatusOr<ProtectedMountLease> lease = mounts.Acquire(workspace);
  ASSERT_TRUE(lease.ok()) << lease.status();
  // All three defaults start at .git; one placeholder per path, counted three times.
  EXPECT_EQ(Describe(*lease),
            (std::vector<std::string>{"placeholder .git", "placeholder .git", "placeholder .git"}));
  // Made here as bwrap's mount point, empty, and gone with the lease.
  EXPECT_TRUE(Exists(".git"));
  lease->Release();
  EXPECT_FALSE(Exists(".git"));
}

// What the sandbox placed in the workspace for its own use never reaches a snapshot, a fork
// made from one, or a copy of the live workspace; real entries of the same names do.
class PlaceholdersInCopiesTest : public ProtectedMountsTest {
 protected:
  PlaceholdersInCopiesTest() {
    WorkspaceHistoryOptions options;
    options.placeholders = &placeholders_;
    history_ = std::make_unique<WorkspaceHistory>(temp_.root(), options);
  }

  // A snapshot before call `call` of run-1, then a fork of it as workspace `target`.
  void SnapshotAndFork(const std::string& call, const std::string& target) {
    absl::StatusOr<CopyStats> taken = history_->SnapshotBeforeCall("run-1", "ws", call);
    ASSERT_TRUE(taken.ok()) << taken.status();
    absl::StatusOr<CopyStats> fork = history_->Copy("ws", "run-1", call, target);
    ASSERT_TRUE(fork.ok()) << fork.status();
  }

  bool InRoot(const std::string& rel) {
    struct stat st;
    return lstat((temp_.root() + "/" + rel).c_str(), &st) == 0;
  }

  SandboxPlaceholders placeholders_;
  std::unique_ptr<WorkspaceHistory> history_;
};

TEST_F(PlaceholdersInCopiesTest, AMissingGitsPlaceholderIsLeftOut) {
  temp_.WriteFile("a.txt", "a");
  Workspace workspace = Open();
  ProtectedMounts mounts(*ProtectedPaths::Create({}), &placeholders_);
  absl::StatusOr<ProtectedMountLease> lease = mounts.Acquire(workspace);  // a command runs
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE(Exists(".git"));
  SnapshotAndFork("run-1-1", "fork");
  EXPECT_TRUE(InRoot("fork/a.txt"));
  EXPECT_FALSE(InRoot("fork/.git"));  // `git init` works in the fork
  EXPECT_FALSE(InRoot(".rein-history/runs/run-1/run-1-1/.git"));
  absl::StatusOr<CopyStats> live = history_->Copy("ws", "", "", "live");
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_TRUE(InRoot("live/a.txt"));
  EXPECT_FALSE(InRoot("live/.git"));
}

TEST_F(PlaceholdersInCopiesTest, PlaceholdersInsideARealGitAreLeftOut) {
  temp_.WriteFile(".git/config", "[core]\n");
  Workspace workspace = Open();
  ProtectedMounts mounts(*ProtectedPaths::Create({}), &placeholders_);
  absl::StatusOr<ProtectedMountLease> lease = mounts.Acquire(workspace);
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE(Exists(".git/commondir"));
  ASSERT_TRUE(Exists(".git/hooks"));
  SnapshotAndFork("run-1-1", "fork");
  EXPECT_TRUE(InRoot("fork/.git/config"));
  EXPECT_FALSE(InRoot("fork/.git/commondir"));
  EXPECT_FALSE(InRoot("fork/.git/hooks"));
}

TEST_F(PlaceholdersInCopiesTest, ARealDirectoryOfThePlaceholdersNameIsCopied) {
  Workspace workspace = Open();
  ProtectedMounts mounts(*ProtectedPaths::Create({}), &placeholders_);
  {
    absl::StatusOr<ProtectedMountLease> lease = mounts.Acquire(workspace);
    ASSERT_TRUE(lease.ok()) << lease.status();
  }
  EXPECT_EQ(placeholders_.size(), 0u);
  temp_.WriteFile(".git/HEAD", "ref: refs/heads/main\n");  // a real repository, made later
  SnapshotAndFork("run-1-2", "fork");
  EXPECT_TRUE(InRoot("fork/.git/HEAD"));
}

TEST_F(ProtectedMountsTest, ExistingPathsAreBoundAndMissingCommondirBecomesAFile) {
  temp_.WriteFile(".git/config", "[core]\n");
  Workspace workspace = Open();
  ProtectedMounts mounts(*ProtectedPaths::Create({}));
  {
    absl::StatusOr<ProtectedMountLease> lease = mounts.Acquire(workspace);
    ASSERT_TRUE(lease.ok()) << lease.status();
    EXPECT_EQ(Describe(*lease),
              (std::vector<std::string>{"pin .git", "file .git/commondir", "ro .git/config",
                                        "placeholder .git/hooks"}));
    EXPECT_EQ(Read(".git/commondir"), ".\n");
    struct stat st;
    ASSERT_EQ(stat(temp_.Path(".git/commondir").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0444u);
    // What bwrap would leave behind: the empty mount point of the directory placeholder.
    temp_.MakeDir(".git/hooks");
  }
  // Released on destruction: the placeholders are gone, the real files stay.
  EXPECT_FALSE(Exists(".git/commondir"));
  EXPECT_FALSE(Exists(".git/hooks"));
  EXPECT_EQ(Read(".git/config"), "[core]\n");
}

TEST_F(ProtectedMountsTest, ThePlaceholderStaysUntilTheLastLeaseIsReleased) {
  temp_.MakeDir(".git");
  Workspace workspace = Open();
  ProtectedMounts mounts(*ProtectedPaths::Create({}));
  absl::StatusOr<ProtectedMountLease> first = mounts.Acquire(workspace);
  ASSERT_TRUE(first.ok()) << first.status();
  // The second command sees the first one's placeholder as a placeholder, not as a real file.
  absl::StatusOr<ProtectedMountLease> second = mounts.Acquire(workspace);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(Describe(*second), Describe(*first));
  first->Release();
  EXPECT_TRUE(Exists(".git/commondir"));
  first->Release();  // a second release gives nothing back twice
  EXPECT_TRUE(Exists(".git/commondir"));
  ProtectedMountLease moved = *std::move(second);
  EXPECT_TRUE(Exists(".git/commondir"));
  moved.Release();
  EXPECT_FALSE(Exists(".git/commondir"));
  EXPECT_TRUE(Exists(".git"));
}

TEST_F(ProtectedMountsTest, AChangedPlaceholderIsKept) {
  temp_.MakeDir(".git");
  Workspace workspace = Open();
  ProtectedMounts mounts(*ProtectedPaths::Create({}));
  {
    absl::StatusOr<ProtectedMountLease> lease = mounts.Acquire(workspace);
    ASSERT_TRUE(lease.ok()) << lease.status();
    // Someone on the host replaced it: it is not ours to remove any more.
    ASSERT_EQ(unlink(temp_.Path(".git/commondir").c_str()), 0);
    temp_.WriteFile(".git/commondir", "../other\n");
    temp_.WriteFile(".git/hooks/pre-commit", "#!/bin/sh\n");  // not empty: kept
  }
  EXPECT_EQ(Read(".git/commondir"), "../other\n");
  EXPECT_TRUE(Exists(".git/hooks/pre-commit"));
}

TEST_F(ProtectedMountsTest, ASymbolicLinkAboveAProtectedPathIsFailedPrecondition) {
  temp_.MakeDir("real");
  temp_.Symlink("real", ".git");
  Workspace workspace = Open();
  ProtectedMounts mounts(*ProtectedPaths::Create({}));
  absl::StatusOr<ProtectedMountLease> lease = mounts.Acquire(workspace);
  ASSERT_FALSE(lease.ok());
  EXPECT_EQ(lease.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(lease.status().message().find("symbolic link"), absl::string_view::npos)
      << lease.status();
}

TEST_F(ProtectedMountsTest, AnOperatorPathGetsItsOwnMounts) {
  temp_.MakeDir(".git");
  temp_.MakeDir("deploy");
  Workspace workspace = Open();
  ProtectedMounts mounts(*ProtectedPaths::Create({"deploy/keys"}));
  {
    absl::StatusOr<ProtectedMountLease> lease = mounts.Acquire(workspace);
    ASSERT_TRUE(lease.ok()) << lease.status();
    std::vector<std::string> described = Describe(*lease);
    ASSERT_GE(described.size(), 2u);
    EXPECT_EQ(described[described.size() - 2], "pin deploy");
    EXPECT_EQ(described.back(), "placeholder deploy/keys");
  }
  EXPECT_FALSE(Exists(".git/commondir"));
  EXPECT_TRUE(Exists("deploy"));
}

}  // namespace
}  // namespace rein
