// The standard OTEL_* environment variables, read into the exporter's and tracer's options.
#ifndef REIN_TRACE_OTEL_CONFIG_H_
#define REIN_TRACE_OTEL_CONFIG_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "trace/span_data.h"
#include "trace/tracer.h"

namespace rein::trace {

// What the environment says about traces. Defaults are the OpenTelemetry specification's.
struct OtelConfig {
  // Off unless an endpoint is set and OTEL_SDK_DISABLED is not "true".
  bool enabled = false;
  // Where spans are POSTed: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else
  // OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/traces".
  std::string traces_url;
  std::vector<std::pair<std::string, std::string>> headers;  // OTEL_EXPORTER_OTLP_[TRACES_]HEADERS
  // service.name (OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES', else the service's own
  // name) and OTEL_RESOURCE_ATTRIBUTES.
  Attributes resource;
  Sampler sampler;                                   // OTEL_TRACES_SAMPLER[_ARG]
  bool gzip = false;                                 // OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION
  absl::Duration timeout = absl::Seconds(10);        // OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT
  absl::Duration schedule_delay = absl::Seconds(5);  // OTEL_BSP_SCHEDULE_DELAY
  int max_queue_size = 2048;                         // OTEL_BSP_MAX_QUEUE_SIZE
  int max_export_batch_size = 512;                   // OTEL_BSP_MAX_EXPORT_BATCH_SIZE
  // OTEL_SEMCONV_STABILITY_OPT_IN lists gen_ai_latest_experimental: the newest GenAI names
  // (gen_ai.provider.name) instead of v1.36's (gen_ai.system).
  bool genai_latest = false;
  // OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts and completions on spans.
  bool capture_content = false;

  // Metrics over OTLP: on when OTEL_EXPORTER_OTLP_METRICS_ENDPOINT (used as it is) or
  // OTEL_EXPORTER_OTLP_ENDPOINT (+ "/v1/metrics") is set, unless OTEL_METRICS_EXPORTER=none or
  // OTEL_SDK_DISABLED=true. Headers, compression and timeout: the METRICS_ variables, else the
  // general ones.
  bool metrics_enabled = false;
  std::string metrics_url;
  std::vector<std::pair<std::string, std::string>> metrics_headers;
  bool metrics_gzip = false;
  absl::Duration metrics_timeout = absl::Seconds(10);
  absl::Duration metric_export_interval = absl::Seconds(60);  // OTEL_METRIC_EXPORT_INTERVAL
};

struct LoadedConfig {
  OtelConfig config;
  // Values that were not understood, each naming the variable; the specification says such a
  // value is reported and ignored (its default used), so these are logged, not fatal.
  std::vector<std::string> warnings;
};

// Reads the variables through `getenv` (std::getenv in the services; a map in tests).
// `service_name` is service.name when the environment sets none.
LoadedConfig ReadOtelConfig(const std::function<const char*(const char*)>& getenv,
                            const std::string& service_name);

}  // namespace rein::trace

#endif  // REIN_TRACE_OTEL_CONFIG_H_
