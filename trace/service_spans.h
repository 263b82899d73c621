// The spans the planner and the executor record for the calls they serve: a stage and its
// model request (`chat`), and `execute_tool`, in the GenAI conventions.
#ifndef REIN_TRACE_SERVICE_SPANS_H_
#define REIN_TRACE_SERVICE_SPANS_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "rein/v1/executor.pb.h"
#include "rein/v1/types.pb.h"
#include "trace/tracer.h"

namespace rein::trace {

// A planner backend's name() as the conventions' provider and model: "anthropic:<model>" ->
// ("anthropic", "<model>"); "scripted" -> ("rein.scripted", "scripted").
std::pair<std::string, std::string> ProviderAndModel(const std::string& backend);

// One planner request: the stage's span (SERVER, named "plan", "decide" or "evaluate") under
// the caller's traceparent, and its model request as a child (`chat {model}`, CLIENT). A model
// client adds its retries to chat() as events (CurrentSpan, through the ScopedSpan this holds).
// With the tracer off, nothing is recorded. Not thread-safe: one request's thread.
class PlannerCallSpans {
 public:
  // `backend` is the backend's name(): "scripted" or "anthropic:<model>"; `request_model` the
  // request's ModelOptions.model ("" = the backend's).
  PlannerCallSpans(Tracer& tracer, const char* stage, const std::string& run_id,
                   const std::string& backend, const std::string& request_model,
                   const SpanContext& parent);
  ~PlannerCallSpans();
  PlannerCallSpans(const PlannerCallSpans&) = delete;
  PlannerCallSpans& operator=(const PlannerCallSpans&) = delete;

  // The reply: its usage (input, output, cache read, cache creation tokens), the backend that
  // answered ("anthropic:<model>"), and the status. Ends both spans.
  void Finish(const rein::v1::Usage& usage, const std::string& response_backend,
              const absl::Status& status);

 private:
  bool latest_;
  bool capture_;  // error messages (which may quote the model) only with content capture
  Span stage_;
  Span chat_;
  ScopedSpan* scope_ = nullptr;
};

// The `execute_tool {tool}` span of one Execute (INTERNAL, as the conventions say), under the
// caller's traceparent.
Span StartExecuteToolSpan(Tracer& tracer, const SpanContext& parent,
                          const rein::v1::ExecuteRequest& request, bool mutating);
// Its outcome: ok or the error, replayed from the journal, the time the tool took, the
// executor; with content capture on, the arguments and the output.
void FinishExecuteToolSpan(Span& span, const rein::v1::ExecuteRequest& request,
                           const rein::v1::ExecuteResponse& response, const absl::Status& status,
                           bool capture_content);

}  // namespace rein::trace

#endif  // REIN_TRACE_SERVICE_SPANS_H_
