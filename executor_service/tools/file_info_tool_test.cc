// Tests of the file_info tool (through ToolExecutor, so with its schema).
#include "executor_service/tools/file_info_tool.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/testing/tool_runner.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::rein::testing::RunTool;
using ::rein::testing::TempWorkspace;

class FileInfoToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    temp_.WriteFile("three.txt", "one\ntwo\nthree");
    ASSERT_EQ(chmod(temp_.Path("three.txt").c_str(), 0640), 0);
    temp_.WriteFile("bin.dat", std::string("\0\1\2", 3));
    temp_.MakeDir("dir");
    temp_.Symlink("three.txt", "link");
    temp_.Symlink("/etc/passwd", "passwd");
    temp_.Symlink("../outside.txt", "rel_out");
  }

  ToolResult Info(const std::string& path) {
    absl::StatusOr<ToolResult> result =
        RunTool(temp_, "file_info", absl::StrCat(R"({"path": ")", path, R"("})"));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ToolResult::Failure(result.status());
  }

  nlohmann::json InfoJson(const std::string& path) {
    ToolResult result = Info(path);
    EXPECT_TRUE(result.ok) << result.error_message;
    return nlohmann::json::parse(result.output);
  }

  TempWorkspace temp_;
};

TEST_F(FileInfoToolTest, TextFileHasTypeSizeModeAndLines) {
  nlohmann::json info = InfoJson("three.txt");
  EXPECT_EQ(info["path"], "three.txt");
  EXPECT_EQ(info["type"], "file");
  EXPECT_EQ(info["size"], 13);
  EXPECT_EQ(info["mode"], "0640");
  EXPECT_EQ(info["lines"], 3);
  EXPECT_EQ(info["binary"], false);
  EXPECT_EQ(info["symlink"], false);
  EXPECT_EQ(info["nlink"], 1);
  EXPECT_EQ(info["mtime"].get<std::string>().size(), 20u);  // 2024-01-02T03:04:05Z
}

TEST_F(FileInfoToolTest, BinaryFileHasNoLineCount) {
  nlohmann::json info = InfoJson("bin.dat");
  EXPECT_EQ(info["binary"], true);
  EXPECT_FALSE(info.contains("lines"));
}

TEST_F(FileInfoToolTest, DirectoryAndWorkspaceItself) {
  EXPECT_EQ(InfoJson("dir")["type"], "dir");
  EXPECT_EQ(InfoJson(".")["path"], ".");
}

TEST_F(FileInfoToolTest, SymlinkInsideIsDescribedWithItsTarget) {
  nlohmann::json info = InfoJson("link");
  EXPECT_EQ(info["type"], "file");
  EXPECT_EQ(info["symlink"], true);
  EXPECT_EQ(info["symlink_target"], "three.txt");
  EXPECT_EQ(info["lines"], 3);
}

TEST_F(FileInfoToolTest, FifoIsDescribedWithoutBlocking) {
  temp_.MakeFifo("pipe");
  nlohmann::json info = InfoJson("pipe");
  EXPECT_EQ(info["type"], "fifo");
  EXPECT_FALSE(info.contains("lines"));
}

TEST_F(FileInfoToolTest, EscapesArePermissionDenied) {
  for (const std::string path : {"passwd", "rel_out", "/etc/passwd", "..", "../ws2/secret.txt"}) {
    ToolResult result = Info(path);
    EXPECT_EQ(result.error_code, "PERMISSION_DENIED") << path;
    EXPECT_EQ(result.output, "");
  }
}

TEST_F(FileInfoToolTest, MissingPathIsNotFound) { EXPECT_EQ(Info("nope").error_code, "NOT_FOUND"); }

}  // namespace
}  // namespace rein
