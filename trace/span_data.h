// What a finished span is: plain data, handed by the tracer to an exporter.
#ifndef REIN_TRACE_SPAN_DATA_H_
#define REIN_TRACE_SPAN_DATA_H_

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "trace/span_context.h"

namespace rein::trace {

// An attribute's value; a vector is an array of strings (gen_ai.response.finish_reasons).
using AttributeValue = std::variant<std::string, int64_t, double, bool, std::vector<std::string>>;
using Attributes = std::vector<std::pair<std::string, AttributeValue>>;

// OTLP's span kinds (the numbers are OTLP's Span.SpanKind).
enum class SpanKind { kInternal = 1, kServer = 2, kClient = 3, kProducer = 4, kConsumer = 5 };

struct SpanEvent {
  std::string name;
  int64_t time_unix_nano = 0;
  Attributes attributes;
};

struct SpanLink {
  SpanContext context;
  Attributes attributes;
};

// OTLP's status codes.
enum class StatusCode { kUnset = 0, kOk = 1, kError = 2 };

struct SpanData {
  std::string name;
  SpanContext context;
  std::string parent_span_id;  // raw 8 bytes; "" = a root span
  SpanKind kind = SpanKind::kInternal;
  int64_t start_unix_nano = 0;
  int64_t end_unix_nano = 0;
  Attributes attributes;
  std::vector<SpanEvent> events;
  std::vector<SpanLink> links;
  StatusCode status = StatusCode::kUnset;
  std::string status_message;
};

}  // namespace rein::trace

#endif  // REIN_TRACE_SPAN_DATA_H_
