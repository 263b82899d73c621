// Iterative directory-tree walk over one descriptor.
#include "executor_service/workspace/tree_walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "executor_service/process/errno_status.h"
#include "executor_service/process/unique_fd.h"

namespace rein {
namespace {

bool SameEntry(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
         (a.st_mode & S_IFMT) == (b.st_mode & S_IFMT);
}

// One directory on the walk's path: its entries and how far the walk is through them.
struct Frame {
  std::string name;  // its name in its parent ("" for the top)
  struct stat st;
  std::vector<std::string> names;
  size_t next = 0;
};

}  // namespace

absl::StatusOr<int> OpenEntry(int dir_fd, const std::string& name, int flags,
                              const struct stat& expected) {
  int fd = openat(dir_fd, name.c_str(), flags | kEntryOpenFlags);
  if (fd < 0) {
    if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat(name, ": gone or replaced"));
    }
    return ErrnoStatus(errno, absl::StrCat("open ", name));
  }
  UniqueFd owned(fd);
  struct stat st;
  if (fstat(fd, &st) != 0) return ErrnoStatus(errno, absl::StrCat("stat ", name));
  if (!SameEntry(st, expected)) {
    return absl::NotFoundError(absl::StrCat(name, ": replaced while it was opened"));
  }
  return owned.Release();
}

absl::StatusOr<std::vector<std::string>> ListNames(int dir_fd) {
  int dup_fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dup_fd < 0) return ErrnoStatus(errno, "open directory");
  DIR* dir = fdopendir(dup_fd);
  if (dir == nullptr) {
    const int err = errno;
    close(dup_fd);
    return ErrnoStatus(err, "open directory");
  }
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
    errno = 0;
  }
  const int err = errno;
  closedir(dir);
  if (err != 0) return ErrnoStatus(err, "read directory");
  return names;
}

absl::Status WalkTree(int dir_fd, int max_depth, const std::string& depth_bound,
                      TreeVisitor* visitor) {
  UniqueFd cur(fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
  if (!cur.valid()) return ErrnoStatus(errno, "dup directory");
  std::vector<Frame> frames(1);
  if (fstat(cur.get(), &frames[0].st) != 0) return ErrnoStatus(errno, "stat directory");
  absl::StatusOr<std::vector<std::string>> top = ListNames(cur.get());
  if (!top.ok()) return top.status();
  frames[0].names = *std::move(top);
  while (!frames.empty()) {
    Frame& frame = frames.back();
    if (frame.next == frame.names.size()) {
      if (absl::Status s = visitor->Leave(cur.get(), frame.st); !s.ok()) return s;
      const std::string name = std::move(frame.name);
      frames.pop_back();
      if (frames.empty()) break;
      UniqueFd parent(openat(cur.get(), "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!parent.valid()) return ErrnoStatus(errno, "open ..");
      struct stat st;
      if (fstat(parent.get(), &st) != 0) return ErrnoStatus(errno, "stat ..");
      if (!SameEntry(st, frames.back().st)) {
        return absl::AbortedError("the tree changed while it was walked (a directory moved)");
      }
      cur = std::move(parent);
      if (absl::Status s = visitor->Left(cur.get(), name); !s.ok()) return s;
      continue;
    }
    const std::string name = frame.names[frame.next++];
    struct stat st;
    if (fstatat(cur.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed while walked
      return ErrnoStatus(errno, absl::StrCat("stat ", name));
    }
    absl::StatusOr<bool> enter = visitor->Visit(cur.get(), name, st);
    if (!enter.ok()) return enter.status();
    if (!*enter || !S_ISDIR(st.st_mode)) continue;
    if (static_cast<int>(frames.size()) > max_depth) {
      return absl::ResourceExhaustedError(
          absl::StrCat(depth_bound, ": the tree is deeper than ", max_depth, " directory levels"));
    }
    absl::StatusOr<int> child = OpenEntry(cur.get(), name, O_RDONLY | O_DIRECTORY, st);
    if (!child.ok()) {
      if (child.status().code() == absl::StatusCode::kNotFound) continue;  // replaced
      return child.status();
    }
    UniqueFd child_fd(*child);
    absl::StatusOr<std::vector<std::string>> names = ListNames(child_fd.get());
    if (!names.ok()) return names.status();
    cur = std::move(child_fd);
    Frame next;
    next.name = name;
    next.st = st;
    next.names = *std::move(names);
    frames.push_back(std::move(next));
    if (absl::Status s = visitor->Enter(name, st); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace rein
