// gRPC implementations of PlannerClient and ExecutorClient.
#include "router_service/grpc_clients.h"

#include "common/grpc_status.h"
#include "common/usage_payload.h"

namespace rein {
namespace {

// One unary call: owns its context and messages until the callback has run.
template <typename Req, typename Resp>
class UnaryCall final : public PendingCall,
                        public std::enable_shared_from_this<UnaryCall<Req, Resp>> {
 public:
  UnaryCall(const Req& request, absl::Time deadline) : request_(request) {
    if (deadline != absl::InfiniteFuture()) context_.set_deadline(absl::ToChronoTime(deadline));
  }
  void Cancel() override { context_.TryCancel(); }

  template <typename StartFn>
  std::shared_ptr<PendingCall> Start(StartFn start, ReplyCallback<Resp> done) {
    auto self = this->shared_from_this();
    start(&context_, &request_, &response_, [self, done = std::move(done)](grpc::Status status) {
      if (status.ok()) {
        done(std::move(self->response_));
        return;
      }
      absl::Status error = FromGrpcStatus(status);
      const auto& trailers = self->context_.GetServerTrailingMetadata();
      if (auto it = trailers.find(kUsageTrailer); it != trailers.end()) {
        rein::v1::Usage usage;
        if (usage.ParseFromArray(it->second.data(), static_cast<int>(it->second.size()))) {
          error = WithUsage(std::move(error), usage);
        }
      }
      done(std::move(error));
    });
    return self;
  }

 private:
  grpc::ClientContext context_;
  Req request_;
  Resp response_;
};

template <typename Req, typename Resp, typename StartFn>
std::shared_ptr<PendingCall> Call(StartFn start, const Req& request, absl::Time deadline,
                                  ReplyCallback<Resp> done) {
  auto call = std::make_shared<UnaryCall<Req, Resp>>(request, deadline);
  return call->Start(std::move(start), std::move(done));
}

}  // namespace

std::shared_ptr<grpc::Channel> MakeRoundRobinChannel(const std::string& target, const TlsFiles& tls,
                                                     const std::string& tls_name) {
  grpc::ChannelArguments args;
  args.SetLoadBalancingPolicyName("round_robin");
  args.SetMaxReceiveMessageSize(16 << 20);
  if (tls.enabled()) AddTlsTargetName(tls_name, &args);
  return grpc::CreateCustomChannel(target, MakeChannelCredentials(tls), args);
}

std::shared_ptr<PendingCall> GrpcPlannerClient::Plan(const rein::v1::PlanRequest& request,
                                                     absl::Time deadline,
                                                     ReplyCallback<rein::v1::PlanResponse> done) {
  auto* stub = stub_.get();
  return Call(
      [stub](grpc::ClientContext* ctx, const rein::v1::PlanRequest* req,
             rein::v1::PlanResponse* resp, std::function<void(grpc::Status)> cb) {
        stub->async()->Plan(ctx, req, resp, std::move(cb));
      },
      request, deadline, std::move(done));
}

std::shared_ptr<PendingCall> GrpcPlannerClient::Decide(
    const rein::v1::DecideRequest& request, absl::Time deadline,
    ReplyCallback<rein::v1::DecideResponse> done) {
  auto* stub = stub_.get();
  return Call(
      [stub](grpc::ClientContext* ctx, const rein::v1::DecideRequest* req,
             rein::v1::DecideResponse* resp, std::function<void(grpc::Status)> cb) {
        stub->async()->Decide(ctx, req, resp, std::move(cb));
      },
      request, deadline, std::move(done));
}

std::shared_ptr<PendingCall> GrpcPlannerClient::Evaluate(
    const rein::v1::EvaluateRequest& request, absl::Time deadline,
    ReplyCallback<rein::v1::EvaluateResponse> done) {
  auto* stub = stub_.get();
  return Call(
      [stub](grpc::ClientContext* ctx, const rein::v1::EvaluateRequest* req,
             rein::v1::EvaluateResponse* resp, std::function<void(grpc::Status)> cb) {
        stub->async()->Evaluate(ctx, req, resp, std::move(cb));
      },
      request, deadline, std::move(done));
}

std::shared_ptr<PendingCall> GrpcExecutorClient::ListTools(
    absl::Time deadline, ReplyCallback<rein::v1::ListToolsResponse> done) {
  auto* stub = stub_.get();
  return Call(
      [stub](grpc::ClientContext* ctx, const rein::v1::ListToolsRequest* req,
             rein::v1::ListToolsResponse* resp, std::function<void(grpc::Status)> cb) {
        stub->async()->ListTools(ctx, req, resp, std::move(cb));
      },
      rein::v1::ListToolsRequest(), deadline, std::move(done));
}

std::shared_ptr<PendingCall> GrpcExecutorClient::Execute(
    const rein::v1::ExecuteRequest& request, absl::Time deadline,
    ReplyCallback<rein::v1::ExecuteResponse> done) {
  auto* stub = stub_.get();
  return Call(
      [stub](grpc::ClientContext* ctx, const rein::v1::ExecuteRequest* req,
             rein::v1::ExecuteResponse* resp, std::function<void(grpc::Status)> cb) {
        stub->async()->Execute(ctx, req, resp, std::move(cb));
      },
      request, deadline, std::move(done));
}

}  // namespace rein
