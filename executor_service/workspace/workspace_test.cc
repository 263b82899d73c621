// Tests of workspace names and openat2 confinement.
#include "executor_service/workspace/workspace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "executor_service/testing/temp_workspace.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::rein::testing::TempWorkspace;

TEST(ValidateWorkspaceNameTest, PlainNameIsAccepted) {
  EXPECT_TRUE(ValidateWorkspaceName("ws").ok());
  EXPECT_TRUE(ValidateWorkspaceName(".hidden").ok());
  EXPECT_TRUE(ValidateWorkspaceName(std::string(255, 'a')).ok());
}

TEST(ValidateWorkspaceNameTest, BadNamesAreInvalidArgumentNamingWorkspace) {
  for (const std::string& name :
       {std::string(""), std::string("a/b/c"), std::string("/abs"), std::string("."),
        std::string(".."), std::string(256, 'a'), std::string("a\0b", 3), std::string("ws/"),
        std::string("Team/ws"), std::string("team/.rein-history")}) {
    absl::Status status = ValidateWorkspaceName(name);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(status.message().rfind("workspace:", 0), 0u) << status.message();
  }
}

TEST(ValidateWorkspaceNameTest, ANamespacesWorkspaceIsAccepted) {
  EXPECT_TRUE(ValidateWorkspaceName("team-a/ws").ok());
}

TEST(NamespacedWorkspaceTest, DefaultStaysAtTheRootAndOthersGoUnderTheirFolder) {
  TempWorkspace temp;
  ASSERT_EQ(mkdir((temp.root() + "/team-a").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((temp.root() + "/team-a/repo").c_str(), 0755), 0);
  EXPECT_EQ(*NamespacedWorkspace(temp.root(), "", "repo"), "repo");
  EXPECT_EQ(*NamespacedWorkspace(temp.root(), "default", "repo"), "repo");
  absl::StatusOr<std::string> a = NamespacedWorkspace(temp.root(), "team-a", "repo");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, "team-a/repo");
  auto root = WorkspaceRoot::Open(temp.root());
  ASSERT_TRUE(root.ok());
  EXPECT_TRUE((*root)->OpenWorkspace(*a).ok());
  // The namespace's folder is now marked: a `default` run cannot take it as its workspace.
  absl::StatusOr<std::string> folder = NamespacedWorkspace(temp.root(), "", "team-a");
  EXPECT_EQ(folder.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(folder.status().message().find("is a namespace's folder"), std::string::npos);
}

TEST(NamespacedWorkspaceTest, BadNamesAreRefusedNamingTheField) {
  TempWorkspace temp;
  EXPECT_EQ(
      NamespacedWorkspace(temp.root(), "Team A", "repo").status().message().rfind("namespace:", 0),
      0u);
  EXPECT_EQ(
      NamespacedWorkspace(temp.root(), "team-a", "a/b").status().message().rfind("workspace:", 0),
      0u);
  EXPECT_EQ(NamespacedWorkspace(temp.root(), "team-a", "..").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(WorkspaceRootTest, MissingRootIsNotFound) {
  EXPECT_EQ(WorkspaceRoot::Open("/nonexistent/rein-root").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(WorkspaceRootTest, FileAsRootIsInvalidArgument) {
  TempWorkspace temp;
  EXPECT_EQ(WorkspaceRoot::Open(temp.root() + "/outside.txt").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(WorkspaceRootTest, MissingWorkspaceIsNotFound) {
  TempWorkspace temp;
  auto root = WorkspaceRoot::Open(temp.root());
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ((*root)->OpenWorkspace("nope").status().code(), absl::StatusCode::kNotFound);
  // A file where the workspace should be is not a workspace either.
  EXPECT_EQ((*root)->OpenWorkspace("outside.txt").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*root)->OpenWorkspace("..").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WorkspaceRootTest, WorkspaceSymlinkOutOfRootIsPermissionDenied) {
  TempWorkspace temp;
  ASSERT_EQ(symlink("/etc", (temp.root() + "/etcws").c_str()), 0);
  auto root = WorkspaceRoot::Open(temp.root());
  ASSERT_TRUE(root.ok());
  EXPECT_EQ((*root)->OpenWorkspace("etcws").status().code(), absl::StatusCode::kPermissionDenied);
}

class WorkspaceOpenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    temp_.WriteFile("a.txt", "hello\n");
    temp_.WriteFile("dir/b.txt", "inside\n");
    temp_.Symlink("/etc/passwd", "passwd");
    temp_.Symlink("../outside.txt", "rel_out");
    temp_.Symlink("../ws2", "sibling");
    temp_.Symlink("dir/b.txt", "good_link");
    temp_.Symlink("dir", "good_dir_link");
    temp_.Symlink("/proc/self/root/etc/passwd", "magic");
    temp_.Symlink("loop2", "loop1");
    temp_.Symlink("loop1", "loop2");
    auto root = WorkspaceRoot::Open(temp_.root());
    ASSERT_TRUE(root.ok()) << root.status();
    root_ = *std::move(root);
    auto ws = root_->OpenWorkspace(TempWorkspace::kName);
    ASSERT_TRUE(ws.ok()) << ws.status();
    ws_ = *std::move(ws);
  }

  absl::Status OpenStatus(const std::string& path) { return ws_->Open(path, O_RDONLY).status(); }

  TempWorkspace temp_;
  std::unique_ptr<WorkspaceRoot> root_;
  std::unique_ptr<Workspace> ws_;
};

TEST_F(WorkspaceOpenTest, PathsInsideAreOpened) {
  EXPECT_TRUE(OpenStatus("a.txt").ok());
  EXPECT_TRUE(OpenStatus("./dir/../a.txt").ok());
  EXPECT_TRUE(OpenStatus("dir/b.txt").ok());
  EXPECT_TRUE(OpenStatus("good_link").ok());
  EXPECT_TRUE(OpenStatus("good_dir_link/b.txt").ok());
  EXPECT_TRUE(OpenStatus(".").ok());
}

TEST_F(WorkspaceOpenTest, EscapesArePermissionDeniedNamingThePath) {
  // "../ws2/..." is the sibling-prefix trick: ws2 starts with the workspace's name "ws".
  for (const std::string path :
       {"..", "../outside.txt", "/etc/passwd", "dir/../../outside.txt", "passwd", "rel_out",
        "sibling/secret.txt", "../ws2/secret.txt", "magic", "/"}) {
    absl::Status status = OpenStatus(path);
    EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << path << ": " << status;
    EXPECT_NE(status.message().find("\"" + path + "\""), absl::string_view::npos)
        << status.message();
  }
}

TEST_F(WorkspaceOpenTest, MissingPathIsNotFound) {
  EXPECT_EQ(OpenStatus("missing.txt").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(OpenStatus("a.txt/x").code(), absl::StatusCode::kNotFound);
}

TEST_F(WorkspaceOpenTest, SymlinkLoopIsFailedPrecondition) {
  EXPECT_EQ(OpenStatus("loop1").code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(WorkspaceOpenTest, MalformedPathsAreInvalidArgument) {
  EXPECT_EQ(OpenStatus("").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenStatus(std::string("a\0b", 3)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenStatus(std::string(5000, 'a')).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(WorkspaceOpenTest, DescriptorsAreCloseOnExec) {
  auto fd = ws_->Open("a.txt", O_RDONLY);
  ASSERT_TRUE(fd.ok());
  EXPECT_NE(fcntl(fd->get(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST(FileTypeNameTest, NamesKinds) {
  EXPECT_STREQ(FileTypeName(S_IFREG | 0644), "file");
  EXPECT_STREQ(FileTypeName(S_IFDIR | 0755), "dir");
  EXPECT_STREQ(FileTypeName(S_IFLNK | 0777), "symlink");
  EXPECT_STREQ(FileTypeName(S_IFIFO | 0644), "fifo");
}

}  // namespace
}  // namespace rein
