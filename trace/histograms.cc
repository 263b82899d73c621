// Cumulative histograms kept for the OTLP metrics exporter.
#include "trace/histograms.h"

#include <algorithm>
#include <atomic>

namespace rein::trace {
namespace {

std::atomic<HistogramRecorder*> global{nullptr};

}  // namespace

void Histograms::Record(const MetricInfo& metric,
                        std::vector<std::pair<std::string, std::string>> attributes, double value) {
  std::sort(attributes.begin(), attributes.end());
  absl::MutexLock lock(&mu_);
  auto [it, added] = series_.try_emplace({metric.name, attributes});
  HistogramSeries& s = it->second;
  if (added) {
    s.metric = metric;
    s.attributes = std::move(attributes);
    s.counts.assign(metric.bounds.size() + 1, 0);
    s.min = s.max = value;
  }
  // OTLP's explicit buckets: bucket i holds bounds[i-1] < value <= bounds[i].
  const size_t bucket = std::lower_bound(s.metric.bounds.begin(), s.metric.bounds.end(), value) -
                        s.metric.bounds.begin();
  ++s.counts[bucket];
  ++s.count;
  s.sum += value;
  s.min = std::min(s.min, value);
  s.max = std::max(s.max, value);
}

std::vector<HistogramSeries> Histograms::Snapshot() const {
  absl::MutexLock lock(&mu_);
  std::vector<HistogramSeries> out;
  out.reserve(series_.size());
  for (const auto& [key, s] : series_) out.push_back(s);
  return out;
}

HistogramRecorder* HistogramRecorder::Global() { return global.load(std::memory_order_acquire); }

void HistogramRecorder::InstallGlobal(HistogramRecorder* recorder) {
  global.store(recorder, std::memory_order_release);
}

}  // namespace rein::trace
