// The gRPC face of the executor.
#include "executor_service/executor_grpc.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_deadline.h"
#include "common/grpc_status.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/proto_time.h"
#include "common/status_reason.h"
#include "executor_service/process/output_buffer.h"
#include "executor_service/tools/json_schema.h"
#include "executor_service/workspace/workspace.h"
#include "trace/genai_metrics.h"
#include "trace/grpc_metadata.h"
#include "trace/service_spans.h"

namespace rein {
namespace {

absl::Status FromProto(const google::protobuf::Duration& in, absl::string_view field,
                       absl::Duration* out) {
  if (!IsValidProtoDuration(in)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": not a valid duration"));
  }
  *out = FromProtoDuration(in);
  return absl::OkStatus();
}

// `status` with its message made valid UTF-8, its reasons kept.
absl::Status Sanitized(const absl::Status& status) {
  absl::Status out(status.code(), SanitizeUtf8(status.message()));
  status.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

// Untrusted strings are cut before they go into a log line.
std::string ForLog(const std::string& s) { return s.size() > 256 ? s.substr(0, 256) : s; }

}  // namespace

grpc::Status ExecutorGrpcService::ListTools(grpc::ServerContext* /*context*/,
                                            const rein::v1::ListToolsRequest* request,
                                            rein::v1::ListToolsResponse* response) {
  if (!request->namespace_().empty()) {
    absl::Status bad = CheckNamespaceName(request->namespace_(), "namespace");
    if (!bad.ok()) return ToGrpcStatus(bad);
  }
  for (const ToolSpec& spec : executor_->ListTools(request->namespace_())) {
    rein::v1::ToolSpec* out = response->add_tools();
    out->set_name(spec.name);
    out->set_description(spec.description);
    out->set_input_schema_json(spec.input_schema.dump());
    out->set_mutating(spec.mutating);
    out->set_origin(spec.origin);
    *out->mutable_default_timeout() = ToProtoDuration(spec.default_timeout);
    out->set_origin(spec.origin);
    out->set_schema_hash(SchemaHash(spec.input_schema));
  }
  response->set_executor_id(executor_->options().executor_id);
  response->set_sandbox(executor_->SandboxDescription());
  return grpc::Status::OK;
}

grpc::Status ExecutorGrpcService::Execute(grpc::ServerContext* context,
                                          const rein::v1::ExecuteRequest* request,
                                          rein::v1::ExecuteResponse* response) {
  const absl::Time start = executor_->options().clock->Now();
  // execute_tool, under the router's traceparent (tracing off: an inert span, nothing read).
  trace::Tracer& tracer = trace::Tracer::Global();
  trace::Span span =
      tracer.enabled()
          ? trace::StartExecuteToolSpan(
                tracer, trace::IncomingContext(*context).value_or(trace::SpanContext()), *request,
                executor_->IsMutating(request->tool()))
          : trace::Span();
  trace::ScopedContext trace_scope(span.context());  // an MCP server's call carries it on
  ExecuteCall call;
  call.call_id = request->call_id();
  call.run_id = request->run_id();
  // A bad workspace name fails as it always did (ExecuteOnce's reply); a bad namespace, or a
  // `default` workspace that is a namespace's folder, fails the request.
  absl::StatusOr<std::string> workspace = request->workspace();
  if (CheckWorkspaceName(request->workspace(), "workspace").ok()) {
    workspace = NamespacedWorkspace(executor_->options().workspace_root, request->namespace_(),
                                    request->workspace());
  }
  call.tool = request->tool();
  call.args_json = request->args_json();
  call.max_output_bytes = request->limits().max_output_bytes();
  call.tool_schema_hash = request->tool_schema_hash();
  call.namespace_name = request->namespace_();
  call.deadline = DeadlineOn(*context, executor_->options().clock);
  absl::Status status = FromProto(request->limits().timeout(), "limits.timeout", &call.timeout);
  if (workspace.ok()) {
    call.workspace = *std::move(workspace);
  } else if (status.ok()) {
    status = workspace.status();
  }

  absl::StatusOr<ExecuteOutcome> outcome =
      status.ok() ? executor_->ExecuteOnce(call) : absl::StatusOr<ExecuteOutcome>(status);
  const absl::Duration elapsed = executor_->options().clock->Now() - start;
  absl::StatusOr<ToolResult> result =
      outcome.ok() ? absl::StatusOr<ToolResult>(outcome->result) : outcome.status();

  std::string code;
  if (result.ok()) {
    response->set_ok(result->ok);
    response->set_output(SanitizeUtf8(result->output));
    response->set_truncated(result->truncated);
    if (!result->ok) {
      response->mutable_error()->set_code(result->error_code);
      response->mutable_error()->set_message(SanitizeUtf8(result->error_message));
      response->mutable_error()->set_reason(result->error_reason);
    }
    response->set_exit_code(result->exit_code);
    response->set_timed_out(result->timed_out);
    response->set_structured_content_json(SanitizeUtf8(result->structured_content_json));
    *response->mutable_duration() =
        ToProtoDuration(outcome->replayed ? outcome->duration : elapsed);
    response->set_executor_id(outcome->replayed || outcome->outcome_unknown
                                  ? outcome->executor_id
                                  : executor_->options().executor_id);
    response->set_replayed(outcome->replayed);
    response->set_outcome_unknown(outcome->outcome_unknown);
    response->set_snapshot_skipped(SanitizeUtf8(outcome->snapshot_skipped));
    code = outcome->replayed ? "REPLAYED" : result->ok ? "OK" : result->error_code;
  } else {
    code = absl::StatusCodeToString(result.status().code());
  }

  // Only registered names become label values, so that callers cannot grow the series.
  const std::string tool_label = executor_->HasTool(call.tool) ? call.tool : "unknown";
  Metrics::Global().Add("rein_executor_calls_total", 1,
                        absl::StrCat("tool=\"", tool_label, "\",code=\"", code, "\""));
  trace::RecordToolCall(Metrics::Global(), tool_label, absl::ToDoubleSeconds(elapsed),
                        result.ok() ? (result->ok ? "" : result->error_code) : code);
  const std::string duration_ms = absl::StrCat(absl::ToDoubleMilliseconds(elapsed));
  const std::string message =
      result.ok() ? result->error_message : std::string(result.status().message());
  LogInfo("execute", {{"run_id", ForLog(call.run_id)},
                      {"rpc_status", result.ok() ? "OK" : code},
                      {"call_id", ForLog(call.call_id)},
                      {"tool", ForLog(call.tool)},
                      {"workspace", ForLog(call.workspace)},
                      {"code", code},
                      {"duration_ms", duration_ms},
                      {"error", ForLog(message)}});
  trace::FinishExecuteToolSpan(span, *request, *response,
                               result.ok() ? absl::OkStatus() : result.status(),
                               tracer.options().capture_content);
  if (!result.ok()) return ToGrpcStatus(Sanitized(result.status()));
  return grpc::Status::OK;
}

grpc::Status ExecutorGrpcService::CopyWorkspace(grpc::ServerContext* context,
                                                const rein::v1::CopyWorkspaceRequest* request,
                                                rein::v1::CopyWorkspaceResponse* response) {
  if (history_ == nullptr) {
    return ToGrpcStatus(
        WithReason(absl::FailedPreconditionError("this executor copies no workspaces"),
                   reason::kNotSupported));
  }
  const absl::Time start = executor_->options().clock->Now();
  const std::string& root = executor_->options().workspace_root;
  absl::StatusOr<std::string> from =
      NamespacedWorkspace(root, request->namespace_(), request->workspace());
  absl::StatusOr<std::string> target =
      NamespacedWorkspace(root, request->namespace_(), request->target());
  absl::StatusOr<SandboxSlot> slot = executor_->AdmitWorkspaceCopy();
  absl::StatusOr<CopyStats> stats =
      !from.ok()     ? from.status()
      : !target.ok() ? target.status()
      : !slot.ok()   ? slot.status()
                     : history_->Copy(*from, request->run_id(), request->before_call(), *target,
                                      DeadlineOn(*context, executor_->options().clock));
  LogInfo("copy workspace", {{"workspace", ForLog(request->workspace())},
                             {"before_call", ForLog(request->before_call())},
                             {"target", ForLog(request->target())},
                             {"rpc_status", stats.ok() ? "OK" : stats.status().ToString()}});
  if (!stats.ok()) {
    return ToGrpcStatus(Sanitized(stats.status()));
  }
  response->set_files(stats->files);
  response->set_bytes(stats->bytes);
  *response->mutable_duration() = ToProtoDuration(executor_->options().clock->Now() - start);
  response->set_executor_id(executor_->options().executor_id);
  return grpc::Status::OK;
}

grpc::Status ExecutorGrpcService::ForgetRun(grpc::ServerContext* /*context*/,
                                            const rein::v1::ForgetRunRequest* request,
                                            rein::v1::ForgetRunResponse* response) {
  absl::StatusOr<int> forgotten = executor_->ForgetRun(request->run_id());
  LogInfo("forget run", {{"run_id", ForLog(request->run_id())},
                         {"rpc_status", forgotten.ok() ? "OK" : forgotten.status().ToString()},
                         {"calls", forgotten.ok() ? absl::StrCat(*forgotten) : ""}});
  if (!forgotten.ok()) {
    return ToGrpcStatus(Sanitized(forgotten.status()));
  }
  response->set_calls_forgotten(*forgotten);
  response->set_executor_id(executor_->options().executor_id);
  return grpc::Status::OK;
}

grpc::Status ExecutorGrpcService::DeleteWorkspace(grpc::ServerContext* /*context*/,
                                                  const rein::v1::DeleteWorkspaceRequest* request,
                                                  rein::v1::DeleteWorkspaceResponse* /*response*/) {
  if (history_ == nullptr) {
    return ToGrpcStatus(
        WithReason(absl::FailedPreconditionError("this executor copies no workspaces"),
                   reason::kNotSupported));
  }
  absl::StatusOr<std::string> name = NamespacedWorkspace(
      executor_->options().workspace_root, request->namespace_(), request->workspace());
  absl::Status status = name.ok() ? history_->Delete(*name) : name.status();
  LogInfo("delete workspace", {{"workspace", ForLog(request->workspace())},
                               {"rpc_status", status.ok() ? "OK" : status.ToString()}});
  return ToGrpcStatus(Sanitized(status));
}

}  // namespace rein
