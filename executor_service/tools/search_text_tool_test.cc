// Tests of the search_text tool (through ToolExecutor, so with its schema).
#include "executor_service/tools/search_text_tool.h"

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

class SearchTextToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    temp_.WriteFile("a.py", "def foo():\n  return 1\n");
    temp_.WriteFile("b.txt", "Foo bar\nfoo baz\n");
    temp_.WriteFile("sub/c.py", "x = foo\n");
    temp_.WriteFile(".hidden/d.py", "foo hidden\n");
    temp_.Symlink("/etc/passwd", "passwd");
    temp_.Symlink("../ws2", "sibling");
  }

  ToolResult Run(const std::string& args, const RunOptions& options = {}) {
    absl::StatusOr<ToolResult> result = RunTool(temp_, "search_text", args, options);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ToolResult::Failure(result.status());
  }

  TempWorkspace temp_;
};

TEST_F(SearchTextToolTest, MatchesArePrintedAsPathLineText) {
  ToolResult result = Run(R"({"pattern": "foo"})");
  ASSERT_TRUE(result.ok) << result.error_message;
  EXPECT_EQ(result.output, "a.py:1: def foo():\nb.txt:2: foo baz\nsub/c.py:1: x = foo\n");
}

TEST_F(SearchTextToolTest, CaseInsensitiveAndHiddenAreOptIn) {
  ToolResult result =
      Run(R"({"pattern": "^foo", "case_insensitive": true, "include_hidden": true})");
  ASSERT_TRUE(result.ok);
  EXPECT_EQ(result.output, ".hidden/d.py:1: foo hidden\nb.txt:1: Foo bar\nb.txt:2: foo baz\n");
}

TEST_F(SearchTextToolTest, GlobFiltersFileNames) {
  ToolResult result = Run(R"({"pattern": "foo", "glob": "*.py"})");
  ASSERT_TRUE(result.ok);
  EXPECT_EQ(result.output, "a.py:1: def foo():\nsub/c.py:1: x = foo\n");
}

TEST_F(SearchTextToolTest, ExcludeSkipsMatchingNamesAndPathsAndDoesNotEnterDirectories) {
  temp_.WriteFile("node_modules/lib.js", "foo\n");
  temp_.WriteFile("src/tests/t.py", "foo\n");
  temp_.WriteFile("src/x_test.py", "foo\n");
  temp_.WriteFile("src/x.test.js", "foo\n");
  temp_.WriteFile("src/test_x.py", "foo\n");
  temp_.WriteFile("src/keep.py", "foo\n");
  temp_.WriteFile("src/gen/out.py", "foo\n");
  ToolResult result =
      Run(R"({"pattern": "foo", "exclude": ["node_modules", "tests", "test", "*_test.*", )"
          R"("*.test.*", "test_*", "src/gen", "a.py"]})");
  ASSERT_TRUE(result.ok) << result.error_message;
  EXPECT_EQ(result.output, "b.txt:2: foo baz\nsrc/keep.py:1: foo\nsub/c.py:1: x = foo\n");
}

TEST_F(SearchTextToolTest, ExcludePathPatternsAreWorkspaceRelativeBelowASubdirectory) {
  temp_.WriteFile("sub/d.py", "foo\n");
  ToolResult result = Run(R"({"pattern": "foo", "path": "sub", "exclude": ["sub/c.*"]})");
  ASSERT_TRUE(result.ok) << result.error_message;
  EXPECT_EQ(result.output, "sub/d.py:1: foo\n");
}

TEST_F(SearchTextToolTest, BadExcludeIsInvalidArgumentNamingTheEntry) {
  EXPECT_EQ(Run(R"({"pattern": "x", "exclude": [""]})").error_message.rfind("args.exclude[0]:", 0),
            0u);
  EXPECT_EQ(Run(R"({"pattern": "x", "exclude": "tests"})").error_code, "INVALID_ARGUMENT");
  std::string many = "[";
  for (int i = 0; i < 65; ++i) absl::StrAppend(&many, i > 0 ? "," : "", "\"p\"");
  many += "]";
  EXPECT_EQ(Run(absl::StrCat(R"({"pattern": "x", "exclude": )", many, "}")).error_code,
            "INVALID_ARGUMENT");
  // 255 code points but more than 255 bytes.
  std::string wide;
  for (int i = 0; i < 200; ++i) wide += "\u00e9";
  ToolResult result = Run(absl::StrCat(R"({"pattern": "x", "exclude": ["ok", ")", wide, R"("]})"));
  EXPECT_EQ(result.error_code, "INVALID_ARGUMENT");
  EXPECT_EQ(result.error_message, "args.exclude[1]: must be 1 to 255 bytes, got 400");
}

TEST_F(SearchTextToolTest, PathMayBeASubdirectoryOrAFile) {
  EXPECT_EQ(Run(R"({"pattern": "foo", "path": "sub"})").output, "sub/c.py:1: x = foo\n");
  EXPECT_EQ(Run(R"({"pattern": "ba", "path": "b.txt"})").output,
            "b.txt:1: Foo bar\nb.txt:2: foo baz\n");
}

TEST_F(SearchTextToolTest, MaxResultsStopsWithANote) {
  ToolResult result = Run(R"({"pattern": "foo", "max_results": 1})");
  ASSERT_TRUE(result.ok);
  EXPECT_EQ(result.output, "a.py:1: def foo():\n[stopped at max_results=1; more matches exist]\n");
}

TEST_F(SearchTextToolTest, NoMatchIsANote) {
  EXPECT_EQ(Run(R"({"pattern": "zzz"})").output, "[no matches]\n");
}

TEST_F(SearchTextToolTest, SymlinksOutAreNotFollowedDuringTheWalk) {
  // /etc/passwd (behind the link "passwd") and ws2/secret.txt (behind "sibling") both match.
  ToolResult result = Run(R"({"pattern": "root|secret"})");
  ASSERT_TRUE(result.ok);
  EXPECT_EQ(result.output, "[no matches]\n");
}

TEST_F(SearchTextToolTest, EscapingPathsArePermissionDenied) {
  for (const std::string path :
       {"passwd", "/etc", "..", "sibling", "sibling/secret.txt", "../ws2"}) {
    ToolResult result = Run(absl::StrCat(R"({"pattern": "x", "path": ")", path, R"("})"));
    EXPECT_EQ(result.error_code, "PERMISSION_DENIED") << path;
    EXPECT_NE(result.error_message.find(path), std::string::npos) << result.error_message;
  }
}

TEST_F(SearchTextToolTest, InvalidRegexIsInvalidArgumentNamingPattern) {
  ToolResult result = Run(R"({"pattern": "foo("})");
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error_code, "INVALID_ARGUMENT");
  EXPECT_EQ(result.error_message.rfind("args.pattern: invalid RE2 regular expression", 0), 0u)
      << result.error_message;
  // Backreferences are not RE2.
  EXPECT_EQ(Run(R"({"pattern": "(a)\\1"})").error_code, "INVALID_ARGUMENT");
}

TEST_F(SearchTextToolTest, PathologicalPatternRunsInLinearTime) {
  temp_.WriteFile("as.txt", std::string(100000, 'a') + "\n");
  const absl::Time start = absl::Now();
  ToolResult result = Run(R"({"pattern": "(a*)*(a|aa)*b", "path": "as.txt"})");
  EXPECT_TRUE(result.ok) << result.error_message;
  EXPECT_EQ(result.output, "[no matches]\n");
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST_F(SearchTextToolTest, BinaryLargeAndSpecialFilesAreSkipped) {
  temp_.WriteFile("bin.dat", std::string("foo\0", 4));
  temp_.WriteFile("large.txt", "foo\n");
  ASSERT_EQ(truncate(temp_.Path("large.txt").c_str(), 11 << 20), 0);
  temp_.MakeFifo("pipe");
  ToolResult result = Run(R"({"pattern": "foo", "glob": "*[!y]"})");  // not the .py files
  ASSERT_TRUE(result.ok);
  EXPECT_EQ(result.output,
            "b.txt:2: foo baz\n[skipped 1 binary, 1 over 10 MiB, 0 unreadable files]\n");
}

TEST_F(SearchTextToolTest, LongMatchingLinesAreCut) {
  temp_.WriteFile("long.txt", "foo" + std::string(1000, 'x') + "\n");
  ToolResult result = Run(R"({"pattern": "foo", "path": "long.txt"})");
  EXPECT_EQ(result.output, "long.txt:1: foo" + std::string(497, 'x') + " [line cut]\n");
}

TEST_F(SearchTextToolTest, ExpiredDeadlineIsTimeout) {
  RunOptions options;
  options.deadline = absl::InfinitePast();
  ToolResult result = Run(R"({"pattern": "foo"})", options);
  EXPECT_EQ(result.error_code, "TIMEOUT");
  EXPECT_TRUE(result.timed_out);
}

}  // namespace
}  // namespace rein
