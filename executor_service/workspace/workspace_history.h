// WorkspaceHistory: copies of a run's workspace taken just before each of its mutating calls,
// kept under a folder of the workspace root that no tool can reach, so that a fork can start
// from the workspace as it was at any point of the run.
#ifndef REIN_EXECUTOR_SERVICE_WORKSPACE_HISTORY_H_
#define REIN_EXECUTOR_SERVICE_WORKSPACE_HISTORY_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "executor_service/workspace/sandbox_placeholders.h"
#include "executor_service/workspace/tree_copy.h"

namespace rein {

// The folder of the workspace root that holds the history. ValidateWorkspaceName refuses it
// (and every name starting with ".rein-"), so no run can name it as its workspace, and tools
// are confined beneath their own workspace.
inline constexpr char kWorkspaceHistoryDir[] = ".rein-history";

// Bounds of a WorkspaceHistory (filled from flags in main).
struct WorkspaceHistoryOptions {
  // Snapshots kept per run, newest first by call number; 0 = history off (--workspace_history).
  int retention = 16;
  // Bytes really allocated (st_blocks * 512, not apparent sizes) by one run's snapshots
  // together, and by one workspace copy (--workspace_history_max_bytes).
  int64_t max_bytes = int64_t{1} << 30;
  // Files, symlinks and directories of one run's snapshots together, and of one workspace
  // copy (--workspace_history_max_files).
  int64_t max_files = 100000;
  // Deepest directory level a snapshot or copy takes.
  int max_depth = kMaxTreeDepth;
  // What the sandbox placed in workspaces for its own use, left out of every snapshot and
  // copy (null = nothing is). Not owned; shared with the sandbox (SandboxOptions).
  const SandboxPlaceholders* placeholders = nullptr;
  // A run's history is removed once nothing was added to it for this long (its last snapshot,
  // or its end, MarkEnded) (--journal_retention).
  absl::Duration ended_retention = absl::Hours(24 * 7);
  // How often SnapshotBeforeCall and MarkEnded look for such runs.
  absl::Duration prune_interval = absl::Hours(1);
  // The executor's clock: the copies' deadlines and the retention are on it.
  Clock* clock = RealClock();
};

// Flags that set the bounds, as refusals name them.
inline constexpr char kMaxBytesBound[] = "--workspace_history_max_bytes";
inline constexpr char kMaxFilesBound[] = "--workspace_history_max_files";

// Layout under <root>/.rein-history/: runs/<run_id>/<call_id>/ (the workspace just before the
// call), sizes/<run_id>/<call_id> (that snapshot's entries and allocated bytes), skipped/
// <run_id>/<call_id> (why no snapshot was taken before that call), forks/<name> (a marker per
// workspace made by Copy, so Delete removes only those), tmp/ (copies in progress; renamed
// into place when complete).
//
// Copies are real copies (a reflink, FICLONE, where the file system offers one: copy-on-write,
// sharing blocks until either side writes), never hard links to the source: a tool that
// rewrites a file in place cannot change a snapshot. Within a copy, holes stay holes and a
// second name of an inode stays a hard link. Regular files, directories and symlinks (as
// links, never followed) are copied with their mode and modification time; other file types
// are skipped (see CopyTree). Every copy is bounded (WorkspaceHistoryOptions) and iterative.
// Thread-safe (the file system serializes; a name that races is ALREADY_EXISTS).
class WorkspaceHistory {
 public:
  WorkspaceHistory(std::string root, WorkspaceHistoryOptions options)
      : root_(std::move(root)), options_(std::move(options)) {}
  // Default bounds, `retention` snapshots per run.
  WorkspaceHistory(std::string root, int retention) : root_(std::move(root)) {
    options_.retention = retention;
  }

  int retention() const { return options_.retention; }
  const WorkspaceHistoryOptions& options() const { return options_; }

  // Takes the snapshot of `workspace` before call `call_id` of `run_id` runs; nothing when
  // history is off or the call has a snapshot already (a repeated call_id). The run's oldest
  // snapshots are dropped to keep at most `retention` and to make room within the bounds for
  // this one. A snapshot that would pass a bound alone, or not finish by `deadline`, is not
  // taken (nothing of it is left): RESOURCE_EXHAUSTED naming the bound (kMaxBytesBound,
  // kMaxFilesBound, the depth) or DEADLINE_EXCEEDED; that point is then recorded as skipped,
  // and Copy from it is refused with the same reason.
  absl::StatusOr<CopyStats> SnapshotBeforeCall(absl::string_view run_id,
                                               absl::string_view workspace,
                                               absl::string_view call_id,
                                               absl::Time deadline = absl::InfiniteFuture()) const;

  // Makes workspace `target` (which must not exist: ALREADY_EXISTS) as a copy of `workspace`
  // as it is now (`before_call` empty), or as it was before `before_call` of `run_id` ran
  // (FAILED_PRECONDITION naming before_call, reason kSnapshotMissing, when the history does
  // not hold it: history off, never taken, skipped (naming the bound that stopped it) or
  // dropped by retention). A copy that would pass a bound is refused: RESOURCE_EXHAUSTED
  // naming it (DEADLINE_EXCEEDED past `deadline`). Nothing is left behind on failure.
  absl::StatusOr<CopyStats> Copy(absl::string_view workspace, absl::string_view run_id,
                                 absl::string_view before_call, absl::string_view target,
                                 absl::Time deadline = absl::InfiniteFuture()) const;

  // Removes workspace `name` if Copy made it (FAILED_PRECONDITION otherwise); OK when it is
  // gone already.
  absl::Status Delete(absl::string_view name) const;

  // Notes that `run_id` ended: its history is kept for ended_retention from now.
  void MarkEnded(absl::string_view run_id) const;

  // Removes the history of every run to which nothing was added for ended_retention before
  // `now`. Returns the number of runs removed.
  int PruneEnded(absl::Time now) const;

 private:
  std::string HistoryDir() const;
  // The bounds of one snapshot or copy, named as refusals show them ("per run" or "per copy").
  CopyLimits Limits(absl::string_view per, absl::Time deadline) const;
  // The run's snapshots, oldest first by call number, with their sizes.
  struct Taken {
    int64_t number;
    std::string call_id;
    CopyStats size;
  };
  std::vector<Taken> ListTaken(absl::string_view run_id) const;
  absl::StatusOr<CopyStats> TakeSnapshot(absl::string_view run_id, absl::string_view workspace,
                                         absl::string_view call_id, absl::Time deadline) const;
  // PruneEnded, at most once per prune_interval.
  void MaybePrune() const;

  std::string root_;
  WorkspaceHistoryOptions options_;
  mutable std::atomic<int64_t> last_prune_unix_{0};
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_WORKSPACE_HISTORY_H_
