// RunTrace: what the engine records of a run's trace and timing (its invoke_agent stretches,
// docs/TRACING.md, and the time a reply waits to be applied).
#include "router_service/run_trace.h"

#include "common/metrics.h"
#include "trace/tracer.h"

namespace rein {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void RunTrace::NewRun(rein::v1::RunState* state) {
  trace::InitRunTrace(state, trace::CurrentContext());
}

std::chrono::steady_clock::time_point RunTrace::BeginCommit(const std::string& run_id,
                                                            rein::v1::RunState* state) {
  stretches_.Begin(run_id, state);  // the run's trace: a stretch begins or goes on
  return std::chrono::steady_clock::now();
}

void RunTrace::Committed(const std::string& run_id, const rein::v1::RunState& state,
                         double commit_seconds) {
  stretches_.Committed(run_id, state, commit_seconds);
}

trace::SpanContext RunTrace::BeginCall(const std::string& run_id, rein::v1::RunState* state) {
  stretches_.Begin(run_id, state);
  return stretches_.ContextOf(run_id);
}

void RunTrace::Queued(const std::string& run_id, std::chrono::steady_clock::time_point replied) {
  const double queued = SecondsSince(replied);
  Metrics::Global().Observe("rein_router_queue_seconds", queued);
  stretches_.Queued(run_id, queued);
}

void RunTrace::Abandon(const std::string& run_id, const std::string& why) {
  stretches_.Abandon(run_id, why);
}

}  // namespace rein
