// W3C trace context in gRPC metadata: read from a served call, written into an outgoing one.
#ifndef REIN_TRACE_GRPC_METADATA_H_
#define REIN_TRACE_GRPC_METADATA_H_

#include <optional>

#include "grpcpp/client_context.h"
#include "grpcpp/server_context.h"
#include "trace/span_context.h"
#include "trace/tracer.h"

namespace rein::trace {

// The caller's `traceparent` (and `tracestate`); nullopt when absent or malformed (ignored).
inline std::optional<SpanContext> IncomingContext(const grpc::ServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kTraceparentHeader);
  if (it == metadata.end()) return std::nullopt;
  std::optional<SpanContext> parsed =
      ParseTraceparent(absl::string_view(it->second.data(), it->second.size()));
  if (!parsed.has_value()) return std::nullopt;
  if (auto state = metadata.find(kTracestateHeader); state != metadata.end()) {
    parsed->tracestate = std::string(state->second.data(), state->second.size()).substr(0, 512);
  }
  return parsed;
}

// Adds this thread's CurrentContext() to an outgoing call, when there is one.
inline void InjectCurrentContext(grpc::ClientContext* context) {
  const SpanContext* current = CurrentContext();
  if (current == nullptr || !current->valid()) return;
  context->AddMetadata(kTraceparentHeader, FormatTraceparent(*current));
  if (!current->tracestate.empty()) context->AddMetadata(kTracestateHeader, current->tracestate);
}

}  // namespace rein::trace

#endif  // REIN_TRACE_GRPC_METADATA_H_
