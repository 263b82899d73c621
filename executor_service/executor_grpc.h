// The gRPC face of the executor: converts rein.v1.Executor messages for ToolExecutor.
#ifndef REIN_EXECUTOR_SERVICE_EXECUTOR_GRPC_H_
#define REIN_EXECUTOR_SERVICE_EXECUTOR_GRPC_H_

#include "executor_service/tool_executor.h"
#include "executor_service/workspace/workspace_history.h"
#include "rein/v1/executor.grpc.pb.h"

namespace rein {

// Thin adapter: converts messages and statuses, passes the caller's deadline on, fills
// executor_id and duration, logs one JSON line and counts each call. Thread-safe.
class ExecutorGrpcService final : public rein::v1::Executor::Service {
 public:
  // `executor` and `history` are not owned and must outlive the service. With a history,
  // CopyWorkspace / DeleteWorkspace are served; without one they are FAILED_PRECONDITION
  // (reason NOT_SUPPORTED). Snapshots before mutating calls are the executor's
  // (ExecutorOptions::history).
  explicit ExecutorGrpcService(const ToolExecutor* executor,
                               const WorkspaceHistory* history = nullptr)
      : executor_(executor), history_(history) {}

  grpc::Status ListTools(grpc::ServerContext* context, const rein::v1::ListToolsRequest* request,
                         rein::v1::ListToolsResponse* response) override;
  grpc::Status Execute(grpc::ServerContext* context, const rein::v1::ExecuteRequest* request,
                       rein::v1::ExecuteResponse* response) override;
  grpc::Status CopyWorkspace(grpc::ServerContext* context,
                             const rein::v1::CopyWorkspaceRequest* request,
                             rein::v1::CopyWorkspaceResponse* response) override;
  grpc::Status DeleteWorkspace(grpc::ServerContext* context,
                               const rein::v1::DeleteWorkspaceRequest* request,
                               rein::v1::DeleteWorkspaceResponse* response) override;
  grpc::Status ForgetRun(grpc::ServerContext* context, const rein::v1::ForgetRunRequest* request,
                         rein::v1::ForgetRunResponse* response) override;

 private:
  const ToolExecutor* executor_;
  const WorkspaceHistory* history_;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_EXECUTOR_GRPC_H_
