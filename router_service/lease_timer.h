// LeaseTimer: when a router may act on its runs, judged from its last successful renewal.
#ifndef REIN_ROUTER_SERVICE_LEASE_TIMER_H_
#define REIN_ROUTER_SERVICE_LEASE_TIMER_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace rein {

// The router's side of its lease. The store judges the lease by its own clock: valid while the
// last renewal's heartbeat + ttl is ahead. The router cannot read that clock, so it measures on
// its own monotonic clock from the moment it SENT the renewal that succeeded (the heartbeat
// was taken later, so the router's view ends no later than the store's), and keeps a margin:
//  - renew every ttl/3 (twice more before the lease could lapse);
//  - mutating calls only while less than ttl/2 has passed since that moment (a mutating call
//    dispatched then starts well before any other router could take the run over);
//  - nothing at all (no call, no commit attempt) once ttl has passed: the lease has lapsed,
//    the router drops its runs and rejoins (claiming back what is still its own) once a
//    renewal succeeds again.
// Times are any monotonic clock's readings as absl::Time. Thread-safe.
class LeaseTimer {
 public:
  explicit LeaseTimer(absl::Duration ttl) : ttl_(ttl) {}

  absl::Duration ttl() const { return ttl_; }
  absl::Duration renew_interval() const { return ttl_ / 3; }
  // How soon to try again after a failed renewal.
  absl::Duration retry_interval() const { return std::min(ttl_ / 10, absl::Seconds(1)); }

  // A renewal sent at `sent` succeeded (an older success than the last one is ignored).
  void Renewed(absl::Time sent);
  // Whether a renewal has ever succeeded.
  bool joined() const;

  // Whether a mutating call may be dispatched at `now`: less than ttl/2 since the last
  // successful renewal was sent.
  bool MayMutate(absl::Time now) const;
  // Whether the lease still holds at `now` by the router's reckoning: less than ttl since.
  bool Live(absl::Time now) const;

 private:
  const absl::Duration ttl_;
  mutable absl::Mutex mu_;
  absl::Time renewed_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_LEASE_TIMER_H_
