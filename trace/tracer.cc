// The tracer: spans with W3C ids, attributes, events, links and a status, handed to an exporter
// when they end.
#include "trace/tracer.h"

#include <cstring>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace rein::trace {
namespace {

thread_local const SpanContext* current_context = nullptr;
thread_local Span* current_span = nullptr;

Tracer*& GlobalTracer() {
  static Tracer* tracer = new Tracer();
  return tracer;
}

}  // namespace

Span::Span(Span&& other) noexcept
    : context_(std::move(other.context_)), data_(std::move(other.data_)), tracer_(other.tracer_) {}

Span& Span::operator=(Span&& other) noexcept {
  if (this != &other) {
    End();
    context_ = std::move(other.context_);
    data_ = std::move(other.data_);
    tracer_ = other.tracer_;
  }
  return *this;
}

Span::~Span() { End(); }

void Span::SetAttribute(absl::string_view key, AttributeValue value) {
  if (!data_) return;
  for (auto& [k, v] : data_->attributes) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  data_->attributes.emplace_back(std::string(key), std::move(value));
}

void Span::AddEvent(absl::string_view name, Attributes attributes) {
  if (!data_) return;
  data_->events.push_back({std::string(name), tracer_->NowUnixNano(), std::move(attributes)});
}

void Span::AddLink(const SpanContext& context, Attributes attributes) {
  if (!data_ || !context.valid()) return;
  data_->links.push_back({context, std::move(attributes)});
}

void Span::SetError(absl::string_view message) {
  if (!data_) return;
  data_->status = StatusCode::kError;
  data_->status_message = std::string(message.substr(0, 1024));
}

void Span::SetOk() {
  if (!data_) return;
  data_->status = StatusCode::kOk;
  data_->status_message.clear();
}

void Span::SetStartUnixNano(int64_t start) {
  if (data_) data_->start_unix_nano = start;
}

void Span::End() {
  if (!data_) return;
  data_->end_unix_nano = tracer_->NowUnixNano();
  std::unique_ptr<SpanData> data = std::move(data_);
  tracer_->Finish(std::move(*data));
}

Tracer::Tracer(SpanExporter* exporter, Options options)
    : exporter_(exporter), options_(std::move(options)) {}

int64_t Tracer::NowUnixNano() const {
  if (options_.now_unix_nano) return options_.now_unix_nano();
  return absl::ToUnixNanos(absl::Now());
}

bool Tracer::Sample(const std::string& trace_id, const SpanContext* parent) const {
  const Sampler& s = options_.sampler;
  if (s.parent_based && parent != nullptr && parent->valid()) return parent->sampled;
  switch (s.kind) {
    case Sampler::Kind::kAlwaysOn: return true;
    case Sampler::Kind::kAlwaysOff: return false;
    case Sampler::Kind::kTraceIdRatio: {
      if (s.ratio >= 1.0) return true;
      if (s.ratio <= 0.0) return false;
      // The trace id's last 8 bytes as a number below ratio * 2^64 (the W3C random part).
      uint64_t low = 0;
      for (int i = 8; i < 16; ++i) low = (low << 8) | static_cast<unsigned char>(trace_id[i]);
      return static_cast<double>(low) < s.ratio * 18446744073709551616.0;
    }
  }
  return true;
}

Span Tracer::StartSpan(absl::string_view name, const SpanContext& parent, SpanKind kind,
                       const std::string& span_id) {
  if (!parent.valid()) return StartRootSpan(name, NewTraceId(), kind, span_id);
  Span span;
  span.context_.trace_id = parent.trace_id;
  span.context_.span_id = span_id.size() == 8 ? span_id : NewSpanId();
  span.context_.tracestate = parent.tracestate;
  span.context_.sampled = Sample(parent.trace_id, &parent);
  if (!enabled() || !span.context_.sampled) return span;
  span.tracer_ = this;
  span.data_ = std::make_unique<SpanData>();
  span.data_->name = std::string(name);
  span.data_->context = span.context_;
  span.data_->parent_span_id = parent.span_id;
  span.data_->kind = kind;
  span.data_->start_unix_nano = NowUnixNano();
  return span;
}

Span Tracer::StartRootSpan(absl::string_view name, const std::string& trace_id, SpanKind kind,
                           const std::string& span_id) {
  Span span;
  span.context_.trace_id = trace_id.size() == 16 ? trace_id : NewTraceId();
  span.context_.span_id = span_id.size() == 8 ? span_id : NewSpanId();
  span.context_.sampled = Sample(span.context_.trace_id, nullptr);
  if (!enabled() || !span.context_.sampled) return span;
  span.tracer_ = this;
  span.data_ = std::make_unique<SpanData>();
  span.data_->name = std::string(name);
  span.data_->context = span.context_;
  span.data_->kind = kind;
  span.data_->start_unix_nano = NowUnixNano();
  return span;
}

void Tracer::Finish(SpanData data) {
  if (exporter_ != nullptr) exporter_->OnEnd(std::move(data));
}

Tracer& Tracer::Global() { return *GlobalTracer(); }

void Tracer::InstallGlobal(std::unique_ptr<Tracer> tracer) {
  // The one before is kept alive: spans started under it may still end.
  GlobalTracer() = tracer.release();
}

ScopedContext::ScopedContext(const SpanContext& context)
    : own_(context), previous_(current_context) {
  current_context = &own_;
}

ScopedContext::~ScopedContext() { current_context = previous_; }

const SpanContext* CurrentContext() { return current_context; }

ScopedSpan::ScopedSpan(Span* span) : context_(span->context()), previous_(current_span) {
  current_span = span;
}

ScopedSpan::~ScopedSpan() { current_span = previous_; }

Span* CurrentSpan() { return current_span; }

}  // namespace rein::trace
