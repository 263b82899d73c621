// A service's tracing from its OTEL_* environment: the exporter and the process's tracer.
#ifndef REIN_TRACE_OTEL_SETUP_H_
#define REIN_TRACE_OTEL_SETUP_H_

#include <memory>
#include <string>

#include "trace/otlp_http_exporter.h"

namespace rein::trace {

// Reads the environment (ReadOtelConfig), logs each value it ignores, and installs the global
// tracer: with a BatchSpanExporter to the endpoint when one is set, else off. Returns the
// exporter (null when off), to be shut down by main before it exits. Call once, before serving.
std::unique_ptr<BatchSpanExporter> InstallTracingFromEnv(const std::string& service_name);

}  // namespace rein::trace

#endif  // REIN_TRACE_OTEL_SETUP_H_
