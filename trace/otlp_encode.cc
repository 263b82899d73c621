// Finished spans as an OTLP ExportTraceServiceRequest (the official opentelemetry-proto).
#include "trace/otlp_encode.h"

namespace rein::trace {
namespace {

namespace common = opentelemetry::proto::common::v1;
namespace otlp = opentelemetry::proto::trace::v1;

void EncodeValue(const AttributeValue& value, common::AnyValue* out) {
  if (const auto* s = std::get_if<std::string>(&value)) {
    out->set_string_value(*s);
  } else if (const auto* i = std::get_if<int64_t>(&value)) {
    out->set_int_value(*i);
  } else if (const auto* d = std::get_if<double>(&value)) {
    out->set_double_value(*d);
  } else if (const auto* b = std::get_if<bool>(&value)) {
    out->set_bool_value(*b);
  } else if (const auto* v = std::get_if<std::vector<std::string>>(&value)) {
    for (const std::string& item : *v)
      out->mutable_array_value()->add_values()->set_string_value(item);
  }
}

}  // namespace

void EncodeAttributes(const Attributes& attributes,
                      google::protobuf::RepeatedPtrField<common::KeyValue>* out) {
  for (const auto& [key, value] : attributes) {
    common::KeyValue* kv = out->Add();
    kv->set_key(key);
    EncodeValue(value, kv->mutable_value());
  }
}

AttributeValue DecodeValue(const common::AnyValue& value) {
  switch (value.value_case()) {
    case common::AnyValue::kStringValue: return value.string_value();
    case common::AnyValue::kIntValue: return static_cast<int64_t>(value.int_value());
    case common::AnyValue::kDoubleValue: return value.double_value();
    case common::AnyValue::kBoolValue: return value.bool_value();
    case common::AnyValue::kArrayValue: {
      std::vector<std::string> items;
      for (const common::AnyValue& item : value.array_value().values()) {
        items.push_back(item.string_value());
      }
      return items;
    }
    default: return std::string();
  }
}

opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest EncodeSpans(
    const Attributes& resource, const std::vector<SpanData>& spans) {
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest request;
  otlp::ResourceSpans* rs = request.add_resource_spans();
  EncodeAttributes(resource, rs->mutable_resource()->mutable_attributes());
  otlp::ScopeSpans* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name(kScopeName);
  for (const SpanData& data : spans) {
    otlp::Span* span = ss->add_spans();
    span->set_trace_id(data.context.trace_id);
    span->set_span_id(data.context.span_id);
    if (!data.context.tracestate.empty()) span->set_trace_state(data.context.tracestate);
    if (!data.parent_span_id.empty()) span->set_parent_span_id(data.parent_span_id);
    // W3C flags in the low byte (sampled), as OTLP 1.x allows.
    span->set_flags(data.context.sampled ? 0x01 : 0x00);
    span->set_name(data.name);
    span->set_kind(static_cast<otlp::Span::SpanKind>(static_cast<int>(data.kind)));
    span->set_start_time_unix_nano(static_cast<uint64_t>(data.start_unix_nano));
    span->set_end_time_unix_nano(static_cast<uint64_t>(data.end_unix_nano));
    EncodeAttributes(data.attributes, span->mutable_attributes());
    for (const SpanEvent& event : data.events) {
      otlp::Span::Event* e = span->add_events();
      e->set_name(event.name);
      e->set_time_unix_nano(static_cast<uint64_t>(event.time_unix_nano));
      EncodeAttributes(event.attributes, e->mutable_attributes());
    }
    for (const SpanLink& link : data.links) {
      otlp::Span::Link* l = span->add_links();
      l->set_trace_id(link.context.trace_id);
      l->set_span_id(link.context.span_id);
      if (!link.context.tracestate.empty()) l->set_trace_state(link.context.tracestate);
      EncodeAttributes(link.attributes, l->mutable_attributes());
    }
    if (data.status != StatusCode::kUnset) {
      span->mutable_status()->set_code(
          static_cast<otlp::Status::StatusCode>(static_cast<int>(data.status)));
      span->mutable_status()->set_message(data.status_message);
    }
  }
  return request;
}

}  // namespace rein::trace
