// ToolCatalog: the tools the executors offer and StartRun's workspace check.
#include "router_service/tool_catalog.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/limits.h"
#include "router_service/transition.h"

namespace rein {

absl::StatusOr<std::vector<rein::v1::ToolSpec>> ToolCatalog::Tools(
    const std::string& namespace_name, absl::Time deadline) {
  const std::string key(NamespaceOrDefault(namespace_name));
  {
    absl::MutexLock lock(&mu_);
    auto it = listed_.find(key);
    if (it != listed_.end() && !it->second.tools.empty() && clock_->Now() - it->second.at < ttl_) {
      return it->second.tools;
    }
  }
  absl::Notification done;
  absl::StatusOr<rein::v1::ListToolsResponse> result;
  rein::v1::ListToolsRequest request;
  request.set_namespace_(namespace_name);
  executor_->ListTools(request, CallDeadline(deadline),
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
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  for (auto it = listed_.begin(); it != listed_.end();) {
    it = now - it->second.at >= ttl_ ? listed_.erase(it) : std::next(it);
  }
  Listed& entry = listed_[key];
  entry.tools.assign(result->tools().begin(), result->tools().end());
  entry.at = now;
  return entry.tools;
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
