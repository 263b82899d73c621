// The gRPC adapter of rein.v1.Planner: converts, passes the deadline, logs and counts.
#include "planner_service/planner_grpc.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_deadline.h"
#include "common/grpc_status.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/usage_payload.h"
#include "planner_service/request_validation.h"
#include "trace/genai_metrics.h"
#include "trace/grpc_metadata.h"
#include "trace/service_spans.h"

namespace rein {
namespace {

// Runs one stage: validate, call the backend, convert, log, count.
template <typename Request, typename Response, typename Validate, typename Call>
grpc::Status Serve(const char* stage, const std::string& backend, grpc::ServerContext& context,
                   const Request& request, Response* response, Validate validate, Call call) {
  const absl::Time start = absl::Now();
  // The stage's span and its model request's, under the router's traceparent (off: nothing).
  trace::Tracer& tracer = trace::Tracer::Global();
  trace::PlannerCallSpans spans(tracer, stage, request.run_id(), backend, request.model().model(),
                                tracer.enabled()
                                    ? trace::IncomingContext(context).value_or(trace::SpanContext())
                                    : trace::SpanContext());
  absl::Status status = validate(request);
  if (status.ok()) {
    absl::StatusOr<Response> result = call(request, DeadlineOf(context));
    if (result.ok()) {
      *response = *std::move(result);
    } else {
      status = result.status();
    }
  }
  const std::string code = absl::StatusCodeToString(status.code());
  const std::string millis = absl::StrCat(absl::ToInt64Milliseconds(absl::Now() - start));
  Metrics::Global().Add("rein_planner_calls_total", 1,
                        absl::StrCat("stage=\"", stage, "\",code=\"", code, "\""));
  if (status.ok()) {
    const int64_t input = response->usage().input_tokens();
    const int64_t output = response->usage().output_tokens();
    Metrics::Global().Add("rein_planner_tokens_total", static_cast<double>(input),
                          "direction=\"input\"");
    Metrics::Global().Add("rein_planner_tokens_total", static_cast<double>(output),
                          "direction=\"output\"");
    LogInfo("planner call", {{"run_id", request.run_id()},
                             {"stage", stage},
                             {"code", code},
                             {"duration_ms", millis},
                             {"backend", response->backend()},
                             {"input_tokens", absl::StrCat(input)},
                             {"output_tokens", absl::StrCat(output)}});
  } else {
    LogWarning("planner call", {{"run_id", request.run_id()},
                                {"stage", stage},
                                {"code", code},
                                {"duration_ms", millis},
                                {"error", status.message()}});
  }
  spans.Finish(status.ok() ? response->usage() : UsageOf(status).value_or(rein::v1::Usage()),
               status.ok() ? response->backend() : std::string(), status);
  trace::RecordModelCall(
      Metrics::Global(), status.ok() ? response->backend() : backend, request.model().model(),
      status.ok() ? response->usage() : UsageOf(status).value_or(rein::v1::Usage()),
      absl::ToDoubleSeconds(absl::Now() - start), status, tracer.options().genai_latest);
  if (std::optional<rein::v1::Usage> usage = UsageOf(status)) {
    // The tokens a failed reply cost travel in a trailer, for the router's token budget.
    context.AddTrailingMetadata(kUsageTrailer, usage->SerializeAsString());
  }
  return ToGrpcStatus(status);  // trims the message, keeps the code
}

}  // namespace

grpc::Status PlannerGrpcService::Plan(grpc::ServerContext* context,
                                      const rein::v1::PlanRequest* request,
                                      rein::v1::PlanResponse* response) {
  return Serve("plan", backend_->name(), *context, *request, response, ValidatePlanRequest,
               [this](const rein::v1::PlanRequest& r, absl::Time deadline) {
                 return backend_->Plan(r, deadline);
               });
}

grpc::Status PlannerGrpcService::Decide(grpc::ServerContext* context,
                                        const rein::v1::DecideRequest* request,
                                        rein::v1::DecideResponse* response) {
  return Serve("decide", backend_->name(), *context, *request, response, ValidateDecideRequest,
               [this](const rein::v1::DecideRequest& r, absl::Time deadline) {
                 return backend_->Decide(r, deadline);
               });
}

grpc::Status PlannerGrpcService::Evaluate(grpc::ServerContext* context,
                                          const rein::v1::EvaluateRequest* request,
                                          rein::v1::EvaluateResponse* response) {
  return Serve("evaluate", backend_->name(), *context, *request, response, ValidateEvaluateRequest,
               [this](const rein::v1::EvaluateRequest& r, absl::Time deadline) {
                 return backend_->Evaluate(r, deadline);
               });
}

}  // namespace rein
