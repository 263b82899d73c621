// The entries the sandbox puts into a workspace for its own use (the placeholders of missing
// protected paths), known by identity, so that copies of the workspace leave them out.
#ifndef REIN_EXECUTOR_SERVICE_WORKSPACE_SANDBOX_PLACEHOLDERS_H_
#define REIN_EXECUTOR_SERVICE_WORKSPACE_SANDBOX_PLACEHOLDERS_H_

#include <sys/types.h>

#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "executor_service/process/unique_fd.h"

namespace rein {

// Identity of one placeholder: device and inode, never a name (a command or a host process
// can make a real entry of the same name once the placeholder is gone).
struct PlaceholderId {
  dev_t dev = 0;
  ino_t ino = 0;
};

// The placeholders present in the workspaces of one executor. The sandbox makes and removes
// them through Make and Unmake; copies (workspace snapshots, fork copies) ask Excludes of
// every entry they opened. Make and Excludes take one lock, so a copy that sees a placeholder
// on disk always finds it here. Thread-safe.
class SandboxPlaceholders {
 public:
  SandboxPlaceholders() = default;
  SandboxPlaceholders(const SandboxPlaceholders&) = delete;
  SandboxPlaceholders& operator=(const SandboxPlaceholders&) = delete;

  // Makes a placeholder with `make`, which creates it and returns a descriptor of what it
  // created, and records its identity, under the lock. `make`'s error is returned as is.
  absl::StatusOr<PlaceholderId> Make(absl::FunctionRef<absl::StatusOr<UniqueFd>()> make)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Removes the placeholder `id` with `remove`, then forgets it, under the lock.
  void Unmake(PlaceholderId id, absl::FunctionRef<void()> remove) ABSL_LOCKS_EXCLUDED(mu_);

  // True when the open descriptor `fd` is a placeholder, or an entry that no longer has a
  // name (a placeholder removed since the copy opened it has none): a copy leaves it out.
  bool Excludes(int fd) const ABSL_LOCKS_EXCLUDED(mu_);

  // Placeholders present now (for tests).
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::set<std::pair<dev_t, ino_t>> present_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_WORKSPACE_SANDBOX_PLACEHOLDERS_H_
