// Tests of what reinctl reads besides its argv: files named by flags, REIN_CONSOLE_URL.
#include "cli/inputs.h"

#include <stdlib.h>

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein::cli {
namespace {

using ::testing::HasSubstr;

TEST(ConsoleUrlFromEnvTest, AcceptsHttpUrlsAndNamesTheVariableOtherwise) {
  EXPECT_EQ(*ConsoleUrlFromEnv(nullptr), "");
  EXPECT_EQ(*ConsoleUrlFromEnv(""), "");
  EXPECT_EQ(*ConsoleUrlFromEnv("https://rein.example/console/"), "https://rein.example/console");
  for (const char* bad : {"127.0.0.1:8080", "ftp://x", "http://", "https:///path"}) {
    absl::StatusOr<std::string> url = ConsoleUrlFromEnv(bad);
    ASSERT_FALSE(url.ok()) << bad;
    EXPECT_THAT(url.status().message(), HasSubstr("REIN_CONSOLE_URL"));
  }
}

TEST(ReadFileForFlagTest, ReadsTheWholeFile) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/goal.txt";
  std::ofstream(path, std::ios::binary) << "line one\nline two\n";
  absl::StatusOr<std::string> text = ReadFileForFlag("goal_file", path);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "line one\nline two\n");
}

TEST(ReadFileForFlagTest, AMissingFileIsAnErrorNamingTheFlagAndThePath) {
  absl::StatusOr<std::string> text = ReadFileForFlag("plan_file", "/nonexistent/plan.json");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(), HasSubstr("--plan_file"));
  EXPECT_THAT(text.status().message(), HasSubstr("/nonexistent/plan.json"));
}

}  // namespace
}  // namespace rein::cli
