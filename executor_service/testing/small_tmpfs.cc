// Test helper: a small tmpfs under TEST_TMPDIR.
#include "executor_service/testing/small_tmpfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include <cstdio>
#include <string>

namespace rein::testing {

SmallTmpfs::SmallTmpfs(int64_t size_bytes) {
  const char* tmp = getenv("TEST_TMPDIR");
  std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/tmpfsXXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    std::perror("mkdtemp");
    abort();
  }
  path_ = pattern;
  const std::string options = "size=" + std::to_string(size_bytes) + ",mode=0700";
  if (mount("tmpfs", path_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == 0) {
    mounted_ = true;
  } else {
    error_ = std::string("mount tmpfs: ") + strerror(errno);
  }
}

SmallTmpfs::~SmallTmpfs() {
  if (mounted_) umount2(path_.c_str(), MNT_DETACH);
}

}  // namespace rein::testing
