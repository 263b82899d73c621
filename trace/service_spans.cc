// The spans the planner and the executor record for the calls they serve: a stage and its
// model request (`chat`), and `execute_tool`, in the GenAI conventions.
#include "trace/service_spans.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/proto_time.h"
#include "trace/genai.h"

namespace rein::trace {

std::pair<std::string, std::string> ProviderAndModel(const std::string& backend) {
  if (absl::StartsWith(backend, "anthropic:")) {
    return {genai::kAnthropic, backend.substr(10)};
  }
  return {absl::StrCat("rein.", backend), backend};
}

PlannerCallSpans::PlannerCallSpans(Tracer& tracer, const char* stage, const std::string& run_id,
                                   const std::string& backend, const std::string& request_model,
                                   const SpanContext& parent)
    : latest_(tracer.options().genai_latest), capture_(tracer.options().capture_content) {
  if (!tracer.enabled()) return;
  stage_ = tracer.StartSpan(stage, parent, SpanKind::kServer);
  stage_.SetAttribute(attr::kRunId, run_id);
  stage_.SetAttribute(attr::kStage, stage);
  stage_.SetAttribute(attr::kBackend, backend);
  auto [provider, model] = ProviderAndModel(backend);
  if (!request_model.empty()) model = request_model;
  chat_ =
      tracer.StartSpan(absl::StrCat(genai::kChat, " ", model), stage_.context(), SpanKind::kClient);
  chat_.SetAttribute(genai::kOperationName, genai::kChat);
  chat_.SetAttribute(genai::ProviderKey(latest_), provider);
  chat_.SetAttribute(genai::kRequestModel, model);
  chat_.SetAttribute(genai::kConversationId, run_id);
  scope_ = new ScopedSpan(&chat_);
}

PlannerCallSpans::~PlannerCallSpans() { delete scope_; }

void PlannerCallSpans::Finish(const rein::v1::Usage& usage, const std::string& response_backend,
                              const absl::Status& status) {
  delete scope_;
  scope_ = nullptr;
  if (!stage_.recording()) return;
  for (Span* span : {&chat_, &stage_}) {
    span->SetAttribute(genai::kInputTokens, usage.input_tokens());
    span->SetAttribute(genai::kOutputTokens, usage.output_tokens());
    span->SetAttribute(genai::kCacheReadTokens, usage.cache_read_input_tokens());
    span->SetAttribute(genai::kCacheCreationTokens, usage.cache_creation_input_tokens());
    if (status.ok()) {
      span->SetOk();
    } else {
      span->SetAttribute(genai::kErrorType, absl::StatusCodeToString(status.code()));
      span->SetError(capture_ ? status.message() : absl::StatusCodeToString(status.code()));
    }
  }
  if (!response_backend.empty()) {
    chat_.SetAttribute(genai::kResponseModel, ProviderAndModel(response_backend).second);
  }
  chat_.End();
  stage_.End();
}

Span StartExecuteToolSpan(Tracer& tracer, const SpanContext& parent,
                          const rein::v1::ExecuteRequest& request, bool mutating) {
  if (!tracer.enabled()) return Span();
  Span span = tracer.StartSpan(absl::StrCat(genai::kExecuteTool, " ", request.tool()), parent,
                               SpanKind::kInternal);
  span.SetAttribute(genai::kOperationName, genai::kExecuteTool);
  span.SetAttribute(genai::kToolName, request.tool());
  span.SetAttribute(genai::kToolCallId, request.call_id());
  span.SetAttribute(genai::kToolType, "function");
  span.SetAttribute(attr::kRunId, request.run_id());
  span.SetAttribute(attr::kMutating, mutating);
  return span;
}

void FinishExecuteToolSpan(Span& span, const rein::v1::ExecuteRequest& request,
                           const rein::v1::ExecuteResponse& response, const absl::Status& status,
                           bool capture_content) {
  if (!span.recording()) return;
  if (!status.ok()) {
    span.SetAttribute(genai::kErrorType, absl::StatusCodeToString(status.code()));
    span.SetError(capture_content ? status.message() : absl::StatusCodeToString(status.code()));
    span.End();
    return;
  }
  span.SetAttribute(attr::kReplayed, response.replayed());
  span.SetAttribute(attr::kToolOk, response.ok());
  span.SetAttribute(attr::kToolDurationMs,
                    absl::ToDoubleMilliseconds(FromProtoDuration(response.duration())));
  span.SetAttribute(attr::kExecutorId, response.executor_id());
  if (!response.ok()) {
    // A tool that failed is a normal reply, but the operation did fail: error.type says how.
    span.SetAttribute(genai::kErrorType, response.error().code());
    span.SetError(capture_content ? response.error().message() : response.error().code());
  }
  if (capture_content) {
    span.SetAttribute(genai::kToolCallArguments, request.args_json());
    span.SetAttribute(genai::kToolCallResult, response.output().substr(0, 64 * 1024));
  }
  span.End();
}

}  // namespace rein::trace
