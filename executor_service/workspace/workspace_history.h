// WorkspaceHistory: copies of a run's workspace taken just before each of its mutating calls,
// kept under a folder of the workspace root that no tool can reach, so that a fork can start
// from the workspace as it was at any point of the run.
#ifndef REIN_EXECUTOR_SERVICE_WORKSPACE_HISTORY_H_
#define REIN_EXECUTOR_SERVICE_WORKSPACE_HISTORY_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "executor_service/workspace/tree_copy.h"

namespace rein {

// The folder of the workspace root that holds the history. ValidateWorkspaceName refuses it
// (and every name starting with ".rein-"), so no run can name it as its workspace, and tools
// are confined beneath their own workspace.
inline constexpr char kWorkspaceHistoryDir[] = ".rein-history";

// Layout under <root>/.rein-history/: runs/<run_id>/<call_id>/ (the workspace just before the
// call), forks/<name> (a marker per workspace made by Copy, so Delete removes only those),
// tmp/ (copies in progress; renamed into place when complete).
//
// Copies are real copies (a reflink, FICLONE, where the file system offers one: copy-on-write,
// sharing blocks until either side writes), never hard links: a tool that rewrites a file in
// place cannot change a snapshot. Regular files, directories and symlinks (as links, never
// followed) are copied with their mode and modification time; other file types are skipped.
// Thread-safe (the file system serializes; a name that races is ALREADY_EXISTS).
class WorkspaceHistory {
 public:
  // `retention`: snapshots kept per run, newest first by call number; 0 = history off.
  WorkspaceHistory(std::string root, int retention)
      : root_(std::move(root)), retention_(retention) {}

  int retention() const { return retention_; }

  // Takes the snapshot of `workspace` before call `call_id` of `run_id` runs; nothing when
  // history is off or the call has a snapshot already (a repeated call_id). Then drops the
  // run's oldest snapshots beyond the retention.
  absl::StatusOr<CopyStats> SnapshotBeforeCall(absl::string_view run_id,
                                               absl::string_view workspace,
                                               absl::string_view call_id) const;

  // Makes workspace `target` (which must not exist: ALREADY_EXISTS) as a copy of `workspace`
  // as it is now (`before_call` empty), or as it was before `before_call` of `run_id` ran
  // (FAILED_PRECONDITION naming before_call when the history does not hold it: history off,
  // never taken or dropped by retention). Nothing is left behind on failure.
  absl::StatusOr<CopyStats> Copy(absl::string_view workspace, absl::string_view run_id,
                                 absl::string_view before_call, absl::string_view target) const;

  // Removes workspace `name` if Copy made it (FAILED_PRECONDITION otherwise); OK when it is
  // gone already.
  absl::Status Delete(absl::string_view name) const;

 private:
  std::string root_;
  int retention_;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_WORKSPACE_HISTORY_H_
