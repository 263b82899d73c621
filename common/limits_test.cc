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

TEST(CheckNamespaceNameTest, LabelsPass) {
  for (const char* name : {"default", "team-a", "a", "0", "a1-b2"}) {
    EXPECT_TRUE(CheckNamespaceName(name, "namespace").ok()) << name;
  }
  EXPECT_TRUE(CheckNamespaceName(std::string(kMaxNamespaceBytes, 'n'), "namespace").ok());
}

TEST(CheckNamespaceNameTest, MalformedNamesAreRefusedWithTheirRule) {
  struct Case {
    std::string name;
    const char* rule;
  } cases[] = {
      {"", "must not be empty"},
      {std::string(kMaxNamespaceBytes + 1, 'n'), "at most 63 bytes, got 64"},
      {"Team", "lower-case letters"},
      {"a/b", "lower-case letters"},
      {"a_b", "lower-case letters"},
      {"..", "lower-case letters"},
      {"-a", "start and end"},
      {"a-", "start and end"},
  };
  for (const Case& c : cases) {
    absl::Status status = CheckNamespaceName(c.name, "namespace");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(status.message(), HasSubstr(c.rule)) << c.name;
    EXPECT_THAT(std::string(status.message()), ::testing::StartsWith("namespace: ")) << c.name;
  }
}

TEST(CheckNamespaceNameTest, EmptyIsTheDefault) {
  EXPECT_EQ(NamespaceOrDefault(""), "default");
  EXPECT_EQ(NamespaceOrDefault("team-a"), "team-a");
}

}  // namespace
}  // namespace rein
