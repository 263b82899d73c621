// RunWriter: the one path by which the router writes a run: its creation and every commit.
#ifndef REIN_ROUTER_SERVICE_RUN_WRITER_H_
#define REIN_ROUTER_SERVICE_RUN_WRITER_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "rein/v1/router.pb.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/group_commit.h"
#include "router_service/store/run_store.h"

namespace rein {

// Every write of a run goes through here (docs/ARCHITECTURE.md, "Where is state written"):
// StartRun's and ForkRun's creation (Create), the transitions of the runs this router drives
// (RunEngine::CommitLocked) and the reviews and cancels it commits on runs another router
// drives (FleetMember), all counted and timed alike, the commits grouped (GroupCommitter).
// Thread-safe.
class RunWriter {
 public:
  RunWriter(RunStore* store, GroupCommitOptions options, Clock* clock);

  // RunStore::CreateRun.
  absl::StatusOr<CreateResult> Create(const rein::v1::Run& run,
                                      std::vector<rein::v1::RunEvent> events);

  // Commits `new_state` and `events` on `run` (expected at run.state().version()), grouped with
  // the commits ready at the same time. `owned`: this router drives the run, and the commit is
  // fenced at run.lease_epoch() (CommitOwned); else the version check alone (Commit). Waits for
  // the store to take it until `deadline` at most (GroupCommitter::Commit). Returns the events
  // as stored.
  absl::StatusOr<std::vector<rein::v1::RunEvent>> Commit(
      const rein::v1::Run& run, bool owned, const rein::v1::RunState& new_state,
      std::vector<rein::v1::RunEvent> events, std::optional<Snapshot> snapshot, absl::Time now,
      absl::Time deadline = absl::InfiniteFuture());

  // Writes sent to the store so far, creations and commits (tests: a write that bypassed this
  // path shows as a store that saw more).
  int64_t writes() const { return writes_.load(); }

 private:
  RunStore* const store_;
  GroupCommitter committer_;
  std::atomic<int64_t> writes_{0};
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_RUN_WRITER_H_
