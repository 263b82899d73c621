// The OTLP/HTTP metrics exporter.
#include "trace/otlp_metrics_exporter.h"

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "trace/otlp_encode.h"

namespace rein::trace {
namespace {

namespace metrics = opentelemetry::proto::metrics::v1;

int64_t NowUnixNano() { return absl::ToUnixNanos(absl::Now()); }

}  // namespace

opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest EncodeMetrics(
    const Attributes& resource, const std::vector<HistogramSeries>& series, int64_t start_unix_nano,
    int64_t now_unix_nano) {
  opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest request;
  if (series.empty()) return request;
  metrics::ResourceMetrics* rm = request.add_resource_metrics();
  EncodeAttributes(resource, rm->mutable_resource()->mutable_attributes());
  metrics::ScopeMetrics* sm = rm->add_scope_metrics();
  sm->mutable_scope()->set_name(kScopeName);
  metrics::Metric* metric = nullptr;
  for (const HistogramSeries& s : series) {  // ordered by metric name
    if (metric == nullptr || metric->name() != s.metric.name) {
      metric = sm->add_metrics();
      metric->set_name(s.metric.name);
      metric->set_unit(s.metric.unit);
      metric->set_description(s.metric.description);
      metric->mutable_histogram()->set_aggregation_temporality(
          metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
    }
    metrics::HistogramDataPoint* point = metric->mutable_histogram()->add_data_points();
    Attributes attributes;
    for (const auto& [key, value] : s.attributes) attributes.emplace_back(key, value);
    EncodeAttributes(attributes, point->mutable_attributes());
    point->set_start_time_unix_nano(start_unix_nano);
    point->set_time_unix_nano(now_unix_nano);
    point->set_count(s.count);
    point->set_sum(s.sum);
    point->set_min(s.min);
    point->set_max(s.max);
    for (uint64_t c : s.counts) point->add_bucket_counts(c);
    for (double b : s.metric.bounds) point->add_explicit_bounds(b);
  }
  return request;
}

PeriodicMetricExporter::PeriodicMetricExporter(Options options, const Histograms* histograms,
                                               std::unique_ptr<OtlpTransport> transport)
    : options_(std::move(options)),
      histograms_(histograms),
      start_unix_nano_(NowUnixNano()),
      transport_(std::move(transport)) {
  thread_ = std::thread([this] { Loop(); });
}

PeriodicMetricExporter::~PeriodicMetricExporter() { Shutdown(); }

bool PeriodicMetricExporter::ExportNow() {
  const std::vector<HistogramSeries> series = histograms_->Snapshot();
  if (series.empty()) return true;
  std::string body =
      EncodeMetrics(options_.resource, series, start_unix_nano_, NowUnixNano()).SerializeAsString();
  if (options_.gzip) body = Gzip(body);
  absl::MutexLock lock(&export_mu_);
  const OtlpTransport::Reply reply = transport_->Post(body, options_.gzip);
  const bool ok = reply.http_status >= 200 && reply.http_status < 300;
  if (!ok && absl::Now() - last_error_log_ >= absl::Minutes(1)) {
    last_error_log_ = absl::Now();
    LogWarning("OTLP metrics export failed; the next export sends the same totals",
               {{"error", reply.error}});
  }
  return ok;
}

void PeriodicMetricExporter::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    mu_.AwaitWithTimeout(absl::Condition(&stop_), options_.interval);
    if (stop_) break;
    mu_.Unlock();
    ExportNow();
    mu_.Lock();
  }
}

void PeriodicMetricExporter::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  ExportNow();
}

}  // namespace rein::trace
