// CreateFork: the fork a ForkRun asks for, created in the store with its own workspace.
#include "router_service/fork_run.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "common/log.h"
#include "common/proto_time.h"
#include "common/status_macros.h"
#include "common/status_reason.h"
#include "router_service/fork.h"
#include "router_service/spec.h"
#include "trace/run_stretches.h"

namespace rein {
namespace {

using rein::v1::Run;
using rein::v1::RunEvent;

// Removes a workspace CreateFork copied (best effort; logged when it fails).
void DeleteCopiedWorkspace(const ForkContext& ctx, const std::string& name,
                           const std::string& namespace_name) {
  rein::v1::DeleteWorkspaceRequest request;
  request.set_workspace(name);
  request.set_namespace_(namespace_name);
  absl::Notification done;
  absl::Status status;
  ctx.executor->DeleteWorkspace(request, ctx.clock->Now() + ctx.copy_timeout,
                                [&](absl::StatusOr<rein::v1::DeleteWorkspaceResponse> r) {
                                  status = r.status();
                                  done.Notify();
                                });
  done.WaitForNotification();
  if (!status.ok()) {
    LogError("cannot delete a copied workspace",
             {{"workspace", name}, {"error", status.ToString()}});
  }
}

}  // namespace

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

absl::StatusOr<CreateResult> CreateFork(const ForkContext& ctx,
                                        const rein::v1::ForkRunRequest& request, const Run& source,
                                        const std::string& principal) {
  ASSIGN_OR_RETURN(std::vector<RunEvent> events, ctx.store->ReadEvents(source.run_id(), 0, 0));
  ASSIGN_OR_RETURN(std::vector<Snapshot> snapshots, ctx.store->ListSnapshots(source.run_id()));
  ASSIGN_OR_RETURN(ForkPoint point, FindForkPoint(*ctx.router, source, events, snapshots, request));

  rein::v1::RunSpec spec = source.spec();
  if (request.edits().has_limits()) {
    // The fields given override the source's; the others stay as the source had them. An
    // error names the edit's field (edits.limits...), where the caller can fix it.
    spec.mutable_limits()->MergeFrom(request.edits().limits());
    RETURN_IF_ERROR(NormalizeLimits(spec.mutable_limits(), "edits.limits"));
  }
  // A fork counts in its namespace's day only what it spends after the point (RunState.
  // inherited_tokens): its budgets may reach what it inherits plus what the day has left.
  rein::v1::Limits* limits = spec.mutable_limits();
  if (ctx.day_left.token_budget() > 0) {
    const int64_t cap = point.state.tokens_used() + ctx.day_left.token_budget();
    if (limits->token_budget() <= 0 || limits->token_budget() > cap) limits->set_token_budget(cap);
  }
  if (ctx.day_left.cost_budget_usd() > 0) {
    const double cap = point.state.cost_used_usd() + ctx.day_left.cost_budget_usd();
    if (limits->cost_budget_usd() <= 0 || limits->cost_budget_usd() > cap) {
      limits->set_cost_budget_usd(cap);
    }
  }
  // A budget the edits set is named there; one the fork inherits, in the source's spec.
  RETURN_IF_ERROR(CheckCostBudget(spec, ctx.router->options().prices.get(),
                                  request.edits().limits().cost_budget_usd() != 0
                                      ? "edits.limits.cost_budget_usd"
                                      : "spec.limits.cost_budget_usd"));
  if (spec.notify_size() > 0) {
    const absl::Status allowed =
        ctx.check_notify ? ctx.check_notify(spec)
                         : absl::InvalidArgumentError("spec.notify: no URL is allowed here");
    if (!allowed.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the source run's ", allowed.message(),
                       "; a fork keeps its source's notify, so it cannot be forked here"));
    }
  }
  const std::string run_id = NewRunId();
  const std::string source_workspace = source.spec().workspace();
  spec.set_workspace(absl::StrCat(source_workspace.substr(0, 200), "-", run_id));
  const absl::Time now = ctx.clock->Now();
  Run fork;
  fork.set_run_id(run_id);
  fork.set_request_id(request.request_id());
  *fork.mutable_spec() = spec;
  *fork.mutable_created_at() = ToProtoTime(now);
  *fork.mutable_updated_at() = ToProtoTime(now);
  *fork.mutable_state() = point.state;
  ASSIGN_OR_RETURN(Transition t, ctx.router->Fork(fork, point.from, request.edits(),
                                                  request.workspace_at_fork(), now));
  *fork.mutable_state() = t.state;
  // A fork is a new trace, linked to its source's newest stretch.
  const rein::v1::RunTrace& from = source.state().trace();
  std::optional<trace::SpanContext> source_span = trace::ContextFromHex(
      from.trace_id(),
      from.last_stretch_span_id().empty() ? from.root_span_id() : from.last_stretch_span_id());
  trace::InitRunTrace(fork.mutable_state(), source_span ? &*source_span : nullptr);
  SetPrincipal(principal, &t);
  fork.set_owner(ctx.router_id);  // the router that accepted ForkRun drives the fork
  fork.set_lease_epoch(1);

  rein::v1::CopyWorkspaceRequest copy;
  copy.set_workspace(source_workspace);
  copy.set_run_id(source.run_id());
  if (request.workspace_at_fork()) copy.set_before_call(point.first_mutating_call_after);
  copy.set_target(spec.workspace());
  copy.set_namespace_(spec.namespace_());
  absl::Notification copied;
  absl::StatusOr<rein::v1::CopyWorkspaceResponse> reply;
  ctx.executor->CopyWorkspace(copy, std::min(ctx.deadline, now + ctx.copy_timeout),
                              [&](absl::StatusOr<rein::v1::CopyWorkspaceResponse> r) {
                                reply = std::move(r);
                                copied.Notify();
                              });
  copied.WaitForNotification();
  if (!reply.ok()) {
    const absl::Status& status = reply.status();
    if (absl::IsDeadlineExceeded(status) && ctx.clock->Now() >= ctx.deadline) {
      // The caller's deadline (not the copy's own timeout): the copy may have been made
      // meanwhile. It is removed without waiting, so that the caller hears in time.
      rein::v1::DeleteWorkspaceRequest remove;
      remove.set_workspace(spec.workspace());
      ctx.executor->DeleteWorkspace(
          remove, ctx.clock->Now() + ctx.copy_timeout,
          [name = spec.workspace()](absl::StatusOr<rein::v1::DeleteWorkspaceResponse> r) {
            if (!r.ok()) {
              LogError("cannot delete a copied workspace",
                       {{"workspace", name}, {"error", r.status().ToString()}});
            }
          });
      return absl::DeadlineExceededError(absl::StrCat(
          "the deadline passed while the executors copied the workspace: ", status.message()));
    }
    switch (status.code()) {
      case absl::StatusCode::kFailedPrecondition:
        if (HasReason(status, reason::kSnapshotMissing)) {
          return absl::FailedPreconditionError(absl::StrCat(
              "workspace_at_fork: the executors' workspace history no longer holds run ",
              source.run_id(), "'s workspace at that point: ", status.message()));
        }
        return absl::FailedPreconditionError(
            absl::StrCat("workspace: cannot copy the source's workspace: ", status.message()));
      case absl::StatusCode::kNotFound:
        return absl::FailedPreconditionError(
            absl::StrCat("workspace: the source's workspace \"", source_workspace,
                         "\" no longer exists on the executors (", status.message(), ")"));
      case absl::StatusCode::kUnimplemented:
        return absl::FailedPreconditionError(
            absl::StrCat("workspace: the executors cannot copy workspaces (", status.message(),
                         "); update them to fork runs"));
      default:
        return absl::UnavailableError(
            absl::StrCat("cannot copy the source's workspace on an executor: ", status.message()));
    }
  }
  absl::StatusOr<CreateResult> created = ctx.writer->Create(fork, std::move(t.events));
  if (!created.ok() || !created->created)
    DeleteCopiedWorkspace(ctx, spec.workspace(), spec.namespace_());
  if (!created.ok()) return created.status();
  if (created->created) {
    LogInfo("run forked", {{"run_id", run_id},
                           {"trace_id", fork.state().trace().trace_id()},
                           {"source", source.run_id()},
                           {"seq", absl::StrCat(point.from.seq())},
                           {"workspace", spec.workspace()},
                           {"copied_bytes", absl::StrCat(reply->bytes())}});
  }
  return created;
}

}  // namespace rein
