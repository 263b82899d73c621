// Tests of SandboxPlaceholders: identity, not names, and a removed placeholder stays excluded.
#include "executor_service/workspace/sandbox_placeholders.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "executor_service/testing/temp_workspace.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

UniqueFd OpenDir(const std::string& path) {
  return UniqueFd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

// Makes the directory placeholder `path` through `placeholders`.
PlaceholderId MakeDirPlaceholder(SandboxPlaceholders& placeholders, const std::string& path) {
  absl::StatusOr<PlaceholderId> id = placeholders.Make([&]() -> absl::StatusOr<UniqueFd> {
    if (mkdir(path.c_str(), 0755) != 0) return absl::InternalError(strerror(errno));
    return OpenDir(path);
  });
  EXPECT_TRUE(id.ok()) << id.status();
  return id.value_or(PlaceholderId{});
}

TEST(SandboxPlaceholdersTest, AMadePlaceholderIsExcludedUntilUnmade) {
  testing::TempWorkspace ws;
  SandboxPlaceholders placeholders;
  const std::string path = ws.Path(".git");
  const PlaceholderId id = MakeDirPlaceholder(placeholders, path);
  UniqueFd opened = OpenDir(path);  // a copy that opened it while it was there
  EXPECT_TRUE(placeholders.Excludes(opened.get()));
  placeholders.Unmake(id, [&] { rmdir(path.c_str()); });
  EXPECT_EQ(placeholders.size(), 0u);
  // Removed since the copy opened it: still left out (it has no name any more).
  EXPECT_TRUE(placeholders.Excludes(opened.get()));
}

TEST(SandboxPlaceholdersTest, AnEntryOfTheSameNameIsNotExcluded) {
  testing::TempWorkspace ws;
  SandboxPlaceholders placeholders;
  const std::string path = ws.Path(".git");
  const PlaceholderId id = MakeDirPlaceholder(placeholders, path);
  placeholders.Unmake(id, [&] { rmdir(path.c_str()); });
  ws.MakeDir(".git");  // a real one, later
  UniqueFd real = OpenDir(path);
  EXPECT_FALSE(placeholders.Excludes(real.get()));
  UniqueFd other = OpenDir(ws.Path(""));
  EXPECT_FALSE(placeholders.Excludes(other.get()));
}

TEST(SandboxPlaceholdersTest, AFailedMakeRecordsNothing) {
  SandboxPlaceholders placeholders;
  absl::StatusOr<PlaceholderId> id = placeholders.Make(
      []() -> absl::StatusOr<UniqueFd> { return absl::FailedPreconditionError("no room"); });
  EXPECT_EQ(id.status(), absl::FailedPreconditionError("no room"));
  EXPECT_EQ(placeholders.size(), 0u);
}

}  // namespace
}  // namespace rein
