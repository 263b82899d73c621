// StageRouter: the pure stage logic of a run (transitions, termination rules, pauses, reviews).
#ifndef REIN_ROUTER_SERVICE_STAGE_ROUTER_H_
#define REIN_ROUTER_SERVICE_STAGE_ROUTER_H_

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rein/v1/executor.pb.h"
#include "rein/v1/planner.pb.h"
#include "rein/v1/router.pb.h"
#include "rein/v1/types.pb.h"
#include "router_service/price_table.h"
#include "router_service/store/run_store.h"
#include "router_service/transition.h"

namespace rein {

// Decides every step of a run from its spec and state. Holds no run data: every method is a
// pure function of its arguments, so the class is thread-safe and trivially testable.
// Termination is checked before every transition in the order of docs/DESIGN.md,
// "The rules, in order".
class StageRouter {
 public:
  explicit StageRouter(StageRouterOptions options = {}) : options_(options) {}

  // A new run in INITIALIZING (version 1) with its first event. `spec` must be normalized
  // (router_service/spec.h).
  Transition NewRun(const std::string& run_id, const std::string& request_id,
                    const rein::v1::RunSpec& spec, absl::Time now, rein::v1::Run* run) const;

  // The one question a driver asks about a run with no call in flight, at `now`, whose retry
  // backoff ends at `not_before`. In order:
  // - terminal: kEnded;
  // - rule 1 or 3 holds (cancel requested, deadline passed): kCommit of the end (OnTick);
  // - PAUSED: kWaitUntil its deadline (kIdle without one);
  // - backing off: kWaitUntil min(not_before, deadline);
  // - a working stage with nothing to call: kCommit of FAILED (INTERNAL);
  // - DECIDING with the call the last evaluation proposed: kCommit of OnProposedCall;
  // - a mutating call not yet marked dispatched: kCommit of MarkDispatched (then kCall);
  // - otherwise kCall with NextEffect.
  NextStep Next(const rein::v1::Run& run, absl::Time now,
                absl::Time not_before = absl::InfinitePast()) const;

  // The call for the run's stage (kNone for PAUSED and terminal runs). Part of Next.
  Effect NextEffect(const rein::v1::Run& run, absl::Time now) const;

  // The one place a call's reply is applied: `reply` answers the call of NextEffect (or of
  // the Applied::call before it) for `run`. Listed tools that include file_info ask for the
  // workspace check (Applied::call) before anything is committed; every other reply is a
  // transition (the On* below).
  Applied Apply(const rein::v1::Run& run, const StageReply& reply, absl::Time now) const;

  // The transitions of Apply, by reply. A non-OK status is the call's gRPC status.
  // `workspace` is the executor's reply to file_info {"path": "."} in the run's workspace
  // (nullopt when the executor offers no file_info): a tool error there fails the run.
  // OnExecute: RESOURCE_EXHAUSTED (full) and ABORTED (the call is in progress on a live
  // executor) are asked again without spending budget; other errors spend one and ask again
  // with the same call_id; `outcome_unknown` pauses RECOVERY; `replayed` adds a call_replayed
  // event before the tool_result.
  Transition OnTools(const rein::v1::Run& run,
                     const absl::StatusOr<rein::v1::ListToolsResponse>& tools,
                     const std::optional<absl::StatusOr<rein::v1::ExecuteResponse>>& workspace,
                     absl::Time now) const;
  Transition OnPlan(const rein::v1::Run& run, const absl::StatusOr<rein::v1::PlanResponse>& reply,
                    absl::Time now) const;
  Transition OnDecide(const rein::v1::Run& run,
                      const absl::StatusOr<rein::v1::DecideResponse>& reply, absl::Time now) const;
  Transition OnExecute(const rein::v1::Run& run,
                       const absl::StatusOr<rein::v1::ExecuteResponse>& reply,
                       absl::Time now) const;
  Transition OnEvaluate(const rein::v1::Run& run,
                        const absl::StatusOr<rein::v1::EvaluateResponse>& reply,
                        absl::Time now) const;

  // OnEvaluate applies a reply's valid next_call (RunSpec.combine_evaluate_decide) as the usual
  // evaluation into DECIDING, every rule checked, keeping the call as DECIDING's pending_call;
  // when anything stops or pauses the run first, or the proposal is invalid, it is dropped
  // (Evaluation.next_call_dropped says why) and DECIDING asks Decide. This is the second
  // transition: the call as a Decision (from_evaluation, no usage), exactly as OnDecide
  // applies a Decide reply (pause points, notes, rules 1-6). Part of Next.
  // OnPlan does the same with a reply's valid first_call (RunSpec.combine_plan_decide) for the
  // plan's top subtask: kept when the applied plan goes on to DECIDING, else dropped
  // (Plan.first_call_dropped says why, no retry spent); its Decision is from_plan.
  Transition OnProposedCall(const rein::v1::Run& run, absl::Time now) const;

  // Marks a mutating call as sent, before it is sent (recovery then never repeats it silently).
  Transition MarkDispatched(const rein::v1::Run& run, absl::Time now) const;

  // Applies a review to a PAUSED run. FAILED_PRECONDITION when the run is not paused, the
  // version is stale or the review does not fit the pause; INVALID_ARGUMENT names a bad field.
  absl::StatusOr<Transition> OnReview(const rein::v1::Run& run, const rein::v1::Review& review,
                                      int64_t expected_version, absl::Time now) const;

  // Cancels the run now (when no call is in flight) or records the request (when one is: the
  // call's result then ends the run). Ended runs are returned unchanged (nullopt).
  std::optional<Transition> OnCancel(const rein::v1::Run& run, bool call_in_flight,
                                     const std::string& reason, absl::Time now) const;
  // OnCancel by a router that does not drive the run (it reads the run from the store): the
  // owner may have a call in flight unless the run is PAUSED.
  std::optional<Transition> OnRemoteCancel(const rein::v1::Run& run, const std::string& reason,
                                           absl::Time now) const;

  // Ends a run, with no call in flight, whose deadline has passed or whose cancel was
  // requested (PAUSED, between calls, or recovered after a restart). Part of Next.
  std::optional<Transition> OnTick(const rein::v1::Run& run, absl::Time now) const;

  // Ends a run that cannot go on for a reason of the router's own (INTERNAL).
  Transition FailInternal(const rein::v1::Run& run, const std::string& message,
                          absl::Time now) const;

  // The first transition of a fork. `run` holds the fork's run_id, request_id and spec (with
  // its own workspace and any changed limits) and, as its state, the source's state at the
  // fork point. Resets what belongs to the source's life (version, clocks from `now`, cancel,
  // dispatch, call ids), applies `edits` and emits RunEvent.forked (with that starting state,
  // so a fork's log replays on its own). FAILED_PRECONDITION naming `at` when the point is
  // terminal, naming edits.<field> when an edit does not fit the state there (edits.call with
  // no pending call); INVALID_ARGUMENT naming edits.<field> for a bad edit.
  absl::StatusOr<Transition> Fork(const rein::v1::Run& run, const rein::v1::ForkedFrom& from,
                                  const rein::v1::ForkEdits& edits, bool workspace_at_fork,
                                  absl::Time now) const;

  // Whether a planner error code is one that retrying cannot fix (PLANNER_ERROR at once).
  static bool IsFatalPlannerError(absl::StatusCode code);

  static bool IsTerminal(rein::v1::Stage stage);

  // Hands a state the caller no longer needs (the one a committed transition replaced) back
  // for the next transition made on this thread to copy into: copying a run's state into one
  // of the same shape reuses its strings and messages instead of allocating them anew, and the
  // old one is not destroyed field by field. Keeps one per thread, of at most 64 KiB as last
  // serialized; the rest are destroyed.
  static void Recycle(rein::v1::RunState&& used);

  const StageRouterOptions& options() const { return options_; }

 private:
  StageRouterOptions options_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STAGE_ROUTER_H_
