// GroupCommitter: commits the transitions of many runs that are ready together in one batch.
#ifndef REIN_ROUTER_SERVICE_STORE_GROUP_COMMIT_H_
#define REIN_ROUTER_SERVICE_STORE_GROUP_COMMIT_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "rein/v1/router.pb.h"
#include "router_service/store/run_store.h"

namespace rein {

struct GroupCommitOptions {
  // At most this many commits in one batch (RunStore::CommitBatch); 1 = no grouping.
  int max_batch = 64;
  // How long the thread that commits a batch waits for more commits to join it before it
  // starts (0 = never: a batch is whatever queued while the previous one was being written,
  // so a lone commit is not delayed at all).
  absl::Duration max_delay = absl::ZeroDuration();
};

// Group commit in front of a RunStore. Commit blocks its caller until the caller's own request
// is durable (or has failed) and returns exactly what the store returned for it: nothing is
// acknowledged before it is committed. Callers that arrive while a batch is being written
// queue up; when it is done, one of them (the leader) takes every queued request, oldest first
// (up to max_batch), and writes them with one CommitBatch, then hands each waiter its result.
// A caller waits for its turn until its deadline at most (on the injected Clock): a request
// still queued then is withdrawn, DEADLINE_EXCEEDED with nothing written. A request already in
// the batch being written is waited for, as is the store when the caller leads the batch: only
// the store bounds them (SQLite's busy timeout; UNAVAILABLE when busy). No thread of its own.
// Thread-safe.
class GroupCommitter {
 public:
  GroupCommitter(RunStore* store, GroupCommitOptions options, Clock* clock = RealClock());
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // RunStore::Commit (lease_epoch unset) or CommitOwned (set), grouped with concurrent calls;
  // DEADLINE_EXCEEDED, nothing written, when the request is still queued at `deadline`. The
  // store gets what is left until `deadline` when the batch is written (CommitRequest.timeout).
  absl::StatusOr<std::vector<rein::v1::RunEvent>> Commit(
      CommitRequest request, absl::Time deadline = absl::InfiniteFuture());

  // Batches written so far, and the requests in them (their ratio is the mean batch size).
  int64_t batches();
  int64_t commits();
  // Requests queued for the next batch (not yet taken by a leader).
  int64_t waiting();

 private:
  struct Waiter {
    CommitRequest* request;
    absl::Time deadline;
    std::optional<absl::StatusOr<std::vector<rein::v1::RunEvent>>> result;
  };

  RunStore* const store_;
  const GroupCommitOptions options_;
  Clock* const clock_;
  absl::Mutex mu_;
  std::deque<Waiter*> queue_ ABSL_GUARDED_BY(mu_);  // FIFO: oldest first
  bool writing_ ABSL_GUARDED_BY(mu_) = false;       // a leader is writing a batch
  int64_t batches_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t commits_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_GROUP_COMMIT_H_
