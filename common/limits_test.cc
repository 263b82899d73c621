// Tests of the shared workspace-name rule.
#include "common/limits.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::testing::HasSubstr;

TEST(CheckWorkspaceNameTest, PlainNamesPass) {
  EXPECT_TRUE(CheckWorkspaceName("sample-repo", "spec.workspace").ok());
  EXPECT_TRUE(CheckWorkspaceName(".rein", "spec.workspace").ok());
  EXPECT_TRUE(CheckWorkspaceName(std::string(kMaxWorkspaceNameBytes, 'w'), "w").ok());
}

TEST(CheckWorkspaceNameTest, EveryReservedNameIsRefusedNamingTheField) {
  for (const char* name : {".rein-journal", ".rein-history", ".rein-anything"}) {
    absl::Status status = CheckWorkspaceName(name, "spec.workspace");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(status.message(), HasSubstr("spec.workspace: names starting with \".rein-\""));
  }
}

TEST(CheckWorkspaceNameTest, MalformedNamesAreRefusedWithTheirRule) {
  struct Case {
    std::string name;
    const char* rule;
  } cases[] = {
      {"", "must not be empty"},
      {std::string(kMaxWorkspaceNameBytes + 1, 'w'), "at most 255 bytes, got 256"},
      {std::string("a\0b", 3), "NUL"},
      {"a/b", "without '/'"},
      {".", "\".\" or \"..\""},
      {"..", "\".\" or \"..\""},
  };
  for (const Case& c : cases) {
    absl::Status status = CheckWorkspaceName(c.name, "workspace");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr(c.rule));
    EXPECT_THAT(std::string(status.message()), ::testing::StartsWith("workspace: "));
  }
}

}  // namespace
}  // namespace rein
