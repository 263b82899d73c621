// CreateFork: the fork a ForkRun asks for (the source's state at a point, the edits, a copy of
// its workspace), created in the store; and the helpers the public calls share.
#ifndef REIN_ROUTER_SERVICE_FORK_RUN_H_
#define REIN_ROUTER_SERVICE_FORK_RUN_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "rein/v1/router.pb.h"
#include "rein/v1/types.pb.h"
#include "router_service/clients.h"
#include "router_service/run_writer.h"
#include "router_service/stage_router.h"
#include "router_service/store/run_store.h"

namespace rein {

// A new run id: "run-" and 16 random hex digits.
std::string NewRunId();

// Records who caused a transition (RunEvent.principal) on each of its events ("" = unknown).
void SetPrincipal(const std::string& principal, Transition* t);

// What CreateFork works with (the engine's).
struct ForkContext {
  RunStore* store;    // read
  RunWriter* writer;  // creates the fork
  const StageRouter* router;
  ExecutorClient* executor;
  Clock* clock;
  std::string router_id;                         // the fork's owner, at epoch 1
  absl::Duration copy_timeout;                   // CopyWorkspace's and DeleteWorkspace's
  absl::Time deadline = absl::InfiniteFuture();  // the caller's: CopyWorkspace not past it
  // The router's check of RunSpec.notify against --webhook_allow (RunEngineOptions); null = no
  // URL allowed.
  std::function<absl::Status(const rein::v1::RunSpec&)> check_notify;
  // What the namespace's day has left (token_budget, cost_budget_usd; 0 = no quota): the
  // fork's budgets are capped at what it inherits at the point plus these.
  rein::v1::Limits day_left;
};

// The fork of `source` that `request` asks for (StageRouter::Fork, router_service/fork.h), with
// its own copy of the source's workspace (as it is now, or with workspace_at_fork as it was at
// the point), created in the store. On any error nothing is left behind (no run, no copy); the
// same request_id twice returns the first fork (CreateResult.created false).
// FAILED_PRECONDITION naming workspace_at_fork when the executors no longer hold the workspace
// at the point (reason SNAPSHOT_MISSING), naming workspace when they cannot copy it.
// FAILED_PRECONDITION naming the source's spec.notify[i] when a URL the fork would keep is not
// allowed by this router (ctx.check_notify) now: the allow-list may have narrowed since the
// source started, and a fork must not be a way around it.
absl::StatusOr<CreateResult> CreateFork(const ForkContext& ctx,
                                        const rein::v1::ForkRunRequest& request,
                                        const rein::v1::Run& source, const std::string& principal);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_FORK_RUN_H_
