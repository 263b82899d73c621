// The OTLP/HTTP metrics exporter: the process's cumulative histograms (trace/histograms.h)
// POSTed as an ExportMetricsServiceRequest every interval, from a thread of its own.
#ifndef REIN_TRACE_OTLP_METRICS_EXPORTER_H_
#define REIN_TRACE_OTLP_METRICS_EXPORTER_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "trace/histograms.h"
#include "trace/otlp_http_exporter.h"
#include "trace/span_data.h"

namespace rein::trace {

// One request with one ResourceMetrics (the process's resource) and one ScopeMetrics ("rein"):
// each metric a cumulative Histogram, one data point per series, started at `start_unix_nano`.
opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest EncodeMetrics(
    const Attributes& resource, const std::vector<HistogramSeries>& series, int64_t start_unix_nano,
    int64_t now_unix_nano);

// Exports `histograms` every `interval` (nothing while no series exists), and once more at
// shutdown. A failed export is not retried: the next one carries the same cumulative values.
// Failures are logged at most once a minute. Thread-safe.
class PeriodicMetricExporter {
 public:
  struct Options {
    Attributes resource;
    absl::Duration interval = absl::Seconds(60);  // OTEL_METRIC_EXPORT_INTERVAL
    bool gzip = false;
  };
  // `histograms` must outlive the exporter.
  PeriodicMetricExporter(Options options, const Histograms* histograms,
                         std::unique_ptr<OtlpTransport> transport);
  ~PeriodicMetricExporter();  // Shutdown()

  // Exports now, on the caller's thread; true when the collector accepted it (or nothing to send).
  bool ExportNow();
  // Stops the thread and exports one last time.
  void Shutdown();

 private:
  void Loop();

  const Options options_;
  const Histograms* histograms_;
  const int64_t start_unix_nano_;
  absl::Mutex export_mu_;  // one export at a time
  std::unique_ptr<OtlpTransport> transport_ ABSL_GUARDED_BY(export_mu_);
  absl::Time last_error_log_ ABSL_GUARDED_BY(export_mu_) = absl::InfinitePast();
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace rein::trace

#endif  // REIN_TRACE_OTLP_METRICS_EXPORTER_H_
