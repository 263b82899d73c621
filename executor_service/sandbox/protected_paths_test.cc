// Tests of ProtectedPaths and NormalizeRelativePath.
#include "executor_service/sandbox/protected_paths.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rein {
namespace {

TEST(ProtectedPathsTest, DefaultsAndExtrasAreNormalizedSortedAndDeduplicated) {
  absl::StatusOr<ProtectedPaths> paths =
      ProtectedPaths::Create({"./.env/", "secrets//key", "secrets", ".git/hooks/x"});
  ASSERT_TRUE(paths.ok()) << paths.status();
  EXPECT_EQ(paths->paths(), (std::vector<std::string>{".env", ".git/commondir", ".git/config",
                                                      ".git/hooks", "secrets"}));
}

TEST(ProtectedPathsTest, BadEntriesAreInvalidArgumentNamingThem) {
  EXPECT_EQ(ProtectedPaths::Create({"/etc"}).status().message(),
            "protected_paths[0]: must be relative to the workspace, got \"/etc\"");
  EXPECT_EQ(ProtectedPaths::Create({"ok", "../x"}).status().message(),
            "protected_paths[1]: must not contain \"..\", got \"../x\"");
  EXPECT_EQ(ProtectedPaths::Create({"."}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ProtectedPaths::Create(std::vector<std::string>(17, "x")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ProtectedPathsTest, FilesAtBeneathOrAboveAProtectedPathAreRefused) {
  absl::StatusOr<ProtectedPaths> paths = ProtectedPaths::Create({});
  ASSERT_TRUE(paths.ok());
  for (const char* path : {".git/hooks", ".git/hooks/pre-commit", ".git/config", ".git"}) {
    EXPECT_TRUE(paths->RefusesFile(path)) << path;
  }
  for (const char* path : {".git/HEAD", ".git/hooksx", ".gitignore", "a/.git/config", "x"}) {
    EXPECT_FALSE(paths->RefusesFile(path)) << path;
  }
  EXPECT_TRUE(paths->RefusesDirectory(".git/hooks"));
  EXPECT_TRUE(paths->RefusesDirectory(".git/hooks/sub"));
  EXPECT_FALSE(paths->RefusesDirectory(".git"));
}

TEST(NormalizeRelativePathTest, DropsDotsAndEmptyComponents) {
  EXPECT_EQ(*NormalizeRelativePath("./a//b/./c/", "p"), "a/b/c");
  EXPECT_EQ(*NormalizeRelativePath(".", "p"), "");
  EXPECT_EQ(NormalizeRelativePath(std::string("a\0b", 3), "p").status().message(),
            "p: must not contain a NUL byte");
}

}  // namespace
}  // namespace rein
