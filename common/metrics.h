// Prometheus text-format counters and gauges, served over plain HTTP on --metrics_port.
#ifndef REIN_COMMON_METRICS_H_
#define REIN_COMMON_METRICS_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace rein {

// A process-wide registry of named values. Thread-safe.
class Metrics {
 public:
  static Metrics& Global();

  // Adds `delta` to the counter `name` (with an optional Prometheus label string, e.g.
  // `code="OK"`).
  void Add(const std::string& name, double delta, const std::string& labels = "");
  // Sets the gauge `name`.
  void Set(const std::string& name, double value, const std::string& labels = "");
  // The Prometheus text exposition of every value.
  std::string Render() const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::pair<bool, std::map<std::string, double>>> values_ ABSL_GUARDED_BY(mu_);
};

// Serves GET /metrics with Metrics::Global().Render(). One thread; connections are handled
// one at a time (a scraper is the only client).
class MetricsHttpServer {
 public:
  ~MetricsHttpServer();
  absl::Status Start(int port);
  int port() const { return port_; }
  void Stop();

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace rein

#endif  // REIN_COMMON_METRICS_H_
