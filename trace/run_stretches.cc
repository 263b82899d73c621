// A run's `invoke_agent` spans on a router: one per stretch (from start or resume to pause or
// end), all in the run's one trace (RunState.trace).
#include "trace/run_stretches.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "trace/genai.h"

namespace rein::trace {
namespace {

constexpr char kInterrupted[] = "interrupted";

bool Terminal(rein::v1::Stage stage) {
  return stage == rein::v1::FINISHED || stage == rein::v1::FAILED || stage == rein::v1::CANCELLED;
}

std::string StretchName() { return absl::StrCat(genai::kInvokeAgent, " ", genai::kAgent); }

void Describe(Span& span, const std::string& run_id, int stretch, rein::v1::Stage stage) {
  span.SetAttribute(genai::kOperationName, genai::kInvokeAgent);
  span.SetAttribute(genai::kAgentName, genai::kAgent);
  span.SetAttribute(genai::kConversationId, run_id);
  span.SetAttribute(attr::kRunId, run_id);
  span.SetAttribute(attr::kStretch, static_cast<int64_t>(stretch));
  span.SetAttribute(attr::kStage, rein::v1::Stage_Name(stage));
}

// The state to be committed says whether its newest stretch stays open after the commit.
void MarkOpenIn(rein::v1::RunState* state, int64_t since, const std::string& previous) {
  const bool ends = state->stage() == rein::v1::PAUSED || Terminal(state->stage());
  state->mutable_trace()->set_open_since_unix_nano(ends ? 0 : since);
  state->mutable_trace()->set_open_previous_span_id(ends ? "" : previous);
}

}  // namespace

void InitRunTrace(rein::v1::RunState* state, const SpanContext* link) {
  rein::v1::RunTrace* trace = state->mutable_trace();
  trace->Clear();
  trace->set_trace_id(ToHex(NewTraceId()));
  trace->set_root_span_id(ToHex(NewSpanId()));
  if (link != nullptr && link->valid()) {
    trace->set_link_trace_id(link->trace_id_hex());
    trace->set_link_span_id(link->span_id_hex());
  }
}

RunStretches::~RunStretches() {
  absl::MutexLock lock(&mu_);
  for (auto& [id, open] : open_) Leave(open, "stopped");
}

void RunStretches::MarkOpen(const Open& open, rein::v1::RunState* state) {
  // The stretch's own id and number too: a state read back from the store meanwhile (another
  // router's commit) may not have them yet.
  rein::v1::RunTrace* trace = state->mutable_trace();
  trace->set_last_stretch_span_id(open.span.context().span_id_hex());
  trace->set_stretches(open.stretch);
  MarkOpenIn(state, open.start_unix_nano, open.previous_span_id);
}

void RunStretches::Leave(Open& open, const std::string& how) {
  if (open.commits > 0) {
    open.span.Discard();  // the store says it is open: the run's next driver exports it
  } else {
    End(open, how);  // no commit named it: only this router knows it
  }
}

void RunStretches::Begin(const std::string& run_id, rein::v1::RunState* state) {
  Tracer& t = tracer();
  if (!t.enabled()) return;
  absl::MutexLock lock(&mu_);
  if (auto it = open_.find(run_id); it != open_.end()) {
    MarkOpen(it->second, state);
    return;
  }
  rein::v1::RunTrace* trace = state->mutable_trace();
  std::optional<SpanContext> root = ContextFromHex(trace->trace_id(), trace->root_span_id());
  if (!root.has_value()) {  // a run from before traces: it gets one now
    InitRunTrace(state, nullptr);
    root = ContextFromHex(trace->trace_id(), trace->root_span_id());
  }
  ExportInterrupted(t, run_id, *state, *root);
  Open open;
  open.start_unix_nano = t.NowUnixNano();
  if (trace->stretches() == 0) {
    open.span = t.StartRootSpan(StretchName(), root->trace_id, SpanKind::kInternal, root->span_id);
    std::optional<SpanContext> link = ContextFromHex(trace->link_trace_id(), trace->link_span_id());
    if (link.has_value()) open.span.AddLink(*link, {{"rein.link", std::string("caller")}});
  } else {
    open.span = t.StartSpan(StretchName(), *root, SpanKind::kInternal);
    std::optional<SpanContext> previous =
        ContextFromHex(trace->trace_id(), trace->last_stretch_span_id());
    if (previous.has_value()) {
      open.span.AddLink(*previous, {{"rein.link", std::string("previous_stretch")}});
      open.previous_span_id = previous->span_id_hex();
    }
  }
  open.span.SetStartUnixNano(open.start_unix_nano);
  open.stretch = trace->stretches() + 1;
  Describe(open.span, run_id, open.stretch, state->stage());
  MarkOpen(open, state);
  open_.emplace(run_id, std::move(open));
}

void RunStretches::ExportInterrupted(Tracer& t, const std::string& run_id,
                                     const rein::v1::RunState& state, const SpanContext& root) {
  const rein::v1::RunTrace& trace = state.trace();
  if (trace.open_since_unix_nano() == 0) return;
  std::optional<SpanContext> last = ContextFromHex(trace.trace_id(), trace.last_stretch_span_id());
  if (!last.has_value()) return;
  Span span;
  if (last->span_id == root.span_id) {  // the first stretch, the trace's root
    span = t.StartRootSpan(StretchName(), root.trace_id, SpanKind::kInternal, root.span_id);
    std::optional<SpanContext> link = ContextFromHex(trace.link_trace_id(), trace.link_span_id());
    if (link.has_value()) span.AddLink(*link, {{"rein.link", std::string("caller")}});
  } else {
    span = t.StartSpan(StretchName(), root, SpanKind::kInternal, last->span_id);
    std::optional<SpanContext> previous =
        ContextFromHex(trace.trace_id(), trace.open_previous_span_id());
    if (previous.has_value()) {
      span.AddLink(*previous, {{"rein.link", std::string("previous_stretch")}});
    }
  }
  span.SetStartUnixNano(trace.open_since_unix_nano());
  Describe(span, run_id, trace.stretches(), state.stage());
  span.SetAttribute(attr::kStretchEnd, kInterrupted);
  span.SetAttribute(genai::kErrorType, kInterrupted);
  span.SetError(
      "interrupted: the router driving the run stopped without ending the stretch (killed, "
      "shut down or lost the run); ended when the run was next driven");
  span.End();
}

void RunStretches::End(Open& open, const std::string& how) {
  open.span.SetAttribute(attr::kStretchEnd, how);
  open.span.SetAttribute(attr::kCommits, open.commits);
  open.span.SetAttribute(attr::kCommitSeconds, open.commit_seconds);
  open.span.SetAttribute(attr::kQueueSeconds, open.queue_seconds);
  open.span.End();
}

void RunStretches::Committed(const std::string& run_id, const rein::v1::RunState& state,
                             double commit_seconds) {
  if (!tracer().enabled()) return;
  absl::MutexLock lock(&mu_);
  auto it = open_.find(run_id);
  if (it == open_.end()) return;
  Open& open = it->second;
  open.commits++;
  open.commit_seconds += commit_seconds;
  const bool paused = state.stage() == rein::v1::PAUSED;
  if (!paused && !Terminal(state.stage())) return;
  open.span.SetAttribute(attr::kStage, rein::v1::Stage_Name(state.stage()));
  if (paused) {
    open.span.SetAttribute(attr::kPauseReason, rein::v1::PauseReason_Name(state.pause().reason()));
  } else {
    const std::string reason = rein::v1::TerminationReason_Name(state.outcome().reason());
    open.span.SetAttribute(attr::kOutcome, reason);
    if (state.stage() == rein::v1::FINISHED) {
      open.span.SetOk();
    } else {
      open.span.SetAttribute(genai::kErrorType, reason);
      open.span.SetError(tracer().options().capture_content ? state.outcome().message() : reason);
    }
  }
  End(open, paused ? "paused" : "ended");
  open_.erase(it);
}

void RunStretches::Queued(const std::string& run_id, double seconds) {
  if (!tracer().enabled()) return;
  absl::MutexLock lock(&mu_);
  auto it = open_.find(run_id);
  if (it != open_.end()) it->second.queue_seconds += seconds;
}

void RunStretches::Abandon(const std::string& run_id, const std::string& why) {
  if (!tracer().enabled()) return;
  absl::MutexLock lock(&mu_);
  auto it = open_.find(run_id);
  if (it == open_.end()) return;
  Leave(it->second, absl::StrCat("dropped: ", why));
  open_.erase(it);
}

SpanContext RunStretches::ContextOf(const std::string& run_id) {
  if (!tracer().enabled()) return SpanContext();
  absl::MutexLock lock(&mu_);
  auto it = open_.find(run_id);
  return it == open_.end() ? SpanContext() : it->second.span.context();
}

}  // namespace rein::trace
