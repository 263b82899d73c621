// A test OTLP/HTTP receiver on loopback: decodes the protobuf requests it is sent and keeps the
// spans, or answers with a chosen status, or never answers.
#ifndef REIN_TRACE_TESTING_OTLP_COLLECTOR_H_
#define REIN_TRACE_TESTING_OTLP_COLLECTOR_H_

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "opentelemetry/proto/trace/v1/trace.pb.h"
#include "trace/span_data.h"

namespace rein::trace::testing {

// One span as received, with the service.name of the resource it came under.
struct CollectedSpan {
  std::string service;
  opentelemetry::proto::trace::v1::Span span;

  // The value of attribute `key` ("" / 0 / false when absent; see Has).
  bool Has(const std::string& key) const;
  std::string Str(const std::string& key) const;
  int64_t Int(const std::string& key) const;
  bool Bool(const std::string& key) const;
  std::string trace_id_hex() const;
  std::string span_id_hex() const;
  std::string parent_span_id_hex() const;
};

// The spans of `spans` whose gen_ai.operation.name is `operation`.
std::vector<const CollectedSpan*> WithOperation(const std::vector<CollectedSpan>& spans,
                                                const std::string& operation);

// Listens on 127.0.0.1 (port 0: its own) or a given IPv4 address and port, serves POST over
// HTTP/1.1 with keep-alive, gunzips Content-Encoding: gzip, and parses an
// ExportMetricsServiceRequest from a path ending in /v1/metrics, else an
// ExportTraceServiceRequest. Thread-safe.
class OtlpCollector {
 public:
  enum class Mode { kAccept, kHang };
  OtlpCollector();
  ~OtlpCollector();

  // Each accepted request's body (gunzipped) is also written to <dir>/traces-<n>.pb (or
  // metrics-<n>.pb), whole or not at all (for a collector in another process; see ReadDumpedSpans).
  // Call before Start.
  void DumpTo(const std::string& dir) { dump_dir_ = dir; }
  // Starts listening; false when it cannot.
  bool Start(const std::string& address = "127.0.0.1", int port = 0);
  void Stop();
  int port() const { return port_; }
  std::string endpoint() const { return "http://" + address_ + ":" + std::to_string(port_); }

  // What to answer from now on: kAccept with `status` (200 keeps the spans), or kHang (read the
  // request, never answer).
  void SetMode(Mode mode, int status = 200);

  std::vector<CollectedSpan> Spans();
  // The metrics requests accepted (POSTs to a path ending in /v1/metrics), in order received.
  std::vector<opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest> Metrics();
  int requests();
  std::vector<std::string> headers_seen();  // "name: value" of every request, lowercased names
  // Waits until `done(spans)` holds, up to `timeout`; returns the spans then.
  std::vector<CollectedSpan> WaitFor(
      const std::function<bool(const std::vector<CollectedSpan>&)>& done, absl::Duration timeout);

 private:
  void AcceptLoop();
  void Serve(int fd);
  void Dump(const std::string& kind, const std::string& body);

  std::string address_ = "127.0.0.1";
  std::string dump_dir_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accept_thread_;
  absl::Mutex mu_;
  std::vector<std::thread> connections_ ABSL_GUARDED_BY(mu_);
  std::vector<int> fds_ ABSL_GUARDED_BY(mu_);
  std::vector<CollectedSpan> spans_ ABSL_GUARDED_BY(mu_);
  std::vector<opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest> metrics_
      ABSL_GUARDED_BY(mu_);
  std::vector<std::string> headers_ ABSL_GUARDED_BY(mu_);
  int requests_ ABSL_GUARDED_BY(mu_) = 0;
  int dumped_ ABSL_GUARDED_BY(mu_) = 0;
  Mode mode_ ABSL_GUARDED_BY(mu_) = Mode::kAccept;
  int status_ ABSL_GUARDED_BY(mu_) = 200;
};

// The spans of every request an OtlpCollector wrote to `dir` (DumpTo), in the order received.
std::vector<CollectedSpan> ReadDumpedSpans(const std::string& dir);

}  // namespace rein::trace::testing

#endif  // REIN_TRACE_TESTING_OTLP_COLLECTOR_H_
