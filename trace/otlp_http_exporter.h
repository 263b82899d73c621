// The OTLP/HTTP exporter: spans batched on a thread of their own and POSTed as protobuf, behind a
// bounded queue that drops (and counts) rather than blocks.
#ifndef REIN_TRACE_OTLP_HTTP_EXPORTER_H_
#define REIN_TRACE_OTLP_HTTP_EXPORTER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "trace/otel_config.h"
#include "trace/span_data.h"
#include "trace/tracer.h"

namespace rein::trace {

// One POST of an encoded ExportTraceServiceRequest.
class OtlpTransport {
 public:
  struct Reply {
    int http_status = 0;  // 0: no answer (refused, timed out, no such host)
    std::string error;    // why, when http_status is 0 or not 2xx
  };
  virtual ~OtlpTransport() = default;
  // `body` is protobuf, gzip-compressed when `gzip`. Blocks at most the transport's timeout.
  virtual Reply Post(const std::string& body, bool gzip) = 0;
};

// libcurl POSTs to the traces URL with Content-Type application/x-protobuf and the configured
// headers. Used by one thread at a time (the exporter's).
std::unique_ptr<OtlpTransport> MakeCurlTransport(
    std::string url, std::vector<std::pair<std::string, std::string>> headers,
    absl::Duration timeout);

// gzip of `data` (RFC 1952), as Content-Encoding: gzip wants it.
std::string Gzip(const std::string& data);

// Queues ended spans and exports them in batches from its own thread: when max_batch spans are
// waiting or schedule_delay has passed. OnEnd never blocks on the network: a full queue drops the
// span and counts it (rein_trace_spans_dropped_total{why="queue_full"}). A batch that meets a
// retryable answer (no answer, 429, 502, 503, 504) is sent again after 1 s, 2 s, 4 s, then
// dropped and counted (why="export_failed"); any other answer drops it at once, and is logged at
// most once a minute. Thread-safe.
class BatchSpanExporter final : public SpanExporter {
 public:
  struct Options {
    Attributes resource;
    absl::Duration schedule_delay = absl::Seconds(5);
    int max_queue_size = 2048;
    int max_export_batch_size = 512;
    bool gzip = false;
    int max_retries = 3;
    absl::Duration first_backoff = absl::Seconds(1);
  };
  BatchSpanExporter(Options options, std::unique_ptr<OtlpTransport> transport);
  // Exports what is queued, for at most `shutdown_timeout`, then stops.
  ~BatchSpanExporter() override;

  void OnEnd(SpanData span) override;
  // Exports everything queued now, waiting up to `timeout`; false when time ran out.
  bool Flush(absl::Duration timeout);
  // Stops: one last export of what is queued, for at most `timeout`.
  void Shutdown(absl::Duration timeout);

  int64_t dropped() const;
  int64_t exported() const;

 private:
  void Loop();
  // Sends one batch, with retries unless stopping; returns whether it was accepted.
  bool Export(const std::vector<SpanData>& batch);

  const Options options_;
  std::unique_ptr<OtlpTransport> transport_;
  mutable absl::Mutex mu_;
  std::deque<SpanData> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int64_t flush_requests_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t flushes_done_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t exported_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();  // of the last export
  absl::Time last_error_log_ = absl::InfinitePast();                   // the thread's own
  std::thread thread_;
};

}  // namespace rein::trace

#endif  // REIN_TRACE_OTLP_HTTP_EXPORTER_H_
