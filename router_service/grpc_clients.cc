// gRPC implementations of PlannerClient and ExecutorClient.
#include "router_service/grpc_clients.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/usage_payload.h"
#include "grpcpp/alarm.h"
#include "trace/grpc_metadata.h"

namespace rein {
namespace {

// While few calls are in flight (a lone run's latency), their replies are read by one thread of
// the router's own, from one completion queue (gRPC's async API), and handed to the call's
// callback there (which may apply the reply inline, see RunEngine). Measured side by side, a
// lone run's iterations took less wall and CPU time this way than with gRPC's callback API,
// whose callback threads run the callbacks otherwise; the futex calls per transition did not
// fall, so the saving is elsewhere in gRPC's callback path (bench/ANALYSIS.md, fifth round).
// With many calls in flight the callback API takes them (Unary). The queue and its thread
// live as long as the process.
class ReplyQueue {
 public:
  static grpc::CompletionQueue* Get() {
    static ReplyQueue* queue = new ReplyQueue();
    return &queue->cq_;
  }

  // A started call's completion: Run is called once, on the queue's thread.
  struct Tag {
    virtual void Run() = 0;
    virtual ~Tag() = default;
  };

 private:
  ReplyQueue() {
    std::thread([this] {
      pthread_setname_np(pthread_self(), "rein-replies");
      void* tag;
      bool ok;  // always true for a unary call's Finish
      while (cq_.Next(&tag, &ok)) static_cast<Tag*>(tag)->Run();
    }).detach();
  }

  grpc::CompletionQueue cq_;
};

// Calls started and not yet answered, by every client of the process.
std::atomic<int>& CallsInFlight() {
  static std::atomic<int> calls{0};
  return calls;
}

// The reply queue's one thread reads replies one at a time: with every call on it, 100 runs
// made 1,076-1,234 iterations/s against 1,282-1,459 with gRPC's threads (bench/ANALYSIS.md),
// so it takes a call only while few are in flight.
constexpr int kReplyQueueMaxInFlight = 4;

// Starts `reader` (a call prepared on the reply queue); `done` gets the call's status once
// `resp` holds its reply.
template <typename Resp>
void StartOnReplyQueue(std::unique_ptr<grpc::ClientAsyncResponseReader<Resp>> reader, Resp* resp,
                       std::function<void(grpc::Status)> done) {
  struct Finished final : ReplyQueue::Tag {
    std::unique_ptr<grpc::ClientAsyncResponseReader<Resp>> reader;
    grpc::Status status;
    std::function<void(grpc::Status)> done;
    void Run() override {
      std::function<void(grpc::Status)> callback = std::move(done);
      grpc::Status result = std::move(status);
      delete this;
      callback(std::move(result));
    }
  };
  auto* finished = new Finished();
  finished->done = std::move(done);
  finished->reader = std::move(reader);
  finished->reader->StartCall();
  finished->reader->Finish(resp, &finished->status, finished);
}

// How one method of `stub` is started: on the reply queue while few calls are in flight (a
// lone run's latency), else with gRPC's callback API (the intake of many). `prepare` is the
// stub's PrepareAsync<Method>, `async` its async()-><Method>.
template <typename Stub, typename Async, typename Req, typename Resp>
auto Unary(Stub* stub,
           std::unique_ptr<grpc::ClientAsyncResponseReader<Resp>> (Stub::*prepare)(
               grpc::ClientContext*, const Req&, grpc::CompletionQueue*),
           void (Async::*async)(grpc::ClientContext*, const Req*, Resp*,
                                std::function<void(grpc::Status)>)) {
  return [stub, prepare, async](grpc::ClientContext* ctx, const Req* req, Resp* resp,
                                std::function<void(grpc::Status)> done) {
    if (CallsInFlight().load(std::memory_order_relaxed) <= kReplyQueueMaxInFlight) {
      StartOnReplyQueue((stub->*prepare)(ctx, *req, ReplyQueue::Get()), resp, std::move(done));
    } else {
      (stub->async()->*async)(ctx, req, resp, std::move(done));
    }
  };
}

// One unary call: owns its context and messages until the callback has run.
template <typename Req, typename Resp>
class UnaryCall final : public PendingCall,
                        public std::enable_shared_from_this<UnaryCall<Req, Resp>> {
 public:
  UnaryCall(const Req& request, absl::Time deadline) : request_(request) {
    if (deadline != absl::InfiniteFuture()) context_.set_deadline(absl::ToChronoTime(deadline));
    trace::InjectCurrentContext(&context_);  // the run's traceparent (RunEngine::Dispatch)
  }
  void Cancel() override { context_.TryCancel(); }

  template <typename StartFn>
  std::shared_ptr<PendingCall> Start(StartFn start, ReplyCallback<Resp> done) {
    auto self = this->shared_from_this();
    CallsInFlight().fetch_add(1, std::memory_order_relaxed);
    start(&context_, &request_, &response_, [self, done = std::move(done)](grpc::Status status) {
      CallsInFlight().fetch_sub(1, std::memory_order_relaxed);
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

// An executor call that fails over: UNAVAILABLE (the executor it went to is gone: refused,
// reset, killed) is sent again, with the same request and call_id, a few times with a short
// backoff, and round_robin takes another executor. A call that never reached an executor runs
// elsewhere; one that reached an executor and was lost is, for a mutating tool, exactly what
// the executors' call journal answers (its reply, a wait, or "outcome unknown"), and a
// read-only one is simply repeated. Only when every attempt is UNAVAILABLE (no executor can be
// reached) does the caller see UNAVAILABLE.
template <typename Req, typename Resp, typename StartFn>
class FailoverCall final : public PendingCall,
                           public std::enable_shared_from_this<FailoverCall<Req, Resp, StartFn>> {
 public:
  FailoverCall(StartFn start, const Req& request, absl::Time deadline, ReplyCallback<Resp> done)
      : start_(std::move(start)), request_(request), deadline_(deadline), done_(std::move(done)) {}

  void Attempt() {
    auto self = this->shared_from_this();
    std::shared_ptr<PendingCall> call =
        Call<Req, Resp>(start_, request_, deadline_,
                        [self](absl::StatusOr<Resp> reply) { self->OnReply(std::move(reply)); });
    bool cancel;
    {
      absl::MutexLock lock(&mu_);
      current_ = call;
      cancel = cancelled_;
    }
    if (cancel) call->Cancel();
  }

  void Cancel() override {
    std::shared_ptr<PendingCall> call;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      call = current_;
    }
    if (call) call->Cancel();
    alarm_.Cancel();
  }

 private:
  void OnReply(absl::StatusOr<Resp> reply) {
    const absl::Duration backoff = kFirstBackoff * (1 << attempts_);
    bool again;
    {
      absl::MutexLock lock(&mu_);
      again = !reply.ok() && absl::IsUnavailable(reply.status()) && !cancelled_ &&
              attempts_ + 1 < kMaxAttempts && absl::Now() + backoff < deadline_;
      if (again) ++attempts_;
    }
    if (!again) {
      Finish(std::move(reply));
      return;
    }
    auto self = this->shared_from_this();
    alarm_.Set(absl::ToChronoTime(absl::Now() + backoff), [self](bool fired) {
      if (fired) {
        self->Attempt();
      } else {
        self->Finish(absl::CancelledError("cancelled"));
      }
    });
  }

  // Calls `done_` once and lets go of it. The caller usually keeps this call (the handle it
  // returned) until the reply is applied, and `done_` may hold whatever holds the handle (a
  // ChainedCall): kept past the reply, that is a cycle that never frees the call, its gRPC
  // arena (about 14 KiB) or the callback's captures.
  void Finish(absl::StatusOr<Resp> reply) {
    ReplyCallback<Resp> done = std::move(done_);
    done_ = nullptr;
    done(std::move(reply));
  }

  static constexpr int kMaxAttempts = 4;  // 50 ms, 100 ms, 200 ms apart
  static constexpr absl::Duration kFirstBackoff = absl::Milliseconds(50);

  StartFn start_;
  Req request_;
  absl::Time deadline_;
  ReplyCallback<Resp> done_;
  grpc::Alarm alarm_;
  absl::Mutex mu_;
  std::shared_ptr<PendingCall> current_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  int attempts_ ABSL_GUARDED_BY(mu_) = 0;
};

template <typename Req, typename Resp, typename StartFn>
std::shared_ptr<PendingCall> CallWithFailover(StartFn start, const Req& request,
                                              absl::Time deadline, ReplyCallback<Resp> done) {
  auto call = std::make_shared<FailoverCall<Req, Resp, StartFn>>(std::move(start), request,
                                                                 deadline, std::move(done));
  call->Attempt();
  return call;
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
  return Call(Unary(stub_.get(), &rein::v1::Planner::Stub::PrepareAsyncPlan,
                    &rein::v1::Planner::Stub::async::Plan),
              request, deadline, std::move(done));
}

std::shared_ptr<PendingCall> GrpcPlannerClient::Decide(
    const rein::v1::DecideRequest& request, absl::Time deadline,
    ReplyCallback<rein::v1::DecideResponse> done) {
  return Call(Unary(stub_.get(), &rein::v1::Planner::Stub::PrepareAsyncDecide,
                    &rein::v1::Planner::Stub::async::Decide),
              request, deadline, std::move(done));
}

std::shared_ptr<PendingCall> GrpcPlannerClient::Evaluate(
    const rein::v1::EvaluateRequest& request, absl::Time deadline,
    ReplyCallback<rein::v1::EvaluateResponse> done) {
  return Call(Unary(stub_.get(), &rein::v1::Planner::Stub::PrepareAsyncEvaluate,
                    &rein::v1::Planner::Stub::async::Evaluate),
              request, deadline, std::move(done));
}

std::shared_ptr<PendingCall> GrpcExecutorClient::ListTools(
    const rein::v1::ListToolsRequest& request, absl::Time deadline,
    ReplyCallback<rein::v1::ListToolsResponse> done) {
  return CallWithFailover(Unary(stub_.get(), &rein::v1::Executor::Stub::PrepareAsyncListTools,
                                &rein::v1::Executor::Stub::async::ListTools),
                          request, deadline, std::move(done));
}

std::shared_ptr<PendingCall> GrpcExecutorClient::CopyWorkspace(
    const rein::v1::CopyWorkspaceRequest& request, absl::Time deadline,
    ReplyCallback<rein::v1::CopyWorkspaceResponse> done) {
  return Call(Unary(stub_.get(), &rein::v1::Executor::Stub::PrepareAsyncCopyWorkspace,
                    &rein::v1::Executor::Stub::async::CopyWorkspace),
              request, deadline, std::move(done));
}

std::shared_ptr<PendingCall> GrpcExecutorClient::DeleteWorkspace(
    const rein::v1::DeleteWorkspaceRequest& request, absl::Time deadline,
    ReplyCallback<rein::v1::DeleteWorkspaceResponse> done) {
  return Call(Unary(stub_.get(), &rein::v1::Executor::Stub::PrepareAsyncDeleteWorkspace,
                    &rein::v1::Executor::Stub::async::DeleteWorkspace),
              request, deadline, std::move(done));
}

std::shared_ptr<PendingCall> GrpcExecutorClient::Execute(
    const rein::v1::ExecuteRequest& request, absl::Time deadline,
    ReplyCallback<rein::v1::ExecuteResponse> done) {
  return CallWithFailover(Unary(stub_.get(), &rein::v1::Executor::Stub::PrepareAsyncExecute,
                                &rein::v1::Executor::Stub::async::Execute),
                          request, deadline, std::move(done));
}

std::shared_ptr<PendingCall> GrpcExecutorClient::ForgetRun(
    const rein::v1::ForgetRunRequest& request, absl::Time deadline,
    ReplyCallback<rein::v1::ForgetRunResponse> done) {
  return CallWithFailover(Unary(stub_.get(), &rein::v1::Executor::Stub::PrepareAsyncForgetRun,
                                &rein::v1::Executor::Stub::async::ForgetRun),
                          request, deadline, std::move(done));
}

}  // namespace rein
