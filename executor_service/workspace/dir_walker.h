// Depth-first directory walk over descriptors opened beneath their parent, never by path
// strings, and never through symbolic links.
#ifndef REIN_EXECUTOR_SERVICE_DIR_WALKER_H_
#define REIN_EXECUTOR_SERVICE_DIR_WALKER_H_

#include <sys/stat.h>

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rein {

// One directory entry as the walk sees it (lstat semantics: a symlink is reported, not
// followed).
struct WalkEntry {
  int parent_fd;     // the open directory holding the entry (valid during the visit)
  std::string name;  // its name in that directory
  std::string path;  // display path: the walk's prefix joined with the names below it
  struct stat st;
  int depth;  // 0 for entries of the starting directory
};

struct WalkOptions {
  bool recursive = false;
  bool include_hidden = false;  // entries whose name starts with '.'
  int max_depth = 64;           // directories deeper than this are not entered
  size_t max_names_per_directory = 100000;
  // Glob patterns (fnmatch, no flags): an entry whose name or display path matches any of
  // them is neither visited nor, for a directory, entered.
  std::vector<std::string> exclude;
};

// Most patterns, and longest pattern in bytes, of a tool's `exclude` argument.
inline constexpr size_t kMaxExcludePatterns = 64;
inline constexpr size_t kMaxExcludePatternBytes = 255;

// The JSON schema of the `exclude` argument shared by list_files and search_text.
nlohmann::json ExcludeArgumentSchema();

// The patterns of args["exclude"] (none when absent). INVALID_ARGUMENT naming
// args.exclude[i] when a pattern is empty, longer than kMaxExcludePatternBytes bytes or holds a
// NUL byte.
absl::StatusOr<std::vector<std::string>> ExcludePatterns(const nlohmann::json& args);

// True when `name` (a base name) or `path` (its display path) matches one of `patterns`.
bool IsExcluded(const std::vector<std::string>& patterns, const std::string& name,
                const std::string& path);

struct WalkStats {
  size_t unreadable_directories = 0;  // could not be opened or read; skipped
  size_t depth_limited = 0;           // directories not entered because of max_depth
  size_t oversized_directories = 0;   // directories with more than max_names_per_directory
};

enum class WalkAction { kContinue, kStop };

// Walks the directory open as `dir_fd` (opened O_RDONLY | O_DIRECTORY; not closed), whose
// display path is `prefix` ("" for the workspace). Entries of each directory are visited in
// byte order of their names; with `recursive`, a directory's subtree is visited right after
// it. Subdirectories are opened with openat2 beneath their parent with RESOLVE_NO_SYMLINKS,
// so the walk cannot leave the tree. Returns an error only when `dir_fd` itself cannot be
// read; problems below it are counted in `stats`.
absl::Status WalkDirectory(int dir_fd, const std::string& prefix, const WalkOptions& options,
                           const std::function<WalkAction(const WalkEntry&)>& visit,
                           WalkStats* stats);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_DIR_WALKER_H_
