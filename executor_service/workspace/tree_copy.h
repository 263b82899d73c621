// Bounded copies, removals and measures of directory trees (workspaces and their snapshots):
// iterative, with a fixed number of open descriptors, keeping hard links and holes.
#ifndef REIN_EXECUTOR_SERVICE_WORKSPACE_TREE_COPY_H_
#define REIN_EXECUTOR_SERVICE_WORKSPACE_TREE_COPY_H_

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "executor_service/workspace/sandbox_placeholders.h"

namespace rein {

// Deepest tree a copy or a measure enters by default (removal has no depth limit).
inline constexpr int kMaxTreeDepth = 1000;

// Size of one tree (a copy, or a measure of one).
struct CopyStats {
  int64_t files = 0;            // regular files (each name of a hard link) and symlinks
  int64_t bytes = 0;            // apparent bytes of regular files (st_size, once per inode)
  int64_t allocated_bytes = 0;  // bytes really allocated (st_blocks * 512, once per inode)
  int64_t entries = 0;          // files, symlinks and directories (the top one not counted)
};

// Bounds of one copy or measure. A tree that would pass one is refused with the bound's name:
// RESOURCE_EXHAUSTED "<name>: ..." (DEADLINE_EXCEEDED "deadline: ..." for the deadline).
struct CopyLimits {
  int max_depth = kMaxTreeDepth;
  int64_t max_allocated_bytes = std::numeric_limits<int64_t>::max();
  int64_t max_entries = std::numeric_limits<int64_t>::max();
  absl::Time deadline = absl::InfiniteFuture();  // on `clock`
  Clock* clock = RealClock();
  // How refusals name the bounds (the flags that set them).
  std::string depth_bound = "max_depth";
  std::string bytes_bound = "max_allocated_bytes";
  std::string entries_bound = "max_entries";
  // Entries a copy leaves out: what the sandbox placed in the workspace for its own use
  // (null = none). Not owned.
  const SandboxPlaceholders* leave_out = nullptr;
};

// Copies the tree at `from` to the new directory `to`. Regular files keep their holes (or
// share blocks, FICLONE, where the file system has reflinks) and a second name of an inode
// becomes a hard link in the copy; symlinks are copied as links, never followed; mode and
// modification times are kept; FIFOs, sockets and devices are skipped (never opened for I/O),
// and so are the sandbox's placeholders (limits.leave_out), matched on the opened entry.
// On error `to` may hold a partial copy: the caller removes it.
absl::StatusOr<CopyStats> CopyTree(const std::string& from, const std::string& to,
                                   const CopyLimits& limits = {});

// The size of the tree at `from` (NOT_FOUND when it does not exist), within `limits`.
absl::StatusOr<CopyStats> MeasureTree(const std::string& from, const CopyLimits& limits = {});

// Removes the tree at `path`, however deep (no symlink is followed). OK when it does not exist.
absl::Status RemoveTree(const std::string& path);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_WORKSPACE_TREE_COPY_H_
