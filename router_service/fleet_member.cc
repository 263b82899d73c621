// FleetMember: this router in a fleet sharing one store.
#include "router_service/fleet_member.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/proto_time.h"
#include "common/status_macros.h"
#include "router_service/fork_run.h"

namespace rein {
namespace {

using rein::v1::Run;
using rein::v1::RunEvent;

// The monotonic real clock the lease is measured on.
absl::Time MonotonicNow() {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

}  // namespace

FleetMember::FleetMember(RouterStore* store, RunWriter* writer, const StageRouter* router,
                         Clock* clock, std::string router_id, absl::Duration ttl,
                         absl::Duration cancel_wait, Hooks hooks)
    : store_(store),
      writer_(writer),
      router_(router),
      clock_(clock),
      router_id_(std::move(router_id)),
      cancel_wait_(cancel_wait),
      hooks_(std::move(hooks)),
      shared_(store->Shared()),
      lease_(ttl) {}

absl::Status FleetMember::Join() {
  const absl::Time sent = MonotonicNow();
  RETURN_IF_ERROR(store_->JoinFleet(router_id_, lease_.ttl()));
  lease_.Renewed(sent);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Run>> FleetMember::RunsToRecover() {
  // This router's id may own runs from before a restart: take them back (epoch + 1), and a
  // share of the runs of routers that are gone.
  if (shared_) return store_->ClaimRuns(/*include_mine=*/true);
  ASSIGN_OR_RETURN(std::vector<std::string> ids, store_->ListUnfinishedRunIds());
  std::vector<Run> runs;
  for (const std::string& id : ids) {
    absl::StatusOr<Run> run = store_->GetRun(id);
    if (!run.ok()) {
      LogError("cannot recover run", {{"run_id", id}, {"error", run.status().ToString()}});
      continue;
    }
    runs.push_back(*std::move(run));
  }
  return runs;
}

void FleetMember::Start() {
  if (shared_) thread_ = std::thread([this] { Loop(); });
}

void FleetMember::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void FleetMember::Leave() {
  if (!shared_) return;
  absl::Status left = store_->LeaveFleet();
  if (!left.ok()) LogError("cannot leave the fleet", {{"error", left.ToString()}});
}

bool FleetMember::Allows(bool mutating) const {
  if (!shared_) return true;
  const absl::Time now = MonotonicNow();
  return mutating ? lease_.MayMutate(now) : lease_.Live(now);
}

bool FleetMember::StillMine(const Run& fresh, int64_t epoch) const {
  return !shared_ || (fresh.owner() == router_id_ && fresh.lease_epoch() == epoch);
}

void FleetMember::Loop() {
  bool lapsed = false;
  absl::Time next = MonotonicNow() + lease_.renew_interval();
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stop_),
                           std::max(absl::ZeroDuration(), next - MonotonicNow()));
      if (stop_) return;
    }
    const absl::Time sent = MonotonicNow();
    next =
        Round(&lapsed) ? sent + lease_.renew_interval() : MonotonicNow() + lease_.retry_interval();
  }
}

bool FleetMember::Round(bool* lapsed) {
  const absl::Time sent = MonotonicNow();
  absl::Status renewed = store_->RenewLease();
  if (renewed.ok()) {
    lease_.Renewed(sent);
    if (renew_failing_) LogInfo("lease renewed again", {{"router_id", router_id_}});
    renew_failing_ = false;
  } else {
    Metrics::Global().Add("rein_router_lease_renewal_errors_total", 1);
    // Once per outage, not once per retry.
    if (!renew_failing_) {
      LogError("cannot renew the lease",
               {{"router_id", router_id_}, {"error", renewed.ToString()}});
    }
    renew_failing_ = true;
  }
  if (!lease_.Live(MonotonicNow()) && !*lapsed) {
    // Another router may take any of these runs from now on: stop driving all of them.
    *lapsed = true;
    LogError("lease lapsed: dropping every run until a renewal succeeds",
             {{"router_id", router_id_}});
    hooks_.drop_all();
  }
  if (!renewed.ok()) return false;
  if (!hooks_.dispatching()) return true;
  const bool rejoin = *lapsed;
  if (rejoin) LogInfo("lease renewed: rejoining", {{"router_id", router_id_}});
  absl::StatusOr<std::vector<Run>> claimed = store_->ClaimRuns(/*include_mine=*/rejoin);
  if (!claimed.ok()) {
    LogError("cannot claim runs", {{"error", claimed.status().ToString()}});
    return true;
  }
  *lapsed = false;
  for (const Run& run : *claimed) {
    LogInfo("run taken over", {{"run_id", run.run_id()},
                               {"trace_id", run.state().trace().trace_id()},
                               {"epoch", std::to_string(run.lease_epoch())}});
    Metrics::Global().Add("rein_router_runs_claimed_total", 1);
    hooks_.take(run);
  }
  // Commits other routers made on this router's runs (reviews, cancels) whose notice was
  // missed, and runs another router now owns.
  absl::StatusOr<std::map<std::string, int64_t>> owned = store_->OwnedRunVersions();
  if (owned.ok()) hooks_.check(*std::move(owned));
  return true;
}

absl::StatusOr<Run> FleetMember::Read(const std::string& run_id) {
  absl::StatusOr<Run> run = store_->GetRun(run_id);
  if (!run.ok() && absl::IsNotFound(run.status())) {
    return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
  }
  return run;
}

absl::StatusOr<Run> FleetMember::Cancel(const std::string& run_id, const std::string& reason,
                                        const std::string& principal, absl::Time deadline) {
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(Run run, Read(run_id));
    if (StageRouter::IsTerminal(run.state().stage())) return run;
    auto t = router_->OnRemoteCancel(run, reason, clock_->Now());
    if (!t.has_value()) break;
    SetPrincipal(principal, &*t);
    absl::StatusOr<std::vector<RunEvent>> stored =
        writer_->Commit(run, /*owned=*/false, t->state, std::move(t->events),
                        std::move(t->snapshot), clock_->Now(), deadline);
    if (stored.ok()) break;
    if (!absl::IsFailedPrecondition(stored.status()) || attempt >= 5) return stored.status();
  }
  // The owner, woken by the commit's notice, ends the run; wait a little for it.
  const absl::Time until = std::min(deadline, clock_->Now() + cancel_wait_);
  while (true) {
    ASSIGN_OR_RETURN(Run run, Read(run_id));
    if (StageRouter::IsTerminal(run.state().stage()) || clock_->Now() >= until) return run;
    clock_->SleepUntil(std::min(until, clock_->Now() + absl::Milliseconds(50)));
  }
}

absl::StatusOr<Run> FleetMember::Resume(const rein::v1::ResumeRunRequest& request,
                                        const std::string& principal, absl::Time deadline) {
  ASSIGN_OR_RETURN(Run run, Read(request.run_id()));
  const absl::Time now = clock_->Now();
  ASSIGN_OR_RETURN(Transition t,
                   router_->OnReview(run, request.review(), request.expected_version(), now));
  SetPrincipal(principal, &t);
  // The version check makes this safe against the owner and other reviewers; the commit's
  // notice wakes the owner, which continues the run.
  RETURN_IF_ERROR(writer_
                      ->Commit(run, /*owned=*/false, t.state, std::move(t.events),
                               std::move(t.snapshot), now, deadline)
                      .status());
  *run.mutable_state() = std::move(t.state);
  *run.mutable_updated_at() = ToProtoTime(now);
  return run;
}

}  // namespace rein
