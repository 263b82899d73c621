// The resident sandboxes of an executor (opt-in, --sandbox_resident): at most one per run,
// idle ones removed after a while, dead ones torn down off the commands' path.
#ifndef REIN_EXECUTOR_SERVICE_SANDBOX_RESIDENT_RESIDENT_POOL_H_
#define REIN_EXECUTOR_SERVICE_SANDBOX_RESIDENT_RESIDENT_POOL_H_

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "executor_service/sandbox/resident/resident_sandbox.h"

namespace rein {

// Idle residents by run id, the runs whose resident is running a command, and a janitor thread
// that removes idle ones past `idle` and tears down dead ones (their kill, reaping and cgroup
// removal take milliseconds a command must not wait for). Thread-safe.
class ResidentPool {
 public:
  // At most `max` residents alive at once (idle or busy). `clock` is not owned.
  ResidentPool(absl::Duration idle, int max, Clock* clock);
  // Tears down every resident.
  ~ResidentPool();
  ResidentPool(const ResidentPool&) = delete;
  ResidentPool& operator=(const ResidentPool&) = delete;

  // For a command of `run` whose sandbox would have `plan`: the run's idle resident when it has
  // that plan (another plan: it is discarded). Null with *cold when the command must not use
  // one (the run's resident is busy with another command, or all are busy); null otherwise
  // means "start one" (a place is reserved: Put gives it back).
  std::unique_ptr<ResidentSandbox> Take(const std::string& run, const std::string& plan,
                                        bool* cold);

  // Gives `run`'s place back, with its resident (null: none was started). A run forgotten
  // while its command ran keeps no resident.
  void Put(const std::string& run, std::unique_ptr<ResidentSandbox> resident);

  // The run's idle resident goes now; a busy one when its command ends (Put).
  void Forget(const std::string& run);

  // Residents alive now, idle or running a command.
  size_t alive() const;

 private:
  struct Idle {
    std::unique_ptr<ResidentSandbox> sandbox;
    absl::Time since;
  };

  void Janitor();
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !dead_.empty(); }

  const absl::Duration idle_limit_;
  const size_t max_;
  Clock* const clock_;
  mutable absl::Mutex mu_;
  std::map<std::string, Idle> idle_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> busy_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> forgotten_ ABSL_GUARDED_BY(mu_);  // busy runs Forget named
  std::vector<std::unique_ptr<ResidentSandbox>> dead_ ABSL_GUARDED_BY(mu_);
  size_t alive_ ABSL_GUARDED_BY(mu_) = 0;  // idle + busy
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_SANDBOX_RESIDENT_RESIDENT_POOL_H_
