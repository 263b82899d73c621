// RunEngine: drives many runs at once through StageRouter, the clients and the RunStore.
#ifndef REIN_ROUTER_SERVICE_RUN_ENGINE_H_
#define REIN_ROUTER_SERVICE_RUN_ENGINE_H_

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "rein/v1/router.pb.h"
#include "router_service/children/child_driver.h"
#include "router_service/clients.h"
#include "router_service/event_reads.h"
#include "router_service/event_tail.h"
#include "router_service/fairness/fair_calls.h"
#include "router_service/fleet_member.h"
#include "router_service/lease_timer.h"
#include "router_service/run_registry.h"
#include "router_service/run_trace.h"
#include "router_service/run_writer.h"
#include "router_service/scheduler.h"
#include "router_service/stage_router.h"
#include "router_service/store/group_commit.h"
#include "router_service/store/router_store.h"
#include "router_service/store/run_store.h"
#include "router_service/tool_catalog.h"
#include "router_service/work_pool.h"

namespace rein {

struct RunEngineOptions {
  // Threads applying results and committing. A worker waits while its commit is written with
  // the others of its group, so this also bounds how many runs' transitions one group commit
  // can carry. The service's default (--workers) is 64.
  int workers = 4;
  // A planner or executor reply is applied (and committed, and the next call sent) on the
  // thread that received it, instead of being handed to a worker, when no work is queued and
  // fewer than this many replies are being applied that way at once (0 = always hand off).
  // Such a thread then waits for the commit, as a worker would.
  int inline_replies = 1;
  // Group commit (--group_commit_max, --group_commit_delay): the transitions of runs that are
  // ready together are committed in one store batch; each run moves on only after it.
  GroupCommitOptions group_commit;
  // Planner and executor calls in flight, shared between namespaces by weight
  // (--max_planner_calls, --max_executor_calls; router_service/fairness).
  FairCallsOptions calls;
  absl::Duration tools_cache_ttl = absl::Seconds(30);
  absl::Duration list_tools_timeout = absl::Seconds(10);
  absl::Duration cancel_wait = absl::Seconds(10);          // CancelRun waits this long for the end
  absl::Duration retry_backoff = absl::Milliseconds(200);  // doubled per failed attempt
  absl::Duration max_retry_backoff = absl::Seconds(5);
  absl::Duration workspace_copy_timeout = absl::Minutes(5);  // ForkRun's CopyWorkspace
  StageRouterOptions stage;
  // This router in a fleet sharing one store (--router_id, --lease_ttl; see LeaseTimer).
  std::string router_id = "router";
  absl::Duration lease_ttl = absl::Seconds(10);
  // StartRun's check of spec.notify (the --webhook_allow prefixes, router_service/notify);
  // unset: a spec with notify URLs is INVALID_ARGUMENT.
  std::function<absl::Status(const rein::v1::RunSpec&)> check_notify;
  // How often a WAITING parent reads its children when no child's end woke it (a child driven
  // by another router, or a wake-up lost to a restart).
  absl::Duration child_poll = absl::Seconds(1);
  // Admits a new child run in its namespace (QuotaBook::AdmitChild): calls `create` when
  // admitted, else returns the refusal, which fails that child. Unset: no quotas.
  std::function<absl::Status(const std::string& namespace_name,
                             const std::function<bool()>& create)>
      admit_child;
};

// Owns the in-memory view of every unfinished run and moves each one forward as its calls
// complete. A run waiting on the planner or an executor holds no thread: calls are
// asynchronous, and a result is applied on the thread that received it when the engine is
// otherwise idle (RunEngineOptions.inline_replies), else by a small fixed pool of workers. Every
// transition is committed to the store before anything else sees it. Every wait and timer
// (retry backoff, pause deadlines, shutdown grace, cancel wait, event waits, the tools cache)
// is on the injected Clock. Thread-safe.
//
// Leases (a store shared by several routers, RunStore's "Leases"): the engine joins under
// options.router_id and drives only the runs it owns, committing each transition with
// CommitOwned at the epoch it holds. A lease thread renews every ttl/3, claims orphaned runs
// (continued by the same recovery as a restart: Recover) and notices commits other routers
// made on its runs (a review or a cancel: the run is re-read and continues). A commit fenced
// by the store ("lease lost") drops the run from memory with no other effect. Mutating calls
// wait while the lease is older than ttl/2; once it is older than ttl every run is dropped
// (calls in flight cancelled) and taken back when a renewal succeeds again. The lease is
// measured on the monotonic real clock, not the injected Clock.
class RunEngine {
 public:
  RunEngine(RouterStore* store, PlannerClient* planner, ExecutorClient* executor, Clock* clock,
            RunEngineOptions options = {});
  ~RunEngine();

  // Starts the workers and continues every unfinished run found in the store (recovery).
  absl::Status Start();
  // Stops dispatching calls: no run makes a new planner or executor call after this (a
  // stopping process calls it first, so a retry that comes due while the gRPC server drains
  // is not sent). Calls in flight still complete and are committed.
  void StopDispatching();
  // Stops dispatching calls, waits up to `grace` for calls in flight to be committed, then
  // abandons the rest (they continue after the next Start).
  void Shutdown(absl::Duration grace);

  // The public calls below take the caller's `deadline` on this engine's clock (clock()):
  // none waits past it, for the executors, a run's lock, a commit's turn or the end of a
  // cancel; a call cut short is DEADLINE_EXCEEDED and has written nothing, except a commit the
  // store had already begun, which is waited for (SQLite bounds it with its busy timeout,
  // PostgreSQL each statement with the deadline as a statement_timeout).

  // Validates the spec (INVALID_ARGUMENT naming the field), checks that the executors have
  // the workspace (FAILED_PRECONDITION naming spec.workspace) and starts the run.
  // `principal` (who called, "" = unknown) is recorded in RunEvent.principal of the events
  // that StartRun, CancelRun and ResumeRun create.
  // `*created`, when given, tells whether the run was created (not found under its request_id).
  absl::StatusOr<rein::v1::Run> StartRun(const rein::v1::StartRunRequest& request,
                                         const std::string& principal = "",
                                         absl::Time deadline = absl::InfiniteFuture(),
                                         bool* created = nullptr);
  // The run of the namespace ("" is "default") started with `request_id`; NOT_FOUND if none.
  absl::StatusOr<rein::v1::Run> FindStarted(const std::string& namespace_name,
                                            const std::string& request_id) {
    return store_->FindRunByRequestId(namespace_name, request_id);
  }
  // The run as last committed; never waits for a commit in progress. `*from_store`, when
  // given, tells whether the store was read (the run is not in memory). Run.children is
  // filled (a store read per child) unless `with_children` is false.
  absl::StatusOr<rein::v1::Run> GetRun(const std::string& run_id, bool* from_store = nullptr,
                                       bool with_children = true);
  // Fills Run.children of a run GetRun returned without them.
  void FillChildren(rein::v1::Run* run) { children_.FillChildren(run); }
  // The store read GetRun makes for a run not in memory, its result dropped: a run another
  // namespace may not see is answered after the same read as an unknown id (RouterApi).
  void ReadStoreAsUnknown(const std::string& run_id) { (void)store_->GetRun(run_id); }
  absl::StatusOr<RunPage> ListRuns(const rein::v1::ListRunsRequest& request);
  // Commits the cancel, then waits up to cancel_wait (and at most until `deadline`) for the run
  // to end, and returns it as it is then; without `wait`, returns once the cancel is committed
  // or recorded. A WAITING parent ends once its children have.
  absl::StatusOr<rein::v1::Run> CancelRun(const std::string& run_id, const std::string& reason,
                                          const std::string& principal = "",
                                          absl::Time deadline = absl::InfiniteFuture(),
                                          bool wait = true);
  absl::StatusOr<rein::v1::Run> ResumeRun(const rein::v1::ResumeRunRequest& request,
                                          const std::string& principal = "",
                                          absl::Time deadline = absl::InfiniteFuture());
  // The store's webhook outbox (read by RouterApi::ListNotifications).
  NotificationOutbox* outbox() const { return store_; }
  // The run's snapshots above `after_version`, oldest first, at most `limit` (0 = all).
  absl::StatusOr<std::vector<Snapshot>> ListSnapshots(const std::string& run_id,
                                                      int64_t after_version = 0, int limit = 0);
  // Starts a new run from the source's state at `request.at`, with the edits (router_service/
  // fork.h, StageRouter::Fork), and its own copy of the source's workspace (as it is now, or
  // with workspace_at_fork as it was at the point). The source may be running or ended; it is
  // only read. On any error nothing is created (no run, no workspace copy left behind). The
  // same request_id twice returns the first fork (`*created` false). `day_left`'s token_budget
  // and cost_budget_usd, when set, are what the namespace's day has left (RouterApi's quotas):
  // the fork's budgets are capped at what it inherits from the point plus those.
  absl::StatusOr<rein::v1::Run> ForkRun(const rein::v1::ForkRunRequest& request,
                                        const std::string& principal = "",
                                        absl::Time deadline = absl::InfiniteFuture(),
                                        bool* created = nullptr,
                                        const rein::v1::Limits& day_left = rein::v1::Limits());

  // Events after `after_seq`; waits up to `max_wait` for one when there are none yet.
  // `ended` is set when the run has ended and every event has been returned.
  absl::StatusOr<std::vector<rein::v1::RunEvent>> WaitEvents(const std::string& run_id,
                                                             int64_t after_seq,
                                                             absl::Duration max_wait, bool* ended);

  // WatchRun's read, which never waits: the events after `after_seq` now (from memory, else
  // the store); empty when there are none yet. `ended` as for WaitEvents.
  absl::StatusOr<std::vector<rein::v1::RunEvent>> ReadEventsNow(const std::string& run_id,
                                                                int64_t after_seq, bool* ended);
  // A one-shot wake-up for a watcher holding no thread (EventTail::Subscribe): `wake` runs
  // once, on the committing thread, when the run gets an event past `after_seq` (or its
  // events move to the store only). Returns 0 and never calls `wake` when one is already
  // there: read again. `*recheck` is set when the run is another router's (or none's), whose
  // commits reach this router as notices that may be lost: read again after a while anyway.
  uint64_t SubscribeEvents(const std::string& run_id, int64_t after_seq, std::function<void()> wake,
                           bool* recheck);
  void UnsubscribeEvents(const std::string& run_id, uint64_t id);
  // Subscriptions waiting for a commit (tests: a watcher that went away leaves none behind).
  size_t event_subscriptions() { return tail_.subscriptions(); }

  // Called by the store for a commit another router made (RunStore::SubscribeCommits).
  void OnCommitNotice(const CommitNotice& notice);

  // Number of runs held in memory (unfinished), and of those with a call in flight.
  int active_runs();
  int calls_in_flight();
  // The calls' admission per namespace (tests read what waits).
  FairCalls& fair_calls() { return calls_; }
  // Writes sent through the one commit path (RunWriter), for tests.
  int64_t writes() const { return writer_.writes(); }
  // The clock the deadlines of the public calls are on.
  Clock* clock() const { return clock_; }

 private:
  using Entry = RunEntry;

  std::shared_ptr<Entry> Find(const std::string& run_id);
  // What WaitEvents and ReadEventsNow read with (router_service/event_reads.h).
  EventReadContext EventReads();
  std::shared_ptr<Entry> Track(const rein::v1::Run& run);
  // Takes on a run found unfinished in the store (start, takeover, rejoin) and advances it.
  void Recover(const rein::v1::Run& run);
  // Drops a run this router no longer owns from memory (its call, if any, is cancelled; its
  // result will be ignored). Needs entry->mu held.
  void DropLocked(const std::shared_ptr<Entry>& entry, const std::string& why);
  // Re-reads a run from the store after another router committed to it.
  void Refresh(const std::string& run_id);
  // The lease lapsed (FleetMember): stops driving every run.
  void DropAll(const std::string& why);
  // Re-reads the runs whose version in the store (`owned`) is newer, or that are no longer
  // this router's.
  void CheckOwned(std::map<std::string, int64_t> owned);
  // Does what StageRouter::Next says for the run, unless a call is in flight.
  void Advance(const std::shared_ptr<Entry>& entry);
  // Makes the effect's call; its result is applied by Complete. Needs entry->mu held.
  void Dispatch(const std::shared_ptr<Entry>& entry, const Effect& effect);
  // Applies a call's result and moves on. With `only_if_free`, does nothing and returns false
  // when the run's mutex is taken (by this thread, or another).
  bool Complete(const std::shared_ptr<Entry>& entry, const StageReply& reply,
                bool only_if_free = false);
  // Complete's work under entry->mu: applies (StageRouter::Apply) and commits, or makes the
  // stage's next call; returns whether to Advance.
  bool ApplyLocked(const std::shared_ptr<Entry>& entry, const StageReply& reply);
  // Commits the transition of a run this router drives (RunWriter) and applies it to the run
  // in memory. Needs entry.mu held; releases it while the store writes (entry.committing), so
  // that a reader is never held up by the store. Waits for the store until `deadline` at most.
  absl::Status CommitLocked(Entry& entry, Transition transition,
                            absl::Time deadline = absl::InfiniteFuture());
  // Waits, with entry.mu held, until no commit of the run is being written; false when
  // `deadline` came first. Whatever acts on a run waits for this first.
  bool AwaitSettledLocked(Entry& entry, absl::Time deadline = absl::InfiniteFuture());
  // Waits, with entry.mu held, until the run has ended, for cancel_wait and until `deadline`
  // at most (CancelRun).
  void AwaitEndLocked(Entry& entry, absl::Time deadline);
  void Wake(const std::string& run_id);
  // A call's callback has been applied (or dropped): one call fewer in flight.
  void CallDone();

  RouterStore* store_;
  RunWriter writer_;
  PlannerClient* planner_;
  ExecutorClient* executor_;
  Clock* clock_;
  RunEngineOptions options_;
  StageRouter router_;
  // A WAITING parent's children (router_service/children); uses runs_ and pool_.
  ChildDriver children_;
  RunRegistry runs_;

  WorkPool pool_;
  FairCalls calls_;  // each run's calls, in its namespace's turn
  ToolCatalog tools_;
  Scheduler scheduler_;
  EventTail tail_;
  // The runs' invoke_agent spans (docs/TRACING.md); off with the process's tracer.
  RunTrace trace_;

  std::atomic<bool> dispatching_{true};

  // Calls in flight; changed under flight_mu_ so that Shutdown can wait on it.
  absl::Mutex flight_mu_;
  std::atomic<int> in_flight_{0};

  // The lease, claims and remote commits (shared stores); last, so that its thread ends first.
  FleetMember fleet_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_RUN_ENGINE_H_
