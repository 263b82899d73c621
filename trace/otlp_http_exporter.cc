// The OTLP/HTTP exporter: spans batched on a thread of their own and POSTed as protobuf, behind a
// bounded queue that drops (and counts) rather than blocks.
#include "trace/otlp_http_exporter.h"

#include <curl/curl.h>
#include <zlib.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/metrics.h"
#include "trace/otlp_encode.h"

namespace rein::trace {
namespace {

size_t Discard(char* /*data*/, size_t size, size_t n, void* /*user*/) { return size * n; }

class CurlTransport final : public OtlpTransport {
 public:
  CurlTransport(std::string url, std::vector<std::pair<std::string, std::string>> headers,
                absl::Duration timeout)
      : url_(std::move(url)), timeout_(timeout) {
    for (const auto& [k, v] : headers) base_headers_.push_back(absl::StrCat(k, ": ", v));
  }
  ~CurlTransport() override {
    if (curl_ != nullptr) curl_easy_cleanup(curl_);
  }

  Reply Post(const std::string& body, bool gzip) override {
    if (curl_ == nullptr) curl_ = curl_easy_init();
    if (curl_ == nullptr) return {0, "curl_easy_init failed"};
    curl_easy_reset(curl_);  // the connection is kept between posts
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/x-protobuf");
    if (gzip) headers = curl_slist_append(headers, "Content-Encoding: gzip");
    for (const std::string& h : base_headers_) headers = curl_slist_append(headers, h.c_str());
    curl_easy_setopt(curl_, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl_, CURLOPT_POST, 1L);
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(absl::ToInt64Milliseconds(timeout_)));
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, Discard);
    CURLcode code = curl_easy_perform(curl_);
    curl_slist_free_all(headers);
    if (code != CURLE_OK) return {0, curl_easy_strerror(code)};
    long status = 0;
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
    Reply reply{static_cast<int>(status), ""};
    if (status < 200 || status >= 300) reply.error = absl::StrCat("HTTP ", status);
    return reply;
  }

 private:
  const std::string url_;
  const absl::Duration timeout_;
  std::vector<std::string> base_headers_;
  CURL* curl_ = nullptr;
};

bool Retryable(int status) {
  return status == 0 || status == 429 || status == 502 || status == 503 || status == 504;
}

}  // namespace

std::unique_ptr<OtlpTransport> MakeCurlTransport(
    std::string url, std::vector<std::pair<std::string, std::string>> headers,
    absl::Duration timeout) {
  return std::make_unique<CurlTransport>(std::move(url), std::move(headers), timeout);
}

std::string Gzip(const std::string& data) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return "";
  }
  std::string out(deflateBound(&zs, data.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return rc == Z_STREAM_END ? out : "";
}

BatchSpanExporter::BatchSpanExporter(Options options, std::unique_ptr<OtlpTransport> transport)
    : options_(std::move(options)), transport_(std::move(transport)) {
  thread_ = std::thread([this] { Loop(); });
}

BatchSpanExporter::~BatchSpanExporter() { Shutdown(absl::Seconds(5)); }

void BatchSpanExporter::OnEnd(SpanData span) {
  // A full batch wakes the loop: its condition is checked when the mutex is released.
  absl::MutexLock lock(&mu_);
  if (stop_ || static_cast<int>(queue_.size()) >= options_.max_queue_size) {
    ++dropped_;
    Metrics::Global().Add("rein_trace_spans_dropped_total", 1, "why=\"queue_full\"");
    return;
  }
  queue_.push_back(std::move(span));
}

bool BatchSpanExporter::Flush(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  const int64_t target = ++flush_requests_;
  auto done = [this, target]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return flushes_done_ >= target || (stop_ && !thread_.joinable());
  };
  return mu_.AwaitWithTimeout(absl::Condition(&done), timeout) && flushes_done_ >= target;
}

void BatchSpanExporter::Shutdown(absl::Duration timeout) {
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    stop_ = true;
    deadline_ = absl::Now() + timeout;
  }
  if (thread_.joinable()) thread_.join();
}

int64_t BatchSpanExporter::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

int64_t BatchSpanExporter::exported() const {
  absl::MutexLock lock(&mu_);
  return exported_;
}

void BatchSpanExporter::Loop() {
  const size_t batch_size = static_cast<size_t>(options_.max_export_batch_size);
  while (true) {
    std::vector<SpanData> batch;
    int64_t flush_target;
    bool stopping;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this, batch_size]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || queue_.size() >= batch_size || flush_requests_ > flushes_done_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&ready), options_.schedule_delay);
      stopping = stop_;
      flush_target = flush_requests_;
      while (!queue_.empty() && batch.size() < batch_size) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      if (batch.empty()) {
        flushes_done_ = flush_target;
        if (stopping) return;
        continue;
      }
      if (stopping && absl::Now() > deadline_) {
        dropped_ += static_cast<int64_t>(batch.size() + queue_.size());
        queue_.clear();
        flushes_done_ = flush_target;
        return;
      }
    }
    const bool ok = Export(batch);
    absl::MutexLock lock(&mu_);
    if (ok) {
      exported_ += static_cast<int64_t>(batch.size());
    } else {
      dropped_ += static_cast<int64_t>(batch.size());
    }
    if (queue_.empty()) flushes_done_ = flush_target;
  }
}

bool BatchSpanExporter::Export(const std::vector<SpanData>& batch) {
  std::string body = EncodeSpans(options_.resource, batch).SerializeAsString();
  if (options_.gzip) body = Gzip(body);
  absl::Duration backoff = options_.first_backoff;
  OtlpTransport::Reply reply;
  for (int attempt = 0;; ++attempt) {
    reply = transport_->Post(body, options_.gzip);
    if (reply.http_status >= 200 && reply.http_status < 300) {
      Metrics::Global().Add("rein_trace_spans_exported_total", static_cast<double>(batch.size()));
      return true;
    }
    if (!Retryable(reply.http_status) || attempt >= options_.max_retries) break;
    absl::MutexLock lock(&mu_);
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping), backoff)) break;  // no retry once stopping
    backoff *= 2;
  }
  Metrics::Global().Add("rein_trace_spans_dropped_total", static_cast<double>(batch.size()),
                        "why=\"export_failed\"");
  const absl::Time now = absl::Now();
  if (now - last_error_log_ >= absl::Minutes(1)) {
    last_error_log_ = now;
    LogWarning("trace export failed; spans dropped (logged at most once a minute)",
               {{"error", reply.error}, {"spans", absl::StrCat(batch.size())}});
  }
  return false;
}

}  // namespace rein::trace
