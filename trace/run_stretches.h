// A run's `invoke_agent` spans on a router: one per stretch (from start or resume to pause or
// end), all in the run's one trace (RunState.trace).
#ifndef REIN_TRACE_RUN_STRETCHES_H_
#define REIN_TRACE_RUN_STRETCHES_H_

#include <map>
#include <string>

#include "absl/synchronization/mutex.h"
#include "rein/v1/types.pb.h"
#include "trace/span_context.h"
#include "trace/tracer.h"

namespace rein::trace {

// Gives a new run its trace: a fresh trace id and the id its first stretch will have (the span
// later stretches resume under), and `link` (the caller's traceparent, or a fork's source run)
// as a link. The ids are set with tracing off too, so that GetRun and the logs name them.
void InitRunTrace(rein::v1::RunState* state, const SpanContext* link);

// The open stretch of each run this router drives. A stretch begins when the run moves (a
// commit or a call) with none open, and ends when a commit leaves the run PAUSED or ended, or
// when the router stops driving it. The first stretch's span id is RunTrace.root_span_id; each
// later one is its child, linked to the stretch before (RunTrace.last_stretch_span_id, which
// Begin writes into the state so that the next commit keeps it across restarts and takeovers).
//
// A stretch is exported once. The router that ends it with a commit (a pause or the end)
// exports it then. A stretch still open when the router stops driving the run (killed, shut
// down, the run taken by another router) is in the committed state (RunTrace.last_stretch_span_id
// and open_since_unix_nano, written by Begin into every state committed while it is open, and
// open_previous_span_id); the router that drives the run next exports it, ended at that moment
// with stretch_end `interrupted`, an ERROR status and its link to the stretch before, before it
// begins its own stretch, linked to it. A stretch that no commit named (the router stopped before
// its first commit) is exported by the router that had it, as `dropped: <why>` or `stopped`. With
// the tracer off, every call returns at once. Thread-safe.
class RunStretches {
 public:
  // `tracer` null = Tracer::Global() at each call.
  explicit RunStretches(Tracer* tracer = nullptr) : tracer_(tracer) {}
  ~RunStretches();

  // Begins a stretch of `run_id` unless one is open (first exporting one the state says a router
  // left open), updating `state->trace`; called on every state about to be committed.
  void Begin(const std::string& run_id, rein::v1::RunState* state);
  // After a commit: ends the stretch when `state` is PAUSED or terminal; adds the commit's time.
  void Committed(const std::string& run_id, const rein::v1::RunState& state, double commit_seconds);
  // A reply waited `seconds` for a worker.
  void Queued(const std::string& run_id, double seconds);
  // The router stopped driving the run (taken by another router, lease lapsed, shutdown).
  void Abandon(const std::string& run_id, const std::string& why);
  // The open stretch's context (what the run's calls carry as traceparent); invalid when none.
  SpanContext ContextOf(const std::string& run_id);

 private:
  struct Open {
    Span span;
    int64_t commits = 0;
    double commit_seconds = 0;
    double queue_seconds = 0;
    int64_t start_unix_nano = 0;
    int stretch = 0;               // its number, RunTrace.stretches once it began
    std::string previous_span_id;  // the stretch it links to; "" for the first
  };
  Tracer& tracer() { return tracer_ != nullptr ? *tracer_ : Tracer::Global(); }
  static void End(Open& open, const std::string& how);
  // The router stops driving the run with `open` open.
  static void Leave(Open& open, const std::string& how);
  static void MarkOpen(const Open& open, rein::v1::RunState* state);
  static void ExportInterrupted(Tracer& t, const std::string& run_id,
                                const rein::v1::RunState& state, const SpanContext& root);

  Tracer* tracer_;
  absl::Mutex mu_;
  std::map<std::string, Open> open_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rein::trace

#endif  // REIN_TRACE_RUN_STRETCHES_H_
