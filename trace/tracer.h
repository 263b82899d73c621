// The tracer: spans with W3C ids, attributes, events, links and a status, handed to an exporter
// when they end.
#ifndef REIN_TRACE_TRACER_H_
#define REIN_TRACE_TRACER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "trace/span_data.h"

namespace rein::trace {

// Where finished spans go. OnEnd must not block (an exporter queues, and drops when full).
// The one implementation is BatchSpanExporter (otlp_http_exporter.h); this interface is the
// seam where opentelemetry-cpp's exporter can be put instead where that library exists.
class SpanExporter {
 public:
  virtual ~SpanExporter() = default;
  virtual void OnEnd(SpanData span) = 0;
};

// OTEL_TRACES_SAMPLER's choices (the ones rein implements).
struct Sampler {
  enum class Kind { kAlwaysOn, kAlwaysOff, kTraceIdRatio };
  Kind kind = Kind::kAlwaysOn;
  bool parent_based = true;
  double ratio = 1.0;  // kTraceIdRatio
};

class Tracer;

// One span being recorded. Inert (every call a no-op, costing a branch) when tracing is off or
// the span is not sampled; its context() is still valid when it has one, so that it can be
// passed on. Ended once, by End() or by the destructor. Movable, not thread-safe: one thread
// records a span at a time.
class Span {
 public:
  Span() = default;
  Span(Span&& other) noexcept;
  Span& operator=(Span&& other) noexcept;
  ~Span();

  bool recording() const { return data_ != nullptr; }
  // The span's context (invalid for a span that was never started).
  const SpanContext& context() const { return context_; }

  void SetAttribute(absl::string_view key, AttributeValue value);
  // Overloads so that a bool or a double is not promoted to an integer on the way.
  void SetAttribute(absl::string_view key, const char* value) {
    SetAttribute(key, AttributeValue(std::string(value)));
  }
  void SetAttribute(absl::string_view key, const std::string& value) {
    SetAttribute(key, AttributeValue(value));
  }
  void SetAttribute(absl::string_view key, bool value) { SetAttribute(key, AttributeValue(value)); }
  void SetAttribute(absl::string_view key, double value) {
    SetAttribute(key, AttributeValue(value));
  }
  void SetAttribute(absl::string_view key, int64_t value) {
    SetAttribute(key, AttributeValue(value));
  }
  void SetAttribute(absl::string_view key, int value) {
    SetAttribute(key, AttributeValue(static_cast<int64_t>(value)));
  }
  void AddEvent(absl::string_view name, Attributes attributes = {});
  void AddLink(const SpanContext& context, Attributes attributes = {});
  void SetError(absl::string_view message);
  void SetOk();
  // Moves the span's start (Unix ns): a span recorded after the fact (an interrupted stretch).
  void SetStartUnixNano(int64_t start);
  void End();
  // Drops the span unexported (someone else exports it).
  void Discard() { data_.reset(); }

 private:
  friend class Tracer;
  SpanContext context_;
  std::unique_ptr<SpanData> data_;
  Tracer* tracer_ = nullptr;
};

// Starts spans and hands the ended ones to its exporter. A tracer without an exporter is off:
// StartSpan then allocates nothing and only makes up ids. Thread-safe.
class Tracer {
 public:
  struct Options {
    Sampler sampler;
    // The clock of span times (Unix nanoseconds); default the real time.
    std::function<int64_t()> now_unix_nano;
    // The GenAI conventions' newest names (OTEL_SEMCONV_STABILITY_OPT_IN) instead of v1.36's.
    bool genai_latest = false;
    // Prompts and completions may be recorded (opt-in; they are personal data).
    bool capture_content = false;
  };
  // `exporter` null = off. The exporter must outlive the tracer's spans.
  Tracer() : Tracer(nullptr, Options()) {}
  Tracer(SpanExporter* exporter, Options options);

  bool enabled() const { return exporter_ != nullptr; }
  const Options& options() const { return options_; }

  // A span under `parent` (same trace), or the root of a new trace when `parent` is invalid.
  // `span_id`, when given (8 bytes), is the new span's id (a run's first stretch, whose id was
  // chosen when the run was created).
  Span StartSpan(absl::string_view name, const SpanContext& parent, SpanKind kind,
                 const std::string& span_id = "");
  // A root span of the given trace id (16 bytes), with no parent.
  Span StartRootSpan(absl::string_view name, const std::string& trace_id, SpanKind kind,
                     const std::string& span_id = "");

  int64_t NowUnixNano() const;

  // The process's tracer (off until InstallGlobal): set once by a service's main.cc, before
  // serving, from its OTEL_* environment (otel_setup.h). Like Metrics::Global(), this is the
  // one process-wide instance the adapters record into.
  static Tracer& Global();
  static void InstallGlobal(std::unique_ptr<Tracer> tracer);

 private:
  friend class Span;
  bool Sample(const std::string& trace_id, const SpanContext* parent) const;
  void Finish(SpanData data);

  SpanExporter* exporter_;
  Options options_;
};

// The span context the code on this thread works under (W3C context propagation inside a
// process): set by an adapter around the call it serves, read by the clients that pass it on
// (`traceparent` in gRPC metadata or HTTP headers) and by code that starts child spans.
class ScopedContext {
 public:
  explicit ScopedContext(const SpanContext& context);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  SpanContext own_;
  const SpanContext* previous_;
};

// The innermost ScopedContext of this thread; nullptr when none.
const SpanContext* CurrentContext();

// The span this thread records into (and its context, as a ScopedContext): set by the code that
// owns `span` around a call, so that deeper code (a model client's retries) can add events to it.
class ScopedSpan {
 public:
  explicit ScopedSpan(Span* span);
  ~ScopedSpan();
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

 private:
  ScopedContext context_;
  Span* previous_;
};

// The innermost ScopedSpan's span of this thread; nullptr when none.
Span* CurrentSpan();

}  // namespace rein::trace

#endif  // REIN_TRACE_TRACER_H_
