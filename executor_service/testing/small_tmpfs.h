// Test helper: a small tmpfs for tests that attack the file system (sparse files, deep
// trees), so that a failure cannot fill the disk of the machine running the tests.
#ifndef REIN_EXECUTOR_SERVICE_TESTING_SMALL_TMPFS_H_
#define REIN_EXECUTOR_SERVICE_TESTING_SMALL_TMPFS_H_

#include <cstdint>
#include <string>

namespace rein::testing {

// Mounts a tmpfs of `size_bytes` on a new directory under TEST_TMPDIR (needs CAP_SYS_ADMIN;
// mounted() is false when the mount failed, and path() is then a plain directory there).
// Unmounts it when destroyed. Not thread-safe.
class SmallTmpfs {
 public:
  explicit SmallTmpfs(int64_t size_bytes);
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  ~SmallTmpfs();

  bool mounted() const { return mounted_; }
  const std::string& path() const { return path_; }
  // Why the mount failed ("" when mounted).
  const std::string& error() const { return error_; }

 private:
  std::string path_;
  std::string error_;
  bool mounted_ = false;
};

}  // namespace rein::testing

#endif  // REIN_EXECUTOR_SERVICE_TESTING_SMALL_TMPFS_H_
