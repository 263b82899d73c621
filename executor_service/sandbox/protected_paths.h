// Workspace paths no tool may write: git's hooks, config and commondir, and an operator's list.
#ifndef REIN_EXECUTOR_SERVICE_PROTECTED_PATHS_H_
#define REIN_EXECUTOR_SERVICE_PROTECTED_PATHS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rein {

// The paths always protected. .git/commondir is among them because git reads the config and
// the hooks of the directory it names: writing it is as good as writing .git/config.
inline constexpr const char* kDefaultProtectedPaths[] = {".git/hooks", ".git/config",
                                                         ".git/commondir"};
// A missing protected path the sandbox keeps as a read-only file holding `content` rather than
// as an empty directory, because git stops on an empty or a directory .git/commondir; "."
// names the git directory itself, which is what git assumes when there is none.
struct FilePlaceholder {
  const char* path;
  const char* content;
};
inline constexpr FilePlaceholder kFilePlaceholders[] = {{".git/commondir", ".\n"}};
// Most entries an operator may add.
inline constexpr size_t kMaxExtraProtectedPaths = 16;

// A set of workspace-relative paths that write_file refuses and run_command sees read-only.
// Immutable; thread-safe.
class ProtectedPaths {
 public:
  // The defaults plus `extra` (each relative, without "." or ".." components, no NUL, at most
  // 4096 bytes; a trailing '/' is dropped). INVALID_ARGUMENT naming the bad entry.
  static absl::StatusOr<ProtectedPaths> Create(const std::vector<std::string>& extra);

  // Normalized entries, sorted, without duplicates or entries beneath another.
  const std::vector<std::string>& paths() const { return paths_; }

  // True when writing a file at `path` (workspace-relative, normalized: no ".", "..", or
  // empty components) would touch a protected path: it is one, lies beneath one, or is an
  // ancestor of one (a file there would take the protected directory's place).
  bool RefusesFile(absl::string_view path) const;

  // True when creating a directory at `path` would create or enter-and-replace a protected
  // path: it is one or lies beneath one. (Ancestors may be created.)
  bool RefusesDirectory(absl::string_view path) const;

 private:
  explicit ProtectedPaths(std::vector<std::string> paths) : paths_(std::move(paths)) {}
  std::vector<std::string> paths_;
};

// `path` with "." and empty components dropped; "" for the workspace itself. INVALID_ARGUMENT
// (naming `field`) when it is absolute or has a ".." component.
absl::StatusOr<std::string> NormalizeRelativePath(absl::string_view path, absl::string_view field);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_PROTECTED_PATHS_H_
