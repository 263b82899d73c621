// Tests of write_file (through ToolExecutor), and of the one boundary every tool enforces: each
// escape is refused by every tool it applies to, run_command included.
#include "executor_service/tools/write_file_tool.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/tool_executor.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::rein::testing::TempWorkspace;

std::string ReadHostFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

class WriteFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SandboxOptions sandbox;
    sandbox.protected_paths = {".env", "secrets/"};
    ExecutorOptions options;
    options.workspace_root = temp_.root();
    options.executor_id = "test-executor";
    options.sandbox = sandbox;
    absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = ToolExecutor::Create(options);
    ASSERT_TRUE(executor.ok()) << executor.status();
    executor_ = *std::move(executor);
  }

  ToolResult Call(const std::string& tool, const nlohmann::json& args) {
    ExecuteCall call;
    call.call_id = "call-1";
    call.workspace = TempWorkspace::kName;
    call.tool = tool;
    call.args_json = args.dump();
    absl::StatusOr<ToolResult> result = executor_->Execute(call);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ToolResult::Failure(result.status());
  }

  ToolResult Write(const std::string& path, const std::string& content) {
    return Call("write_file", {{"path", path}, {"content", content}});
  }

  // Names in the workspace directory `rel`, sorted, space-separated.
  std::string Names(const std::string& rel) {
    std::string names;
    std::vector<std::string> all;
    DIR* dir = opendir(temp_.Path(rel).c_str());
    if (dir == nullptr) return "<none>";
    while (struct dirent* entry = readdir(dir)) {
      if (entry->d_name[0] == '.' && (entry->d_name[1] == 0 || entry->d_name[1] == '.')) continue;
      all.push_back(entry->d_name);
    }
    closedir(dir);
    std::sort(all.begin(), all.end());
    for (const std::string& name : all) absl::StrAppend(&names, names.empty() ? "" : " ", name);
    return names;
  }

  TempWorkspace temp_;
  std::unique_ptr<ToolExecutor> executor_;
};

TEST_F(WriteFileTest, CreatesParentsAndReplacesAtomicallyKeepingTheMode) {
  ToolResult result = Write("a/b/c.txt", "one\n");
  ASSERT_TRUE(result.ok) << result.error_message;
  EXPECT_EQ(result.output, "created a/b/c.txt (4 bytes)\n");
  EXPECT_EQ(ReadHostFile(temp_.Path("a/b/c.txt")), "one\n");
  ASSERT_EQ(chmod(temp_.Path("a/b/c.txt").c_str(), 0751), 0);
  result = Write("a/b/c.txt", "two\n");
  EXPECT_EQ(result.output, "replaced a/b/c.txt (4 bytes)\n");
  EXPECT_EQ(ReadHostFile(temp_.Path("a/b/c.txt")), "two\n");
  struct stat st;
  ASSERT_EQ(stat(temp_.Path("a/b/c.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0751u);
  EXPECT_EQ(Names("a/b"), "c.txt");  // no temporary file left
}

TEST_F(WriteFileTest, BadTargetsAreClearErrors) {
  temp_.MakeDir("dir");
  EXPECT_EQ(Write("dir", "x").error_code, "FAILED_PRECONDITION");
  EXPECT_EQ(Write("dir/", "x").error_code, "INVALID_ARGUMENT");
  EXPECT_EQ(
      Call("write_file", {{"path", "m/x"}, {"content", "x"}, {"create_parents", false}}).error_code,
      "NOT_FOUND");
  EXPECT_FALSE(Exists(temp_.Path("m")));
  EXPECT_EQ(Write("big", std::string(kMaxWriteFileBytes + 1, 'x')).error_code, "INVALID_ARGUMENT");
  EXPECT_EQ(Call("write_file", {{"path", "x"}}).error_code, "INVALID_ARGUMENT");
}

TEST_F(WriteFileTest, EscapingPathsArePermissionDenied) {
  temp_.Symlink("../ws2", "sibling");
  temp_.Symlink("/etc", "etc");
  temp_.Symlink("/tmp", "tmp");
  const std::string host_tmp = absl::StrCat("/tmp/rein-write-", getpid());
  for (const std::string& path :
       {std::string("../ws2/secret.txt"), std::string("../outside.txt"), host_tmp,
        std::string("/root/.bashrc"), std::string("sibling/secret.txt"), std::string("etc/rein-x"),
        std::string("tmp/rein-x"), std::string("sibling/new/x"),
        absl::StrCat(temp_.root(), "/ws2/secret.txt")}) {
    ToolResult result = Write(path, "pwned\n");
    EXPECT_EQ(result.error_code, "PERMISSION_DENIED") << path << ": " << result.error_message;
  }
  EXPECT_EQ(ReadHostFile(temp_.root() + "/ws2/secret.txt"), "sibling secret\n");
  EXPECT_EQ(ReadHostFile(temp_.root() + "/outside.txt"), "outside secret\n");
  EXPECT_FALSE(Exists(host_tmp));
  EXPECT_FALSE(Exists("/etc/rein-x"));
  EXPECT_FALSE(Exists(temp_.root() + "/ws2/new"));
}

TEST_F(WriteFileTest, SymlinkAtThePathIsReplacedNeverWrittenThrough) {
  const std::string passwd = ReadHostFile("/etc/passwd");
  temp_.Symlink("/etc/passwd", "passwd");
  ToolResult result = Write("passwd", "pwned\n");
  ASSERT_TRUE(result.ok) << result.error_message;
  EXPECT_TRUE(absl::StrContains(result.output, "symbolic link at this path was replaced"));
  EXPECT_EQ(ReadHostFile("/etc/passwd"), passwd);
  struct stat st;
  ASSERT_EQ(lstat(temp_.Path("passwd").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST_F(WriteFileTest, HardLinkToAnOutsideFileIsNotWrittenThrough) {
  ASSERT_EQ(link((temp_.root() + "/outside.txt").c_str(), temp_.Path("hard").c_str()), 0);
  ASSERT_TRUE(Write("hard", "pwned\n").ok);
  EXPECT_EQ(ReadHostFile(temp_.root() + "/outside.txt"), "outside secret\n");
  EXPECT_EQ(ReadHostFile(temp_.Path("hard")), "pwned\n");
}

TEST_F(WriteFileTest, SymlinkSwappedBetweenCheckAndUseNeverLeaks) {
  // A directory that another thread keeps replacing by a symbolic link to outside.
  const std::string outside = temp_.root() + "/target";
  ASSERT_EQ(mkdir(outside.c_str(), 0755), 0);
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    const std::string d = temp_.Path("d");
    const std::string link = temp_.Path("d.link");
    const std::string real = temp_.Path("d.real");
    while (!stop.load()) {
      mkdir(real.c_str(), 0755);
      rename(real.c_str(), d.c_str());
      symlink(outside.c_str(), link.c_str());
      rename(link.c_str(), d.c_str());  // fails while d is a non-empty directory: fine
      rmdir(d.c_str());
      unlink(d.c_str());
    }
  });
  int ok = 0;
  for (int i = 0; i < 300; ++i) {
    ToolResult result =
        Call("write_file", {{"path", "d/f"}, {"content", "x"}, {"create_parents", false}});
    if (result.ok) ++ok;
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(Names("../target"), "");
}

TEST_F(WriteFileTest, GitHooksAndConfigAreProtectedPresentOrNot) {
  for (const std::string path : {".git/hooks/pre-commit", ".git/config", ".git", "./.git//config",
                                 ".git/hooks", ".env", "secrets/key", "secrets"}) {
    ToolResult result = Write(path, "evil\n");
    EXPECT_EQ(result.error_code, "PERMISSION_DENIED") << path;
    EXPECT_TRUE(absl::StrContains(result.error_message, "is protected")) << result.error_message;
  }
  EXPECT_FALSE(Exists(temp_.Path(".git")));  // not even the parents were created
  temp_.WriteFile(".git/config", "[core]\n");
  temp_.MakeDir(".git/hooks");
  EXPECT_EQ(Write(".git/hooks/pre-commit", "evil").error_code, "PERMISSION_DENIED");
  EXPECT_EQ(Write(".git/config", "evil").error_code, "PERMISSION_DENIED");
  EXPECT_EQ(ReadHostFile(temp_.Path(".git/config")), "[core]\n");
  // Other files of .git may be written.
  EXPECT_TRUE(Write(".git/HEAD", "ref: refs/heads/main\n").ok);
}

TEST_F(WriteFileTest, GitCommondirIsProtectedBecauseItRedirectsTheConfig) {
  // .git/commondir makes git read its config (and hooks) from another directory, so writing
  // it is as good as writing .git/config.
  temp_.MakeDir(".git");
  EXPECT_EQ(Write(".git/commondir", "../evil\n").error_code, "PERMISSION_DENIED");
  EXPECT_EQ(Write(".git/commondir/x", "evil").error_code, "PERMISSION_DENIED");
  EXPECT_FALSE(Exists(temp_.Path(".git/commondir")));
}

TEST_F(WriteFileTest, ProtectedPathsAreCheckedAsResolvedNotAsWritten) {
  temp_.MakeDir(".git");
  temp_.Symlink(".git", "g");
  temp_.Symlink(".", "here");
  temp_.MakeDir("sub");
  EXPECT_EQ(Write("g/config", "evil").error_code, "PERMISSION_DENIED");
  EXPECT_EQ(Write("g/hooks/post-checkout", "evil").error_code, "PERMISSION_DENIED");
  EXPECT_EQ(Write("here/.git/config", "evil").error_code, "PERMISSION_DENIED");
  EXPECT_EQ(Write("sub/../.git/config", "evil").error_code, "PERMISSION_DENIED");
  EXPECT_EQ(Names(".git"), "");
}

// Every escape, refused by every tool it applies to.
TEST_F(WriteFileTest, OneBoundaryForEveryTool) {
  temp_.Symlink("/etc/passwd", "passwd");
  temp_.Symlink("../ws2", "sibling");
  temp_.Symlink("/etc", "etc");
  temp_.Symlink("loop2", "loop1");
  temp_.Symlink("loop1", "loop2");
  const std::string passwd = ReadHostFile("/etc/passwd");
  for (const std::string path : {"passwd", "../ws2/secret.txt", "/etc/passwd", "sibling/secret.txt",
                                 "etc/passwd", "loop1"}) {
    for (const std::string tool : {"read_file", "file_info"}) {
      ToolResult result = Call(tool, {{"path", path}});
      EXPECT_FALSE(result.ok) << tool << " " << path;
      EXPECT_FALSE(absl::StrContains(result.output, "root:")) << tool << " " << path;
      EXPECT_FALSE(absl::StrContains(result.output, "sibling secret")) << tool << " " << path;
    }
    ToolResult list = Call("list_files", {{"path", path}, {"recursive", true}});
    EXPECT_FALSE(absl::StrContains(list.output, "secret.txt")) << path;
    EXPECT_FALSE(absl::StrContains(list.output, "shadow")) << path;
    ToolResult search = Call("search_text", {{"pattern", "root|secret"}, {"path", path}});
    EXPECT_FALSE(absl::StrContains(search.output, "root:")) << path;
    EXPECT_FALSE(absl::StrContains(search.output, "sibling secret")) << path;
    // Through the sandboxed shell: /etc/passwd there is the sandbox's own.
    ToolResult shell = Call("run_command", {{"argv", {"cat", path}}});
    EXPECT_FALSE(absl::StrContains(shell.output, "sibling secret")) << path;
    EXPECT_FALSE(shell.output.find("root:x:0:0:root:/root:/bin/bash") != std::string::npos &&
                 passwd.find("root:x:0:0:root:/root:/bin/bash") != std::string::npos &&
                 shell.output == passwd)
        << path;
  }
  // The walk tools do not follow links out either.
  ToolResult search = Call("search_text", {{"pattern", "root:|sibling secret"}});
  EXPECT_EQ(search.output, "[no matches]\n");
  // The sandbox cannot make a hard link to a file outside the workspace.
  ToolResult link = Call("run_command", {{"shell", "ln /etc/hostname h 2>&1 || echo refused"}});
  EXPECT_TRUE(absl::StrContains(link.output, "refused")) << link.output;
}

}  // namespace
}  // namespace rein
