// Workspace confinement: every path a tool touches is resolved beneath the workspace by the
// kernel (openat2 RESOLVE_BENEATH) at open time, never by string checks.
#ifndef REIN_EXECUTOR_SERVICE_WORKSPACE_H_
#define REIN_EXECUTOR_SERVICE_WORKSPACE_H_

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "executor_service/process/unique_fd.h"

namespace rein {

// Longest path (in bytes) a tool may name; the kernel's PATH_MAX.
inline constexpr size_t kMaxToolPathBytes = 4096;

// The directory under the workspace root that holds the call journal (call_journal.h); no
// workspace may have this name.
inline constexpr const char* kJournalDirName = ".rein-journal";

// OK when `name` is a valid workspace name: non-empty, at most 255 bytes, no '/', no NUL,
// not "." or "..", not starting with ".rein-" (the executor's own folders: the call journal
// kJournalDirName, the workspace history), or such a name in a namespace's folder,
// `<namespace>/<name>` (NamespacedWorkspace). Otherwise INVALID_ARGUMENT naming `workspace`.
absl::Status ValidateWorkspaceName(absl::string_view name);

// The file that marks a folder of the workspace root as a namespace's (docs/NAMESPACES.md): a
// workspace of the `default` namespace may not be such a folder.
inline constexpr const char* kNamespaceMarker = ".rein-namespace";

// The name under `root` of the workspace `workspace` (one name, as a request carries it) of
// `namespace_name` (ExecuteRequest.namespace): the name itself for "" and "default", whose
// workspaces stay directly under the root as before namespaces; `<namespace>/<workspace>`
// otherwise, and then the namespace's folder, when it exists, is marked (kNamespaceMarker).
// INVALID_ARGUMENT naming the field for a bad name, and for a `default` workspace that is a
// marked namespace folder.
absl::StatusOr<std::string> NamespacedWorkspace(const std::string& root,
                                                absl::string_view namespace_name,
                                                absl::string_view workspace);

// OK when `path` may be handed to the kernel as a tool path: non-empty, no NUL, at most
// kMaxToolPathBytes. Otherwise INVALID_ARGUMENT naming `field`. Escapes are not checked here:
// that is the kernel's job at open time.
absl::Status ValidateToolPath(absl::string_view path, absl::string_view field = "path");

// openat2(dirfd, path, flags | O_CLOEXEC, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | extra_resolve).
// Errors carry a code and a message naming `path` (as the caller spelled it, `display`):
// PERMISSION_DENIED when the path leaves `dirfd` (absolute, `..`, symlink out), NOT_FOUND when
// it does not exist, FAILED_PRECONDITION for symlink loops, INVALID_ARGUMENT for bad names.
absl::StatusOr<UniqueFd> OpenBeneath(int dirfd, absl::string_view path, int flags,
                                     uint64_t extra_resolve = 0, absl::string_view display = {});

// Maps an errno from opening `path` to a status with a message naming it.
absl::Status PathError(int err, absl::string_view path);

// One workspace directory, opened once per call. Immutable; thread-safe.
class Workspace {
 public:
  Workspace(std::string name, UniqueFd dir) : name_(std::move(name)), dir_(std::move(dir)) {}

  const std::string& name() const { return name_; }
  // An O_PATH descriptor of the workspace directory.
  int dir_fd() const { return dir_.get(); }

  // Opens `path` (relative to the workspace) beneath it; see OpenBeneath. Validates `path`
  // with ValidateToolPath first.
  absl::StatusOr<UniqueFd> Open(absl::string_view path, int flags,
                                uint64_t extra_resolve = 0) const;

  // The path of the open file or directory `fd` relative to the workspace, as the kernel
  // knows it now ("" for the workspace itself). PERMISSION_DENIED when it is not inside.
  absl::StatusOr<std::string> RelativePathOf(int fd) const;

 private:
  std::string name_;
  UniqueFd dir_;
};

// The directory that holds every workspace (--workspace_root). Immutable; thread-safe.
class WorkspaceRoot {
 public:
  // Opens `path`, which must be an existing directory, and checks that the kernel supports
  // openat2 (Linux >= 5.6). INVALID_ARGUMENT / NOT_FOUND / FAILED_PRECONDITION otherwise.
  static absl::StatusOr<std::unique_ptr<WorkspaceRoot>> Open(const std::string& path);

  const std::string& path() const { return path_; }

  // Opens the workspace `name`: INVALID_ARGUMENT (naming `workspace`) for a bad name,
  // NOT_FOUND when it does not exist or is not a directory.
  absl::StatusOr<std::unique_ptr<Workspace>> OpenWorkspace(absl::string_view name) const;

 private:
  WorkspaceRoot(std::string path, UniqueFd dir) : path_(std::move(path)), dir_(std::move(dir)) {}

  std::string path_;
  UniqueFd dir_;
};

// The kind of an inode as tools print it: "file", "dir", "symlink", "fifo", "socket",
// "chardev", "blockdev" or "other".
const char* FileTypeName(mode_t mode);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_WORKSPACE_H_
