// Bounded, iterative copies, removals and measures of directory trees.
#include "executor_service/workspace/tree_copy.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/process/errno_status.h"
#include "executor_service/process/unique_fd.h"
#include "executor_service/workspace/tree_walk.h"

namespace rein {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

using InodeKey = std::pair<dev_t, ino_t>;

int64_t Allocated(const struct stat& st) { return static_cast<int64_t>(st.st_blocks) * 512; }

// Counts entries and bytes against the limits; shared by copy and measure.
class Budget {
 public:
  explicit Budget(const CopyLimits& limits) : limits_(limits) {}

  CopyStats& stats() { return stats_; }
  int64_t bytes_left() const { return limits_.max_allocated_bytes - stats_.allocated_bytes; }

  // One more entry; checks the entry bound and, now and then, the deadline.
  absl::Status AddEntry() {
    if (++stats_.entries > limits_.max_entries) {
      return absl::ResourceExhaustedError(absl::StrCat(
          limits_.entries_bound, ": the tree holds more than ", limits_.max_entries, " entries"));
    }
    if (stats_.entries % 64 == 0 && limits_.clock->Now() > limits_.deadline) {
      return absl::DeadlineExceededError(
          "deadline: the copy did not finish before the call's deadline");
    }
    return absl::OkStatus();
  }

  absl::Status AddBytes(int64_t allocated) {
    stats_.allocated_bytes += allocated;
    if (stats_.allocated_bytes > limits_.max_allocated_bytes) return BytesExceeded();
    return absl::OkStatus();
  }

  absl::Status BytesExceeded() const {
    return absl::ResourceExhaustedError(absl::StrCat(limits_.bytes_bound,
                                                     ": the tree allocates more than ",
                                                     limits_.max_allocated_bytes, " bytes"));
  }

 private:
  const CopyLimits& limits_;
  CopyStats stats_;
};

// Copies [from, to) of `in` to the same offsets of `out`.
absl::Status CopyRange(int in, int out, off_t from, off_t to, const std::string& name) {
  off_t in_off = from;
  off_t out_off = from;
  while (in_off < to) {
    ssize_t n = copy_file_range(in, &in_off, out, &out_off, static_cast<size_t>(to - in_off), 0);
    if (n > 0) continue;
    if (n == 0) return absl::OkStatus();  // the file shrank
    if (errno == EINTR) continue;
    if (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) break;
    return ErrnoStatus(errno, absl::StrCat("copy ", name));
  }
  char buf[1 << 16];
  while (in_off < to) {
    ssize_t n =
        pread(in, buf, static_cast<size_t>(std::min<off_t>(sizeof(buf), to - in_off)), in_off);
    if (n == 0) return absl::OkStatus();
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("read ", name));
    }
    for (ssize_t done = 0; done < n;) {
      ssize_t w = pwrite(out, buf + done, n - done, in_off + done);
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, absl::StrCat("write ", name));
      }
      done += w;
    }
    in_off += n;
  }
  return absl::OkStatus();
}

// Copies the first `size` bytes of the regular file `in` to the empty `out`: a reflink where
// the file system has one, else only its data ranges (holes stay holes), writing at most
// `budget` bytes of data (`budget` exceeded: RESOURCE_EXHAUSTED from `over_budget`).
absl::Status CopyFileData(int in, int out, off_t size, int64_t budget, const std::string& name,
                          const Budget& over_budget) {
  if (ioctl(out, FICLONE, in) == 0) return absl::OkStatus();
  off_t pos = 0;
  int64_t written = 0;
  while (pos < size) {
    off_t data = lseek(in, pos, SEEK_DATA);
    off_t end = size;
    if (data < 0) {
      if (errno == ENXIO) break;  // only a hole is left
      if (errno != EINVAL && errno != EOPNOTSUPP) {
        return ErrnoStatus(errno, absl::StrCat("seek ", name));
      }
      data = pos;  // no SEEK_DATA here: copy the rest as data
    } else {
      end = lseek(in, data, SEEK_HOLE);
      if (end < 0 || end > size) end = size;
    }
    if (data >= size) break;
    written += end - data;
    if (written > budget) return over_budget.BytesExceeded();
    if (absl::Status s = CopyRange(in, out, data, end, name); !s.ok()) return s;
    pos = end;
  }
  if (ftruncate(out, size) != 0) return ErrnoStatus(errno, absl::StrCat("truncate ", name));
  return absl::OkStatus();
}

// Copies each visited entry into the destination tree, which it walks in step.
class CopyVisitor final : public TreeVisitor {
 public:
  CopyVisitor(UniqueFd to, const CopyLimits& limits)
      : limits_(limits), dest_(std::move(to)), budget_(limits) {
    root_.Reset(fcntl(dest_.get(), F_DUPFD_CLOEXEC, 0));
  }

  CopyStats stats() { return budget_.stats(); }

  absl::StatusOr<bool> Visit(int dir_fd, const std::string& name, const struct stat& st) override {
    const struct timespec times[2] = {st.st_atim, st.st_mtim};
    if (S_ISDIR(st.st_mode)) {
      if (limits_.leave_out != nullptr) {
        absl::StatusOr<int> dir = OpenEntry(dir_fd, name, O_RDONLY | O_DIRECTORY, st);
        if (!dir.ok()) {
          if (dir.status().code() == absl::StatusCode::kNotFound) return false;  // swapped
          return dir.status();
        }
        const UniqueFd opened(*dir);
        if (limits_.leave_out->Excludes(opened.get())) return false;
      }
      if (absl::Status s = budget_.AddEntry(); !s.ok()) return s;
      if (mkdirat(dest_.get(), name.c_str(), 0700) != 0) return Errno("mkdir", name);
      return true;
    }
    if (S_ISLNK(st.st_mode)) {
      if (absl::Status s = budget_.AddEntry(); !s.ok()) return s;
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t n = readlinkat(dir_fd, name.c_str(), target.data(), target.size());
      if (n < 0) {
        if (errno == ENOENT || errno == EINVAL) return false;  // replaced while copied
        return Errno("readlink", name);
      }
      target.resize(static_cast<size_t>(n));
      if (symlinkat(target.c_str(), dest_.get(), name.c_str()) != 0) {
        return Errno("symlink", name);
      }
      utimensat(dest_.get(), name.c_str(), times, AT_SYMLINK_NOFOLLOW);
      budget_.stats().files++;
      return false;
    }
    if (!S_ISREG(st.st_mode)) return false;  // FIFOs, sockets, devices: not workspace content
    if (absl::Status s = budget_.AddEntry(); !s.ok()) return s;
    const InodeKey key{st.st_dev, st.st_ino};
    if (st.st_nlink > 1) {
      auto first = links_.find(key);
      if (first != links_.end()) {
        if (absl::Status s = LinkTo(first->second, name); !s.ok()) return s;
        budget_.stats().files++;
        return false;
      }
    }
    if (Allocated(st) > budget_.bytes_left()) return budget_.BytesExceeded();
    absl::StatusOr<int> in_fd = OpenEntry(dir_fd, name, O_RDONLY, st);
    if (!in_fd.ok()) {
      if (in_fd.status().code() == absl::StatusCode::kNotFound) return false;  // swapped
      return in_fd.status();
    }
    UniqueFd in(*in_fd);
    if (limits_.leave_out != nullptr && limits_.leave_out->Excludes(in.get())) {
      budget_.stats().entries--;
      return false;
    }
    UniqueFd out(openat(dest_.get(), name.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out.valid()) return Errno("create", name);
    if (absl::Status s = CopyFileData(in.get(), out.get(), st.st_size, budget_.bytes_left(),
                                      DisplayPath(name), budget_);
        !s.ok()) {
      return s;
    }
    fchmod(out.get(), st.st_mode & 07777);
    futimens(out.get(), times);
    struct stat written;
    if (fstat(out.get(), &written) != 0) return Errno("stat", name);
    if (absl::Status s = budget_.AddBytes(Allocated(written)); !s.ok()) return s;
    budget_.stats().files++;
    budget_.stats().bytes += st.st_size;
    if (st.st_nlink > 1) {
      std::vector<std::string> path = path_;
      path.push_back(name);
      links_.emplace(key, std::move(path));
    }
    return false;
  }

  absl::Status Enter(const std::string& name, const struct stat& /*st*/) override {
    UniqueFd child(openat(dest_.get(), name.c_str(), kDirFlags));
    if (!child.valid()) return Errno("open", name);
    dest_ = std::move(child);
    path_.push_back(name);
    return absl::OkStatus();
  }

  absl::Status Leave(int /*dir_fd*/, const struct stat& st) override {
    fchmod(dest_.get(), st.st_mode & 07777);
    const struct timespec times[2] = {st.st_atim, st.st_mtim};
    futimens(dest_.get(), times);
    return absl::OkStatus();
  }

  absl::Status Left(int /*parent_fd*/, const std::string& /*name*/) override {
    UniqueFd parent(openat(dest_.get(), "..", kDirFlags));
    if (!parent.valid()) return Errno("open", "..");
    dest_ = std::move(parent);
    path_.pop_back();
    return absl::OkStatus();
  }

 private:
  std::string DisplayPath(const std::string& name) const {
    std::string path;
    for (const std::string& part : path_) absl::StrAppend(&path, part, "/");
    if (path.size() > 256) path = absl::StrCat(".../", path.substr(path.size() - 256));
    return absl::StrCat(path, name);
  }

  absl::Status Errno(const char* what, const std::string& name) const {
    return ErrnoStatus(errno, absl::StrCat(what, " ", DisplayPath(name)));
  }

  // Makes `name` in the current destination directory a hard link to the copy at `first`
  // (names from the destination's top), opening its directory one level at a time.
  absl::Status LinkTo(const std::vector<std::string>& first, const std::string& name) {
    UniqueFd dir(fcntl(root_.get(), F_DUPFD_CLOEXEC, 0));
    for (size_t i = 0; i + 1 < first.size() && dir.valid(); ++i) {
      dir.Reset(openat(dir.get(), first[i].c_str(), kDirFlags));
    }
    if (!dir.valid()) return Errno("open the first name of", name);
    if (linkat(dir.get(), first.back().c_str(), dest_.get(), name.c_str(), 0) != 0) {
      return Errno("link", name);
    }
    return absl::OkStatus();
  }

  const CopyLimits& limits_;
  UniqueFd root_;                  // the destination's top directory
  UniqueFd dest_;                  // the destination directory the walk is in
  std::vector<std::string> path_;  // names from root_ to dest_
  Budget budget_;
  std::map<InodeKey, std::vector<std::string>> links_;  // inodes with more names: first copy
};

// Counts what a copy would take.
class MeasureVisitor final : public TreeVisitor {
 public:
  explicit MeasureVisitor(const CopyLimits& limits) : budget_(limits) {}

  CopyStats stats() { return budget_.stats(); }

  absl::StatusOr<bool> Visit(int /*dir_fd*/, const std::string& /*name*/,
                             const struct stat& st) override {
    const bool file = S_ISREG(st.st_mode);
    if (!file && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) return false;
    if (absl::Status s = budget_.AddEntry(); !s.ok()) return s;
    if (!S_ISDIR(st.st_mode)) budget_.stats().files++;
    if (file && (st.st_nlink == 1 || seen_.insert({st.st_dev, st.st_ino}).second)) {
      budget_.stats().bytes += st.st_size;
      if (absl::Status s = budget_.AddBytes(Allocated(st)); !s.ok()) return s;
    }
    return S_ISDIR(st.st_mode);
  }

 private:
  Budget budget_;
  std::set<InodeKey> seen_;
};

// Removes each visited entry, and each directory once it is empty.
class RemoveVisitor final : public TreeVisitor {
 public:
  absl::StatusOr<bool> Visit(int dir_fd, const std::string& name, const struct stat& st) override {
    if (S_ISDIR(st.st_mode)) return true;
    if (unlinkat(dir_fd, name.c_str(), 0) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, absl::StrCat("unlink ", name));
    }
    return false;
  }

  absl::Status Left(int parent_fd, const std::string& name) override {
    if (unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, absl::StrCat("rmdir ", name));
    }
    return absl::OkStatus();
  }
};

// Splits `path` into its parent directory and last name.
std::pair<std::string, std::string> SplitParent(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

absl::StatusOr<CopyStats> CopyTree(const std::string& from, const std::string& to,
                                   const CopyLimits& limits) {
  UniqueFd in(open(from.c_str(), kDirFlags | O_NONBLOCK));
  if (!in.valid()) return ErrnoStatus(errno, absl::StrCat("open ", from));
  if (mkdir(to.c_str(), 0700) != 0) return ErrnoStatus(errno, absl::StrCat("mkdir ", to));
  UniqueFd out(open(to.c_str(), kDirFlags));
  if (!out.valid()) return ErrnoStatus(errno, absl::StrCat("open ", to));
  CopyVisitor copy(std::move(out), limits);
  if (absl::Status s = WalkTree(in.get(), limits.max_depth, limits.depth_bound, &copy); !s.ok()) {
    return s;
  }
  return copy.stats();
}

absl::StatusOr<CopyStats> MeasureTree(const std::string& from, const CopyLimits& limits) {
  UniqueFd in(open(from.c_str(), kDirFlags | O_NONBLOCK));
  if (!in.valid()) return ErrnoStatus(errno, absl::StrCat("open ", from));
  MeasureVisitor measure(limits);
  if (absl::Status s = WalkTree(in.get(), limits.max_depth, limits.depth_bound, &measure);
      !s.ok()) {
    return s;
  }
  return measure.stats();
}

absl::Status RemoveTree(const std::string& path) {
  auto [parent, name] = SplitParent(path);
  UniqueFd dir(open(parent.c_str(), kDirFlags));
  if (!dir.valid()) {
    return errno == ENOENT ? absl::OkStatus() : ErrnoStatus(errno, absl::StrCat("open ", parent));
  }
  struct stat st;
  if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? absl::OkStatus() : ErrnoStatus(errno, absl::StrCat("stat ", path));
  }
  if (S_ISDIR(st.st_mode)) {
    absl::StatusOr<int> top = OpenEntry(dir.get(), name, O_RDONLY | O_DIRECTORY, st);
    if (!top.ok()) return top.status();
    UniqueFd top_fd(*top);
    RemoveVisitor remove;
    if (absl::Status s = WalkTree(top_fd.get(), std::numeric_limits<int>::max(), "depth", &remove);
        !s.ok()) {
      return s;
    }
    if (unlinkat(dir.get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, absl::StrCat("rmdir ", path));
    }
    return absl::OkStatus();
  }
  if (unlinkat(dir.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, absl::StrCat("unlink ", path));
  }
  return absl::OkStatus();
}

}  // namespace rein
