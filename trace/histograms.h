// Cumulative histograms kept for the OTLP metrics exporter: one series per metric and set of
// attributes, with the bucket bounds the metric was first recorded with.
#ifndef REIN_TRACE_HISTOGRAMS_H_
#define REIN_TRACE_HISTOGRAMS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace rein::trace {

// A metric's identity as OTLP names it.
struct MetricInfo {
  std::string name;  // "gen_ai.client.token.usage"
  std::string unit;  // "{token}", "s"
  std::string description;
  std::vector<double> bounds;  // explicit bucket bounds, ascending
};

// One series as it stands: counts has bounds.size() + 1 entries (the last: above every bound).
struct HistogramSeries {
  MetricInfo metric;
  std::vector<std::pair<std::string, std::string>> attributes;  // sorted by key
  std::vector<uint64_t> counts;
  uint64_t count = 0;
  double sum = 0, min = 0, max = 0;
};

// Where the services record histogram values for OTLP: the one interface between them and the
// exporter (Histograms below here; an opentelemetry-cpp Meter where that library is available).
class HistogramRecorder {
 public:
  virtual ~HistogramRecorder() = default;
  // Adds `value` to the series of `metric` with `attributes` (any order). Thread-safe.
  virtual void Record(const MetricInfo& metric,
                      std::vector<std::pair<std::string, std::string>> attributes,
                      double value) = 0;

  // The process's recorder, or null while metrics are not exported over OTLP (the default).
  static HistogramRecorder* Global();
  // Installs `recorder` (not owned; null uninstalls). Called by main before serving.
  static void InstallGlobal(HistogramRecorder* recorder);
};

// The recorder of rein's own exporter (trace/otlp_metrics_exporter.h). Thread-safe.
class Histograms final : public HistogramRecorder {
 public:
  void Record(const MetricInfo& metric, std::vector<std::pair<std::string, std::string>> attributes,
              double value) override;
  // Every series, ordered by metric name, then attributes.
  std::vector<HistogramSeries> Snapshot() const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>,
           HistogramSeries>
      series_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rein::trace

#endif  // REIN_TRACE_HISTOGRAMS_H_
