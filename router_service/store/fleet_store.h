// FleetStore: the run leases of the routers that share one store (join, renew, leave, claim).
#ifndef REIN_ROUTER_SERVICE_STORE_FLEET_STORE_H_
#define REIN_ROUTER_SERVICE_STORE_FLEET_STORE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rein/v1/router.pb.h"

namespace rein {

// The leases of several routers on one store, kept by the store and tested once for both
// implementations by fleet_store_conformance.cc. A router joins under its id with a lease ttl
// and renews it; each unfinished run has an owner and a lease epoch (RunStore's "Owners"). A
// router's lease is valid while its last renewal + ttl is ahead of the store's own clock (never
// a router's). RunStore::CommitOwned is the commit fenced by the lease epoch.
//
// A store with one user (SQLite, Shared() false) keeps this trivially: its router's lease never
// lapses, ClaimRuns(include_mine) returns every unfinished run and nothing else is ever claimed.
//
// Thread-safe.
class FleetStore {
 public:
  virtual ~FleetStore() = default;

  // Whether other routers may use this store at the same time (and so take runs over): when
  // false, this router's lease never lapses and nobody else commits to its runs.
  virtual bool Shared() const { return false; }

  // Registers the router `router_id` (1..128 bytes of [A-Za-z0-9._:-]) with lease `ttl` (> 0)
  // and renews its lease now; later calls act as this router. A router with this id whose lease
  // is still valid is FAILED_PRECONDITION naming the id (two routers with one id are refused).
  virtual absl::Status JoinFleet(const std::string& router_id, absl::Duration ttl) = 0;

  // Renews this router's lease: one statement for all its runs. UNAVAILABLE when the store is
  // out of reach; FAILED_PRECONDITION when another process has joined under this id since (this
  // router's lease had expired).
  virtual absl::Status RenewLease() = 0;

  // Ends this router's lease at once, so that the others may take its runs without waiting for
  // it to expire (a clean shutdown).
  virtual absl::Status LeaveFleet() = 0;

  // Takes over unfinished runs whose owner's lease has expired, or that have no owner: each
  // moves to this router at lease_epoch + 1. At most ceil(such runs / live routers) per call,
  // so that live routers share them; runs another router is claiming at the same moment are
  // skipped. With `include_mine`, also every unfinished run owned by this router's id (a
  // restart, or a return after the lease lapsed), all of them. Returns the runs as claimed,
  // oldest first.
  virtual absl::StatusOr<std::vector<rein::v1::Run>> ClaimRuns(bool include_mine) = 0;

  // run_id -> state version of every unfinished run this router owns (a router compares them
  // with what it holds, to notice commits by other routers whose notice it missed).
  virtual absl::StatusOr<std::map<std::string, int64_t>> OwnedRunVersions() = 0;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_FLEET_STORE_H_
