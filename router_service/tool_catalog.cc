// ToolCatalog: the tools the executors offer and StartRun's workspace check.
#include "router_service/tool_catalog.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "router_service/transition.h"

namespace rein {

absl::StatusOr<std::vector<rein::v1::ToolSpec>> ToolCatalog::Tools(absl::Time deadline) {
  {
    absl::MutexLock lock(&mu_);
    if (!tools_.empty() && clock_->Now() - tools_at_ < ttl_) return tools_;
  }
  absl::Notification done;
  absl::StatusOr<rein::v1::ListToolsResponse> result;
  executor_->ListTools(CallDeadline(deadline),
                       [&](absl::StatusOr<rein::v1::ListToolsResponse> reply) {
                         result = std::move(reply);
                         done.Notify();
                       });
  done.WaitForNotification();
  if (!result.ok()) {
    if (CallerOutOfTime(result.status(), deadline)) return result.status();
    return absl::UnavailableError(
        absl::StrCat("cannot list tools from an executor: ", result.status().message()));
  }
  absl::MutexLock lock(&mu_);
  tools_.assign(result->tools().begin(), result->tools().end());
  tools_at_ = clock_->Now();
  return tools_;
}

absl::Status ToolCatalog::CheckWorkspace(const std::string& run_id, const std::string& workspace,
                                         const std::vector<rein::v1::ToolSpec>& tools,
                                         const std::string& namespace_name, absl::Time deadline) {
  if (!HasFileInfo(tools)) return absl::OkStatus();
  absl::Notification done;
  absl::StatusOr<rein::v1::ExecuteResponse> reply;
  executor_->Execute(WorkspaceCheck(run_id, workspace, namespace_name), CallDeadline(deadline),
                     [&](absl::StatusOr<rein::v1::ExecuteResponse> r) {
                       reply = std::move(r);
                       done.Notify();
                     });
  done.WaitForNotification();
  if (!reply.ok()) {
    if (CallerOutOfTime(reply.status(), deadline)) return reply.status();
    return absl::UnavailableError(
        absl::StrCat("cannot check spec.workspace on an executor: ", reply.status().message()));
  }
  if (!reply->ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "spec.workspace: workspace \"", workspace, "\" is not usable on the executors (",
        reply->error().code(), ": ", reply->error().message(), ")"));
  }
  return absl::OkStatus();
}

}  // namespace rein
