// Tests of the list_files tool (through ToolExecutor, so with its schema).
#include "executor_service/tools/list_files_tool.h"

#include <sys/stat.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/testing/tool_runner.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::rein::testing::RunOptions;
using ::rein::testing::RunTool;
using ::rein::testing::TempWorkspace;

class ListFilesToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    temp_.WriteFile("b.txt", "hello\n");
    temp_.WriteFile("a.txt", "hi\n");
    temp_.WriteFile("sub/c.txt", "abc");
    temp_.WriteFile(".hidden", "x");
    temp_.Symlink("/etc", "etc");
    temp_.Symlink("../ws2", "sibling");
  }

  std::string DirLine(const std::string& rel) {
    struct stat st;
    EXPECT_EQ(stat(temp_.Path(rel).c_str(), &st), 0);
    return absl::StrCat(rel, "/\tdir\t", st.st_size, "\n");
  }

  ToolResult Run(const std::string& args, const RunOptions& options = {}) {
    absl::StatusOr<ToolResult> result = RunTool(temp_, "list_files", args, options);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ToolResult::Failure(result.status());
  }

  TempWorkspace temp_;
};

TEST_F(ListFilesToolTest, ListsTopLevelSortedWithTypeAndSize) {
  ToolResult result = Run("{}");
  ASSERT_TRUE(result.ok) << result.error_message;
  EXPECT_EQ(result.output, absl::StrCat("a.txt\tfile\t3\nb.txt\tfile\t6\netc\tsymlink\t4\n"
                                        "sibling\tsymlink\t6\n",
                                        DirLine("sub")));
  EXPECT_FALSE(result.truncated);
}

TEST_F(ListFilesToolTest, RecursiveListsNestedButDoesNotFollowSymlinks) {
  ToolResult result = Run(R"({"recursive": true, "include_hidden": true})");
  ASSERT_TRUE(result.ok) << result.error_message;
  EXPECT_EQ(result.output,
            absl::StrCat(".hidden\tfile\t1\na.txt\tfile\t3\nb.txt\tfile\t6\netc\tsymlink\t4\n"
                         "sibling\tsymlink\t6\n",
                         DirLine("sub"), "sub/c.txt\tfile\t3\n"));
}

TEST_F(ListFilesToolTest, SubdirectoryPathsAreRelativeToTheWorkspace) {
  ToolResult result = Run(R"({"path": "./sub/"})");
  ASSERT_TRUE(result.ok);
  EXPECT_EQ(result.output, "sub/c.txt\tfile\t3\n");
}

TEST_F(ListFilesToolTest, FilePathListsTheFile) {
  ToolResult result = Run(R"({"path": "sub/c.txt"})");
  ASSERT_TRUE(result.ok);
  EXPECT_EQ(result.output, "sub/c.txt\tfile\t3\n");
}

TEST_F(ListFilesToolTest, MaxEntriesStopsWithANote) {
  ToolResult result = Run(R"({"max_entries": 2})");
  ASSERT_TRUE(result.ok);
  EXPECT_EQ(result.output,
            "a.txt\tfile\t3\nb.txt\tfile\t6\n"
            "[listing stopped at max_entries=2; more entries exist]\n");
}

TEST_F(ListFilesToolTest, EmptyDirectoryHasANote) {
  temp_.MakeDir("empty");
  ToolResult result = Run(R"({"path": "empty"})");
  ASSERT_TRUE(result.ok);
  EXPECT_EQ(result.output, "[no entries]\n");
}

TEST_F(ListFilesToolTest, EscapingPathsArePermissionDenied) {
  for (const std::string path : {"..", "/etc", "etc", "sibling", "../ws2", "sub/../../ws2"}) {
    ToolResult result = Run(absl::StrCat(R"({"path": ")", path, R"("})"));
    EXPECT_FALSE(result.ok) << path;
    EXPECT_EQ(result.error_code, "PERMISSION_DENIED") << path;
    EXPECT_NE(result.error_message.find("\"" + path + "\""), std::string::npos)
        << result.error_message;
    EXPECT_EQ(result.output, "");
  }
}

TEST_F(ListFilesToolTest, MissingPathIsNotFound) {
  ToolResult result = Run(R"({"path": "nope"})");
  EXPECT_EQ(result.error_code, "NOT_FOUND");
}

TEST_F(ListFilesToolTest, OutputIsCappedWithMarker) {
  for (int i = 0; i < 100; ++i) temp_.WriteFile(absl::StrCat("many/f", 100 + i), "");
  RunOptions options;
  options.max_output_bytes = 100;
  ToolResult result = Run(R"({"path": "many"})", options);
  ASSERT_TRUE(result.ok);
  EXPECT_TRUE(result.truncated);
  // 100 lines of "many/fNNN\tfile\t0\n" (17 bytes) = 1700 bytes, 100 kept.
  EXPECT_EQ(result.output.substr(0, 17), "many/f100\tfile\t0\n");
  EXPECT_NE(result.output.find("\n[output truncated: 1600 bytes omitted]\n"), std::string::npos)
      << result.output;
}

TEST_F(ListFilesToolTest, ExpiredDeadlineIsTimeout) {
  RunOptions options;
  options.deadline = absl::InfinitePast();
  ToolResult result = Run(R"({"recursive": true})", options);
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error_code, "TIMEOUT");
  EXPECT_TRUE(result.timed_out);
}

TEST_F(ListFilesToolTest, ExcludeSkipsEntriesAndTheirSubtrees) {
  temp_.WriteFile("node_modules/x/y.js", "y");
  temp_.WriteFile("sub/c_test.txt", "t");
  ToolResult result =
      Run(R"({"recursive": true, "exclude": ["node_modules", "*_test.*", "b.txt", "sub/c.txt"]})");
  ASSERT_TRUE(result.ok) << result.error_message;
  EXPECT_EQ(result.output,
            absl::StrCat("a.txt\tfile\t3\netc\tsymlink\t4\nsibling\tsymlink\t6\n", DirLine("sub")));
}

TEST_F(ListFilesToolTest, ExcludeMustBeAnArrayOfNonEmptyPatterns) {
  ToolResult result = Run(R"({"exclude": ["a", ""]})");
  EXPECT_EQ(result.error_code, "INVALID_ARGUMENT");
  EXPECT_EQ(result.error_message.rfind("args.exclude[1]:", 0), 0u) << result.error_message;
  EXPECT_EQ(Run(R"({"exclude": [1]})").error_code, "INVALID_ARGUMENT");
}

}  // namespace
}  // namespace rein
