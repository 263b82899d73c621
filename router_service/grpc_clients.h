// gRPC implementations of PlannerClient and ExecutorClient (callback API, no thread per call).
#ifndef REIN_ROUTER_SERVICE_GRPC_CLIENTS_H_
#define REIN_ROUTER_SERVICE_GRPC_CLIENTS_H_

#include <memory>
#include <string>

#include "common/tls.h"
#include "grpcpp/grpcpp.h"
#include "rein/v1/executor.grpc.pb.h"
#include "rein/v1/planner.grpc.pb.h"
#include "router_service/clients.h"

namespace rein {

// A channel to any gRPC target ("host:port", "dns:///name:port", "ipv4:a:p,b:p") that spreads
// calls over every address with round_robin. With `tls`, over mTLS, checking that the servers'
// certificates carry `tls_name` ("" = the target's host).
std::shared_ptr<grpc::Channel> MakeRoundRobinChannel(const std::string& target,
                                                     const TlsFiles& tls = {},
                                                     const std::string& tls_name = "");

class GrpcPlannerClient final : public PlannerClient {
 public:
  explicit GrpcPlannerClient(std::shared_ptr<grpc::Channel> channel)
      : stub_(rein::v1::Planner::NewStub(std::move(channel))) {}
  std::shared_ptr<PendingCall> Plan(const rein::v1::PlanRequest& request, absl::Time deadline,
                                    ReplyCallback<rein::v1::PlanResponse> done) override;
  std::shared_ptr<PendingCall> Decide(const rein::v1::DecideRequest& request, absl::Time deadline,
                                      ReplyCallback<rein::v1::DecideResponse> done) override;
  std::shared_ptr<PendingCall> Evaluate(const rein::v1::EvaluateRequest& request,
                                        absl::Time deadline,
                                        ReplyCallback<rein::v1::EvaluateResponse> done) override;

 private:
  std::unique_ptr<rein::v1::Planner::Stub> stub_;
};

// Executor calls fail over: one that meets UNAVAILABLE (its executor went away) is sent again
// with the same request (the same call_id) and goes to another executor; see FailoverCall.
class GrpcExecutorClient final : public ExecutorClient {
 public:
  explicit GrpcExecutorClient(std::shared_ptr<grpc::Channel> channel)
      : stub_(rein::v1::Executor::NewStub(std::move(channel))) {}
  std::shared_ptr<PendingCall> ListTools(const rein::v1::ListToolsRequest& request,
                                         absl::Time deadline,
                                         ReplyCallback<rein::v1::ListToolsResponse> done) override;
  std::shared_ptr<PendingCall> Execute(const rein::v1::ExecuteRequest& request, absl::Time deadline,
                                       ReplyCallback<rein::v1::ExecuteResponse> done) override;
  std::shared_ptr<PendingCall> CopyWorkspace(
      const rein::v1::CopyWorkspaceRequest& request, absl::Time deadline,
      ReplyCallback<rein::v1::CopyWorkspaceResponse> done) override;
  std::shared_ptr<PendingCall> DeleteWorkspace(
      const rein::v1::DeleteWorkspaceRequest& request, absl::Time deadline,
      ReplyCallback<rein::v1::DeleteWorkspaceResponse> done) override;
  std::shared_ptr<PendingCall> ForgetRun(const rein::v1::ForgetRunRequest& request,
                                         absl::Time deadline,
                                         ReplyCallback<rein::v1::ForgetRunResponse> done) override;

 private:
  std::unique_ptr<rein::v1::Executor::Stub> stub_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_GRPC_CLIENTS_H_
