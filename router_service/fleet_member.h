// FleetMember: this router in a fleet sharing one store: its lease, the runs it claims, and the
// commits it makes on runs it does not drive.
#ifndef REIN_ROUTER_SERVICE_FLEET_MEMBER_H_
#define REIN_ROUTER_SERVICE_FLEET_MEMBER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "rein/v1/router.pb.h"
#include "rein/v1/types.pb.h"
#include "router_service/lease_timer.h"
#include "router_service/run_writer.h"
#include "router_service/stage_router.h"
#include "router_service/store/router_store.h"

namespace rein {

// Renews the lease every ttl/3 on a thread of its own (shared stores only), claims orphaned
// runs and finds the owned runs another router committed to, handing each to the driver
// (Hooks). The lease is measured on the monotonic real clock, not the injected Clock; the
// remote commits wait on the injected Clock. Thread-safe.
class FleetMember {
 public:
  // What the member asks of the driver; each is called on the lease thread and must hand its
  // work on rather than wait for a run.
  struct Hooks {
    std::function<bool()> dispatching;               // false while stopping: nothing is claimed
    std::function<void()> drop_all;                  // the lease lapsed: stop driving every run
    std::function<void(const rein::v1::Run&)> take;  // a run claimed: drive it
    // The versions the store holds of the runs this router owns (to find missed commits).
    std::function<void(std::map<std::string, int64_t>)> check;
  };

  // `writer` is how the member writes runs (the router's one commit path); `store` is read
  // and holds the lease.
  FleetMember(RouterStore* store, RunWriter* writer, const StageRouter* router, Clock* clock,
              std::string router_id, absl::Duration ttl, absl::Duration cancel_wait, Hooks hooks);
  ~FleetMember() { Stop(); }

  // Joins the fleet (FleetStore::JoinFleet): the lease holds from now.
  absl::Status Join();
  // The unfinished runs this router continues at its start: in a shared store those it claims
  // (its own from before a restart, at epoch + 1, and a share of the runs of routers that are
  // gone); else every unfinished run in the store (one that cannot be read is logged and left).
  absl::StatusOr<std::vector<rein::v1::Run>> RunsToRecover();
  // Starts the lease thread (shared stores).
  void Start();
  // Stops the lease thread. Idempotent.
  void Stop();
  // Leaves the fleet: the other routers may take this router's runs at once.
  void Leave();

  bool shared() const { return shared_; }
  // Whether the lease allows a call now (`mutating`: a mutating tool call).
  bool Allows(bool mutating) const;
  // How soon to look again when the lease did not allow a call.
  absl::Duration retry_interval() const { return lease_.retry_interval(); }
  // Whether the run (as the store returned it) is still this router's at `epoch`.
  bool StillMine(const rein::v1::Run& fresh, int64_t epoch) const;

  // CancelRun and ResumeRun on a run this router does not drive: committed (RunWriter) with
  // the version check alone, which wakes the owner. Cancel then waits up to cancel_wait for
  // the owner to end the run. Neither waits past `deadline` (RunEngine's public calls).
  absl::StatusOr<rein::v1::Run> Cancel(const std::string& run_id, const std::string& reason,
                                       const std::string& principal,
                                       absl::Time deadline = absl::InfiniteFuture());
  absl::StatusOr<rein::v1::Run> Resume(const rein::v1::ResumeRunRequest& request,
                                       const std::string& principal,
                                       absl::Time deadline = absl::InfiniteFuture());

 private:
  void Loop();
  // One renewal (and, when it succeeds, claims and checks); returns whether it succeeded.
  bool Round(bool* lapsed);
  absl::StatusOr<rein::v1::Run> Read(const std::string& run_id);

  RouterStore* const store_;
  RunWriter* const writer_;
  const StageRouter* const router_;
  Clock* const clock_;
  const std::string router_id_;
  const absl::Duration cancel_wait_;
  const Hooks hooks_;
  const bool shared_;
  LeaseTimer lease_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
  bool renew_failing_ = false;  // used by the lease thread only
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_FLEET_MEMBER_H_
