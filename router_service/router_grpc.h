// The rein.v1.Router gRPC service: converts messages and statuses, and calls RouterApi.
#ifndef REIN_ROUTER_SERVICE_ROUTER_GRPC_H_
#define REIN_ROUTER_SERVICE_ROUTER_GRPC_H_

#include "rein/v1/router.grpc.pb.h"
#include "router_service/auth.h"
#include "router_service/run_engine.h"
#include "router_service/service/quotas.h"
#include "router_service/service/router_api.h"
#include "router_service/stream_quota.h"

namespace rein {

// WatchRun is on gRPC's callback API: a stream holds no thread while it waits. It is woken by
// the run's next commit (RunEngine::SubscribeEvents), writes one event at a time (the next
// only once gRPC has taken the previous one), and so buffers at most one read's events (the
// 12 the engine keeps in memory, or a page of 256 from the store) however slowly its client
// reads. Streams are capped per principal (RouterGrpcOptions), and with auth a stream whose
// token is revoked ends UNAUTHENTICATED. The other methods are synchronous.
struct RouterGrpcOptions {
  // Open WatchRun streams one principal may hold (--max_watch_streams_per_principal); past
  // it WatchRun is RESOURCE_EXHAUSTED. 0 = no cap.
  int max_watch_streams_per_principal = 1024;
  // With auth, how often an idle WatchRun stream checks that its token was not revoked (a
  // stream that is sending checks at every event).
  absl::Duration revalidate = absl::Seconds(2);
};

class RouterGrpcService final
    : public rein::v1::Router::WithCallbackMethod_WatchRun<rein::v1::Router::Service> {
 public:
  // With `auth` (not owned; null = no auth), every call must carry a bearer token; its roles
  // and namespace are checked by RouterApi (router_service/service/router_api.h), which
  // admits starts against `quotas` (not owned; null = none).
  explicit RouterGrpcService(RunEngine* engine, Authenticator* auth = nullptr,
                             RouterGrpcOptions options = {}, QuotaBook* quotas = nullptr)
      : engine_(engine),
        api_(engine, quotas),
        auth_(auth),
        options_(options),
        watch_quota_(options.max_watch_streams_per_principal) {}

  grpc::Status StartRun(grpc::ServerContext* context, const rein::v1::StartRunRequest* request,
                        rein::v1::Run* response) override;
  grpc::Status GetRun(grpc::ServerContext* context, const rein::v1::GetRunRequest* request,
                      rein::v1::Run* response) override;
  grpc::Status ListRuns(grpc::ServerContext* context, const rein::v1::ListRunsRequest* request,
                        rein::v1::ListRunsResponse* response) override;
  grpc::Status CancelRun(grpc::ServerContext* context, const rein::v1::CancelRunRequest* request,
                         rein::v1::Run* response) override;
  grpc::ServerWriteReactor<rein::v1::RunEvent>* WatchRun(
      grpc::CallbackServerContext* context, const rein::v1::WatchRunRequest* request) override;
  grpc::Status ResumeRun(grpc::ServerContext* context, const rein::v1::ResumeRunRequest* request,
                         rein::v1::Run* response) override;
  grpc::Status ForkRun(grpc::ServerContext* context, const rein::v1::ForkRunRequest* request,
                       rein::v1::Run* response) override;
  grpc::Status ExportRun(grpc::ServerContext* context, const rein::v1::ExportRunRequest* request,
                         grpc::ServerWriter<rein::v1::RunSnapshot>* writer) override;
  grpc::Status GetQuota(grpc::ServerContext* context, const rein::v1::GetQuotaRequest* request,
                        rein::v1::QuotaReport* response) override;
  grpc::Status ListNotifications(grpc::ServerContext* context,
                                 const rein::v1::ListNotificationsRequest* request,
                                 rein::v1::ListNotificationsResponse* response) override;

 private:
  // OK with the caller in `caller` (anyone, without auth), or the call's refusal when its
  // token is missing or unknown. Every handler calls it first with its own method name (for
  // the metrics); the roles are RouterApi's to check.
  grpc::Status Authenticate(grpc::ServerContextBase* context, const char* method, Caller* caller);

  RunEngine* engine_;
  RouterApi api_;
  Authenticator* auth_;
  const RouterGrpcOptions options_;
  StreamQuota watch_quota_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_ROUTER_GRPC_H_
