// Tests of the staged /etc and device nodes.
#include "executor_service/sandbox/staged_dirs.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(StagedDirsTest, EtcHoldsTheSandboxUsersAndTheHostEntriesReadableByAll) {
  absl::StatusOr<std::string> dir = StageEtc(/*uid=*/65534, /*gid=*/65533);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(ReadAll(*dir + "/passwd"), PasswdData(65534, 65533));
  EXPECT_TRUE(absl::StrContains(PasswdData(65534, 65533), "sandbox:x:65534:65533:"));
  EXPECT_EQ(ReadAll(*dir + "/group"), GroupData(65533));
  EXPECT_EQ(ReadAll(*dir + "/resolv.conf"), "");
  struct stat st;
  ASSERT_EQ(stat(dir->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  // What the host has is copied; what it lacks is left out, as --ro-bind-try would.
  EXPECT_EQ(access((*dir + "/ld.so.cache").c_str(), F_OK) == 0,
            access("/etc/ld.so.cache", F_OK) == 0);
  EXPECT_NE(access((*dir + "/shadow").c_str(), F_OK), 0);
  std::filesystem::remove_all(*dir);
}

TEST(StagedDirsTest, DevNodesAreCharacterDevicesNotOwnedByTheSandboxUid) {
  if (geteuid() != 0) GTEST_SKIP() << "making device nodes needs root";
  absl::StatusOr<std::string> dir = StageDev(/*sandbox_host_uid=*/0);
  if (!dir.ok()) GTEST_SKIP() << "no candidate mounted without nodev here: " << dir.status();
  struct stat st;
  ASSERT_EQ(lstat((*dir + "/null").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_EQ(st.st_mode & 0777, 0666u);
  EXPECT_NE(st.st_uid, 0u);
  ASSERT_EQ(lstat((*dir + "/tty").c_str(), &st), 0);
  EXPECT_EQ(st.st_rdev, makedev(5, 0));
  std::filesystem::remove_all(*dir);
}

}  // namespace
}  // namespace rein
