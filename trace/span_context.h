// W3C Trace Context: trace and span ids, and the `traceparent` header that carries them.
#ifndef REIN_TRACE_SPAN_CONTEXT_H_
#define REIN_TRACE_SPAN_CONTEXT_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace rein::trace {

// The gRPC metadata keys (and HTTP headers) of W3C Trace Context.
inline constexpr char kTraceparentHeader[] = "traceparent";
inline constexpr char kTracestateHeader[] = "tracestate";

// Where a span is: its trace, itself, and whether it is sampled. Ids are raw bytes (16 and 8),
// as OTLP carries them. A context with an all-zero id is invalid (W3C). Plain data.
struct SpanContext {
  std::string trace_id;  // 16 bytes
  std::string span_id;   // 8 bytes
  bool sampled = true;
  std::string tracestate;  // passed on as received

  bool valid() const;
  std::string trace_id_hex() const;
  std::string span_id_hex() const;
};

// Parses `traceparent` (version 00, or a later version read as 00 as W3C says). Anything
// malformed, an all-zero id or version ff is nullopt: a bad header is ignored, never an error.
std::optional<SpanContext> ParseTraceparent(absl::string_view header);
// "00-<trace id>-<span id>-<flags>".
std::string FormatTraceparent(const SpanContext& context);

// A context from lowercase hex ids (RunTrace's form); nullopt when either is not valid hex of
// the right length or is all zeros.
std::optional<SpanContext> ContextFromHex(absl::string_view trace_id_hex,
                                          absl::string_view span_id_hex, bool sampled = true);

// Fresh random ids (never all zeros).
std::string NewTraceId();
std::string NewSpanId();

std::string ToHex(absl::string_view bytes);

}  // namespace rein::trace

#endif  // REIN_TRACE_SPAN_CONTEXT_H_
