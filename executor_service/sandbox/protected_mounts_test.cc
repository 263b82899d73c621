// Tests of the protected mounts and their placeholders, without bubblewrap.
#include "executor_service/sandbox/protected_mounts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "executor_service/testing/temp_workspace.h"
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
  EXPECT_FALSE(Exists(".git"));  // bwrap creates the mount point; nothing here yet
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
