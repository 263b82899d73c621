// Per-command pids cgroups: a process-count limit that binds even when the executor is root,
// and a way to kill every process a command started.
#ifndef REIN_EXECUTOR_SERVICE_PIDS_CGROUP_H_
#define REIN_EXECUTOR_SERVICE_PIDS_CGROUP_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "executor_service/process/child_process.h"
#include "executor_service/process/unique_fd.h"

namespace rein {

// The inode of this process's pid namespace (0 when unknown): pids in names of things an
// executor leaves behind are compared only within one.
uint64_t PidNamespace();

// One cgroup holding one command's processes, and possibly a spawner already inside it.
// Destruction kills them all and removes it. Not thread-safe.
class PidsCgroup {
 public:
  PidsCgroup(std::string path, UniqueFd procs) : path_(std::move(path)), procs_(std::move(procs)) {}
  ~PidsCgroup();
  PidsCgroup(const PidsCgroup&) = delete;
  PidsCgroup& operator=(const PidsCgroup&) = delete;

  const std::string& path() const { return path_; }
  // cgroup.procs opened for writing: a process joins by writing "0" to it.
  int procs_fd() const { return procs_.get(); }
  // A process forked ahead of time that has joined this cgroup and waits for the command
  // (ChildSpec::spawner), or null.
  Spawner* spawner() const { return spawner_.get(); }
  void set_spawner(std::unique_ptr<Spawner> spawner) { spawner_ = std::move(spawner); }

  // SIGKILLs every process in the cgroup, repeatedly, until its cgroup.procs is empty
  // (bounded to ~2 s): on return no process of it runs any more. Removing the empty cgroup
  // (the destructor) may still have to wait a moment for the kernel to release them.
  void KillAll();

 private:
  std::string path_;
  UniqueFd procs_;
  std::unique_ptr<Spawner> spawner_;
};

// A directory of a cgroup hierarchy with the pids controller, where the executor makes one
// child cgroup per command. Creating and removing cgroups is kept off a command's critical
// path: a background thread keeps a few fresh (never used) cgroups ready for Take, and removes
// the cgroups handed to Retire. A cgroup is never given to a second command. Thread-safe.
class PidsCgroupParent {
 public:
  // Uses `path` as given (cgroup v1 or a delegated v2 directory whose subtree_control has
  // +pids). Creates and removes a probe child to check that it works; FAILED_PRECONDITION
  // saying why otherwise.
  static absl::StatusOr<std::unique_ptr<PidsCgroupParent>> Open(const std::string& path);

  // Finds the executor's own cgroup in a writable cgroup v1 pids hierarchy mounted at
  // /sys/fs/cgroup/pids and makes "rein-executor-<pid namespace>-<pid>" beneath it (removed on
  // destruction). First removes what executors of this pid namespace that are gone (killed
  // before they could) left there: RemoveStaleCgroups.
  static absl::StatusOr<std::unique_ptr<PidsCgroupParent>> Detect();

  // In `dir`, removes the directories "rein-executor-<pid_namespace>-<pid>" whose process is
  // gone, with their "cmd-*" children, but only cgroups that hold no process (the kernel
  // refuses to remove any other); never one of a live process or of another pid namespace.
  // Returns how many executor directories were removed.
  static int RemoveStaleCgroups(const std::string& dir, uint64_t pid_namespace);

  // Removes the cgroups still pooled or retiring (waiting for the last of them), then the
  // parent when Detect made it.
  ~PidsCgroupParent();

  const std::string& path() const { return path_; }

  // A new child cgroup limited to `max_pids` processes, made now.
  absl::StatusOr<std::unique_ptr<PidsCgroup>> Create(uint64_t max_pids);

  // A fresh child cgroup limited to `max_pids`: a pooled one when there is one, else made now.
  // The first call starts the background thread that keeps `pool_size` of them ready. With
  // `spawners`, each pooled cgroup also holds a Spawner (started by that thread: rein-spawner at
  // `spawner_binary`, or a fork of the executor when it is empty) that has already joined it;
  // one made now has none.
  absl::StatusOr<std::unique_ptr<PidsCgroup>> Take(uint64_t max_pids, int pool_size = 4,
                                                   bool spawners = false,
                                                   const std::string& spawner_binary = "");

  // Hands a used cgroup over for removal in the background: the caller must already have
  // killed its processes (PidsCgroup::KillAll); the background thread kills again whatever
  // is left and removes the directory. The pool is refilled and retired cgroups removed while
  // no taken cgroup is in flight (or when the pool is empty, or 32 wait for removal).
  void Retire(std::unique_ptr<PidsCgroup> cgroup);

  // Cgroups retired and not yet removed (for tests).
  size_t retiring() const;

 private:
  PidsCgroupParent(std::string path, bool owned);
  void Background();

  std::string path_;
  bool owned_;
  uint64_t instance_;  // in the names of its children: parents may share a directory
  std::atomic<uint64_t> next_{0};

  mutable absl::Mutex mu_;
  std::deque<std::unique_ptr<PidsCgroup>> pool_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<PidsCgroup>> retired_ ABSL_GUARDED_BY(mu_);
  size_t removing_ ABSL_GUARDED_BY(mu_) = 0;  // taken from retired_, being removed
  uint64_t pool_max_pids_ ABSL_GUARDED_BY(mu_) = 0;
  bool pool_spawners_ ABSL_GUARDED_BY(mu_) = false;
  std::string pool_spawner_binary_ ABSL_GUARDED_BY(mu_);
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // taken and not yet retired
  size_t pool_size_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // started by the first Take
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_PIDS_CGROUP_H_
