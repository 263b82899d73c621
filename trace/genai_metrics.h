// The GenAI semantic conventions' client metrics, beside rein's own Prometheus metrics, on the
// service's /metrics: `gen_ai.client.token.usage` and `gen_ai.client.operation.duration` under
// their Prometheus names (dots to underscores, the unit as a suffix); and, when metrics are
// exported over OTLP (HistogramRecorder::Global() set), under their own names with the conventions'
// bucket bounds.
#ifndef REIN_TRACE_GENAI_METRICS_H_
#define REIN_TRACE_GENAI_METRICS_H_

#include <string>

#include "absl/status/status.h"
#include "common/metrics.h"
#include "rein/v1/types.pb.h"

namespace rein::trace {

// The Prometheus names of the conventions' metrics.
inline constexpr char kTokenUsageMetric[] = "gen_ai_client_token_usage";
inline constexpr char kOperationDurationMetric[] = "gen_ai_client_operation_duration_seconds";

// One model request of the planner (`chat`): its tokens by `gen_ai_token_type` (`input`: the
// uncached input with the cache reads and writes, as the conventions count input; `output`),
// and its duration; labelled with the operation, the provider (`gen_ai_system`, or
// `gen_ai_provider_name` when `latest`), the request model, and `error_type` when it failed.
// `backend` and `request_model` as PlannerCallSpans takes them. Recorded with tracing off too.
void RecordModelCall(Metrics& metrics, const std::string& backend, const std::string& request_model,
                     const rein::v1::Usage& usage, double seconds, const absl::Status& status,
                     bool latest);

// One tool call of the executor (`execute_tool`): its duration, labelled with the tool's name
// and `error_type` (the tool's error code) when it failed.
void RecordToolCall(Metrics& metrics, const std::string& tool, double seconds,
                    const std::string& error_type);

}  // namespace rein::trace

#endif  // REIN_TRACE_GENAI_METRICS_H_
