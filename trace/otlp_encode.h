// Finished spans as an OTLP ExportTraceServiceRequest (the official opentelemetry-proto).
#ifndef REIN_TRACE_OTLP_ENCODE_H_
#define REIN_TRACE_OTLP_ENCODE_H_

#include <vector>

#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "trace/span_data.h"

namespace rein::trace {

inline constexpr char kScopeName[] = "rein";

// One request with one ResourceSpans (the process's resource) and one ScopeSpans ("rein").
opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest EncodeSpans(
    const Attributes& resource, const std::vector<SpanData>& spans);

// `attributes` as OTLP KeyValues appended to `out` (a resource's, a span's, a data point's).
void EncodeAttributes(
    const Attributes& attributes,
    google::protobuf::RepeatedPtrField<opentelemetry::proto::common::v1::KeyValue>* out);

// The value of an OTLP attribute as an AttributeValue (tests read spans back with it).
AttributeValue DecodeValue(const opentelemetry::proto::common::v1::AnyValue& value);

}  // namespace rein::trace

#endif  // REIN_TRACE_OTLP_ENCODE_H_
