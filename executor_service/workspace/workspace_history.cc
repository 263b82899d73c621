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
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/limits.h"
#include "common/status_macros.h"
#include "common/status_reason.h"
#include "executor_service/process/errno_status.h"
#include "executor_service/process/unique_fd.h"
#include "executor_service/workspace/tree_walk.h"
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

// Copies `from` to `to` through a temporary folder under `tmp_dir`, renamed into place;
// nothing is left behind on failure.
absl::StatusOr<CopyStats> CopyAtomically(const std::string& from, const std::string& tmp_dir,
                                         const std::string& to, const CopyLimits& limits) {
  if (absl::Status s = MakeDirs(tmp_dir); !s.ok()) return s;
  const std::string tmp = absl::StrCat(tmp_dir, "/", TempName());
  absl::StatusOr<CopyStats> stats = CopyTree(from, tmp, limits);
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

// Reads a small text file ("" when it cannot be read).
std::string ReadSmallFile(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return "";
  char buf[1024];
  ssize_t n = read(fd.get(), buf, sizeof(buf));
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// Writes a small text file in place of whatever `path` was (best effort: a record only).
void WriteSmallFile(const std::string& path, absl::string_view text) {
  if (!MakeDirs(path.substr(0, path.rfind('/'))).ok()) return;
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.valid()) (void)!write(fd.get(), text.data(), text.size());
}

// The names in directory `path` (none when it cannot be read).
std::vector<std::string> NamesIn(const std::string& path) {
  UniqueFd dir(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) return {};
  absl::StatusOr<std::vector<std::string>> names = ListNames(dir.get());
  return names.ok() ? *std::move(names) : std::vector<std::string>{};
}

}  // namespace

CopyLimits WorkspaceHistory::Limits(absl::string_view per, absl::Time deadline) const {
  CopyLimits limits;
  limits.max_depth = options_.max_depth;
  limits.max_allocated_bytes = options_.max_bytes;
  limits.max_entries = options_.max_files;
  limits.deadline = deadline;
  limits.leave_out = options_.placeholders;
  limits.clock = options_.clock;
  limits.bytes_bound =
      absl::StrCat(kMaxBytesBound, " (", options_.max_bytes, " bytes per ", per, ")");
  limits.entries_bound =
      absl::StrCat(kMaxFilesBound, " (", options_.max_files, " files per ", per, ")");
  limits.depth_bound = absl::StrCat("workspace depth (", options_.max_depth, " levels)");
  return limits;
}

std::string WorkspaceHistory::HistoryDir() const {
  return absl::StrCat(root_, "/", kWorkspaceHistoryDir);
}

std::vector<WorkspaceHistory::Taken> WorkspaceHistory::ListTaken(absl::string_view run_id) const {
  const std::string history = HistoryDir();
  std::vector<Taken> taken;
  for (std::string& name : NamesIn(absl::StrCat(history, "/runs/", run_id))) {
    Taken one{CallNumber(name), std::move(name), CopyStats{}};
    const std::string size_path = absl::StrCat(history, "/sizes/", run_id, "/", one.call_id);
    std::vector<std::string> fields = absl::StrSplit(ReadSmallFile(size_path), ' ');
    if (fields.size() != 2 || !absl::SimpleAtoi(fields[0], &one.size.entries) ||
        !absl::SimpleAtoi(fields[1], &one.size.allocated_bytes)) {
      // Taken before sizes were recorded: measured once.
      absl::StatusOr<CopyStats> measured =
          MeasureTree(absl::StrCat(history, "/runs/", run_id, "/", one.call_id));
      if (measured.ok()) one.size = *measured;
      WriteSmallFile(size_path, absl::StrCat(one.size.entries, " ", one.size.allocated_bytes));
    }
    taken.push_back(std::move(one));
  }
  std::sort(taken.begin(), taken.end(), [](const Taken& a, const Taken& b) {
    return std::tie(a.number, a.call_id) < std::tie(b.number, b.call_id);
  });
  return taken;
}

absl::StatusOr<CopyStats> WorkspaceHistory::SnapshotBeforeCall(absl::string_view run_id,
                                                               absl::string_view workspace,
                                                               absl::string_view call_id,
                                                               absl::Time deadline) const {
  if (options_.retention <= 0) return CopyStats{};
  if (absl::Status s = CheckName("run_id", run_id); !s.ok()) return s;
  if (absl::Status s = CheckName("call_id", call_id); !s.ok()) return s;
  if (absl::Status s = ValidateWorkspaceName(workspace); !s.ok()) return s;
  MaybePrune();
  absl::StatusOr<CopyStats> stats = TakeSnapshot(run_id, workspace, call_id, deadline);
  if (!stats.ok()) {
    WriteSmallFile(absl::StrCat(HistoryDir(), "/skipped/", run_id, "/", call_id),
                   stats.status().message());
  }
  return stats;
}

absl::StatusOr<CopyStats> WorkspaceHistory::TakeSnapshot(absl::string_view run_id,
                                                         absl::string_view workspace,
                                                         absl::string_view call_id,
                                                         absl::Time deadline) const {
  const std::string history = HistoryDir();
  const std::string run_dir = absl::StrCat(history, "/runs/", run_id);
  const std::string snapshot = absl::StrCat(run_dir, "/", call_id);
  struct stat st;
  if (stat(snapshot.c_str(), &st) == 0) return CopyStats{};  // a repeated call
  const std::string from = absl::StrCat(root_, "/", workspace);
  CopyLimits limits = Limits("run", deadline);
  // What the snapshot will take, measured first (stat only), so that the run's oldest
  // snapshots make room for it; a workspace that passes a bound alone is not copied at all.
  absl::StatusOr<CopyStats> need = MeasureTree(from, limits);
  if (!need.ok()) return need.status();
  std::vector<Taken> taken = ListTaken(run_id);
  CopyStats kept;
  for (const Taken& one : taken) {
    kept.entries += one.size.entries;
    kept.allocated_bytes += one.size.allocated_bytes;
  }
  // Retention, then room: drop the oldest while the run would hold too many or too much.
  size_t dropped = 0;
  while (dropped < taken.size() &&
         (taken.size() - dropped + 1 > static_cast<size_t>(options_.retention) ||
          kept.entries + need->entries > options_.max_files ||
          kept.allocated_bytes + need->allocated_bytes > options_.max_bytes)) {
    const Taken& oldest = taken[dropped++];
    (void)RemoveTree(absl::StrCat(run_dir, "/", oldest.call_id));
    unlink(absl::StrCat(history, "/sizes/", run_id, "/", oldest.call_id).c_str());
    kept.entries -= oldest.size.entries;
    kept.allocated_bytes -= oldest.size.allocated_bytes;
  }
  limits.max_entries -= kept.entries;
  limits.max_allocated_bytes -= kept.allocated_bytes;
  if (absl::Status s = MakeDirs(run_dir); !s.ok()) return s;
  absl::StatusOr<CopyStats> stats =
      CopyAtomically(from, absl::StrCat(history, "/tmp"), snapshot, limits);
  if (!stats.ok()) {
    if (stats.status().code() == absl::StatusCode::kAlreadyExists) return CopyStats{};
    return stats.status();
  }
  WriteSmallFile(absl::StrCat(history, "/sizes/", run_id, "/", call_id),
                 absl::StrCat(stats->entries, " ", stats->allocated_bytes));
  return stats;
}

absl::StatusOr<CopyStats> WorkspaceHistory::Copy(absl::string_view workspace,
                                                 absl::string_view run_id,
                                                 absl::string_view before_call,
                                                 absl::string_view target,
                                                 absl::Time deadline) const {
  if (absl::Status s = ValidateWorkspaceName(workspace); !s.ok()) return s;
  RETURN_IF_ERROR(CheckWorkspaceName(target, "target"));
  const std::string history = HistoryDir();
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
    const std::string skipped =
        ReadSmallFile(absl::StrCat(history, "/skipped/", run_id, "/", before_call));
    std::string why = !skipped.empty() ? absl::StrCat(" (no snapshot was taken: ", skipped, ")")
                      : options_.retention <= 0
                          ? " (this executor keeps no history: --workspace_history=0)"
                          : absl::StrCat(" (history off when the call ran, or dropped: at most ",
                                         options_.retention, " snapshots and ", kMaxBytesBound, "=",
                                         options_.max_bytes, " bytes are kept per run)");
    return WithReason(absl::FailedPreconditionError(absl::StrCat(
                          "before_call: the workspace history holds no snapshot before call ",
                          before_call, " of run ", run_id, why)),
                      reason::kSnapshotMissing);
  }
  const std::string to = absl::StrCat(root_, "/", target);
  if (lstat(to.c_str(), &st) == 0) {
    return absl::AlreadyExistsError(absl::StrCat("target: workspace \"", target, "\" exists"));
  }
  const std::string forks = absl::StrCat(history, "/forks");
  if (absl::Status s = MakeDirs(forks); !s.ok()) return s;
  const std::string marker = absl::StrCat(forks, "/", target);
  // A namespace's target (`<namespace>/<name>`) is marked in a folder of its namespace.
  if (absl::Status s = MakeDirs(marker.substr(0, marker.rfind('/'))); !s.ok()) return s;
  UniqueFd mark(open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  if (mark.get() < 0) return Errno(errno, "create", marker);
  CopyLimits limits = Limits("copy", deadline);
  absl::StatusOr<CopyStats> stats = CopyAtomically(from, absl::StrCat(history, "/tmp"), to, limits);
  if (!stats.ok()) unlink(marker.c_str());
  return stats;
}

void WorkspaceHistory::MarkEnded(absl::string_view run_id) const {
  if (!CheckName("run_id", run_id).ok()) return;
  const std::string run_dir = absl::StrCat(HistoryDir(), "/runs/", run_id);
  utimensat(AT_FDCWD, run_dir.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);  // absent: nothing kept
  MaybePrune();
}

int WorkspaceHistory::PruneEnded(absl::Time now) const {
  const std::string history = HistoryDir();
  const absl::Time cutoff = now - options_.ended_retention;
  int removed = 0;
  for (const std::string& run_id : NamesIn(absl::StrCat(history, "/runs"))) {
    const std::string run_dir = absl::StrCat(history, "/runs/", run_id);
    struct stat st;
    if (lstat(run_dir.c_str(), &st) != 0 || absl::TimeFromTimespec(st.st_mtim) >= cutoff) {
      continue;
    }
    for (const char* tree : {"/skipped/", "/sizes/", "/runs/"}) {
      (void)RemoveTree(absl::StrCat(history, tree, run_id));
    }
    ++removed;
  }
  return removed;
}

void WorkspaceHistory::MaybePrune() const {
  const absl::Time now = options_.clock->Now();
  int64_t last = last_prune_unix_.load();
  if (now - absl::FromUnixSeconds(last) < options_.prune_interval) return;
  if (!last_prune_unix_.compare_exchange_strong(last, absl::ToUnixSeconds(now))) return;
  PruneEnded(now);
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
