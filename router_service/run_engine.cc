// RunEngine: drives many runs at once through StageRouter, the clients and the RunStore.
#include "router_service/run_engine.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/proto_time.h"
#include "common/status_macros.h"
#include "common/status_reason.h"
#include "router_service/deferred_wakes.h"
#include "router_service/event_reads.h"
#include "router_service/fork_run.h"
#include "router_service/run_log.h"
#include "router_service/spec.h"
#include "router_service/stage_calls.h"
#include "trace/tracer.h"

namespace rein {

using rein::v1::Run;
using rein::v1::RunEvent;

namespace {

absl::Status DeadlineWaitingFor(const std::string& run_id) {
  return absl::DeadlineExceededError(absl::StrCat(
      "the deadline passed while run ", run_id, "'s last commit was being written; nothing done"));
}

}  // namespace

RunEngine::RunEngine(RouterStore* store, PlannerClient* planner, ExecutorClient* executor,
                     Clock* clock, RunEngineOptions options)
    : store_(store),
      writer_(store, options.group_commit, clock),
      planner_(planner),
      executor_(executor),
      clock_(clock),
      options_(options),
      router_(options.stage),
      children_(store, &router_, clock, options.router_id, &runs_, &pool_,
                ChildDriver::Hooks{
                    ChildRunner::Hooks{
                        [] { return NewRunId(); },
                        [this](const Run& child) { Advance(Track(child)); },
                        [this](const std::string& run_id, const std::string& reason) {
                          absl::StatusOr<Run> r =
                              CancelRun(run_id, reason, "", absl::InfiniteFuture(), /*wait=*/false);
                          if (!r.ok()) {
                            LogError("cannot cancel a child run",
                                     {{"run_id", run_id}, {"error", r.status().ToString()}});
                          }
                        },
                        options.admit_child,
                    },
                    [this](const std::shared_ptr<Entry>& parent, const StageReply& reply) {
                      if (parent) Complete(parent, reply);
                      CallDone();
                    },
                    [this](const std::shared_ptr<Entry>& entry) { Advance(entry); },
                }),
      pool_(options.inline_replies),
      calls_(planner, executor, options.calls),
      tools_(executor, clock, options.tools_cache_ttl, options.list_tools_timeout),
      scheduler_(clock,
                 [this](const std::string& run_id) {
                   std::shared_ptr<Entry> entry = Find(run_id);
                   pool_.Post([this, run_id] { Wake(run_id); }, entry ? entry->share : "");
                 }),
      tail_(clock),
      fleet_(store, &writer_, &router_, clock, options.router_id, options.lease_ttl,
             options.cancel_wait,
             FleetMember::Hooks{
                 [this] { return dispatching_.load(); },
                 [this] { DropAll("lease lapsed"); },
                 // On a worker, in the order claimed: a recovery commits, and the lease thread
                 // renews the lease.
                 [this](const Run& run) {
                   pool_.Post([this, run] { Recover(run); }, run.spec().namespace_());
                 },
                 [this](std::map<std::string, int64_t> owned) { CheckOwned(std::move(owned)); },
             }) {}

RunEngine::~RunEngine() { Shutdown(absl::ZeroDuration()); }

absl::Status RunEngine::Start() {
  RETURN_IF_ERROR(fleet_.Join());
  pool_.Start(options_.workers);
  scheduler_.Start();
  if (fleet_.shared()) {
    store_->SubscribeCommits([this](const CommitNotice& notice) { OnCommitNotice(notice); });
  }
  ASSIGN_OR_RETURN(std::vector<Run> runs, fleet_.RunsToRecover());
  for (const Run& run : runs) Recover(run);
  fleet_.Start();
  if (!runs.empty()) LogInfo(absl::StrCat("recovered ", runs.size(), " unfinished runs"));
  return absl::OkStatus();
}

void RunEngine::Recover(const Run& run) {
  const std::string& id = run.run_id();
  if (std::shared_ptr<Entry> old = Find(id)) {
    absl::MutexLock lock(&old->mu);
    AwaitSettledLocked(*old);
    DropLocked(old, "taken back at a new epoch");
  }
  // Nothing to commit first: a call that was sent is asked again with the same call_id, a
  // mutating one included, and the executors' call journal answers it (StageRouter::OnExecute).
  Advance(Track(run));
}

void RunEngine::DropLocked(const std::shared_ptr<Entry>& entry, const std::string& why) {
  entry->dropped = true;
  if (entry->call) entry->call->Cancel();
  const std::string run_id = entry->run.run_id();
  runs_.Remove(run_id, entry);
  tail_.Forget(run_id);
  trace_.Abandon(run_id, why);
  Metrics::Global().Add("rein_router_runs_dropped_total", 1);
  LogInfo("run dropped",
          {{"run_id", run_id}, {"trace_id", entry->run.state().trace().trace_id()}, {"why", why}});
}

void RunEngine::Refresh(const std::string& run_id) {
  std::shared_ptr<Entry> entry = Find(run_id);
  if (!entry) return;
  absl::StatusOr<Run> fresh = store_->GetRun(run_id);
  if (!fresh.ok()) return;  // the next round or notice tries again
  {
    absl::MutexLock lock(&entry->mu);
    AwaitSettledLocked(*entry);
    if (entry->dropped) return;
    if (!fleet_.StillMine(*fresh, entry->run.lease_epoch())) {
      DropLocked(entry,
                 absl::StrCat("owned by ", fresh->owner(), " at epoch ", fresh->lease_epoch()));
      return;
    }
    if (fresh->state().version() <= entry->run.state().version()) return;
    if (entry->in_flight) {
      // The call's result will meet the newer version and re-read; a cancel stops it now.
      if (fresh->state().cancel_requested() && entry->call) entry->call->Cancel();
      return;
    }
    entry->run = *std::move(fresh);
    entry->failed_attempts = 0;
    entry->not_before = absl::InfinitePast();
  }
  Advance(entry);
}

void RunEngine::OnCommitNotice(const CommitNotice& notice) {
  tail_.NoteRemote(notice.run_id, notice.last_seq, notice.ended);
  if (Find(notice.run_id)) pool_.Post([this, id = notice.run_id] { Refresh(id); });
}

void RunEngine::DropAll(const std::string& why) {
  for (auto& [id, entry] : runs_.All()) {
    absl::MutexLock lock(&entry->mu);
    AwaitSettledLocked(*entry);
    if (!entry->dropped) DropLocked(entry, why);
  }
}

void RunEngine::CheckOwned(std::map<std::string, int64_t> owned) {
  // Compared on a worker: a run's mutex is held while its commit waits for the store, and the
  // lease thread must be back in time for the next renewal however busy the store is.
  pool_.Post([this, owned = std::move(owned)] {
    for (auto& [id, entry] : runs_.All()) {
      int64_t version;
      {
        absl::MutexLock lock(&entry->mu);
        AwaitSettledLocked(*entry);
        version = entry->run.state().version();
      }
      auto it = owned.find(id);
      if (it == owned.end() || it->second > version) pool_.Post([this, id = id] { Refresh(id); });
    }
  });
}

void RunEngine::StopDispatching() {
  dispatching_ = false;
  calls_.Stop();  // calls waiting for a slot are answered CANCELLED, unsent
}

void RunEngine::Shutdown(absl::Duration grace) {
  StopDispatching();
  fleet_.Stop();
  auto idle = [this]() { return in_flight_.load() == 0; };
  {
    absl::MutexLock lock(&flight_mu_);
    clock_->AwaitWithDeadline(&flight_mu_, absl::Condition(&idle), clock_->Now() + grace);
  }
  if (in_flight_.load() > 0) {
    for (auto& [id, entry] : runs_.All()) {
      absl::MutexLock entry_lock(&entry->mu);
      AwaitSettledLocked(*entry);
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
  const bool started = pool_.Stop();
  scheduler_.Stop();
  // Let the other routers take this router's runs now rather than after its lease.
  if (started) fleet_.Leave();
}

std::shared_ptr<RunEngine::Entry> RunEngine::Find(const std::string& run_id) {
  return runs_.Find(run_id);
}

std::shared_ptr<RunEngine::Entry> RunEngine::Track(const Run& run) { return runs_.Track(run); }

bool RunEngine::AwaitSettledLocked(Entry& entry, absl::Time deadline) {
  Entry* e = &entry;
  auto settled = [e]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(e->mu) { return !e->committing; };
  if (deadline == absl::InfiniteFuture()) {
    entry.mu.Await(absl::Condition(&settled));
    return true;
  }
  return clock_->AwaitWithDeadline(&entry.mu, absl::Condition(&settled), deadline);
}

absl::Status RunEngine::CommitLocked(Entry& entry, Transition t, absl::Time deadline) {
  Run& run = entry.run;
  absl::Time now = clock_->Now();
  // Grouped with the commits of other runs ready at the same time; returns once this one is
  // durable (or failed), so nothing below runs before the commit. Meanwhile the run's mutex is
  // free for readers (GetRun sees the state before), and whatever would act on the run waits
  // for `committing` to clear (AwaitSettledLocked). Real elapsed time, for the trace.
  const auto started = trace_.BeginCommit(run.run_id(), &t.state);
  entry.committing = true;
  entry.mu.Unlock();
  absl::StatusOr<std::vector<RunEvent>> stored = writer_.Commit(
      run, /*owned=*/true, t.state, std::move(t.events), std::move(t.snapshot), now, deadline);
  entry.mu.Lock();
  entry.committing = false;
  const double commit_seconds = SecondsSince(started);
  if (!stored.ok()) {
    if (HasReason(stored.status(), reason::kLeaseLost)) {
      // Another router owns the run now: it is theirs to drive; nothing was written.
      if (std::shared_ptr<Entry> self = Find(run.run_id()); self.get() == &entry) {
        DropLocked(self, std::string(stored.status().message()));
      } else {
        entry.dropped = true;
      }
      return stored.status();
    }
    if (absl::IsFailedPrecondition(stored.status())) {
      // Someone else wrote this run (a review or cancel through another router): take its
      // state, unless the run has changed hands.
      absl::StatusOr<Run> fresh = store_->GetRun(run.run_id());
      if (fresh.ok() && !fleet_.StillMine(*fresh, run.lease_epoch())) {
        if (std::shared_ptr<Entry> self = Find(run.run_id()); self.get() == &entry) {
          DropLocked(self, "owned by another router");
        } else {
          entry.dropped = true;
        }
      } else if (fresh.ok()) {
        run = *std::move(fresh);
        // Whoever called may not advance the run after a failure (a stale review): make sure
        // the newer state is acted on.
        pool_.Post([this, id = run.run_id()] { Wake(id); }, run.spec().namespace_());
      }
    }
    return stored.status();
  }
  rein::v1::Stage before = run.state().stage();
  *run.mutable_state() = std::move(t.state);  // t.state holds the state before now
  StageRouter::Recycle(std::move(t.state));
  *run.mutable_updated_at() = ToProtoTime(now);
  trace_.Committed(run.run_id(), run.state(), commit_seconds);
  Metrics::Global().Add("rein_router_transitions_total", 1);
  LogCommitted(run, before, *stored);
  if (t.forget_run.has_value()) {
    // The executors' call journal of the run can go (best effort, after the commit: a run
    // the executors never hear about is swept by age, --journal_retention).
    executor_->ForgetRun(*t.forget_run, now + options_.list_tools_timeout,
                         [run_id = run.run_id()](absl::StatusOr<rein::v1::ForgetRunResponse> r) {
                           if (!r.ok() && !absl::IsUnimplemented(r.status())) {
                             LogInfo("ForgetRun failed; the executors sweep it by age",
                                     {{"run_id", run_id}, {"error", r.status().ToString()}});
                           }
                         });
  }
  tail_.Append(run.run_id(), *stored, StageRouter::IsTerminal(run.state().stage()),
               DeferredWakes::Current());
  children_.Committed(run);
  return absl::OkStatus();
}

void RunEngine::CallDone() {
  absl::MutexLock lock(&flight_mu_);
  in_flight_.fetch_sub(1);
}

void RunEngine::Wake(const std::string& run_id) {
  if (std::shared_ptr<Entry> entry = Find(run_id)) Advance(entry);
}

void RunEngine::Advance(const std::shared_ptr<Entry>& entry) {
  absl::MutexLock lock(&entry->mu);
  AwaitSettledLocked(*entry);
  if (entry->in_flight || entry->dropped) return;
  const std::string run_id = entry->run.run_id();
  while (true) {
    const absl::Time now = clock_->Now();
    NextStep next = router_.Next(entry->run, now, entry->not_before);
    if (next.kind == NextStep::Kind::kEnded) {
      runs_.Forget(run_id);
      return;
    }
    if (!dispatching_) return;
    switch (next.kind) {
      case NextStep::Kind::kEnded:  // handled above, before the dispatching check
      case NextStep::Kind::kIdle: return;
      case NextStep::Kind::kWaitUntil: scheduler_.WakeAt(next.until, run_id); return;
      case NextStep::Kind::kCommit:
        if (next.transition->dispatches_mutating_call && !fleet_.Allows(/*mutating=*/true)) {
          // About to send a mutating call on a lease too old to be sure of: wait for renewal.
          scheduler_.WakeAt(now + fleet_.retry_interval(), run_id);
          return;
        }
        if (!CommitLocked(*entry, std::move(*next.transition)).ok()) {
          if (entry->dropped) return;
          entry->not_before = now + absl::Seconds(1);
          scheduler_.WakeAt(entry->not_before, run_id);
          return;
        }
        break;  // ask again
      case NextStep::Kind::kCall:
        if (!fleet_.Allows(next.effect.mutating)) {
          scheduler_.WakeAt(now + fleet_.retry_interval(), run_id);
          return;
        }
        Dispatch(entry, next.effect);
        return;
    }
  }
}

void RunEngine::Dispatch(const std::shared_ptr<Entry>& entry, const Effect& effect) {
  entry->in_flight = true;
  in_flight_.fetch_add(1);
  if (effect.kind == Effect::Kind::kChildren) {  // a WAITING parent's (ChildDriver)
    children_.Dispatch(entry, effect.children);
    return;
  }
  std::weak_ptr<Entry> weak = entry;
  const auto sent = std::chrono::steady_clock::now();  // latency metrics: real time
  const std::string* label = &CallLabel(effect.kind);
  // The call runs in the run's trace: it carries the open stretch as its traceparent.
  trace::ScopedContext trace_scope(
      trace_.BeginCall(entry->run.run_id(), entry->run.mutable_state()));
  auto finish = [this, weak, sent, label, run_id = entry->run.run_id(),
                 share = entry->share](StageReply reply) {
    const auto replied = std::chrono::steady_clock::now();
    Metrics::Global().Observe("rein_router_call_seconds",
                              std::chrono::duration<double>(replied - sent).count(), *label);
    Metrics::Global().Add("rein_router_calls_total", 1, *label);
    // Declared first, so the watchers are woken after EndInline: the run's next reply, which
    // may arrive on another callback thread while they are being written to, is applied there
    // and then, not handed to a worker because this thread still counted as applying one.
    DeferredWakes defer;
    if (pool_.BeginInline()) {
      // Applied here, on the thread that received the reply: no hand-off to a worker (the
      // thread hop and its futex wake-up were the largest cost of an iteration). Not when the
      // run's mutex is taken: this thread may be the one holding it (a client that runs the
      // callback inside Dispatch or Cancel), or another is busy with the run.
      std::shared_ptr<Entry> e = weak.lock();
      const bool applied = e == nullptr || Complete(e, reply, /*only_if_free=*/true);
      pool_.EndInline();
      if (!applied) Metrics::Global().Add("rein_router_replies_queued_total", 1, "why=\"locked\"");
      if (applied) {
        trace_.Queued(run_id, replied);
        CallDone();
        return;
      }
    }
    pool_.Post(
        [this, weak, replied, run_id, reply = std::move(reply)] {
          trace_.Queued(run_id, replied);
          if (std::shared_ptr<Entry> e = weak.lock()) Complete(e, reply);
          CallDone();
        },
        share);
  };
  entry->call = calls_.Send(entry->share, effect, std::move(finish));
}

bool RunEngine::Complete(const std::shared_ptr<Entry>& entry, const StageReply& reply,
                         bool only_if_free) {
  if (only_if_free) {
    if (!entry->mu.TryLock()) return false;
    if (entry->committing) {  // busy with a commit (a cancel's, while this call ran)
      entry->mu.Unlock();
      return false;
    }
  } else {
    entry->mu.Lock();
    AwaitSettledLocked(*entry);
  }
  // The run's watchers are woken once its next call is on its way, not before.
  DeferredWakes defer;
  const bool advance = ApplyLocked(entry, reply);
  entry->mu.Unlock();
  if (advance) Advance(entry);
  return true;
}

bool RunEngine::ApplyLocked(const std::shared_ptr<Entry>& self, const StageReply& reply) {
  Entry& entry = *self;
  entry.in_flight = false;
  entry.call.reset();
  if (entry.dropped) return false;  // another router drives the run now
  absl::Time now = clock_->Now();
  Applied applied = router_.Apply(entry.run, reply, now);
  if (applied.call.has_value()) {
    // The stage's next call, before anything is committed (INITIALIZING's workspace check).
    if (!dispatching_) return false;  // made again after the next start
    Dispatch(self, *applied.call);
    return false;
  }
  if (!applied.transition.has_value()) {
    // A WAITING parent whose children have not moved: read them again after the poll.
    entry.not_before = now + options_.child_poll;
    return true;
  }
  Transition t = std::move(*applied.transition);
  const bool spent = t.attempt_failed;
  // Shutting down: a call we cancelled is not the run's failure; it runs again later.
  if (!dispatching_ && t.void_when_stopping) return false;
  absl::Status status = CommitLocked(entry, std::move(t));
  if (entry.dropped) return false;
  if (!status.ok()) {
    entry.not_before = now + absl::Seconds(1);
  } else if (spent) {
    entry.failed_attempts++;
    entry.not_before =
        now + std::min(options_.max_retry_backoff,
                       options_.retry_backoff * (1 << std::min(entry.failed_attempts - 1, 10)));
  } else {
    entry.failed_attempts = 0;
    entry.not_before = absl::InfinitePast();
  }
  return true;
}

absl::StatusOr<Run> RunEngine::StartRun(const rein::v1::StartRunRequest& request,
                                        const std::string& principal, absl::Time deadline,
                                        bool* created_out) {
  RETURN_IF_ERROR(CheckStartRun(request));
  if (!dispatching_) return absl::UnavailableError("the router is shutting down");
  if (!fleet_.Allows(/*mutating=*/false)) {
    return absl::UnavailableError(
        "this router cannot renew its lease on the store; start the run on another router");
  }
  absl::StatusOr<std::vector<rein::v1::ToolSpec>> tools =
      tools_.Tools(request.spec().namespace_(), deadline);
  if (!tools.ok()) return tools.status();
  absl::StatusOr<rein::v1::RunSpec> spec = NormalizeSpec(request.spec(), *tools);
  if (!spec.ok()) return spec.status();
  RETURN_IF_ERROR(CheckCostBudget(*spec, options_.stage.prices.get()));
  if (options_.check_notify) {
    RETURN_IF_ERROR(options_.check_notify(*spec));
  } else if (spec->notify_size() > 0) {
    return absl::InvalidArgumentError(
        "spec.notify: this router allows no webhook URLs "
        "(--webhook_allow)");
  }
  const std::string run_id = NewRunId();
  RETURN_IF_ERROR(
      tools_.CheckWorkspace(run_id, spec->workspace(), *tools, spec->namespace_(), deadline));
  Run run;
  Transition t = router_.NewRun(run_id, request.request_id(), *spec, clock_->Now(), &run);
  // A new trace; the caller's traceparent (router_grpc's scope), when valid, is a link.
  RunTrace::NewRun(run.mutable_state());
  run.set_owner(options_.router_id);  // the router that accepted StartRun drives the run
  run.set_lease_epoch(1);
  SetPrincipal(principal, &t);
  absl::StatusOr<CreateResult> created = writer_.Create(run, std::move(t.events));
  if (!created.ok()) return created.status();
  if (created_out != nullptr) *created_out = created->created;
  if (!created->created) return created->run;  // the same request_id: the first run
  Metrics::Global().Add("rein_router_runs_started_total", 1);
  LogInfo("run started", {{"run_id", run.run_id()},
                          {"request_id", run.request_id()},
                          {"trace_id", run.state().trace().trace_id()}});
  Advance(Track(created->run));
  return created->run;
}

absl::StatusOr<Run> RunEngine::ForkRun(const rein::v1::ForkRunRequest& request,
                                       const std::string& principal, absl::Time deadline,
                                       bool* created_out, const rein::v1::Limits& day_left) {
  RETURN_IF_ERROR(CheckForkRun(request));
  if (!dispatching_) return absl::UnavailableError("the router is shutting down");
  // Forking only reads what the source has committed, so a running source is allowed: the
  // fork starts from a committed point and the source goes on untouched.
  ASSIGN_OR_RETURN(Run source, GetRun(request.run_id()));
  ForkContext ctx{store_,
                  &writer_,
                  &router_,
                  executor_,
                  clock_,
                  options_.router_id,
                  options_.workspace_copy_timeout,
                  deadline,
                  options_.check_notify,
                  day_left};
  ASSIGN_OR_RETURN(CreateResult created, CreateFork(ctx, request, source, principal));
  if (created_out != nullptr) *created_out = created.created;
  if (!created.created) return created.run;  // the same request_id: the first fork
  Metrics::Global().Add("rein_router_runs_forked_total", 1);
  Advance(Track(created.run));
  return created.run;
}

absl::StatusOr<Run> RunEngine::GetRun(const std::string& run_id, bool* from_store,
                                      bool with_children) {
  RETURN_IF_ERROR(CheckRunId(run_id));
  absl::StatusOr<Run> run;
  std::shared_ptr<Entry> entry = Find(run_id);
  if (entry) {
    absl::MutexLock lock(&entry->mu);
    run = entry->run;
  } else {
    run = store_->GetRun(run_id);
  }
  if (from_store != nullptr) *from_store = entry == nullptr;
  if (!run.ok() && absl::IsNotFound(run.status())) {
    return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
  }
  if (run.ok() && with_children) children_.FillChildren(&*run);
  return run;
}

absl::StatusOr<RunPage> RunEngine::ListRuns(const rein::v1::ListRunsRequest& request) {
  RETURN_IF_ERROR(CheckListRuns(request));
  if (!request.parent_run_id().empty()) {
    RETURN_IF_ERROR(CheckRunId(request.parent_run_id()));
    return children_.ListChildren(request.parent_run_id(), request.namespace_());
  }
  RunFilter filter;
  filter.stage = request.stage();
  filter.outcome = request.outcome();
  filter.namespace_name = request.namespace_();  // RouterApi scopes it to the caller's
  // Every transition is committed before the in-memory view changes, so the store is current.
  return store_->ListRuns(filter, request.page_size() == 0 ? 50 : request.page_size(),
                          request.page_token());
}

absl::StatusOr<Run> RunEngine::CancelRun(const std::string& run_id, const std::string& reason,
                                         const std::string& principal, absl::Time deadline,
                                         bool wait) {
  RETURN_IF_ERROR(CheckRunId(run_id));
  if (reason.size() > 4096) return absl::InvalidArgumentError("reason: at most 4096 bytes");
  std::shared_ptr<Entry> entry = Find(run_id);
  if (!entry && fleet_.shared()) return fleet_.Cancel(run_id, reason, principal, deadline);
  if (!entry) return GetRun(run_id);  // unknown (NOT_FOUND) or already ended
  bool lost = false;                  // the run changed hands: cancel it through the store instead
  bool waiting = false;               // a WAITING parent: it ends after its children, once advanced
  do {
    absl::MutexLock lock(&entry->mu);
    if (!AwaitSettledLocked(*entry, deadline)) return DeadlineWaitingFor(run_id);
    auto t = router_.OnCancel(entry->run, entry->in_flight, reason, clock_->Now());
    if (t.has_value()) {
      SetPrincipal(principal, &*t);
      absl::Status status = CommitLocked(*entry, std::move(*t), deadline);
      if (entry->dropped) lost = true;
      if (!status.ok() && !lost) return status;
    }
    if (lost) break;
    if (entry->in_flight && entry->call) entry->call->Cancel();
    waiting = entry->run.state().stage() == rein::v1::WAITING;
    if (waiting) entry->not_before = absl::InfinitePast();
    if (waiting || !wait) break;
    AwaitEndLocked(*entry, deadline);
  } while (false);
  if (lost) return fleet_.Cancel(run_id, reason, principal, deadline);
  // On a worker: advancing may commit, and this caller's deadline does not wait for the store.
  pool_.Post([this, entry] { Advance(entry); });
  if (waiting && wait) {  // a WAITING parent ends once its children have
    absl::MutexLock lock(&entry->mu);
    AwaitEndLocked(*entry, deadline);
  }
  return GetRun(run_id);
}

void RunEngine::AwaitEndLocked(Entry& entry, absl::Time deadline) {
  Entry* e = &entry;
  auto ended = [e]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(e->mu) {
    return StageRouter::IsTerminal(e->run.state().stage());
  };
  clock_->AwaitWithDeadline(&entry.mu, absl::Condition(&ended),
                            std::min(deadline, clock_->Now() + options_.cancel_wait));
}

absl::StatusOr<Run> RunEngine::ResumeRun(const rein::v1::ResumeRunRequest& request,
                                         const std::string& principal, absl::Time deadline) {
  RETURN_IF_ERROR(CheckRunId(request.run_id()));
  std::shared_ptr<Entry> entry = Find(request.run_id());
  if (!entry && fleet_.shared()) return fleet_.Resume(request, principal, deadline);
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
    if (!AwaitSettledLocked(*entry, deadline)) return DeadlineWaitingFor(request.run_id());
    absl::StatusOr<Transition> t =
        router_.OnReview(entry->run, request.review(), request.expected_version(), clock_->Now());
    if (!t.ok()) return t.status();
    SetPrincipal(principal, &*t);
    absl::Status status = CommitLocked(*entry, std::move(*t), deadline);
    if (entry->dropped) return fleet_.Resume(request, principal, deadline);
    if (!status.ok()) return status;
    entry->failed_attempts = 0;
    entry->not_before = absl::InfinitePast();
    result = entry->run;
  }
  pool_.Post([this, entry] { Advance(entry); });  // as CancelRun does
  return result;
}

absl::StatusOr<std::vector<Snapshot>> RunEngine::ListSnapshots(const std::string& run_id,
                                                               int64_t after_version, int limit) {
  RETURN_IF_ERROR(CheckRunId(run_id));
  absl::StatusOr<std::vector<Snapshot>> snapshots =
      store_->ListSnapshotsAfter(run_id, after_version, limit);
  if (!snapshots.ok() && absl::IsNotFound(snapshots.status())) {
    return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
  }
  return snapshots;
}

EventReadContext RunEngine::EventReads() {
  return {store_, &tail_, fleet_.shared(), [this](const std::string& id) { return !!Find(id); }};
}

absl::StatusOr<std::vector<RunEvent>> RunEngine::WaitEvents(const std::string& run_id,
                                                            int64_t after_seq,
                                                            absl::Duration max_wait, bool* ended) {
  return ReadEventsUntil(EventReads(), run_id, after_seq, clock_->Now() + max_wait, ended);
}

absl::StatusOr<std::vector<RunEvent>> RunEngine::ReadEventsNow(const std::string& run_id,
                                                               int64_t after_seq, bool* ended) {
  // A deadline already past: every wait below returns at once.
  return ReadEventsUntil(EventReads(), run_id, after_seq, absl::InfinitePast(), ended);
}

uint64_t RunEngine::SubscribeEvents(const std::string& run_id, int64_t after_seq,
                                    std::function<void()> wake, bool* recheck) {
  *recheck = fleet_.shared() && !Find(run_id);
  return tail_.Subscribe(run_id, after_seq, std::move(wake));
}

void RunEngine::UnsubscribeEvents(const std::string& run_id, uint64_t id) {
  tail_.Unsubscribe(run_id, id);
}

int RunEngine::active_runs() { return runs_.size(); }

int RunEngine::calls_in_flight() { return in_flight_.load(); }

}  // namespace rein
