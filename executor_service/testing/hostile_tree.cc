// Test helper: sparse files, hard links and deep trees.
#include "executor_service/testing/hostile_tree.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace rein::testing {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

}  // namespace

absl::Status MakeSparseFile(const std::string& path, int64_t size) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(absl::StrCat("create ", path));
  absl::Status status;
  if (ftruncate(fd, size) != 0) status = Errno(absl::StrCat("truncate ", path));
  if (status.ok() && pwrite(fd, "data", 4, size / 2) != 4) {
    status = Errno(absl::StrCat("write ", path));
  }
  close(fd);
  return status;
}

absl::Status MakeDeepTree(const std::string& top, int depth) {
  int fd = open(top.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno(absl::StrCat("open ", top));
  for (int i = 0; i < depth; ++i) {
    if (mkdirat(fd, "d", 0755) != 0) {
      close(fd);
      return Errno(absl::StrCat("mkdir at level ", i));
    }
    const int child = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    close(fd);
    if (child < 0) return Errno(absl::StrCat("open level ", i));
    fd = child;
  }
  const int leaf = openat(fd, "leaf", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  const int err = errno;
  close(fd);
  if (leaf < 0) {
    errno = err;
    return Errno("create leaf");
  }
  close(leaf);
  return absl::OkStatus();
}

absl::Status PlantHostileWorkspace(const std::string& workspace) {
  const std::string sparse = workspace + "/sparse.img";
  if (absl::Status s = MakeSparseFile(sparse, int64_t{10} * 1000 * 1000 * 1000); !s.ok()) {
    return s;
  }
  if (link(sparse.c_str(), (workspace + "/sparse.link").c_str()) != 0) return Errno("link");
  const std::string deep = workspace + "/deep";
  if (mkdir(deep.c_str(), 0755) != 0) return Errno(absl::StrCat("mkdir ", deep));
  return MakeDeepTree(deep, 30000);
}

}  // namespace rein::testing
