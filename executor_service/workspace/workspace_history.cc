// WorkspaceHistory: copy-before-write snapshots of run workspaces.
#include "executor_service/workspace/workspace_history.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_reason.h"
#include "executor_service/process/errno_status.h"
#include "executor_service/process/unique_fd.h"
#include "executor_service/workspace/workspace.h"

namespace rein {
namespace {

absl::Status Errno(int err, absl::string_view what, absl::string_view path) {
  return ErrnoStatus(err, absl::StrCat(what, " ", path));
}

absl::Status MakeDirs(const std::string& path) {
  std::string so_far;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    so_far = so_far.empty() && path[0] == '/'
                 ? absl::StrCat("/", part)
                 : absl::StrCat(so_far, so_far.empty() ? "" : "/", part);
    if (part.empty()) continue;
    if (mkdir(so_far.c_str(), 0700) != 0 && errno != EEXIST) return Errno(errno, "mkdir", so_far);
  }
  return absl::OkStatus();
}

// A name (run id, call id, workspace) that is safe as one path component.
absl::Status CheckName(absl::string_view field, absl::string_view name) {
  if (name.empty() || name.size() > 255 || name == "." || name == ".." ||
      name.find('/') != absl::string_view::npos || name.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be a single non-empty name without '/' (at most 255 bytes)"));
  }
  return absl::OkStatus();
}

// The call number of a router-minted call id "<run_id>-<n>" (-1 when it has none).
int64_t CallNumber(absl::string_view call_id) {
  size_t dash = call_id.rfind('-');
  int64_t n = -1;
  if (dash == absl::string_view::npos || !absl::SimpleAtoi(call_id.substr(dash + 1), &n)) return -1;
  return n;
}

std::string TempName() {
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(getpid(), "-", counter.fetch_add(1), "-", random());
}

// Copies `from` to `to` through a temporary folder under `tmp_dir`, renamed into place.
absl::StatusOr<CopyStats> CopyAtomically(const std::string& from, const std::string& tmp_dir,
                                         const std::string& to) {
  if (absl::Status s = MakeDirs(tmp_dir); !s.ok()) return s;
  const std::string tmp = absl::StrCat(tmp_dir, "/", TempName());
  absl::StatusOr<CopyStats> stats = CopyTree(from, tmp);
  if (!stats.ok()) {
    (void)RemoveTree(tmp);
    return stats.status();
  }
  if (renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) != 0) {
    const int err = errno;
    (void)RemoveTree(tmp);
    return Errno(err, "rename into", to);
  }
  return stats;
}

}  // namespace

absl::StatusOr<CopyStats> WorkspaceHistory::SnapshotBeforeCall(absl::string_view run_id,
                                                               absl::string_view workspace,
                                                               absl::string_view call_id) const {
  if (retention_ <= 0) return CopyStats{};
  if (absl::Status s = CheckName("run_id", run_id); !s.ok()) return s;
  if (absl::Status s = CheckName("call_id", call_id); !s.ok()) return s;
  if (absl::Status s = ValidateWorkspaceName(workspace); !s.ok()) return s;
  const std::string history = absl::StrCat(root_, "/", kWorkspaceHistoryDir);
  const std::string run_dir = absl::StrCat(history, "/runs/", run_id);
  const std::string snapshot = absl::StrCat(run_dir, "/", call_id);
  struct stat st;
  if (stat(snapshot.c_str(), &st) == 0) return CopyStats{};  // a repeated call
  if (absl::Status s = MakeDirs(run_dir); !s.ok()) return s;
  absl::StatusOr<CopyStats> stats =
      CopyAtomically(absl::StrCat(root_, "/", workspace), absl::StrCat(history, "/tmp"), snapshot);
  if (!stats.ok()) {
    if (stats.status().code() == absl::StatusCode::kAlreadyExists) return CopyStats{};
    return stats.status();
  }
  // Retention: keep the newest `retention_` snapshots of the run by call number.
  std::vector<std::pair<int64_t, std::string>> taken;
  if (DIR* dir = opendir(run_dir.c_str())) {
    while (struct dirent* entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..") taken.emplace_back(CallNumber(name), std::move(name));
    }
    closedir(dir);
  }
  std::sort(taken.begin(), taken.end());
  for (size_t i = 0; i + retention_ < taken.size(); ++i) {
    (void)RemoveTree(absl::StrCat(run_dir, "/", taken[i].second));
  }
  return stats;
}

absl::StatusOr<CopyStats> WorkspaceHistory::Copy(absl::string_view workspace,
                                                 absl::string_view run_id,
                                                 absl::string_view before_call,
                                                 absl::string_view target) const {
  if (absl::Status s = ValidateWorkspaceName(workspace); !s.ok()) return s;
  if (absl::Status s = ValidateWorkspaceName(target); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("target", s.message().substr(9)));
  }
  const std::string history = absl::StrCat(root_, "/", kWorkspaceHistoryDir);
  std::string from = absl::StrCat(root_, "/", workspace);
  if (!before_call.empty()) {
    if (absl::Status s = CheckName("run_id", run_id); !s.ok()) return s;
    if (absl::Status s = CheckName("before_call", before_call); !s.ok()) return s;
    from = absl::StrCat(history, "/runs/", run_id, "/", before_call);
  }
  struct stat st;
  if (lstat(from.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    if (before_call.empty()) {
      return WithReason(
          absl::NotFoundError(absl::StrCat("workspace \"", workspace, "\" does not exist")),
          reason::kWorkspaceNotFound);
    }
    return WithReason(
        absl::FailedPreconditionError(absl::StrCat(
            "before_call: the workspace history holds no snapshot before call ", before_call,
            " of run ", run_id,
            retention_ <= 0 ? " (this executor keeps no history: --workspace_history=0)"
                            : absl::StrCat(" (history off when the call ran, or dropped: at most ",
                                           retention_, " snapshots are kept per run)"))),
        reason::kSnapshotMissing);
  }
  const std::string to = absl::StrCat(root_, "/", target);
  if (lstat(to.c_str(), &st) == 0) {
    return absl::AlreadyExistsError(absl::StrCat("target: workspace \"", target, "\" exists"));
  }
  const std::string forks = absl::StrCat(history, "/forks");
  if (absl::Status s = MakeDirs(forks); !s.ok()) return s;
  const std::string marker = absl::StrCat(forks, "/", target);
  UniqueFd mark(open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  if (mark.get() < 0) return Errno(errno, "create", marker);
  absl::StatusOr<CopyStats> stats = CopyAtomically(from, absl::StrCat(history, "/tmp"), to);
  if (!stats.ok()) unlink(marker.c_str());
  return stats;
}

absl::Status WorkspaceHistory::Delete(absl::string_view name) const {
  if (absl::Status s = ValidateWorkspaceName(name); !s.ok()) return s;
  const std::string marker = absl::StrCat(root_, "/", kWorkspaceHistoryDir, "/forks/", name);
  struct stat st;
  const std::string path = absl::StrCat(root_, "/", name);
  if (lstat(marker.c_str(), &st) != 0) {
    if (lstat(path.c_str(), &st) != 0) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("workspace: \"", name, "\" was not made by CopyWorkspace; not deleted"));
  }
  if (absl::Status s = RemoveTree(path); !s.ok()) return s;
  unlink(marker.c_str());
  return absl::OkStatus();
}

}  // namespace rein
