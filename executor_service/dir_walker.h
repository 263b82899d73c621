// Depth-first directory walk over descriptors opened beneath their parent, never by path
// strings, and never through symbolic links.
#ifndef REIN_EXECUTOR_SERVICE_DIR_WALKER_H_
#define REIN_EXECUTOR_SERVICE_DIR_WALKER_H_

#include <sys/stat.h>

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/status.h"

namespace rein {

// One directory entry as the walk sees it (lstat semantics: a symlink is reported, not
// followed).
struct WalkEntry {
  int parent_fd;         // the open directory holding the entry (valid during the visit)
  std::string name;      // its name in that directory
  std::string path;      // display path: the walk's prefix joined with the names below it
  struct stat st;
  int depth;             // 0 for entries of the starting directory
};

struct WalkOptions {
  bool recursive = false;
  bool include_hidden = false;  // entries whose name starts with '.'
  int max_depth = 64;           // directories deeper than this are not entered
  size_t max_names_per_directory = 100000;
};

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
