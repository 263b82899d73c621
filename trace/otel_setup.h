// A service's tracing from its OTEL_* environment: the exporter and the process's tracer.
#ifndef REIN_TRACE_OTEL_SETUP_H_
#define REIN_TRACE_OTEL_SETUP_H_

#include <memory>
#include <string>

#include "trace/otlp_http_exporter.h"
#include "trace/otlp_metrics_exporter.h"

namespace rein::trace {

// Reads the environment (ReadOtelConfig), logs each value it ignores, and installs the global
// tracer: with a BatchSpanExporter to the endpoint when one is set, else off. Returns the
// exporter (null when off), to be shut down by main before it exits. Call once, before serving.
std::unique_ptr<BatchSpanExporter> InstallTracingFromEnv(const std::string& service_name);

// Reads the environment and, when metrics are to be exported over OTLP (an endpoint set; see
// OtelConfig), installs the process's Histograms (HistogramRecorder::Global) and returns the
// exporter that sends them every OTEL_METRIC_EXPORT_INTERVAL; null when off. Main keeps it until it
// exits (its destructor exports one last time). Call once, before serving.
std::unique_ptr<PeriodicMetricExporter> InstallMetricsFromEnv(const std::string& service_name);

}  // namespace rein::trace

#endif  // REIN_TRACE_OTEL_SETUP_H_
