// Iterative walk of a directory tree that holds one directory descriptor whatever the depth,
// for the walks that copy, remove and measure workspaces.
#ifndef REIN_EXECUTOR_SERVICE_WORKSPACE_TREE_WALK_H_
#define REIN_EXECUTOR_SERVICE_WORKSPACE_TREE_WALK_H_

#include <fcntl.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rein {

// Flags of every open of a workspace entry: never through a symlink, never blocking on a
// FIFO or device swapped in for the entry, never inherited by a child.
inline constexpr int kEntryOpenFlags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;

// Opens entry `name` of the directory `dir_fd` with kEntryOpenFlags | `flags` and checks that
// it is the very entry `expected` describes (lstat of it: same device, inode and file type).
// NOT_FOUND when the entry is gone or was replaced by another one (a FIFO or device swapped
// in for a file is never opened for I/O: it fails the check).
absl::StatusOr<int> OpenEntry(int dir_fd, const std::string& name, int flags,
                              const struct stat& expected);

// What a walk does at each entry. The walk calls, for every entry of a directory (in no
// particular order): Visit; for a directory Visit said to enter: Enter (the walk is then in
// it), its entries, Leave (still in it), and Left (back in the parent).
class TreeVisitor {
 public:
  virtual ~TreeVisitor() = default;
  // Entry `name` of the directory `dir_fd` (st: its lstat). Returns true to enter it (only
  // for a directory). An error ends the walk.
  virtual absl::StatusOr<bool> Visit(int dir_fd, const std::string& name,
                                     const struct stat& st) = 0;
  virtual absl::Status Enter(const std::string& /*name*/, const struct stat& /*st*/) {
    return absl::OkStatus();
  }
  virtual absl::Status Leave(int /*dir_fd*/, const struct stat& /*st*/) { return absl::OkStatus(); }
  virtual absl::Status Left(int /*parent_fd*/, const std::string& /*name*/) {
    return absl::OkStatus();
  }
};

// Walks the tree below the open directory `dir_fd` (not closed) without recursion: it holds
// the descriptor of the directory it is in (plus one while reading names), goes down with
// OpenEntry and up through "..", checking there that it is back in the directory it came from
// (ABORTED "the tree changed while it was walked" otherwise). A directory deeper than
// `max_depth` levels below `dir_fd` is refused: RESOURCE_EXHAUSTED naming `depth_bound`.
absl::Status WalkTree(int dir_fd, int max_depth, const std::string& depth_bound,
                      TreeVisitor* visitor);

// The names in the open directory `dir_fd`, without "." and "..".
absl::StatusOr<std::vector<std::string>> ListNames(int dir_fd);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_WORKSPACE_TREE_WALK_H_
