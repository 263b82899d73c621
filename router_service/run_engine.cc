// RunEngine: drives many runs at once through StageRouter, the clients and the RunStore.
#include "router_service/run_engine.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/proto_time.h"
#include "common/status_macros.h"
#include "router_service/spec.h"

namespace rein {

using rein::v1::Run;
using rein::v1::RunEvent;

struct RunEngine::Entry {
  absl::Mutex mu;
  Run run ABSL_GUARDED_BY(mu);
  bool in_flight ABSL_GUARDED_BY(mu) = false;
  std::shared_ptr<PendingCall> call ABSL_GUARDED_BY(mu);
  int failed_attempts ABSL_GUARDED_BY(mu) = 0;  // consecutive, for backoff only
  absl::Time not_before ABSL_GUARDED_BY(mu) = absl::InfinitePast();
};

namespace {

// Records who caused a transition (RunEvent.principal) on each of its events.
void SetPrincipal(const std::string& principal, Transition* t) {
  if (principal.empty()) return;
  for (rein::v1::RunEvent& event : t->events) event.set_principal(principal);
}

std::string NewRunId() {
  static absl::Mutex mu(absl::kConstInit);
  static absl::BitGen* gen = new absl::BitGen();
  absl::MutexLock lock(&mu);
  return absl::StrFormat("run-%016x", absl::Uniform<uint64_t>(*gen));
}

const char* KindName(Effect::Kind kind) {
  switch (kind) {
    case Effect::Kind::kListTools: return "ListTools";
    case Effect::Kind::kPlan: return "Plan";
    case Effect::Kind::kDecide: return "Decide";
    case Effect::Kind::kExecute: return "Execute";
    case Effect::Kind::kEvaluate: return "Evaluate";
    case Effect::Kind::kNone: break;
  }
  return "none";
}

// The calls a stage makes one after another (INITIALIZING: ListTools, then the workspace
// check), cancelled as one: a call set after Cancel() is cancelled at once.
class ChainedCall final : public PendingCall {
 public:
  void Set(std::shared_ptr<PendingCall> call) {
    bool cancel;
    {
      absl::MutexLock lock(&mu_);
      current_ = call;
      cancel = cancelled_;
    }
    if (cancel && call) call->Cancel();
  }
  void Cancel() override {
    std::shared_ptr<PendingCall> call;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      call = current_;
    }
    if (call) call->Cancel();
  }

 private:
  absl::Mutex mu_;
  std::shared_ptr<PendingCall> current_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

// A run id as a client sends it: present and of a sane length.
absl::Status CheckRunId(const std::string& run_id) {
  if (run_id.empty()) return absl::InvalidArgumentError("run_id: required");
  if (run_id.size() > 128) return absl::InvalidArgumentError("run_id: at most 128 bytes");
  return absl::OkStatus();
}

// Whether the executors offer file_info, with which a workspace is checked.
template <typename Tools>
bool HasFileInfo(const Tools& tools) {
  return std::any_of(tools.begin(), tools.end(),
                     [](const rein::v1::ToolSpec& t) { return t.name() == "file_info"; });
}

// file_info {"path": "."} in `workspace`: fails (a tool error) when the workspace is missing.
rein::v1::ExecuteRequest WorkspaceCheck(const std::string& run_id, const std::string& workspace) {
  rein::v1::ExecuteRequest check;
  check.set_call_id(absl::StrCat(run_id, "-workspace-check"));
  check.set_run_id(run_id);
  check.set_workspace(workspace);
  check.set_tool("file_info");
  check.set_args_json(R"({"path":"."})");
  return check;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Whether a transition records a failed call (the run backs off before the next one).
bool FailedCall(const Transition& t) {
  return std::any_of(t.events.begin(), t.events.end(),
                     [](const RunEvent& e) { return e.has_error(); });
}

}  // namespace

RunEngine::RunEngine(RunStore* store, PlannerClient* planner, ExecutorClient* executor,
                     Clock* clock, RunEngineOptions options)
    : store_(store),
      planner_(planner),
      executor_(executor),
      clock_(clock),
      options_(options),
      router_(options.stage),
      scheduler_(clock,
                 [this](const std::string& run_id) { Post([this, run_id] { Wake(run_id); }); }),
      tail_(clock) {}

RunEngine::~RunEngine() { Shutdown(absl::ZeroDuration()); }

absl::Status RunEngine::Start() {
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
  scheduler_.Start();
  absl::StatusOr<std::vector<std::string>> ids = store_->ListUnfinishedRunIds();
  if (!ids.ok()) return ids.status();
  int recovered = 0;
  for (const std::string& id : *ids) {
    absl::StatusOr<Run> run = store_->GetRun(id);
    if (!run.ok()) {
      LogError("cannot recover run", {{"run_id", id}, {"error", run.status().ToString()}});
      continue;
    }
    std::shared_ptr<Entry> entry = Track(*run);
    {
      absl::MutexLock lock(&entry->mu);
      if (auto t = router_.OnRecovery(entry->run, clock_->Now())) {
        absl::Status status = CommitLocked(*entry, std::move(*t));
        if (!status.ok()) LogError("recovery commit failed", {{"run_id", id}});
      }
    }
    ++recovered;
    Advance(entry);
  }
  if (recovered > 0) LogInfo(absl::StrCat("recovered ", recovered, " unfinished runs"));
  return absl::OkStatus();
}

void RunEngine::StopDispatching() { dispatching_ = false; }

void RunEngine::Shutdown(absl::Duration grace) {
  StopDispatching();
  auto idle = [this]() { return in_flight_.load() == 0; };
  {
    absl::MutexLock lock(&flight_mu_);
    clock_->AwaitWithDeadline(&flight_mu_, absl::Condition(&idle), clock_->Now() + grace);
  }
  if (in_flight_.load() > 0) {
    std::vector<std::shared_ptr<Entry>> entries;
    {
      absl::MutexLock lock(&runs_mu_);
      for (auto& [id, entry] : runs_) entries.push_back(entry);
    }
    for (auto& entry : entries) {
      absl::MutexLock entry_lock(&entry->mu);
      if (entry->call) entry->call->Cancel();
    }
  }
  // Let the cancelled calls' callbacks drain through the workers (nothing is committed for
  // them); a cancelled gRPC call returns promptly, so this wait is short.
  {
    absl::MutexLock lock(&flight_mu_);
    clock_->AwaitWithDeadline(&flight_mu_, absl::Condition(&idle),
                              clock_->Now() + absl::Seconds(30));
  }
  if (in_flight_.load() > 0) {
    LogError("calls still in flight after shutdown",
             {{"calls", std::to_string(in_flight_.load())}});
  }
  {
    absl::MutexLock lock(&queue_mu_);
    stopping_ = true;
  }
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
  scheduler_.Stop();
}

std::shared_ptr<RunEngine::Entry> RunEngine::Find(const std::string& run_id) {
  absl::MutexLock lock(&runs_mu_);
  auto it = runs_.find(run_id);
  return it == runs_.end() ? nullptr : it->second;
}

std::shared_ptr<RunEngine::Entry> RunEngine::Track(const Run& run) {
  auto entry = std::make_shared<Entry>();
  {
    absl::MutexLock lock(&entry->mu);
    entry->run = run;
  }
  absl::MutexLock lock(&runs_mu_);
  runs_.emplace(run.run_id(), entry);
  Metrics::Global().Set("rein_router_active_runs", runs_.size());
  return entry;
}

absl::Status RunEngine::CommitLocked(Entry& entry, Transition t) {
  Run& run = entry.run;
  absl::Time now = clock_->Now();
  // Latency metrics measure real elapsed time on a monotonic source, not the injected Clock.
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<RunEvent>> stored = store_->Commit(
      run.run_id(), run.state().version(), t.state, std::move(t.events), t.snapshot, now);
  Metrics::Global().Observe("rein_router_commit_seconds", SecondsSince(started));
  Metrics::Global().Add("rein_router_commits_total", 1);
  if (!stored.ok()) {
    LogError("commit failed", {{"run_id", run.run_id()}, {"error", stored.status().ToString()}});
    Metrics::Global().Add("rein_router_commit_errors_total", 1);
    if (absl::IsFailedPrecondition(stored.status())) {
      // Someone else wrote this run (another router on the same store): take its state.
      absl::StatusOr<Run> fresh = store_->GetRun(run.run_id());
      if (fresh.ok()) run = *std::move(fresh);
    }
    return stored.status();
  }
  rein::v1::Stage before = run.state().stage();
  *run.mutable_state() = std::move(t.state);
  *run.mutable_updated_at() = ToProtoTime(now);
  Metrics::Global().Add("rein_router_transitions_total", 1);
  if (run.state().stage() != before) {
    const auto& st = run.state();
    if (StageRouter::IsTerminal(st.stage())) {
      LogInfo("run ended", {{"run_id", run.run_id()},
                            {"stage", rein::v1::Stage_Name(st.stage())},
                            {"reason", rein::v1::TerminationReason_Name(st.outcome().reason())},
                            {"message", st.outcome().message()}});
      Metrics::Global().Add(
          "rein_router_runs_ended_total", 1,
          absl::StrCat("reason=\"", rein::v1::TerminationReason_Name(st.outcome().reason()), "\""));
    } else if (st.stage() == rein::v1::PAUSED) {
      LogInfo("run paused", {{"run_id", run.run_id()},
                             {"reason", rein::v1::PauseReason_Name(st.pause().reason())},
                             {"detail", st.pause().detail()}});
    }
  }
  for (const RunEvent& event : *stored) {
    if (event.has_error()) {
      LogWarning("stage attempt failed", {{"run_id", run.run_id()},
                                          {"stage", rein::v1::Stage_Name(event.error().stage())},
                                          {"code", event.error().code()},
                                          {"error", event.error().message()}});
    }
  }
  tail_.Append(run.run_id(), *stored, StageRouter::IsTerminal(run.state().stage()));
  return absl::OkStatus();
}

void RunEngine::Post(std::function<void()> work) {
  absl::MutexLock lock(&queue_mu_);
  queue_.push_back(std::move(work));
}

void RunEngine::WorkerLoop() {
  while (true) {
    std::function<void()> work;
    {
      absl::MutexLock lock(&queue_mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(queue_mu_) {
        return stopping_ || !queue_.empty();
      };
      queue_mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
  }
}

void RunEngine::CallDone() {
  absl::MutexLock lock(&flight_mu_);
  in_flight_.fetch_sub(1);
}

void RunEngine::Wake(const std::string& run_id) {
  if (std::shared_ptr<Entry> entry = Find(run_id)) Advance(entry);
}

void RunEngine::Forget(const std::string& run_id) {
  absl::MutexLock runs_lock(&runs_mu_);
  runs_.erase(run_id);
  Metrics::Global().Set("rein_router_active_runs", runs_.size());
}

void RunEngine::Advance(const std::shared_ptr<Entry>& entry) {
  absl::MutexLock lock(&entry->mu);
  if (entry->in_flight) return;
  const std::string run_id = entry->run.run_id();
  while (true) {
    const absl::Time now = clock_->Now();
    NextStep next = router_.Next(entry->run, now, entry->not_before);
    if (next.kind == NextStep::Kind::kEnded) {
      Forget(run_id);
      return;
    }
    if (!dispatching_) return;
    switch (next.kind) {
      case NextStep::Kind::kEnded:  // handled above, before the dispatching check
      case NextStep::Kind::kIdle: return;
      case NextStep::Kind::kWaitUntil: scheduler_.WakeAt(next.until, run_id); return;
      case NextStep::Kind::kCommit:
        if (!CommitLocked(*entry, std::move(*next.transition)).ok()) {
          entry->not_before = now + absl::Seconds(1);
          scheduler_.WakeAt(entry->not_before, run_id);
          return;
        }
        break;  // ask again
      case NextStep::Kind::kCall: Dispatch(entry, next.effect); return;
    }
  }
}

void RunEngine::Dispatch(const std::shared_ptr<Entry>& entry, const Effect& effect) {
  const Run& run = entry->run;
  const std::string& run_id = run.run_id();
  entry->in_flight = true;
  in_flight_.fetch_add(1);
  std::weak_ptr<Entry> weak = entry;
  const auto sent = std::chrono::steady_clock::now();  // latency metrics: real time
  const char* kind = KindName(effect.kind);
  auto finish = [this, weak, sent, kind](std::function<Transition(const Run&, absl::Time)> apply) {
    const auto replied = std::chrono::steady_clock::now();
    Metrics::Global().Observe("rein_router_call_seconds",
                              std::chrono::duration<double>(replied - sent).count(),
                              absl::StrCat("call=\"", kind, "\""));
    Metrics::Global().Add("rein_router_calls_total", 1, absl::StrCat("call=\"", kind, "\""));
    Post([this, weak, replied, apply = std::move(apply)] {
      Metrics::Global().Observe("rein_router_queue_seconds", SecondsSince(replied));
      if (std::shared_ptr<Entry> e = weak.lock()) Complete(e, apply);
      CallDone();
    });
  };
  const StageRouter* router = &router_;
  switch (effect.kind) {
    case Effect::Kind::kListTools: {
      // Tools, then (when the executor has file_info) the workspace: two calls, one stage.
      ExecutorClient* executor = executor_;
      rein::v1::ExecuteRequest check = WorkspaceCheck(run_id, run.spec().workspace());
      absl::Time deadline = effect.deadline;
      auto chain = std::make_shared<ChainedCall>();
      entry->call = chain;
      chain->Set(executor_->ListTools(
          deadline, [finish, router, executor, check, deadline,
                     chain](absl::StatusOr<rein::v1::ListToolsResponse> tools) {
            if (!tools.ok() || !HasFileInfo(tools->tools())) {
              finish([router, tools = std::move(tools)](const Run& r, absl::Time t) {
                return router->OnTools(r, tools, std::nullopt, t);
              });
              return;
            }
            chain->Set(executor->Execute(check, deadline,
                                         [finish, router, tools = std::move(tools)](
                                             absl::StatusOr<rein::v1::ExecuteResponse> workspace) {
                                           finish([router, tools, workspace = std::move(workspace)](
                                                      const Run& r, absl::Time t) {
                                             return router->OnTools(r, tools, workspace, t);
                                           });
                                         }));
          }));
      break;
    }
    case Effect::Kind::kPlan:
      entry->call =
          planner_->Plan(effect.plan, effect.deadline,
                         [finish, router](absl::StatusOr<rein::v1::PlanResponse> reply) {
                           finish([router, reply = std::move(reply)](const Run& r, absl::Time t) {
                             return router->OnPlan(r, reply, t);
                           });
                         });
      break;
    case Effect::Kind::kDecide:
      entry->call =
          planner_->Decide(effect.decide, effect.deadline,
                           [finish, router](absl::StatusOr<rein::v1::DecideResponse> reply) {
                             finish([router, reply = std::move(reply)](const Run& r, absl::Time t) {
                               return router->OnDecide(r, reply, t);
                             });
                           });
      break;
    case Effect::Kind::kExecute:
      entry->call = executor_->Execute(
          effect.execute, effect.deadline,
          [finish, router](absl::StatusOr<rein::v1::ExecuteResponse> reply) {
            finish([router, reply = std::move(reply)](const Run& r, absl::Time t) {
              return router->OnExecute(r, reply, t);
            });
          });
      break;
    case Effect::Kind::kEvaluate:
      entry->call = planner_->Evaluate(
          effect.evaluate, effect.deadline,
          [finish, router](absl::StatusOr<rein::v1::EvaluateResponse> reply) {
            finish([router, reply = std::move(reply)](const Run& r, absl::Time t) {
              return router->OnEvaluate(r, reply, t);
            });
          });
      break;
    case Effect::Kind::kNone: break;
  }
}

void RunEngine::Complete(const std::shared_ptr<Entry>& entry,
                         std::function<Transition(const Run&, absl::Time)> apply) {
  {
    absl::MutexLock lock(&entry->mu);
    entry->in_flight = false;
    entry->call.reset();
    absl::Time now = clock_->Now();
    Transition t = apply(entry->run, now);
    bool spent = FailedCall(t);
    if (!dispatching_ && spent && !entry->run.state().cancel_requested()) {
      // Shutting down: a call we cancelled is not the run's failure; it runs again later.
      return;
    }
    absl::Status status = CommitLocked(*entry, std::move(t));
    if (!status.ok()) {
      entry->not_before = now + absl::Seconds(1);
    } else if (spent) {
      entry->failed_attempts++;
      entry->not_before =
          now + std::min(options_.max_retry_backoff,
                         options_.retry_backoff * (1 << std::min(entry->failed_attempts - 1, 10)));
    } else {
      entry->failed_attempts = 0;
      entry->not_before = absl::InfinitePast();
    }
  }
  Advance(entry);
}

absl::StatusOr<std::vector<rein::v1::ToolSpec>> RunEngine::KnownTools() {
  {
    absl::MutexLock lock(&tools_mu_);
    if (!tools_.empty() && clock_->Now() - tools_at_ < options_.tools_cache_ttl) return tools_;
  }
  absl::Notification done;
  absl::StatusOr<rein::v1::ListToolsResponse> result;
  executor_->ListTools(clock_->Now() + options_.list_tools_timeout,
                       [&](absl::StatusOr<rein::v1::ListToolsResponse> reply) {
                         result = std::move(reply);
                         done.Notify();
                       });
  done.WaitForNotification();
  if (!result.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot list tools from an executor: ", result.status().message()));
  }
  absl::MutexLock lock(&tools_mu_);
  tools_.assign(result->tools().begin(), result->tools().end());
  tools_at_ = clock_->Now();
  return tools_;
}

absl::Status RunEngine::CheckWorkspace(const std::string& run_id, const rein::v1::RunSpec& spec,
                                       const std::vector<rein::v1::ToolSpec>& tools) {
  if (!HasFileInfo(tools)) return absl::OkStatus();
  absl::Notification done;
  absl::StatusOr<rein::v1::ExecuteResponse> reply;
  executor_->Execute(WorkspaceCheck(run_id, spec.workspace()),
                     clock_->Now() + options_.list_tools_timeout,
                     [&](absl::StatusOr<rein::v1::ExecuteResponse> r) {
                       reply = std::move(r);
                       done.Notify();
                     });
  done.WaitForNotification();
  if (!reply.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot check spec.workspace on an executor: ", reply.status().message()));
  }
  if (!reply->ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "spec.workspace: workspace \"", spec.workspace(), "\" is not usable on the executors (",
        reply->error().code(), ": ", reply->error().message(), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Run> RunEngine::StartRun(const rein::v1::StartRunRequest& request,
                                        const std::string& principal) {
  if (request.request_id().size() > 128) {
    return absl::InvalidArgumentError("request_id: at most 128 bytes");
  }
  if (!request.has_spec()) return absl::InvalidArgumentError("spec: required");
  if (!dispatching_) return absl::UnavailableError("the router is shutting down");
  absl::StatusOr<std::vector<rein::v1::ToolSpec>> tools = KnownTools();
  if (!tools.ok()) return tools.status();
  absl::StatusOr<rein::v1::RunSpec> spec = NormalizeSpec(request.spec(), *tools);
  if (!spec.ok()) return spec.status();
  const std::string run_id = NewRunId();
  RETURN_IF_ERROR(CheckWorkspace(run_id, *spec, *tools));
  Run run;
  Transition t = router_.NewRun(run_id, request.request_id(), *spec, clock_->Now(), &run);
  SetPrincipal(principal, &t);
  absl::StatusOr<CreateResult> created = store_->CreateRun(run, std::move(t.events));
  if (!created.ok()) return created.status();
  if (!created->created) return created->run;  // the same request_id: the first run
  Metrics::Global().Add("rein_router_runs_started_total", 1);
  LogInfo("run started", {{"run_id", run.run_id()}, {"request_id", run.request_id()}});
  Advance(Track(created->run));
  return created->run;
}

absl::StatusOr<Run> RunEngine::GetRun(const std::string& run_id) {
  RETURN_IF_ERROR(CheckRunId(run_id));
  if (std::shared_ptr<Entry> entry = Find(run_id)) {
    absl::MutexLock lock(&entry->mu);
    return entry->run;
  }
  absl::StatusOr<Run> run = store_->GetRun(run_id);
  if (!run.ok() && absl::IsNotFound(run.status())) {
    return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
  }
  return run;
}

absl::StatusOr<RunPage> RunEngine::ListRuns(const rein::v1::ListRunsRequest& request) {
  if (!rein::v1::Stage_IsValid(request.stage())) {
    return absl::InvalidArgumentError(
        absl::StrCat("stage: unknown stage ", static_cast<int>(request.stage())));
  }
  if (!rein::v1::TerminationReason_IsValid(request.outcome())) {
    return absl::InvalidArgumentError(
        absl::StrCat("outcome: unknown termination reason ", static_cast<int>(request.outcome())));
  }
  if (request.page_size() < 0 || request.page_size() > 1000) {
    return absl::InvalidArgumentError("page_size: must be in [0, 1000] (0 = 50)");
  }
  RunFilter filter;
  filter.stage = request.stage();
  filter.outcome = request.outcome();
  // Every transition is committed before the in-memory view changes, so the store is current.
  return store_->ListRuns(filter, request.page_size() == 0 ? 50 : request.page_size(),
                          request.page_token());
}

absl::StatusOr<Run> RunEngine::CancelRun(const std::string& run_id, const std::string& reason,
                                         const std::string& principal) {
  RETURN_IF_ERROR(CheckRunId(run_id));
  if (reason.size() > 4096) return absl::InvalidArgumentError("reason: at most 4096 bytes");
  std::shared_ptr<Entry> entry = Find(run_id);
  if (!entry) return GetRun(run_id);  // unknown (NOT_FOUND) or already ended
  {
    absl::MutexLock lock(&entry->mu);
    auto t = router_.OnCancel(entry->run, entry->in_flight, reason, clock_->Now());
    if (t.has_value()) {
      SetPrincipal(principal, &*t);
      absl::Status status = CommitLocked(*entry, std::move(*t));
      if (!status.ok()) return status;
    }
    if (entry->in_flight && entry->call) entry->call->Cancel();
    Entry* e = entry.get();
    auto ended = [e]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(e->mu) {
      return StageRouter::IsTerminal(e->run.state().stage());
    };
    clock_->AwaitWithDeadline(&entry->mu, absl::Condition(&ended),
                              clock_->Now() + options_.cancel_wait);
  }
  Advance(entry);
  return GetRun(run_id);
}

absl::StatusOr<Run> RunEngine::ResumeRun(const rein::v1::ResumeRunRequest& request,
                                         const std::string& principal) {
  RETURN_IF_ERROR(CheckRunId(request.run_id()));
  std::shared_ptr<Entry> entry = Find(request.run_id());
  if (!entry) {
    absl::StatusOr<Run> run = GetRun(request.run_id());
    if (!run.ok()) return run.status();
    return absl::FailedPreconditionError(absl::StrCat("run ", request.run_id(), " is ",
                                                      rein::v1::Stage_Name(run->state().stage()),
                                                      ", not PAUSED"));
  }
  Run result;
  {
    absl::MutexLock lock(&entry->mu);
    absl::StatusOr<Transition> t =
        router_.OnReview(entry->run, request.review(), request.expected_version(), clock_->Now());
    if (!t.ok()) return t.status();
    SetPrincipal(principal, &*t);
    absl::Status status = CommitLocked(*entry, std::move(*t));
    if (!status.ok()) return status;
    entry->failed_attempts = 0;
    entry->not_before = absl::InfinitePast();
    result = entry->run;
  }
  Advance(entry);
  return result;
}

absl::StatusOr<std::vector<Snapshot>> RunEngine::ListSnapshots(const std::string& run_id) {
  RETURN_IF_ERROR(CheckRunId(run_id));
  absl::StatusOr<std::vector<Snapshot>> snapshots = store_->ListSnapshots(run_id);
  if (!snapshots.ok() && absl::IsNotFound(snapshots.status())) {
    return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
  }
  return snapshots;
}

absl::StatusOr<std::vector<RunEvent>> RunEngine::WaitEvents(const std::string& run_id,
                                                            int64_t after_seq,
                                                            absl::Duration max_wait, bool* ended) {
  *ended = false;
  RETURN_IF_ERROR(CheckRunId(run_id));
  if (after_seq < 0) return absl::InvalidArgumentError("after_seq: must be >= 0");
  absl::Time until = clock_->Now() + max_wait;
  while (true) {
    // Live watchers are served from the tail in memory when it reaches back far enough.
    EventTail::Read read = tail_.ReadAfter(run_id, after_seq, until);
    switch (read.kind) {
      case EventTail::Read::Kind::kEnded: *ended = true; return std::vector<RunEvent>();
      case EventTail::Read::Kind::kTimedOut: return std::vector<RunEvent>();
      case EventTail::Read::Kind::kEvents: return std::move(read.events);
      case EventTail::Read::Kind::kMiss: break;
    }
    absl::StatusOr<std::vector<RunEvent>> events = store_->ReadEvents(run_id, after_seq, 256);
    if (!events.ok()) {
      if (absl::IsNotFound(events.status())) {
        return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
      }
      return events.status();
    }
    if (!events->empty()) return events;
    if (!Find(run_id)) {
      // Not in memory: ended (or unknown, which ReadEvents reported). Its end may have been
      // committed after the read above, so read once more before saying nothing will come.
      absl::StatusOr<Run> run = GetRun(run_id);
      if (run.ok() && StageRouter::IsTerminal(run->state().stage())) {
        events = store_->ReadEvents(run_id, after_seq, 256);
        if (!events.ok()) return events.status();
        *ended = events->empty();
        return events;
      }
    }
    // Wait for a commit of this run past after_seq.
    if (!tail_.AwaitNewer(run_id, after_seq, until)) return events;
  }
}

int RunEngine::active_runs() {
  absl::MutexLock lock(&runs_mu_);
  return static_cast<int>(runs_.size());
}

int RunEngine::calls_in_flight() { return in_flight_.load(); }

}  // namespace rein
