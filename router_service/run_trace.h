// RunTrace: what the engine records of a run's trace and timing (its invoke_agent stretches,
// docs/TRACING.md, and the time a reply waits to be applied).
#ifndef REIN_ROUTER_SERVICE_RUN_TRACE_H_
#define REIN_ROUTER_SERVICE_RUN_TRACE_H_

#include <chrono>
#include <string>

#include "rein/v1/types.pb.h"
#include "trace/run_stretches.h"
#include "trace/span_context.h"

namespace rein {

// Seconds of real (steady) time since `start`.
double SecondsSince(std::chrono::steady_clock::time_point start);

// The open stretch of each run the engine drives (trace::RunStretches), begun and ended at the
// engine's commits and calls. With the tracer off, only the metrics are recorded. Thread-safe.
class RunTrace {
 public:
  // A new run's trace: a fresh trace id, with this thread's traceparent (router_grpc's scope),
  // when valid, as a link.
  static void NewRun(rein::v1::RunState* state);
  // Before a commit of `state`: a stretch begins or goes on. Returns when the commit started.
  std::chrono::steady_clock::time_point BeginCommit(const std::string& run_id,
                                                    rein::v1::RunState* state);
  // After a commit that took `commit_seconds`: ends the stretch when `state` is PAUSED or ended.
  void Committed(const std::string& run_id, const rein::v1::RunState& state, double commit_seconds);
  // Before a call: a stretch begins or goes on; the call carries the returned context as its
  // traceparent (trace::ScopedContext).
  trace::SpanContext BeginCall(const std::string& run_id, rein::v1::RunState* state);
  // A call's reply, received at `replied`, is being applied now: records how long it waited
  // (rein_router_queue_seconds and the stretch's queue time).
  void Queued(const std::string& run_id, std::chrono::steady_clock::time_point replied);
  // The engine stopped driving the run.
  void Abandon(const std::string& run_id, const std::string& why);

 private:
  trace::RunStretches stretches_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_RUN_TRACE_H_
