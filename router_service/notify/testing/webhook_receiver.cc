// WebhookReceiver: a loopback HTTP/1.1 receiver for the webhook tests.
#include "router_service/notify/testing/webhook_receiver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "router_service/notify/signature.h"

namespace rein::testing {

WebhookReceiver::~WebhookReceiver() { Stop(); }

absl::Status WebhookReceiver::Start(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError("socket failed");
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return absl::InternalError(absl::StrCat("cannot listen on port ", port, ": ", strerror(errno)));
  }
  port_ = ntohs(addr.sin_port);
  listen_fd_ = fd;
  stopping_ = false;
  thread_ = std::thread([this, fd] { Serve(fd); });
  return absl::OkStatus();
}

void WebhookReceiver::Stop() {
  if (listen_fd_ < 0) return;
  stopping_ = true;
  shutdown(listen_fd_, SHUT_RDWR);
  const int fd = listen_fd_;
  listen_fd_ = -1;
  if (thread_.joinable()) thread_.join();
  close(fd);
}

std::string WebhookReceiver::url(const std::string& path) const {
  return absl::StrCat("http://127.0.0.1:", port_, path);
}

void WebhookReceiver::Enqueue(ReceiverReply reply) {
  absl::MutexLock lock(&mu_);
  script_.push_back(std::move(reply));
}

std::vector<ReceivedWebhook> WebhookReceiver::received() {
  absl::MutexLock lock(&mu_);
  return received_;
}

bool WebhookReceiver::AwaitCount(size_t n, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return received_.size() >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

void WebhookReceiver::Serve(int listen_fd) {
  while (!stopping_) {
    pollfd p = {listen_fd, POLLIN, 0};
    if (poll(&p, 1, 100) < 0) return;
    if ((p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return;
    if ((p.revents & POLLIN) == 0) continue;
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;  // shut down
    Handle(fd);
    close(fd);
  }
}

void WebhookReceiver::Handle(int fd) {
  std::string data;
  char buffer[8192];
  size_t header_end = std::string::npos;
  size_t content_length = 0;
  while (true) {
    if (header_end != std::string::npos && data.size() >= header_end + 4 + content_length) break;
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) return;
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n <= 0) return;
    data.append(buffer, static_cast<size_t>(n));
    if (header_end == std::string::npos) {
      header_end = data.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        for (absl::string_view line : absl::StrSplit(data.substr(0, header_end), "\r\n")) {
          if (absl::StartsWithIgnoreCase(line, "content-length:")) {
            absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(15)), &content_length);
          }
        }
      }
    }
  }
  ReceivedWebhook got;
  got.received = absl::Now();
  std::vector<std::string> lines = absl::StrSplit(data.substr(0, header_end), "\r\n");
  std::vector<std::string> request_line = absl::StrSplit(lines[0], ' ');
  if (request_line.size() >= 2) got.path = request_line[1];
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    got.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  got.body = data.substr(header_end + 4, content_length);
  got.signature_valid =
      VerifyWebhookSignature(key_, got.headers["webhook-id"], got.headers["webhook-timestamp"],
                             got.body, got.headers["webhook-signature"]);
  // Recorded before the answer, so that a sender that got its answer finds it recorded.
  ReceiverReply reply;
  {
    absl::MutexLock lock(&mu_);
    received_.push_back(std::move(got));
    if (!script_.empty()) {
      reply = std::move(script_.front());
      script_.pop_front();
    }
  }
  if (reply.delay > absl::ZeroDuration()) absl::SleepFor(reply.delay);
  std::string answer =
      absl::StrCat("HTTP/1.1 ", reply.status, " X\r\nContent-Length: ", reply.body.size(),
                   "\r\nConnection: close\r\n");
  for (const auto& [name, value] : reply.headers)
    absl::StrAppend(&answer, name, ": ", value, "\r\n");
  absl::StrAppend(&answer, "\r\n", reply.body);
  size_t sent = 0;
  while (sent < answer.size()) {
    const ssize_t n = send(fd, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace rein::testing
