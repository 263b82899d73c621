// The mounts that keep protected paths read-only inside the sandbox, and their placeholders.
#include "executor_service/sandbox/protected_mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "executor_service/process/errno_status.h"

namespace rein {
namespace {

// The content of the file placeholder kept for the missing protected path `path`, or null when
// a missing `path` gets an empty directory.
const char* FilePlaceholderContent(absl::string_view path) {
  for (const FilePlaceholder& placeholder : kFilePlaceholders) {
    if (path == placeholder.path) return placeholder.content;
  }
  return nullptr;
}

// Plans the mounts that keep `protected_paths` read-only: each existing protected path is
// bound read-only; each existing directory above one is bound onto itself, which makes it a
// mount point that cannot be renamed or removed (so the protected path cannot be moved away
// and recreated); a missing one gets an empty read-only directory at its first missing
// component, so it cannot be created either (when that component is the protected path itself
// and it is in kFilePlaceholders, a read-only file with the placeholder's content instead,
// created by the caller).
// `is_placeholder` says whether an existing entry is only another command's placeholder, to be
// treated as missing.
absl::StatusOr<std::vector<ProtectedMount>> PlanProtectedMounts(
    const Workspace& workspace, const ProtectedPaths& paths,
    const std::function<bool(const std::string&)>& is_placeholder) {
  std::vector<ProtectedMount> mounts;
  std::set<std::string> pinned;
  for (const std::string& path : paths.paths()) {
    std::vector<std::string> parts = absl::StrSplit(path, '/');
    std::string prefix;
    for (size_t i = 0; i < parts.size(); ++i) {
      prefix = i == 0 ? parts[0] : absl::StrCat(prefix, "/", parts[i]);
      const bool leaf = i + 1 == parts.size();
      const bool file_placeholder = leaf && FilePlaceholderContent(prefix) != nullptr;
      if (is_placeholder(prefix)) {
        UniqueFd existing;
        if (file_placeholder) {
          // Another command's: bound read-only here too, and counted, so that it stays.
          absl::StatusOr<UniqueFd> fd =
              OpenBeneath(workspace.dir_fd(), prefix, O_PATH | O_NOFOLLOW, RESOLVE_NO_SYMLINKS);
          if (!fd.ok()) return fd.status();
          existing = *std::move(fd);
        }
        mounts.push_back(
            {file_placeholder ? ProtectedMount::kFilePlaceholder : ProtectedMount::kPlaceholder,
             prefix, std::move(existing)});
        break;
      }
      absl::StatusOr<UniqueFd> fd =
          OpenBeneath(workspace.dir_fd(), prefix, O_PATH | O_NOFOLLOW, RESOLVE_NO_SYMLINKS);
      if (!fd.ok()) {
        if (fd.status().code() == absl::StatusCode::kNotFound) {
          mounts.push_back(
              {file_placeholder ? ProtectedMount::kFilePlaceholder : ProtectedMount::kPlaceholder,
               prefix, UniqueFd()});
          break;
        }
        return absl::FailedPreconditionError(absl::StrCat(
            "protected path \"", path, "\" cannot be made read-only: ", fd.status().message(),
            " (a protected path and the directories above it must not be symbolic links)"));
      }
      struct stat st;
      if (fstat(fd->get(), &st) != 0) return ErrnoStatus("fstat");
      if (S_ISLNK(st.st_mode)) {
        return absl::FailedPreconditionError(
            absl::StrCat("protected path \"", path, "\": \"", prefix, "\" is a symbolic link"));
      }
      if (leaf || !S_ISDIR(st.st_mode)) {
        // The path itself, or a file where a directory above it would be.
        mounts.push_back({ProtectedMount::kReadOnly, prefix, *std::move(fd)});
        break;
      }
      if (pinned.insert(prefix).second) {
        mounts.push_back({ProtectedMount::kPin, prefix, *std::move(fd)});
      }
    }
  }
  // Outer paths first: a parent sorts before its children.
  std::stable_sort(
      mounts.begin(), mounts.end(),
      [](const ProtectedMount& a, const ProtectedMount& b) { return a.path < b.path; });
  return mounts;
}

// The parent directory of the workspace-relative `path` (symbolic links refused) and the name.
absl::StatusOr<UniqueFd> OpenParentOf(const Workspace& workspace, const std::string& path,
                                      std::string* name) {
  const size_t slash = path.rfind('/');
  const std::string parent = slash == std::string::npos ? "." : path.substr(0, slash);
  *name = slash == std::string::npos ? path : path.substr(slash + 1);
  return OpenBeneath(workspace.dir_fd(), parent, O_PATH | O_DIRECTORY, RESOLVE_NO_SYMLINKS);
}

// Removes the placeholder at `path`: the empty directory bwrap created as a mount point, or
// the file the executor created, when it still holds only the placeholder's content.
void RemovePlaceholder(const Workspace& workspace, const ProtectedMount& mount) {
  std::string name;
  absl::StatusOr<UniqueFd> dir = OpenParentOf(workspace, mount.path, &name);
  if (!dir.ok()) return;
  if (mount.kind == ProtectedMount::kPlaceholder) {
    unlinkat(dir->get(), name.c_str(), AT_REMOVEDIR);  // only when empty
    return;
  }
  const char* content = FilePlaceholderContent(mount.path);
  struct stat st;
  if (content == nullptr || fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      !S_ISREG(st.st_mode) || st.st_size != static_cast<off_t>(strlen(content))) {
    return;
  }
  unlinkat(dir->get(), name.c_str(), 0);
}

// Creates the file placeholder `mount` (missing until now) read-only with its content; sets
// mount->fd to it and returns another descriptor of it.
absl::StatusOr<UniqueFd> CreateFilePlaceholder(const Workspace& workspace, ProtectedMount* mount) {
  const char* content = FilePlaceholderContent(mount->path);
  if (content == nullptr) return absl::InternalError("no content for a file placeholder");
  std::string name;
  absl::StatusOr<UniqueFd> dir = OpenParentOf(workspace, mount->path, &name);
  if (!dir.ok()) return dir.status();
  UniqueFd file(
      openat(dir->get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
  if (!file.valid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "protected path \"", mount->path, "\" cannot be made read-only: ", strerror(errno)));
  }
  const size_t size = strlen(content);
  if (write(file.get(), content, size) != static_cast<ssize_t>(size)) {
    const int err = errno;
    file.Reset();
    unlinkat(dir->get(), name.c_str(), 0);
    return absl::InternalError(
        absl::StrCat("writing the placeholder \"", mount->path, "\": ", strerror(err)));
  }
  UniqueFd other(fcntl(file.get(), F_DUPFD_CLOEXEC, 0));
  if (!other.valid()) return ErrnoStatus("dup");
  mount->fd = std::move(file);
  return other;
}

// Creates the empty directory of the placeholder `mount` (missing until now), where bwrap
// mounts the read-only tmpfs; one made meanwhile by someone else is taken as it is (bwrap
// mounts over it all the same). Returns a descriptor of it.
absl::StatusOr<UniqueFd> CreateDirectoryPlaceholder(const Workspace& workspace,
                                                    const ProtectedMount& mount) {
  std::string name;
  absl::StatusOr<UniqueFd> dir = OpenParentOf(workspace, mount.path, &name);
  if (!dir.ok()) return dir.status();
  if (mkdirat(dir->get(), name.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(absl::StrCat(
        "protected path \"", mount.path, "\" cannot be made read-only: ", strerror(errno)));
  }
  UniqueFd made(openat(dir->get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!made.valid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "protected path \"", mount.path, "\" cannot be made read-only: ", strerror(errno)));
  }
  return made;
}

// The key of `path` in `workspace` for the placeholder counts.
std::string PlaceholderKey(const Workspace& workspace, const std::string& path) {
  struct stat st;
  if (fstat(workspace.dir_fd(), &st) != 0) return path;
  return absl::StrCat(st.st_dev, ":", st.st_ino, "/", path);
}

}  // namespace

ProtectedMountLease::ProtectedMountLease(ProtectedMountLease&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      workspace_(other.workspace_),
      mounts_(std::move(other.mounts_)) {}

void ProtectedMountLease::Release() {
  if (owner_ == nullptr) return;
  std::exchange(owner_, nullptr)->Release(*workspace_, mounts_);
}

absl::StatusOr<ProtectedMountLease> ProtectedMounts::Acquire(const Workspace& workspace) {
  std::vector<ProtectedMount> mounts;
  // Planned and counted under the lock, so that a placeholder is never removed between
  // another command's plan and its mount.
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::vector<ProtectedMount>> planned =
      PlanProtectedMounts(workspace, paths_, [&](const std::string& path) {
        mu_.AssertHeld();
        return placeholders_.count(PlaceholderKey(workspace, path)) > 0;
      });
  if (!planned.ok()) return planned.status();
  for (ProtectedMount& mount : *planned) {
    if (mount.kind == ProtectedMount::kPlaceholder ||
        mount.kind == ProtectedMount::kFilePlaceholder) {
      InUse& in_use = placeholders_[PlaceholderKey(workspace, mount.path)];
      if (in_use.leases == 0) {
        // Made here, before bwrap runs, and recorded by identity in the same step.
        absl::StatusOr<PlaceholderId> made = made_->Make([&]() -> absl::StatusOr<UniqueFd> {
          if (mount.kind == ProtectedMount::kPlaceholder) {
            return CreateDirectoryPlaceholder(workspace, mount);
          }
          return CreateFilePlaceholder(workspace, &mount);
        });
        if (!made.ok()) {
          placeholders_.erase(PlaceholderKey(workspace, mount.path));
          ReleaseLocked(workspace, mounts);  // those counted so far
          return made.status();
        }
        in_use.id = *made;
      }
      ++in_use.leases;
    }
    mounts.push_back(std::move(mount));
  }
  return ProtectedMountLease(this, &workspace, std::move(mounts));
}

void ProtectedMounts::Release(const Workspace& workspace,
                              const std::vector<ProtectedMount>& mounts) {
  absl::MutexLock lock(&mu_);
  ReleaseLocked(workspace, mounts);
}

void ProtectedMounts::ReleaseLocked(const Workspace& workspace,
                                    const std::vector<ProtectedMount>& mounts) {
  for (const ProtectedMount& mount : mounts) {
    if (mount.kind != ProtectedMount::kPlaceholder &&
        mount.kind != ProtectedMount::kFilePlaceholder) {
      continue;
    }
    auto it = placeholders_.find(PlaceholderKey(workspace, mount.path));
    if (it == placeholders_.end() || --it->second.leases > 0) continue;
    const PlaceholderId id = it->second.id;
    placeholders_.erase(it);
    made_->Unmake(id, [&] { RemovePlaceholder(workspace, mount); });
  }
}

}  // namespace rein
