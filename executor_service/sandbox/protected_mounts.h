// The mounts that keep a workspace's protected paths read-only inside the sandbox, and the
// placeholders they need, counted across the commands that run at once.
#ifndef REIN_EXECUTOR_SERVICE_PROTECTED_MOUNTS_H_
#define REIN_EXECUTOR_SERVICE_PROTECTED_MOUNTS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "executor_service/process/unique_fd.h"
#include "executor_service/sandbox/protected_paths.h"
#include "executor_service/workspace/sandbox_placeholders.h"
#include "executor_service/workspace/workspace.h"

namespace rein {

// What the sandbox does about one protected path, decided per command.
struct ProtectedMount {
  enum Kind {
    kPin,              // an existing directory above a protected path, bound onto itself
    kReadOnly,         // an existing protected path (or a file in place of a directory above
                       // one), bound read-only
    kPlaceholder,      // the first missing component: an empty read-only directory
    kFilePlaceholder,  // a missing protected path kept as a read-only file (kFilePlaceholders)
  } kind;
  std::string path;  // workspace-relative
  UniqueFd fd;       // an O_PATH descriptor for all but kPlaceholder
};

class ProtectedMounts;

// The protected mounts of one command in one workspace: the descriptors bwrap binds and a
// count on every placeholder among them. Releasing it, explicitly or on destruction, removes
// from the workspace the placeholders no other command still uses. Move-only; one thread at a
// time.
class ProtectedMountLease {
 public:
  // No mounts (for a command that touches no workspace, like the sandbox's probe).
  ProtectedMountLease() = default;
  ProtectedMountLease(ProtectedMountLease&& other) noexcept;
  ProtectedMountLease& operator=(ProtectedMountLease&&) = delete;
  ~ProtectedMountLease() { Release(); }

  // Outer paths first: a parent sorts before its children.
  const std::vector<ProtectedMount>& mounts() const { return mounts_; }

  // Gives the placeholders back; later calls do nothing.
  void Release();

 private:
  friend class ProtectedMounts;
  ProtectedMountLease(ProtectedMounts* owner, const Workspace* workspace,
                      std::vector<ProtectedMount> mounts)
      : owner_(owner), workspace_(workspace), mounts_(std::move(mounts)) {}

  ProtectedMounts* owner_ = nullptr;
  const Workspace* workspace_ = nullptr;
  std::vector<ProtectedMount> mounts_;
};

// Hands out the protected mounts of commands: each existing protected path is bound
// read-only; each existing directory above one is bound onto itself, which makes it a mount
// point that cannot be renamed or removed (so the protected path cannot be moved away and
// recreated); a missing one gets an empty read-only directory at its first missing component,
// so it cannot be created either (or, for a path of kFilePlaceholders, a read-only file with
// the placeholder's content). Both kinds of placeholder are created here, before bwrap runs,
// and recorded by identity in a SandboxPlaceholders that workspace copies consult, so that no
// snapshot or fork copy keeps one. Placeholders appear on the host while a command runs; the
// last lease using one removes it, so that concurrent commands in one workspace do not pull it
// away from each other. Thread-safe.
class ProtectedMounts {
 public:
  // `placeholders` (not owned; null = a set of its own) records the placeholders made.
  explicit ProtectedMounts(ProtectedPaths paths, SandboxPlaceholders* placeholders = nullptr)
      : paths_(std::move(paths)),
        made_(placeholders != nullptr ? placeholders : &own_placeholders_) {}
  ProtectedMounts(const ProtectedMounts&) = delete;
  ProtectedMounts& operator=(const ProtectedMounts&) = delete;

  // The mounts for one command in `workspace`, which must outlive the lease.
  // FAILED_PRECONDITION when a protected path or a directory above it is a symbolic link or a
  // file placeholder cannot be created; INTERNAL for the machine's failures.
  absl::StatusOr<ProtectedMountLease> Acquire(const Workspace& workspace);

 private:
  friend class ProtectedMountLease;
  // Drops one count from each placeholder of `mounts`, and removes those left unused.
  void Release(const Workspace& workspace, const std::vector<ProtectedMount>& mounts)
      ABSL_LOCKS_EXCLUDED(mu_);
  void ReleaseLocked(const Workspace& workspace, const std::vector<ProtectedMount>& mounts)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // A placeholder in use: how many leases hold it, and what it is on disk.
  struct InUse {
    int leases = 0;
    PlaceholderId id;
  };

  const ProtectedPaths paths_;
  SandboxPlaceholders own_placeholders_;
  SandboxPlaceholders* const made_;
  absl::Mutex mu_;
  // Placeholders in use, by "<workspace dev>:<ino>/<path>".
  std::map<std::string, InUse> placeholders_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_PROTECTED_MOUNTS_H_
