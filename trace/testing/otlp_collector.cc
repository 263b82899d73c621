// A test OTLP/HTTP receiver on loopback: decodes the protobuf requests it is sent and keeps the
// spans, or answers with a chosen status, or never answers.
#include "trace/testing/otlp_collector.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "trace/span_context.h"

namespace rein::trace::testing {
namespace {

using opentelemetry::proto::common::v1::KeyValue;

const KeyValue* Find(const opentelemetry::proto::trace::v1::Span& span, const std::string& key) {
  for (const KeyValue& kv : span.attributes()) {
    if (kv.key() == key) return &kv;
  }
  return nullptr;
}

std::string Gunzip(const std::string& data) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return "";
  std::string out;
  char buffer[65536];
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buffer);
    zs.avail_out = sizeof(buffer);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buffer, sizeof(buffer) - zs.avail_out);
  } while (rc == Z_OK);
  inflateEnd(&zs);
  return rc == Z_STREAM_END ? out : "";
}

void AppendSpans(
    const opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest& request,
    std::vector<CollectedSpan>* spans) {
  for (const auto& rs : request.resource_spans()) {
    std::string service;
    for (const KeyValue& kv : rs.resource().attributes()) {
      if (kv.key() == "service.name") service = kv.value().string_value();
    }
    for (const auto& ss : rs.scope_spans()) {
      for (const auto& span : ss.spans()) spans->push_back({service, span});
    }
  }
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool CollectedSpan::Has(const std::string& key) const { return Find(span, key) != nullptr; }
std::string CollectedSpan::Str(const std::string& key) const {
  const KeyValue* kv = Find(span, key);
  return kv == nullptr ? "" : kv->value().string_value();
}
int64_t CollectedSpan::Int(const std::string& key) const {
  const KeyValue* kv = Find(span, key);
  return kv == nullptr ? 0 : kv->value().int_value();
}
bool CollectedSpan::Bool(const std::string& key) const {
  const KeyValue* kv = Find(span, key);
  return kv != nullptr && kv->value().bool_value();
}
std::string CollectedSpan::trace_id_hex() const { return ToHex(span.trace_id()); }
std::string CollectedSpan::span_id_hex() const { return ToHex(span.span_id()); }
std::string CollectedSpan::parent_span_id_hex() const { return ToHex(span.parent_span_id()); }

std::vector<const CollectedSpan*> WithOperation(const std::vector<CollectedSpan>& spans,
                                                const std::string& operation) {
  std::vector<const CollectedSpan*> out;
  for (const CollectedSpan& s : spans) {
    if (s.Str("gen_ai.operation.name") == operation) out.push_back(&s);
  }
  return out;
}

OtlpCollector::OtlpCollector() = default;
OtlpCollector::~OtlpCollector() { Stop(); }

bool OtlpCollector::Start(const std::string& address, int port) {
  address_ = address;
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return false;
  const int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) return false;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 64) != 0) {
    return false;
  }
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return true;
}

void OtlpCollector::Stop() {
  if (stop_.exchange(true)) return;
  if (accept_thread_.joinable()) accept_thread_.join();
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
    threads.swap(connections_);
  }
  for (std::thread& t : threads) t.join();
  absl::MutexLock lock(&mu_);
  for (int fd : fds_) close(fd);
  fds_.clear();
  if (listen_fd_ >= 0) close(listen_fd_);
}

void OtlpCollector::SetMode(Mode mode, int status) {
  absl::MutexLock lock(&mu_);
  mode_ = mode;
  status_ = status;
}

std::vector<CollectedSpan> OtlpCollector::Spans() {
  absl::MutexLock lock(&mu_);
  return spans_;
}

std::vector<opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest>
OtlpCollector::Metrics() {
  absl::MutexLock lock(&mu_);
  return metrics_;
}

int OtlpCollector::requests() {
  absl::MutexLock lock(&mu_);
  return requests_;
}

std::vector<std::string> OtlpCollector::headers_seen() {
  absl::MutexLock lock(&mu_);
  return headers_;
}

std::vector<CollectedSpan> OtlpCollector::WaitFor(
    const std::function<bool(const std::vector<CollectedSpan>&)>& done, absl::Duration timeout) {
  const absl::Time until = absl::Now() + timeout;
  while (true) {
    std::vector<CollectedSpan> spans = Spans();
    if (done(spans) || absl::Now() >= until) return spans;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

void OtlpCollector::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    absl::MutexLock lock(&mu_);
    fds_.push_back(fd);
    connections_.emplace_back([this, fd] { Serve(fd); });
  }
}

void OtlpCollector::Serve(int fd) {
  std::string in;
  char buffer[65536];
  while (!stop_) {
    // One request: headers up to a blank line, then Content-Length bytes.
    size_t header_end;
    while ((header_end = in.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) return;
      in.append(buffer, static_cast<size_t>(n));
    }
    size_t length = 0;
    bool gzip = false;
    std::vector<std::string> headers;
    // The request line: "POST /v1/metrics HTTP/1.1".
    const std::vector<std::string> request_line =
        absl::StrSplit(in.substr(0, in.find("\r\n")), ' ');
    const bool metrics = request_line.size() > 1 && absl::EndsWith(request_line[1], "/v1/metrics");
    for (absl::string_view line : absl::StrSplit(in.substr(0, header_end), "\r\n")) {
      std::pair<absl::string_view, absl::string_view> kv =
          absl::StrSplit(line, absl::MaxSplits(':', 1));
      std::string name = absl::AsciiStrToLower(kv.first);
      absl::string_view value = absl::StripAsciiWhitespace(kv.second);
      if (name == "content-length") absl::SimpleAtoi(value, &length);
      if (name == "content-encoding" && value == "gzip") gzip = true;
      headers.push_back(absl::StrCat(name, ": ", value));
    }
    while (in.size() < header_end + 4 + length) {
      ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) return;
      in.append(buffer, static_cast<size_t>(n));
    }
    std::string body = in.substr(header_end + 4, length);
    in.erase(0, header_end + 4 + length);
    Mode mode;
    int status;
    {
      absl::MutexLock lock(&mu_);
      ++requests_;
      headers_.insert(headers_.end(), headers.begin(), headers.end());
      mode = mode_;
      status = status_;
    }
    if (mode == Mode::kHang) continue;  // never answered; the client times out
    if (gzip) body = Gunzip(body);
    opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest request;
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest metrics_request;
    if (!(metrics ? metrics_request.ParseFromString(body) : request.ParseFromString(body))) {
      status = 400;
    }
    if (status == 200) {
      if (!dump_dir_.empty()) Dump(metrics ? "metrics" : "traces", body);
      absl::MutexLock lock(&mu_);
      if (metrics) {
        metrics_.push_back(std::move(metrics_request));
      } else {
        AppendSpans(request, &spans_);
      }
    }
    std::string reply_body =
        opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse()
            .SerializeAsString();
    std::string reply = absl::StrCat("HTTP/1.1 ", status, status == 200 ? " OK" : " Error",
                                     "\r\nContent-Type: application/x-protobuf\r\nContent-Length: ",
                                     reply_body.size(), "\r\n\r\n", reply_body);
    if (!SendAll(fd, reply)) return;
  }
}

void OtlpCollector::Dump(const std::string& kind, const std::string& body) {
  int n;
  {
    absl::MutexLock lock(&mu_);
    n = ++dumped_;
  }
  const std::string path = absl::StrCat(dump_dir_, "/", kind, "-", n, ".pb");
  {
    std::ofstream out(path + ".tmp", std::ios::binary);
    out << body;
  }
  std::rename((path + ".tmp").c_str(), path.c_str());
}

std::vector<CollectedSpan> ReadDumpedSpans(const std::string& dir) {
  std::vector<std::pair<int, std::string>> files;  // by number: the order received
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    int n = 0;
    if (absl::StartsWith(name, "traces-") && absl::EndsWith(name, ".pb") &&
        absl::SimpleAtoi(name.substr(7, name.size() - 10), &n)) {
      files.emplace_back(n, entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<CollectedSpan> spans;
  for (const auto& [n, path] : files) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream body;
    body << in.rdbuf();
    opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest request;
    if (request.ParseFromString(body.str())) AppendSpans(request, &spans);
  }
  return spans;
}

}  // namespace rein::trace::testing
