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
#include "router_service/clients.h"
#include "router_service/event_tail.h"
#include "router_service/scheduler.h"
#include "router_service/stage_router.h"
#include "router_service/store/run_store.h"

namespace rein {

struct RunEngineOptions {
  int workers = 4;  // threads applying results and committing
  absl::Duration tools_cache_ttl = absl::Seconds(30);
  absl::Duration list_tools_timeout = absl::Seconds(10);
  absl::Duration cancel_wait = absl::Seconds(10);          // CancelRun waits this long for the end
  absl::Duration retry_backoff = absl::Milliseconds(200);  // doubled per failed attempt
  absl::Duration max_retry_backoff = absl::Seconds(5);
  StageRouterOptions stage;
};

// Owns the in-memory view of every unfinished run and moves each one forward as its calls
// complete. A run waiting on the planner or an executor holds no thread: calls are
// asynchronous, and their results are applied by a small fixed pool of workers. Every
// transition is committed to the store before anything else sees it. Every wait and timer
// (retry backoff, pause deadlines, shutdown grace, cancel wait, event waits, the tools cache)
// is on the injected Clock. Thread-safe.
class RunEngine {
 public:
  RunEngine(RunStore* store, PlannerClient* planner, ExecutorClient* executor, Clock* clock,
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

  // Validates the spec (INVALID_ARGUMENT naming the field), checks that the executors have
  // the workspace (FAILED_PRECONDITION naming spec.workspace) and starts the run.
  // `principal` (who called, "" = unknown) is recorded in RunEvent.principal of the events
  // that StartRun, CancelRun and ResumeRun create.
  absl::StatusOr<rein::v1::Run> StartRun(const rein::v1::StartRunRequest& request,
                                         const std::string& principal = "");
  absl::StatusOr<rein::v1::Run> GetRun(const std::string& run_id);
  absl::StatusOr<RunPage> ListRuns(const rein::v1::ListRunsRequest& request);
  absl::StatusOr<rein::v1::Run> CancelRun(const std::string& run_id, const std::string& reason,
                                          const std::string& principal = "");
  absl::StatusOr<rein::v1::Run> ResumeRun(const rein::v1::ResumeRunRequest& request,
                                          const std::string& principal = "");
  absl::StatusOr<std::vector<Snapshot>> ListSnapshots(const std::string& run_id);

  // Events after `after_seq`; waits up to `max_wait` for one when there are none yet.
  // `ended` is set when the run has ended and every event has been returned.
  absl::StatusOr<std::vector<rein::v1::RunEvent>> WaitEvents(const std::string& run_id,
                                                             int64_t after_seq,
                                                             absl::Duration max_wait, bool* ended);

  // Number of runs held in memory (unfinished), and of those with a call in flight.
  int active_runs();
  int calls_in_flight();

 private:
  struct Entry;

  std::shared_ptr<Entry> Find(const std::string& run_id);
  std::shared_ptr<Entry> Track(const rein::v1::Run& run);
  // Does what StageRouter::Next says for the run, unless a call is in flight.
  void Advance(const std::shared_ptr<Entry>& entry);
  // Makes the effect's call; its result is applied by Complete. Needs entry->mu held.
  void Dispatch(const std::shared_ptr<Entry>& entry, const Effect& effect);
  // Drops an ended run from memory.
  void Forget(const std::string& run_id);
  // Applies a call's result (on a worker) and moves on.
  void Complete(const std::shared_ptr<Entry>& entry,
                std::function<Transition(const rein::v1::Run&, absl::Time)> apply);
  absl::Status CommitLocked(Entry& entry, Transition transition);
  void Post(std::function<void()> work);
  void Wake(const std::string& run_id);
  // A call's callback has been applied (or dropped): one call fewer in flight.
  void CallDone();
  absl::StatusOr<std::vector<rein::v1::ToolSpec>> KnownTools();
  // FAILED_PRECONDITION naming spec.workspace when an executor offering file_info says the
  // workspace is missing or unusable; OK when no executor offers file_info.
  absl::Status CheckWorkspace(const std::string& run_id, const rein::v1::RunSpec& spec,
                              const std::vector<rein::v1::ToolSpec>& tools);
  void WorkerLoop();

  RunStore* store_;
  PlannerClient* planner_;
  ExecutorClient* executor_;
  Clock* clock_;
  RunEngineOptions options_;
  StageRouter router_;

  absl::Mutex runs_mu_;
  std::map<std::string, std::shared_ptr<Entry>> runs_ ABSL_GUARDED_BY(runs_mu_);

  absl::Mutex queue_mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(queue_mu_);
  bool stopping_ ABSL_GUARDED_BY(queue_mu_) = false;
  std::vector<std::thread> workers_;

  Scheduler scheduler_;
  EventTail tail_;

  absl::Mutex tools_mu_;
  std::vector<rein::v1::ToolSpec> tools_ ABSL_GUARDED_BY(tools_mu_);
  absl::Time tools_at_ ABSL_GUARDED_BY(tools_mu_) = absl::InfinitePast();

  std::atomic<bool> dispatching_{true};
  // Calls in flight; changed under flight_mu_ so that Shutdown can wait on it.
  absl::Mutex flight_mu_;
  std::atomic<int> in_flight_{0};
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_RUN_ENGINE_H_
