// Tests of the read_file tool (through ToolExecutor, so with its schema).
#include "executor_service/tools/read_file_tool.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/testing/tool_runner.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::rein::testing::RunOptions;
using ::rein::testing::RunTool;
using ::rein::testing::TempWorkspace;

class ReadFileToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    temp_.WriteFile("three.txt", "one\ntwo\nthree\n");
    temp_.WriteFile("dir/nonl.txt", "a\nb");
    temp_.WriteFile("empty.txt", "");
    temp_.Symlink("/etc/passwd", "passwd");
    temp_.Symlink("../outside.txt", "rel_out");
    temp_.Symlink("../ws2", "sibling");
    temp_.Symlink("three.txt", "good_link");
  }

  ToolResult Run(const std::string& args, const RunOptions& options = {}) {
    absl::StatusOr<ToolResult> result = RunTool(temp_, "read_file", args, options);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ToolResult::Failure(result.status());
  }

  ToolResult ReadPath(const std::string& path) {
    return Run(absl::StrCat(R"({"path": ")", path, R"("})"));
  }

  TempWorkspace temp_;
};

TEST_F(ReadFileToolTest, LinesAreNumberedFromOne) {
  ToolResult result = ReadPath("three.txt");
  ASSERT_TRUE(result.ok) << result.error_message;
  EXPECT_EQ(result.output, "1: one\n2: two\n3: three\n");
  EXPECT_FALSE(result.truncated);
}

TEST_F(ReadFileToolTest, LastLineWithoutNewlineIsShown) {
  EXPECT_EQ(ReadPath("dir/nonl.txt").output, "1: a\n2: b\n");
}

TEST_F(ReadFileToolTest, OffsetAndLimitSelectLinesAndNoteTheRest) {
  ToolResult result = Run(R"({"path": "three.txt", "offset": 1, "limit": 1})");
  ASSERT_TRUE(result.ok);
  EXPECT_EQ(result.output, "2: two\n[more lines after line 2; continue with offset=2]\n");
  EXPECT_EQ(Run(R"({"path": "three.txt", "offset": 2, "limit": 1})").output, "3: three\n");
}

TEST_F(ReadFileToolTest, OffsetPastTheEndIsANote) {
  ToolResult result = Run(R"({"path": "three.txt", "offset": 10})");
  ASSERT_TRUE(result.ok);
  EXPECT_EQ(result.output, "[offset 10 is past the end of the file (3 lines)]\n");
}

TEST_F(ReadFileToolTest, EmptyFileIsANote) {
  EXPECT_EQ(ReadPath("empty.txt").output, "[empty file]\n");
}

TEST_F(ReadFileToolTest, SymlinkInsideTheWorkspaceIsFollowed) {
  EXPECT_EQ(ReadPath("good_link").output, "1: one\n2: two\n3: three\n");
}

TEST_F(ReadFileToolTest, EscapesArePermissionDenied) {
  for (const std::string path :
       {"/etc/passwd", "../outside.txt", "passwd", "rel_out", "sibling/secret.txt",
        "../ws2/secret.txt", "dir/../../outside.txt"}) {
    ToolResult result = ReadPath(path);
    EXPECT_FALSE(result.ok) << path;
    EXPECT_EQ(result.error_code, "PERMISSION_DENIED") << path;
    EXPECT_NE(result.error_message.find(path), std::string::npos) << result.error_message;
    EXPECT_EQ(result.output, "");
  }
}

TEST_F(ReadFileToolTest, BinaryFileIsRefused) {
  temp_.WriteFile("bin.dat", std::string("abc\0def", 7));
  ToolResult result = ReadPath("bin.dat");
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error_code, "BINARY_FILE");
  EXPECT_NE(result.error_message.find("bin.dat"), std::string::npos);
}

TEST_F(ReadFileToolTest, FifoIsRefusedWithoutBlocking) {
  temp_.MakeFifo("pipe");
  ToolResult result = ReadPath("pipe");
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error_code, "FAILED_PRECONDITION");
  EXPECT_EQ(result.error_message, "path \"pipe\" is a fifo, not a regular file");
}

TEST_F(ReadFileToolTest, DirectoryIsRefused) {
  ToolResult result = ReadPath("dir");
  EXPECT_EQ(result.error_code, "FAILED_PRECONDITION");
  EXPECT_EQ(result.error_message, "path \"dir\" is a directory, not a file");
}

TEST_F(ReadFileToolTest, MissingFileIsNotFound) {
  EXPECT_EQ(ReadPath("missing.txt").error_code, "NOT_FOUND");
}

class HugeFileTest : public ReadFileToolTest {
 protected:
  void SetUp() override {
    ReadFileToolTest::SetUp();
    // 10,000 text lines, then a sparse hole up to 50 MB: one last, 50 MB line of NULs.
    std::string text;
    for (int i = 0; i < 10000; ++i) absl::StrAppend(&text, "line ", i, "\n");
    temp_.WriteFile("huge.txt", text);
    text_bytes_ = text.size();
    ASSERT_EQ(truncate(temp_.Path("huge.txt").c_str(), kSize), 0);
  }

  static constexpr off_t kSize = 50 << 20;
  size_t text_bytes_ = 0;
};

TEST_F(HugeFileTest, LimitBoundsTheOutput) {
  ToolResult result = Run(R"({"path": "huge.txt", "limit": 3})");
  ASSERT_TRUE(result.ok) << result.error_message;
  EXPECT_EQ(result.output,
            "1: line 0\n2: line 1\n3: line 2\n[more lines after line 3; continue with offset=3]\n");
}

TEST_F(HugeFileTest, HugeLineIsCutAtTheOutputCap) {
  RunOptions options;
  options.max_output_bytes = 4096;
  ToolResult result = Run(R"({"path": "huge.txt", "offset": 9999, "limit": 5})", options);
  ASSERT_TRUE(result.ok) << result.error_message;
  EXPECT_TRUE(result.truncated);
  EXPECT_EQ(result.output.substr(0, 24),
            std::string("10000: line 9999\n10001: \0", 25).substr(0, 24));
  // Body: "10000: line 9999\n" + "10001: " + the NUL line + "\n".
  const size_t body = 17 + 7 + (kSize - text_bytes_) + 1;
  EXPECT_EQ(result.output.substr(4096),
            absl::StrCat("\n[output truncated: ", body - 4096, " bytes omitted]\n"));
}

TEST_F(HugeFileTest, DeadlineStopsTheScan) {
  RunOptions options;
  options.deadline = absl::InfinitePast();
  ToolResult result = Run(R"({"path": "huge.txt", "offset": 10000})", options);
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error_code, "TIMEOUT");
  EXPECT_TRUE(result.timed_out);
}

}  // namespace
}  // namespace rein
