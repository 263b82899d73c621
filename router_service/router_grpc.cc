// The rein.v1.Router gRPC service.
#include "router_service/router_grpc.h"

#include "common/grpc_status.h"
#include "common/metrics.h"
#include "google/protobuf/util/json_util.h"

namespace rein {
namespace {

template <typename T>
grpc::Status Reply(const absl::StatusOr<T>& result, T* response, const char* method) {
  Metrics::Global().Add("rein_router_rpcs_total", 1,
                        absl::StrCat("method=\"", method, "\",code=\"",
                                     absl::StatusCodeToString(result.status().code()), "\""));
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *result;
  return grpc::Status::OK;
}

}  // namespace

grpc::Status RouterGrpcService::Authorize(grpc::ServerContext* context, const char* method,
                                          std::string* principal) {
  if (auth_ == nullptr) return grpc::Status::OK;
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  absl::string_view value;
  if (it != metadata.end()) value = absl::string_view(it->second.data(), it->second.size());
  absl::StatusOr<Principal> who = auth_->Authorize(method, value, context->peer());
  if (!who.ok()) {
    Metrics::Global().Add("rein_router_rpcs_total", 1,
                          absl::StrCat("method=\"", method, "\",code=\"",
                                       absl::StatusCodeToString(who.status().code()), "\""));
    return ToGrpcStatus(who.status());
  }
  *principal = who->name;
  return grpc::Status::OK;
}

#define REIN_AUTHORIZE(method) \
  std::string principal;       \
  if (grpc::Status denied = Authorize(context, method, &principal); !denied.ok()) return denied

grpc::Status RouterGrpcService::StartRun(grpc::ServerContext* context,
                                         const rein::v1::StartRunRequest* request,
                                         rein::v1::Run* response) {
  REIN_AUTHORIZE("StartRun");
  return Reply(engine_->StartRun(*request, principal), response, "StartRun");
}

grpc::Status RouterGrpcService::GetRun(grpc::ServerContext* context,
                                       const rein::v1::GetRunRequest* request,
                                       rein::v1::Run* response) {
  REIN_AUTHORIZE("GetRun");
  return Reply(engine_->GetRun(request->run_id()), response, "GetRun");
}

grpc::Status RouterGrpcService::ListRuns(grpc::ServerContext* context,
                                         const rein::v1::ListRunsRequest* request,
                                         rein::v1::ListRunsResponse* response) {
  REIN_AUTHORIZE("ListRuns");
  absl::StatusOr<RunPage> page = engine_->ListRuns(*request);
  absl::StatusOr<rein::v1::ListRunsResponse> reply;
  if (!page.ok()) {
    reply = page.status();
  } else {
    rein::v1::ListRunsResponse out;
    for (auto& run : page->runs) *out.add_runs() = std::move(run);
    out.set_next_page_token(page->next_page_token);
    reply = std::move(out);
  }
  return Reply(reply, response, "ListRuns");
}

grpc::Status RouterGrpcService::CancelRun(grpc::ServerContext* context,
                                          const rein::v1::CancelRunRequest* request,
                                          rein::v1::Run* response) {
  REIN_AUTHORIZE("CancelRun");
  return Reply(engine_->CancelRun(request->run_id(), request->reason(), principal), response,
               "CancelRun");
}

grpc::Status RouterGrpcService::ResumeRun(grpc::ServerContext* context,
                                          const rein::v1::ResumeRunRequest* request,
                                          rein::v1::Run* response) {
  REIN_AUTHORIZE("ResumeRun");
  return Reply(engine_->ResumeRun(*request, principal), response, "ResumeRun");
}

grpc::Status RouterGrpcService::ForkRun(grpc::ServerContext* context,
                                        const rein::v1::ForkRunRequest* request,
                                        rein::v1::Run* response) {
  REIN_AUTHORIZE("ForkRun");
  return Reply(engine_->ForkRun(*request, principal), response, "ForkRun");
}

grpc::Status RouterGrpcService::WatchRun(grpc::ServerContext* context,
                                         const rein::v1::WatchRunRequest* request,
                                         grpc::ServerWriter<rein::v1::RunEvent>* writer) {
  REIN_AUTHORIZE("WatchRun");
  int64_t after = request->after_seq();
  // Fail fast on a bad request or an unknown run.
  absl::StatusOr<rein::v1::Run> run = engine_->GetRun(request->run_id());
  if (!run.ok()) return ToGrpcStatus(run.status());
  if (after < 0) return ToGrpcStatus(absl::InvalidArgumentError("after_seq: must be >= 0"));
  while (!context->IsCancelled()) {
    bool ended = false;
    absl::StatusOr<std::vector<rein::v1::RunEvent>> events =
        engine_->WaitEvents(request->run_id(), after, absl::Milliseconds(500), &ended);
    if (!events.ok()) return ToGrpcStatus(events.status());
    for (const rein::v1::RunEvent& event : *events) {
      if (!writer->Write(event)) return grpc::Status(grpc::StatusCode::CANCELLED, "client gone");
      after = event.seq();
      if (event.has_finished()) return grpc::Status::OK;
    }
    if (ended) return grpc::Status::OK;
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled");
}

grpc::Status RouterGrpcService::ExportRun(grpc::ServerContext* context,
                                          const rein::v1::ExportRunRequest* request,
                                          grpc::ServerWriter<rein::v1::RunSnapshot>* writer) {
  REIN_AUTHORIZE("ExportRun");
  absl::StatusOr<std::vector<Snapshot>> snapshots = engine_->ListSnapshots(request->run_id());
  if (!snapshots.ok()) return ToGrpcStatus(snapshots.status());
  for (const Snapshot& s : *snapshots) {
    rein::v1::RunSnapshot out;
    out.set_run_id(request->run_id());
    out.set_iteration(s.iteration);
    out.set_version(s.version);
    rein::v1::RunState state;
    if (!state.ParseFromString(s.state)) {
      return ToGrpcStatus(absl::DataLossError(absl::StrCat(
          "snapshot of version ", s.version, " of run ", request->run_id(), " is corrupt")));
    }
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(state, out.mutable_state_json(), options);
    if (!writer->Write(out)) return grpc::Status(grpc::StatusCode::CANCELLED, "client gone");
  }
  return grpc::Status::OK;
}

#undef REIN_AUTHORIZE

}  // namespace rein
