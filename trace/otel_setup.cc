// A service's tracing from its OTEL_* environment: the exporter and the process's tracer.
#include "trace/otel_setup.h"

#include <cstdlib>

#include "common/log.h"
#include "trace/otel_config.h"

namespace rein::trace {

std::unique_ptr<BatchSpanExporter> InstallTracingFromEnv(const std::string& service_name) {
  LoadedConfig loaded =
      ReadOtelConfig([](const char* name) { return std::getenv(name); }, service_name);
  for (const std::string& warning : loaded.warnings) LogWarning(warning);
  const OtelConfig& c = loaded.config;
  if (!c.enabled) return nullptr;
  BatchSpanExporter::Options options;
  options.resource = c.resource;
  options.schedule_delay = c.schedule_delay;
  options.max_queue_size = c.max_queue_size;
  options.max_export_batch_size = c.max_export_batch_size;
  options.gzip = c.gzip;
  auto exporter = std::make_unique<BatchSpanExporter>(
      options, MakeCurlTransport(c.traces_url, c.headers, c.timeout));
  Tracer::Options tracer_options;
  tracer_options.sampler = c.sampler;
  tracer_options.genai_latest = c.genai_latest;
  tracer_options.capture_content = c.capture_content;
  Tracer::InstallGlobal(std::make_unique<Tracer>(exporter.get(), tracer_options));
  LogInfo("exporting traces over OTLP/HTTP", {{"endpoint", c.traces_url}});
  return exporter;
}

std::unique_ptr<PeriodicMetricExporter> InstallMetricsFromEnv(const std::string& service_name) {
  // The warnings are InstallTracingFromEnv's to log: the same variables, read again.
  const OtelConfig c =
      ReadOtelConfig([](const char* name) { return std::getenv(name); }, service_name).config;
  if (!c.metrics_enabled) return nullptr;
  static Histograms* const histograms = new Histograms();  // lives as long as the process
  HistogramRecorder::InstallGlobal(histograms);
  PeriodicMetricExporter::Options options;
  options.resource = c.resource;
  options.interval = c.metric_export_interval;
  options.gzip = c.metrics_gzip;
  LogInfo("exporting metrics over OTLP/HTTP", {{"endpoint", c.metrics_url}});
  return std::make_unique<PeriodicMetricExporter>(
      options, histograms, MakeCurlTransport(c.metrics_url, c.metrics_headers, c.metrics_timeout));
}

}  // namespace rein::trace
