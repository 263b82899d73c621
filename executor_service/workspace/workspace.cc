// Workspace confinement via openat2(RESOLVE_BENEATH).
#include "executor_service/workspace/workspace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/limits.h"
#include "common/status_reason.h"

namespace rein {
namespace {

// Quotes `s` for an error message, bounded so that a huge path cannot flood it.
std::string Quote(absl::string_view s) {
  constexpr size_t kMax = 256;
  if (s.size() > kMax) return absl::StrFormat("\"%s...\"", absl::CHexEscape(s.substr(0, kMax)));
  return absl::StrFormat("\"%s\"", absl::CHexEscape(s));
}

long Openat2(int dirfd, const char* path, struct open_how* how) {
  return syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
}

}  // namespace

absl::Status ValidateWorkspaceName(absl::string_view name) {
  const size_t slash = name.find('/');
  if (slash == absl::string_view::npos) return CheckWorkspaceName(name, "workspace");
  // Not `<namespace>/<name>`: refused as any name with a '/' always was.
  if (!CheckNamespaceName(name.substr(0, slash), "namespace").ok()) {
    return CheckWorkspaceName(name, "workspace");
  }
  return CheckWorkspaceName(name.substr(slash + 1), "workspace");
}

absl::StatusOr<std::string> NamespacedWorkspace(const std::string& root,
                                                absl::string_view namespace_name,
                                                absl::string_view workspace) {
  if (absl::Status bad = CheckWorkspaceName(workspace, "workspace"); !bad.ok()) return bad;
  const absl::string_view ns = NamespaceOrDefault(namespace_name);
  if (ns == kDefaultNamespace) {
    struct stat st;
    const std::string marker = absl::StrCat(root, "/", workspace, "/", kNamespaceMarker);
    if (lstat(marker.c_str(), &st) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("workspace: ", Quote(workspace),
                                                     " is a namespace's folder, not a workspace"));
    }
    return std::string(workspace);
  }
  if (absl::Status bad = CheckNamespaceName(ns, "namespace"); !bad.ok()) return bad;
  const std::string folder = absl::StrCat(root, "/", ns);
  struct stat st;
  if (lstat(folder.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    // Marked so that no `default` run can take the whole folder as its workspace. Best effort:
    // an existing marker (EEXIST) is the usual case.
    const int fd = open(absl::StrCat(folder, "/", kNamespaceMarker).c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
    if (fd >= 0) close(fd);
  }
  return absl::StrCat(ns, "/", workspace);
}

absl::Status ValidateToolPath(absl::string_view path, absl::string_view field) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": must not be empty"));
  if (path.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": must not contain a NUL byte"));
  }
  if (path.size() > kMaxToolPathBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be at most ", kMaxToolPathBytes, " bytes, got ", path.size()));
  }
  return absl::OkStatus();
}

absl::Status PathError(int err, absl::string_view path) {
  const std::string quoted = Quote(path);
  switch (err) {
    case EXDEV:
      return absl::PermissionDeniedError(
          absl::StrCat("path ", quoted,
                       " is outside the workspace (absolute path, '..' or a "
                       "symbolic link leading out)"));
    case ENOENT: return absl::NotFoundError(absl::StrCat("path ", quoted, " does not exist"));
    case ENOTDIR:
      return absl::NotFoundError(
          absl::StrCat("path ", quoted, " is not a directory, or a component of it is not"));
    case ELOOP:
      return absl::FailedPreconditionError(
          absl::StrCat("path ", quoted,
                       ": too many levels of symbolic links, or a symbolic link where none "
                       "is allowed"));
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(absl::StrCat("path ", quoted, ": permission denied"));
    case ENAMETOOLONG:
      return absl::InvalidArgumentError(absl::StrCat("path ", quoted, ": name too long"));
    case EISDIR:
      return absl::FailedPreconditionError(absl::StrCat("path ", quoted, " is a directory"));
    case ENOSYS:
      return absl::FailedPreconditionError(
          "the kernel does not support openat2 (Linux >= 5.6 is required)");
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return absl::ResourceExhaustedError(absl::StrCat("path ", quoted, ": ", strerror(err)));
    default: return absl::InternalError(absl::StrCat("path ", quoted, ": ", strerror(err)));
  }
}

absl::StatusOr<UniqueFd> OpenBeneath(int dirfd, absl::string_view path, int flags,
                                     uint64_t extra_resolve, absl::string_view display) {
  if (display.empty()) display = path;
  if (path.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("path ", Quote(display), ": must not contain a NUL byte"));
  }
  const std::string p(path);
  struct open_how how;
  memset(&how, 0, sizeof(how));
  // openat2 rejects flags O_PATH ignores (such as O_NOCTTY) instead of dropping them.
  const int extra_flags = (flags & O_PATH) ? O_CLOEXEC : (O_CLOEXEC | O_NOCTTY);
  how.flags = static_cast<uint64_t>(flags | extra_flags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | extra_resolve;
  // The kernel returns EAGAIN when a rename or mount raced the lookup; retry a few times.
  for (int attempt = 0;; ++attempt) {
    long fd = Openat2(dirfd, p.c_str(), &how);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    const int err = errno;
    if ((err == EAGAIN || err == EINTR) && attempt < 8) continue;
    return PathError(err, display);
  }
}

absl::StatusOr<UniqueFd> Workspace::Open(absl::string_view path, int flags,
                                         uint64_t extra_resolve) const {
  absl::Status valid = ValidateToolPath(path);
  if (!valid.ok()) return valid;
  return OpenBeneath(dir_.get(), path, flags, extra_resolve);
}

namespace {

absl::StatusOr<std::string> FdPath(int fd) {
  char buf[PATH_MAX + 1];
  const std::string link = absl::StrCat("/proc/self/fd/", fd);
  const ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) return absl::InternalError(absl::StrCat("readlink ", link, ": ", strerror(errno)));
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

absl::StatusOr<std::string> Workspace::RelativePathOf(int fd) const {
  absl::StatusOr<std::string> base = FdPath(dir_.get());
  if (!base.ok()) return base.status();
  absl::StatusOr<std::string> path = FdPath(fd);
  if (!path.ok()) return path.status();
  if (*path == *base) return std::string();
  if (path->size() > base->size() && path->compare(0, base->size(), *base) == 0 &&
      ((*path)[base->size()] == '/' || *base == "/")) {
    return path->substr(base->size() + (*base == "/" ? 0 : 1));
  }
  return absl::PermissionDeniedError(
      absl::StrCat("path ", Quote(*path), " is outside the workspace"));
}

absl::StatusOr<std::unique_ptr<WorkspaceRoot>> WorkspaceRoot::Open(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("workspace_root: must not be empty");
  int fd = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat("workspace_root: ", path, " does not exist"));
    }
    if (err == ENOTDIR) {
      return absl::InvalidArgumentError(
          absl::StrCat("workspace_root: ", path, " is not a directory"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("workspace_root: cannot open ", path, ": ", strerror(err)));
  }
  UniqueFd dir(fd);
  // Probe openat2 once so that an old kernel fails at startup rather than on every call.
  absl::StatusOr<UniqueFd> probe = OpenBeneath(dir.get(), ".", O_PATH | O_DIRECTORY);
  if (!probe.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("workspace_root: ", probe.status().message()));
  }
  return std::unique_ptr<WorkspaceRoot>(new WorkspaceRoot(path, std::move(dir)));
}

absl::StatusOr<std::unique_ptr<Workspace>> WorkspaceRoot::OpenWorkspace(
    absl::string_view name) const {
  absl::Status valid = ValidateWorkspaceName(name);
  if (!valid.ok()) return valid;
  absl::StatusOr<UniqueFd> fd = OpenBeneath(dir_.get(), name, O_PATH | O_DIRECTORY);
  if (!fd.ok()) {
    const absl::StatusCode code = fd.status().code();
    if (code == absl::StatusCode::kNotFound) {
      // ENOENT, or ENOTDIR because the name is a file.
      return WithReason(absl::NotFoundError(absl::StrCat("workspace ", Quote(name),
                                                         " does not exist or is not a directory")),
                        reason::kWorkspaceNotFound);
    }
    return absl::Status(code, absl::StrCat("workspace ", Quote(name), ": ", fd.status().message()));
  }
  return std::make_unique<Workspace>(std::string(name), *std::move(fd));
}

const char* FileTypeName(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "file";
    case S_IFDIR: return "dir";
    case S_IFLNK: return "symlink";
    case S_IFIFO: return "fifo";
    case S_IFSOCK: return "socket";
    case S_IFCHR: return "chardev";
    case S_IFBLK: return "blockdev";
    default: return "other";
  }
}

}  // namespace rein
