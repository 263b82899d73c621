// Prometheus counters, gauges and histograms (prometheus-cpp), served over HTTP on
// --metrics_listen.
#ifndef REIN_COMMON_METRICS_H_
#define REIN_COMMON_METRICS_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace prometheus {
class Counter;
class Exposer;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace rein {

// Bucket bounds, in seconds, of the histograms fed by Metrics::Observe: from 100 µs (a commit
// or a loopback call) to 2 minutes (a slow model call).
extern const std::vector<double> kLatencyBucketsSeconds;

// Named metrics in one prometheus-cpp registry. A name is one metric family of one type:
// a call that would give a name a second type is ignored. `labels` is written as in the
// exposition format, e.g. `code="OK"` or `method="StartRun",code="OK"` ("" = none); a label
// string that does not parse is ignored. Thread-safe.
class Metrics {
 public:
  // The process-wide registry, the one served on --metrics_listen.
  static Metrics& Global();

  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Adds `delta` (>= 0; a negative delta is ignored) to the counter `name`.
  void Add(const std::string& name, double delta, const std::string& labels = "");
  // Sets the gauge `name`.
  void Set(const std::string& name, double value, const std::string& labels = "");
  // Records `seconds` in the histogram `name` (buckets kLatencyBucketsSeconds), exposed as
  // name_bucket{le=...}, name_sum and name_count.
  void Observe(const std::string& name, double seconds, const std::string& labels = "");
  // Records `value` in the histogram `name` with its own bucket bounds (the first call for a
  // series fixes them), e.g. token counts.
  void Observe(const std::string& name, double value, const std::string& labels,
               const std::vector<double>& buckets);

  // The Prometheus text exposition of every value.
  std::string Render() const;

  // The registry, for an endpoint to collect from.
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  enum class Kind { kCounter, kGauge, kHistogram };
  using Key = std::pair<std::string, std::string>;  // name, labels as given

  // Whether `name` may be used as `kind` (it is new or already of that kind); records it.
  bool Claim(const std::string& name, Kind kind) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<prometheus::Registry> registry_;
  mutable absl::Mutex mu_;
  std::map<std::string, Kind> kinds_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, prometheus::Family<prometheus::Counter>*> counter_families_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> gauge_families_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, prometheus::Family<prometheus::Histogram>*> histogram_families_
      ABSL_GUARDED_BY(mu_);
  // Series already looked up, so that a hot call site parses its labels once.
  std::map<Key, prometheus::Counter*> counters_ ABSL_GUARDED_BY(mu_);
  std::map<Key, prometheus::Gauge*> gauges_ ABSL_GUARDED_BY(mu_);
  std::map<Key, prometheus::Histogram*> histograms_ ABSL_GUARDED_BY(mu_);
};

// Serves GET /metrics with the exposition of a Metrics (prometheus-cpp's Exposer, one thread;
// a scraper is the only client). Other paths are 404. Not thread-safe.
class MetricsHttpServer {
 public:
  // `metrics` (not owned) must outlive the server.
  explicit MetricsHttpServer(Metrics* metrics = &Metrics::Global());
  ~MetricsHttpServer();

  // Listens on `listen` (HOST:PORT, e.g. 127.0.0.1:9090; port 0 picks a free one). An address
  // that cannot be bound is UNAVAILABLE naming it.
  absl::Status Start(const std::string& listen);
  // The bound port (after Start).
  int port() const { return port_; }
  void Stop();

 private:
  Metrics* const metrics_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

// The address /metrics listens on, from a service's --metrics_listen (HOST:PORT) and
// --metrics_port (a port on loopback): --metrics_listen when given, else 127.0.0.1:<port> when
// the port is not 0, else "" (no endpoint). Giving both, a port outside 0..65535 or an address
// without a port is INVALID_ARGUMENT naming the flag.
absl::StatusOr<std::string> MetricsListenAddress(const std::string& metrics_listen,
                                                 int metrics_port);

// Parses a label string as Metrics takes it (`a="x",b="y\"z"`; values may escape \\, \" and
// \n) into its pairs; nullopt when it is not well formed. Exposed for tests.
std::optional<std::map<std::string, std::string>> ParseMetricLabels(absl::string_view labels);

}  // namespace rein

#endif  // REIN_COMMON_METRICS_H_
