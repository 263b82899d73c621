// The Router's public calls and their checks.
#include "router_service/service/router_api.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/limits.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "router_service/notify/notice_view.h"
#include "router_service/notify/webhook_config.h"

namespace rein {
namespace {

absl::Status CheckRole(const Caller& caller, const char* method) {
  if ((RolesAllowedFor(method) & caller.roles) != 0) return absl::OkStatus();
  Metrics::Global().Add("rein_router_auth_failures_total", 1, "reason=\"permission_denied\"");
  return absl::PermissionDeniedError("the caller's roles do not allow this call");
}

// A run as replies show it: its webhook URLs cut to their origins (docs/WEBHOOKS.md), for
// every caller; the store keeps them whole, so forks and notices use the real ones.
absl::StatusOr<rein::v1::Run> Shown(absl::StatusOr<rein::v1::Run> run) {
  if (run.ok()) RedactNotify(run->mutable_spec());
  return run;
}

// What a run's namespace is stored as: "" for `default`, so that a router without namespaces
// keeps its runs as before.
std::string Stored(const std::string& ns) { return ns == kDefaultNamespace ? "" : ns; }

}  // namespace

absl::StatusOr<std::string> RouterApi::NamedNamespace(const Caller& caller,
                                                      const std::string& named, const char* field) {
  if (named.empty()) return caller.namespace_name;
  RETURN_IF_ERROR(CheckNamespaceName(named, field));
  if (named != caller.namespace_name && !caller.spans_namespaces()) {
    return absl::PermissionDeniedError(absl::StrCat(field, ": the caller acts in namespace ",
                                                    caller.namespace_name, " only, not ", named));
  }
  return named;
}

absl::StatusOr<rein::v1::Run> RouterApi::VisibleRun(const Caller& caller,
                                                    const std::string& run_id) {
  bool from_store = false;
  // The children are read once the run is known to be the caller's: another namespace's
  // parent costs the one read of an unknown id, not one more per child.
  absl::StatusOr<rein::v1::Run> run = engine_->GetRun(run_id, &from_store, /*with_children=*/false);
  if (!run.ok()) return run;
  if (!caller.spans_namespaces() &&
      NamespaceOrDefault(run->spec().namespace_()) != caller.namespace_name) {
    // An unknown id is looked for in the store: so is a run found in memory, so that both
    // answers take one store read (the same timing class).
    if (!from_store) engine_->ReadStoreAsUnknown(run_id);
    // The very answer of an unknown id (RunEngine::GetRun), after the same read.
    return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
  }
  engine_->FillChildren(&*run);
  return run;
}

absl::StatusOr<rein::v1::Run> RouterApi::StartRun(const Caller& caller,
                                                  const rein::v1::StartRunRequest& request,
                                                  absl::Time deadline) {
  RETURN_IF_ERROR(CheckRole(caller, "StartRun"));
  if (!request.has_spec()) return absl::InvalidArgumentError("spec: required");
  ASSIGN_OR_RETURN(std::string ns,
                   NamedNamespace(caller, request.spec().namespace_(), "spec.namespace"));
  rein::v1::StartRunRequest in_namespace = request;
  in_namespace.mutable_spec()->set_namespace_(Stored(ns));
  if (quotas_ == nullptr) return Shown(engine_->StartRun(in_namespace, caller.principal, deadline));
  absl::StatusOr<rein::v1::Run> run = absl::InternalError("the start was not made");
  absl::Status admitted = quotas_->AdmitStart(ns, in_namespace.mutable_spec(), [&] {
    bool created = false;
    run = engine_->StartRun(in_namespace, caller.principal, deadline, &created);
    return run.ok() && created;
  });
  if (!admitted.ok()) return Shown(FirstOrRefusal(ns, request.request_id(), admitted));
  return Shown(run);
}

absl::StatusOr<rein::v1::Run> RouterApi::FirstOrRefusal(const std::string& ns,
                                                        const std::string& request_id,
                                                        const absl::Status& refusal) {
  // A retry of a start already made answers with its run, whatever the quota says now.
  if (!absl::IsResourceExhausted(refusal) || request_id.empty()) return refusal;
  absl::StatusOr<rein::v1::Run> first = engine_->FindStarted(Stored(ns), request_id);
  if (first.ok()) return first;
  return refusal;
}

absl::StatusOr<rein::v1::Run> RouterApi::GetRun(const Caller& caller, const std::string& run_id) {
  RETURN_IF_ERROR(CheckRole(caller, "GetRun"));
  return Shown(VisibleRun(caller, run_id));
}

absl::StatusOr<RunPage> RouterApi::ListRuns(const Caller& caller,
                                            const rein::v1::ListRunsRequest& request) {
  RETURN_IF_ERROR(CheckRole(caller, "ListRuns"));
  rein::v1::ListRunsRequest scoped = request;
  if (request.namespace_().empty()) {
    // An admin with no namespace named sees every namespace.
    scoped.set_namespace_(caller.spans_namespaces() ? "" : caller.namespace_name);
  } else {
    ASSIGN_OR_RETURN(std::string ns, NamedNamespace(caller, request.namespace_(), "namespace"));
    scoped.set_namespace_(ns);
  }
  ASSIGN_OR_RETURN(RunPage page, engine_->ListRuns(scoped));
  for (rein::v1::Run& run : page.runs) RedactNotify(run.mutable_spec());
  return page;
}

absl::StatusOr<rein::v1::Run> RouterApi::CancelRun(const Caller& caller,
                                                   const rein::v1::CancelRunRequest& request,
                                                   absl::Time deadline) {
  RETURN_IF_ERROR(CheckRole(caller, "CancelRun"));
  RETURN_IF_ERROR(VisibleRun(caller, request.run_id()).status());
  return Shown(engine_->CancelRun(request.run_id(), request.reason(), caller.principal, deadline));
}

absl::StatusOr<rein::v1::Run> RouterApi::ResumeRun(const Caller& caller,
                                                   const rein::v1::ResumeRunRequest& request,
                                                   absl::Time deadline) {
  RETURN_IF_ERROR(CheckRole(caller, "ResumeRun"));
  RETURN_IF_ERROR(VisibleRun(caller, request.run_id()).status());
  return Shown(engine_->ResumeRun(request, caller.principal, deadline));
}

absl::StatusOr<rein::v1::Run> RouterApi::ForkRun(const Caller& caller,
                                                 const rein::v1::ForkRunRequest& request,
                                                 absl::Time deadline) {
  RETURN_IF_ERROR(CheckRole(caller, "ForkRun"));
  // The fork copies its source's spec, namespace included, and its request_id is scoped there.
  ASSIGN_OR_RETURN(rein::v1::Run source, VisibleRun(caller, request.run_id()));
  if (quotas_ == nullptr) return Shown(engine_->ForkRun(request, caller.principal, deadline));
  // A fork is admitted as a start of its source's namespace; its budgets reach what it
  // inherits plus what the day has left.
  const std::string ns(NamespaceOrDefault(source.spec().namespace_()));
  rein::v1::RunSpec day_left;
  absl::StatusOr<rein::v1::Run> run = absl::InternalError("the fork was not made");
  absl::Status admitted = quotas_->AdmitStart(ns, &day_left, [&] {
    bool created = false;
    run = engine_->ForkRun(request, caller.principal, deadline, &created, day_left.limits());
    return run.ok() && created;
  });
  if (!admitted.ok()) return Shown(FirstOrRefusal(ns, request.request_id(), admitted));
  return Shown(run);
}

absl::StatusOr<std::vector<Snapshot>> RouterApi::ExportRun(const Caller& caller,
                                                           const std::string& run_id,
                                                           int64_t after_version, int limit) {
  RETURN_IF_ERROR(CheckRole(caller, "ExportRun"));
  RETURN_IF_ERROR(VisibleRun(caller, run_id).status());
  return engine_->ListSnapshots(run_id, after_version, limit);
}

absl::StatusOr<std::string> RouterApi::WatchRun(const Caller& caller,
                                                const rein::v1::WatchRunRequest& request) {
  RETURN_IF_ERROR(CheckRole(caller, "WatchRun"));
  ASSIGN_OR_RETURN(rein::v1::Run run, VisibleRun(caller, request.run_id()));
  if (request.after_seq() < 0) return absl::InvalidArgumentError("after_seq: must be >= 0");
  return std::string(NamespaceOrDefault(run.spec().namespace_()));
}

absl::StatusOr<rein::v1::QuotaReport> RouterApi::GetQuota(
    const Caller& caller, const rein::v1::GetQuotaRequest& request) {
  RETURN_IF_ERROR(CheckRole(caller, "GetQuota"));
  ASSIGN_OR_RETURN(std::string ns, NamedNamespace(caller, request.namespace_(), "namespace"));
  if (quotas_ == nullptr) {
    rein::v1::QuotaReport none;
    none.set_namespace_(ns);
    return none;
  }
  return quotas_->Report(ns);
}

absl::StatusOr<rein::v1::ListNotificationsResponse> RouterApi::ListNotifications(
    const Caller& caller, const rein::v1::ListNotificationsRequest& request) {
  RETURN_IF_ERROR(CheckRole(caller, "ListNotifications"));
  ASSIGN_OR_RETURN(std::optional<NotificationStatus> status,
                   NoticeStatusFilter(request.status(), "status"));
  if (request.page_size() < 0 || request.page_size() > 1000) {
    return absl::InvalidArgumentError("page_size: must be in [0, 1000] (0 = 50)");
  }
  std::string ns;
  if (!request.namespace_().empty()) {
    ASSIGN_OR_RETURN(ns, NamedNamespace(caller, request.namespace_(), "namespace"));
  } else if (!caller.spans_namespaces()) {
    ns = caller.namespace_name;
  }
  ASSIGN_OR_RETURN(std::vector<Notification> notices,
                   engine_->outbox()->ListNotifications(
                       status.value_or(NotificationStatus::kPending), !status.has_value(), ns,
                       request.page_size() == 0 ? 50 : request.page_size()));
  rein::v1::ListNotificationsResponse response;
  for (const Notification& notice : notices) *response.add_notices() = NoticeView(notice);
  return response;
}

}  // namespace rein
