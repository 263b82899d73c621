// Prometheus text-format metrics over plain HTTP.
#include "common/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rein {

Metrics& Metrics::Global() {
  static Metrics* metrics = new Metrics();
  return *metrics;
}

void Metrics::Add(const std::string& name, double delta, const std::string& labels) {
  absl::MutexLock lock(&mu_);
  auto& entry = values_[name];
  entry.first = true;
  entry.second[labels] += delta;
}

void Metrics::Set(const std::string& name, double value, const std::string& labels) {
  absl::MutexLock lock(&mu_);
  auto& entry = values_[name];
  entry.first = false;
  entry.second[labels] = value;
}

std::string Metrics::Render() const {
  absl::MutexLock lock(&mu_);
  std::string out;
  for (const auto& [name, entry] : values_) {
    absl::StrAppend(&out, "# TYPE ", name, entry.first ? " counter\n" : " gauge\n");
    for (const auto& [labels, value] : entry.second) {
      absl::StrAppend(&out, name, labels.empty() ? "" : absl::StrCat("{", labels, "}"), " ",
                      absl::StrFormat("%.17g", value), "\n");
    }
  }
  return out;
}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

absl::Status MetricsHttpServer::Start(int port) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return absl::InternalError("metrics: socket failed");
  int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port < 0 ? 0 : port));
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd_, 16) != 0) {
    close(fd_);
    fd_ = -1;
    return absl::UnavailableError(absl::StrCat("metrics: cannot listen on port ", port));
  }
  socklen_t len = sizeof(addr);
  getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      pollfd pfd{fd_, POLLIN, 0};
      if (poll(&pfd, 1, 200) <= 0) continue;
      int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      timeval tv{2, 0};
      setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      char buf[2048];
      ssize_t n = read(client, buf, sizeof(buf));
      std::string request(buf, n > 0 ? static_cast<size_t>(n) : 0);
      std::string body, status = "200 OK";
      if (request.rfind("GET /metrics", 0) == 0) {
        body = Metrics::Global().Render();
      } else {
        status = "404 Not Found";
        body = "only GET /metrics is served\n";
      }
      std::string response = absl::StrCat("HTTP/1.1 ", status,
                                          "\r\nContent-Type: text/plain; version=0.0.4\r\n"
                                          "Content-Length: ",
                                          body.size(), "\r\nConnection: close\r\n\r\n", body);
      ssize_t ignored = write(client, response.data(), response.size());
      (void)ignored;
      close(client);
    }
  });
  return absl::OkStatus();
}

void MetricsHttpServer::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace rein
