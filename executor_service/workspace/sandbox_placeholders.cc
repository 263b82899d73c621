// The sandbox's placeholders in workspaces, by identity.
#include "executor_service/workspace/sandbox_placeholders.h"

#include <errno.h>
#include <sys/stat.h>

#include "executor_service/process/errno_status.h"

namespace rein {

absl::StatusOr<PlaceholderId> SandboxPlaceholders::Make(
    absl::FunctionRef<absl::StatusOr<UniqueFd>()> make) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<UniqueFd> made = make();
  if (!made.ok()) return made.status();
  struct stat st;
  if (fstat(made->get(), &st) != 0) return ErrnoStatus(errno, "stat the placeholder");
  present_.insert({st.st_dev, st.st_ino});
  return PlaceholderId{st.st_dev, st.st_ino};
}

void SandboxPlaceholders::Unmake(PlaceholderId id, absl::FunctionRef<void()> remove) {
  absl::MutexLock lock(&mu_);
  remove();
  present_.erase({id.dev, id.ino});
}

bool SandboxPlaceholders::Excludes(int fd) const {
  // Under the lock: a placeholder removed before it is taken has no name left by then.
  absl::MutexLock lock(&mu_);
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  if (st.st_nlink == 0) return true;
  return present_.count({st.st_dev, st.st_ino}) > 0;
}

size_t SandboxPlaceholders::size() const {
  absl::MutexLock lock(&mu_);
  return present_.size();
}

}  // namespace rein
