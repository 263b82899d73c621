// Per-command pids cgroups: a process-count limit that binds even when the executor is root,
// and a way to kill every process a command started.
#ifndef REIN_EXECUTOR_SERVICE_PIDS_CGROUP_H_
#define REIN_EXECUTOR_SERVICE_PIDS_CGROUP_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "executor_service/unique_fd.h"

namespace rein {

// One cgroup holding one command's processes. Destruction kills them all and removes it.
// Not thread-safe.
class PidsCgroup {
 public:
  PidsCgroup(std::string path, UniqueFd procs) : path_(std::move(path)), procs_(std::move(procs)) {}
  ~PidsCgroup();
  PidsCgroup(const PidsCgroup&) = delete;
  PidsCgroup& operator=(const PidsCgroup&) = delete;

  const std::string& path() const { return path_; }
  // cgroup.procs opened for writing: a process joins by writing "0" to it.
  int procs_fd() const { return procs_.get(); }

  // SIGKILLs every process in the cgroup, repeatedly, until it is empty (bounded to ~2 s).
  void KillAll();

 private:
  std::string path_;
  UniqueFd procs_;
};

// A directory of a cgroup hierarchy with the pids controller, where the executor makes one
// child cgroup per command. Thread-safe.
class PidsCgroupParent {
 public:
  // Uses `path` as given (cgroup v1 or a delegated v2 directory whose subtree_control has
  // +pids). Creates and removes a probe child to check that it works; FAILED_PRECONDITION
  // saying why otherwise.
  static absl::StatusOr<std::unique_ptr<PidsCgroupParent>> Open(const std::string& path);

  // Finds the executor's own cgroup in a writable cgroup v1 pids hierarchy mounted at
  // /sys/fs/cgroup/pids and makes "rein-executor-<pid>" beneath it (removed on destruction).
  static absl::StatusOr<std::unique_ptr<PidsCgroupParent>> Detect();

  ~PidsCgroupParent();

  const std::string& path() const { return path_; }

  // A new child cgroup limited to `max_pids` processes.
  absl::StatusOr<std::unique_ptr<PidsCgroup>> Create(uint64_t max_pids);

 private:
  PidsCgroupParent(std::string path, bool owned) : path_(std::move(path)), owned_(owned) {}

  std::string path_;
  bool owned_;
  std::atomic<uint64_t> next_{0};
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_PIDS_CGROUP_H_
