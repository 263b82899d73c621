// RunRegistry: the runs a RunEngine drives, each with what the engine keeps beside its state.
#ifndef REIN_ROUTER_SERVICE_RUN_REGISTRY_H_
#define REIN_ROUTER_SERVICE_RUN_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "rein/v1/router.pb.h"
#include "router_service/clients.h"

namespace rein {

// One run held in memory by the engine: its last committed state and the driver's bookkeeping.
// Every field but `share` is guarded by `mu`.
struct RunEntry {
  absl::Mutex mu;
  rein::v1::Run run ABSL_GUARDED_BY(mu);
  bool in_flight ABSL_GUARDED_BY(mu) = false;
  std::shared_ptr<PendingCall> call ABSL_GUARDED_BY(mu);
  int failed_attempts ABSL_GUARDED_BY(mu) = 0;  // consecutive, for backoff only
  absl::Time not_before ABSL_GUARDED_BY(mu) = absl::InfinitePast();
  // Set when this router stopped driving the run (lease lost): nothing more is done for it.
  bool dropped ABSL_GUARDED_BY(mu) = false;
  // A commit is being written, with mu released (CommitLocked): run is the state before it.
  bool committing ABSL_GUARDED_BY(mu) = false;
  // The run's namespace, its share of the workers (WorkPool); set once, by Track.
  std::string share;
};

// The unfinished runs in memory, by run id; keeps the rein_router_active_runs gauge. Takes no
// entry's mutex. Thread-safe.
class RunRegistry {
 public:
  // The run's entry, or nullptr.
  std::shared_ptr<RunEntry> Find(const std::string& run_id);
  // A new entry holding `run` (an entry already there for its id stays).
  std::shared_ptr<RunEntry> Track(const rein::v1::Run& run);
  // Removes the run's entry.
  void Forget(const std::string& run_id);
  // Removes the run's entry if it is `entry` (not a newer one tracked since).
  void Remove(const std::string& run_id, const std::shared_ptr<RunEntry>& entry);
  // Every entry now, by run id.
  std::vector<std::pair<std::string, std::shared_ptr<RunEntry>>> All();
  int size();

 private:
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<RunEntry>> runs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_RUN_REGISTRY_H_
